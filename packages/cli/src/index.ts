/**
 * `@hostnode/cli`: the `hostnode` command as a library, so it can be embedded
 * or tested without spawning a process.
 *
 * @since 0.1.0
 */

export {
  /**
   * `--dry-run` as layers wrapping the real services, and the plan they record:
   * `@hostnode/test`'s `DryRun`, re-exported (it moved there in 0.3.0, so a
   * program can dry-run itself without the CLI).
   *
   * @since 0.1.0
   */
  DryRun
} from "@hostnode/test"
/**
 * The command tree and its runner.
 *
 * @since 0.1.0
 */
export * as Cli from "./Cli.ts"
/**
 * `hostnode demo`: the guided run on a simulated node, its report, claims and text rendering.
 *
 * @since 0.1.0
 */
export * as Demo from "./Demo.ts"

/**
 * Progress of long work on a terminal, as a layer over the services an operation uses.
 *
 * @since 0.1.0
 */
export * as Progress from "./Progress.ts"
