/**
 * The `hostnode` command as a library: {@link run} parses `argv` and runs one
 * subcommand per operation of `@hostnode/core` on the services in context
 * (`NodeHost.layer` for the real host, `MemoryNode.layer` in tests).
 *
 * - Output: a person's text by default; with `--json`, exactly one JSON
 *   document on stdout, errors included. Logs always go to stderr.
 * - A run that does not succeed fails with a {@link CliExit} carrying the
 *   process exit code ({@link ExitCodes}); what went wrong is already printed.
 * - Bad usage or bad input is refused before anything changes (exit 2).
 *
 * The executable (`bin.ts`) is this over the real host, with progress on a terminal.
 *
 * @since 0.1.0
 */
import type { Directory, DnsResolvers, IsolationBackend, Mounter, Systemd } from "@hostnode/core"
import type * as Command from "effect/cli/Command"
import type * as Effect from "effect/Effect"
import type { CliExit } from "./CliExit.ts"
import { hostnode } from "./internal/cli/commands.ts"
import { runTree } from "./internal/cli/run.ts"
import { version } from "./internal/cli/version.ts"

/**
 * `CliExit`, the failure of {@link run}, and `ExitCodes`, the process exit codes it carries (the `CliExit` module).
 *
 * @category errors
 * @since 0.4.0
 */
export * from "./CliExit.ts"

/**
 * What {@link run} needs: the host's services (`NodeHost.layer`, `MemoryNode.layer`) and effect/cli's environment.
 *
 * @category models
 * @since 0.1.0
 */
export type Services =
  | Command.Environment
  | Directory.Directories
  | Mounter.Mounter
  | Systemd.Systemd
  | DnsResolvers.DnsResolvers
  | IsolationBackend.IsolationBackend

/**
 * Parses `argv` (without node and script) and runs the selected command, as
 * `hostnode ARGV...` does. Bad usage prints one line on stderr saying what was
 * wrong (with `--json`: one JSON document on stdout) and fails with `CliExit`
 * 2; a failed operation fails with the `CliExit` of its {@link ExitCodes}. A
 * defect (a bug) is reported the same way, as an internal error with exit code
 * 1, so `--json` always prints exactly one document.
 *
 * @example
 * import { Cli } from "@hostnode/cli"
 * import { NodeHost } from "@hostnode/node"
 * import { Effect } from "effect"
 *
 * // `hostnode --json --dry-run reset-cni` on this host: the plan, nothing changed.
 * const program = Cli.run(["--json", "--dry-run", "reset-cni"]).pipe(
 *   Effect.catchTag("CliExit", (exit) => Effect.logError(`exit code ${exit.code}`)),
 *   Effect.provide(NodeHost.layer)
 * )
 *
 * @category operations
 * @since 0.1.0
 */
export const run = (given: ReadonlyArray<string>): Effect.Effect<void, CliExit, Services> =>
  runTree(hostnode, version)(given)
