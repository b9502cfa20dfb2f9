/**
 * How a `hostnode` run ends when it does not succeed: {@link CliExit}, the one
 * failure of `Cli.run`, and the process exit codes it carries. What went wrong
 * is printed by the command before it fails, so this carries only the code.
 * Boundary: the codes only; kept apart from the command tree so the
 * executable's entry, which exits with these codes, loads nothing else.
 *
 * @since 0.4.0
 */
import * as Data from "effect/Data"
import * as Runtime from "effect/Runtime"

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
 * @category models
 * @since 0.2.0
 */
export const ExitCodes = { ok: 0, failed: 1, badInput: 2, kept: 3, gone: 4 } as const

/**
 * How a run ends when it does not succeed: the process exit code, one of
 * {@link ExitCodes} other than `ok`. What went wrong was already printed, so
 * the runtime does not report it again.
 *
 * @category errors
 * @since 0.1.0
 */
export class CliExit extends Data.TaggedError("CliExit")<{ readonly code: 1 | 2 | 3 | 4 }> {
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
