/**
 * `@hostnode/cli`: the `hostnode` command as a library, so it can be embedded
 * or tested without spawning a process, and the demo it runs.
 *
 * @since 0.1.0
 */

/**
 * The command: {@link Cli.run} over `argv`, its exit codes and its failure.
 *
 * @category operations
 * @since 0.1.0
 */
export * as Cli from "./Cli.ts"
/**
 * `hostnode demo`: the guided run on a simulated node and its report.
 *
 * @category operations
 * @since 0.1.0
 */
export * as Demo from "./Demo.ts"
