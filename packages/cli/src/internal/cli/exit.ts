/**
 * How a run ends: the process exit codes and `CliExit`, the failure that
 * carries one. Boundary: the codes only; how a failure is shown is
 * `errors.ts`. Kept apart from it so the executable's entry, which exits
 * with these codes, does not load the typed errors' schemas.
 */
import * as Data from "effect/Data"
import * as Runtime from "effect/Runtime"

/** Documented where `Cli.ts` exports it. */
export const ExitCodes = { ok: 0, failed: 1, badInput: 2, kept: 3, gone: 4 } as const

/** Documented where `Cli.ts` exports it. */
export type FailureCode = 1 | 2 | 3 | 4

/** Documented where `Cli.ts` exports it. */
export class CliExit extends Data.TaggedError("CliExit")<{ readonly code: FailureCode }> {
  override get [Runtime.errorExitCode](): number {
    return this.code
  }
  /**
   * Already reported: the command printed its outcome before exiting with the code.
   *
   * @since 0.2.0
   */
  override readonly [Runtime.errorReported] = false
}
