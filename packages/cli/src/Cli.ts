/**
 * The `hostnode` command tree: global flags (`--host-root`, `--container`,
 * `--allow-own-namespace`, `--json`, `--dry-run`, `--timeout`, `--log-format`,
 * `--metrics-file`, and effect's `--log-level`) and one subcommand per operation
 * of @hostnode/core. This module only describes commands and how their
 * outcome is shown; the entry point (`bin.ts`) provides the real host's
 * layers, tests provide `MemoryNode`'s.
 *
 * Output: a person's text by default; with `--json`, exactly one JSON
 * document on stdout (`ok`, the command, its result or the typed error, and
 * the plan of a dry run). Logs always go to stderr. {@link run} fails with a
 * {@link CliExit} carrying the process exit code (see {@link ExitCodes}): 1
 * when the operation failed, 2 on bad usage or bad input (refused before
 * anything changed), 3 when the operation ran to its end but had to keep
 * paths it should have removed, 4 when the container of `--container`
 * exited while the command ran.
 *
 * @since 0.1.0
 */
import type { Effect } from "effect"
import { hostnode, type Services } from "./internal/cli/commands.ts"
import type { CliExit } from "./internal/cli/exit.ts"
import { runTree } from "./internal/cli/run.ts"
import { version } from "./internal/cli/version.ts"

export {
  /**
   * `hostnode help [SUBCOMMAND...]` as `hostnode [SUBCOMMAND...] --help`: the
   * word a newcomer tries first. Only `help` in the subcommand's place counts
   * (not the value of a flag, not an argument after a subcommand).
   *
   * @since 0.2.0
   */
  helpAsFlag,
  /**
   * Whether `argv` asks for JSON as effect/cli will read it (`--json`,
   * `--json=on`, `--json true`; not `--json=false` or `--json false`), so a
   * usage error, which the parser reports before `--json` reaches the command,
   * is printed the way the command would print its outcome.
   *
   * @since 0.2.0
   */
  wantsJson
} from "./internal/cli/argv.ts"
export type {
  /**
   * What the command tree needs: the host's services (`NodeHost.layer`, `MemoryNode.layer`) and the CLI's environment.
   *
   * @since 0.1.0
   */
  Services
} from "./internal/cli/commands.ts"
export {
  /**
   * `UNIT[=changed]`: `changed` is true, yes, 1 or changed (the default), or false, no, 0 or unchanged.
   *
   * @since 0.1.0
   */
  parseChangedUnit
} from "./internal/cli/commands.ts"
export type {
  /**
   * Why a command refused its usage.
   *
   * @since 0.3.0
   */
  UsageErrorReason
} from "./internal/cli/errors.ts"
export {
  /**
   * The typed error as JSON: its tag, message, fields and the hint.
   *
   * @since 0.1.0
   */
  errorJson,
  /**
   * The typed error for a person: what failed (the message names the path or unit) and what to check.
   *
   * @since 0.1.0
   */
  errorText,
  /**
   * The exit code for a failed operation (see {@link ExitCodes}).
   *
   * @since 0.2.0
   */
  exitCodeFor,
  /**
   * Why: a flag that only applies with another was given without it
   * (`--allow-own-namespace` without `--container`).
   *
   * @since 0.4.0
   */
  FlagWithout,
  /**
   * The one line a refused input prints on stderr: the command, what was
   * wrong and where, and what to do when the message does not already say it.
   *
   * @since 0.2.0
   */
  inputErrorLine,
  /**
   * True when `error` refuses the caller's input before anything was changed:
   * the CLI exits 2 for it, as for bad usage.
   *
   * @since 0.2.0
   */
  isInputError,
  /**
   * Why: a group such as `snapshot` was given without its subcommand.
   *
   * @since 0.3.0
   */
  MissingSubcommand,
  /**
   * Why: a slot this node does not have (the node has one node root).
   *
   * @since 0.3.0
   */
  UnknownSlot,
  /**
   * Bad usage found by the command itself rather than by the parser (a group
   * such as `snapshot` without its subcommand, a slot this node does not have):
   * exit 2, nothing was done. `reason` says what was wrong; `fix` says what to
   * do instead.
   *
   * @since 0.2.0
   */
  UsageError
} from "./internal/cli/errors.ts"
export type {
  /**
   * One of {@link ExitCodes}, other than success.
   *
   * @since 0.2.0
   */
  FailureCode
} from "./internal/cli/exit.ts"
export {
  /**
   * How a run ends when it does not succeed: the process exit code (see
   * {@link ExitCodes}). What went wrong was already printed, so the runtime
   * does not report it again.
   *
   * @since 0.1.0
   */
  CliExit,
  /**
   * The process exit codes of `hostnode`:
   * - 0: the operation did everything it was asked;
   * - 1: it failed (the typed error says where it stopped and what state it left);
   * - 2: bad usage or bad input (an unknown flag, a relative or missing
   *   `--host-root`, an empty prefix, an invalid unit name or listener
   *   address): refused before anything was changed;
   * - 3: it ran to its end but kept paths it was to remove (a mount inside, a
   *   path that changed meanwhile); the output lists each with its reason;
   * - 4: with `--container`, the container exited while the command ran:
   *   nothing more was done in it (the error is `ContainerExited`, its reason
   *   `Gone`; the operation's own error, where it failed, is its `cause`).
   *
   * @since 0.2.0
   */
  ExitCodes
} from "./internal/cli/exit.ts"
export {
  /**
   * `--allow-own-namespace`: with `--container`, accept a PID in this
   * process's own mount namespace, which is refused otherwise (exit 2): the
   * command would act on this host (a mistyped pid, `1` on a plain host).
   * Without `--container` it is refused too (exit 2, a `UsageError`,
   * reason `FlagWithout`).
   *
   * @since 0.4.0
   */
  AllowOwnNamespace,
  /**
   * `--container PID`: run the operation on the node stack of the container
   * whose init is host process PID (`NodeContainer.layer`, which pins that
   * process once: its files below its pinned root, its mount table and mount
   * namespace, its systemd, its network). Refused before anything is done
   * (exit 2): an empty PID (an unset variable), anything but a pid, a process
   * that is gone, one in this process's own mount namespace (unless
   * `--allow-own-namespace`), and any `--host-root` with it (`/` too).
   * Every path the command prints is named as the container sees it
   * (`/var/lib/kubelet/...`), and the JSON document names the container once,
   * `"container": { "pid": PID }`. A container that exits while the command
   * runs ends it with exit code 4 (`ContainerExited`, reason `Gone`).
   * Absent unless given (`Option.none()`).
   *
   * @since 0.2.0
   */
  Container,
  /**
   * `--dry-run`: change nothing; print what would be written, removed, unmounted or run, in order.
   *
   * @since 0.1.0
   */
  DryRunFlag,
  /**
   * `--host-root DIR`: where the host's `/` is; the real host by default
   * (`Option.none()`: not given). A relative DIR is taken relative to the
   * working directory, and the absolute root used is printed on stderr (the
   * library itself refuses relative roots); an empty one is refused (exit 2).
   *
   * @since 0.1.0
   */
  HostRoot,
  /**
   * `--json`: one machine-readable JSON document on stdout, errors included.
   *
   * @since 0.1.0
   */
  Json,
  /**
   * `--log-format text|json`: how log lines are written on stderr. `text`
   * (the default): one line per entry (at `info`, one per operation). `json`:
   * one JSON object per line (`timestamp`, `level`, `message`, `annotations`,
   * `span` with its name and trace and span ids, `cause`), the CLI's own
   * messages (errors, warnings) too; no progress line. stdout is unchanged.
   *
   * @since 0.4.0
   */
  LogFormat,
  /**
   * `--metrics-file PATH`: when the run ends (whatever its outcome), its
   * metrics (`Metrics` of `@hostnode/core`, and the run's exit code and end
   * time) are written to PATH in Prometheus text format, replacing the file
   * atomically (a temporary file in the same directory, then a rename), as
   * node_exporter's textfile collector expects. A PATH whose directory does
   * not exist is refused before anything runs (exit 2).
   *
   * @since 0.4.0
   */
  MetricsFile,
  /**
   * `--timeout SECONDS`: the operation's deadline (default 300). No call on
   * a host's files is waited for past it: one that does not return (a dead
   * NFS or FUSE mount) is abandoned `Hung`, the operation ends with its
   * report, and the command exits; 0 or less is refused (exit 2).
   *
   * @since 0.4.0
   */
  Timeout
} from "./internal/cli/flags.ts"

export {
  /**
   * The CLI's version, printed by `hostnode --version`: the version of the
   * `@hostnode/cli` package (a test keeps the two equal).
   *
   * @since 0.1.0
   */
  version
} from "./internal/cli/version.ts"

/**
 * Parses `argv` (without node and script) and runs the selected command.
 * Logs go to stderr, so stdout holds only the result. Bad usage prints one
 * line on stderr saying what was wrong (with `--json`: one JSON document on
 * stdout) and fails with `CliExit` 2; a failed operation fails with the
 * `CliExit` of its {@link ExitCodes}. A defect (a bug) is reported the same
 * way, as an internal error with exit code 1, so `--json` always prints
 * exactly one document.
 *
 * @since 0.1.0
 */
export const run = (given: ReadonlyArray<string>): Effect.Effect<void, CliExit, Services> =>
  runTree(hostnode, version)(given)
