/**
 * Helpers over `DirectoryError` for the derived resolution and the operations.
 *
 * @since 0.3.0
 */
import { DirectoryError } from "../../DirectoryError.ts"

/** The errno a failure carries, when a system call (or the simulated host) refused with one: for a report. */
export const errnoOf = (error: DirectoryError): string | undefined =>
  "errno" in error.reason ? error.reason.errno : undefined

/** A `DirectoryError` of `operation` on `path`. */
export const fail = (reason: DirectoryError["reason"], operation: string, path: string): DirectoryError =>
  new DirectoryError({ reason, operation, path })
