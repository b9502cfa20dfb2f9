/**
 * @hostnode/cli: the `hostnode` command as a library, so it can be embedded
 * or tested without spawning a process.
 *
 * @since 0.1.0
 */

/** The command tree and its runner. */
export * as Cli from "./Cli.ts"

/** `--dry-run` as layers wrapping the real services, and the plan they record. */
export * as DryRun from "./DryRun.ts"
