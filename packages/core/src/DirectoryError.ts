/**
 * How a handle operation of `Directory` fails: `DirectoryError`, naming the
 * operation and the path, with its reason.
 *
 * A leaf module: `Directory` re-exports it, and the derived resolution in
 * `internal/directory` builds its errors from it without importing `Directory`.
 *
 * @since 0.4.0
 */
import { Schema } from "effect"
import * as FileName from "./FileName.ts"
import { Gone } from "./HostPathError.ts"
import { reasonTagOf } from "./internal/programs/ops.ts"

/**
 * A call the kernel (or the simulated host) refused, as its errno says (kept
 * as `errno`), or a refusal of the same kind without one: `NotFound` for an
 * empty link, `WrongType` for a node that opened but is not a regular file,
 * `OtherMount` for a child that is the root of another mount than its
 * directory (mount ids compared; never an errno). One class for every such
 * outcome: the `_tag` says which, so `Effect.catchReason("DirectoryError",
 * "NotFound", ...)` reaches it.
 *
 * @since 0.4.0
 * @category errors
 */
export class SystemError extends Schema.Error<SystemError>("@hostnode/core/Directory/SystemError")({
  _tag: Schema.Literals([
    "NotFound",
    "NotADirectory",
    "IsADirectory",
    "Exists",
    "NotEmpty",
    "SymbolicLink",
    "TooManyLinks",
    "OtherMount",
    "WrongType",
    "Busy",
    "PermissionDenied",
    "ReadOnly",
    "CrossDevice",
    "NoSpace",
    "InvalidName",
    "Unsupported",
    "Other"
  ]),
  errno: Schema.optionalKey(Schema.String),
  detail: Schema.String
}) {
  /**
   * The reason for an errno name, as every implementation classifies it
   * (`ENOENT` is `NotFound`, `EACCES` and `EPERM` `PermissionDenied`, an
   * unknown errno `Other`), the errno kept on it.
   *
   * @since 0.4.0
   */
  static fromErrno(errno: string, detail: string): SystemError {
    const tag = reasonTagOf(errno)
    return new SystemError({ _tag: tag === "Hung" || tag === "Gone" ? "Other" : tag, errno, detail })
  }

  override get message(): string {
    return this.errno === undefined ? this.detail : `${this.errno} ${this.detail}`
  }
}

/**
 * A call that did not return within its timeout or the operation's deadline
 * (a dead or stalled file system): it was abandoned, and nothing after it on
 * that path was done. No errno: the kernel never answered.
 *
 * @since 0.4.0
 * @category errors
 */
export class Hung extends Schema.Error<Hung>("@hostnode/core/Directory/Hung")({
  _tag: Schema.tag("Hung"),
  /** The system call that did not return (`statx`, `openat2`, `getdents64`, ...). */
  call: Schema.String,
  /** How long it was waited for, in seconds. */
  seconds: Schema.Number,
  detail: Schema.String
}) {
  override get message(): string {
    return `${this.call} did not return within ${this.seconds} s: ${this.detail}`
  }
}

/**
 * A handle operation the kernel (or the simulated host) refused: which
 * operation, on which path (the handle's path and the name, in the lossless
 * string form), and why: a {@link SystemError}, a {@link Hung} call, or
 * `Gone` (the process whose root it works below has exited). Handle it per
 * reason with `Effect.catchReason("DirectoryError", "NotFound", (reason) => ...)`.
 *
 * @since 0.2.0
 * @category errors
 */
export class DirectoryError extends Schema.TaggedError<DirectoryError>()("DirectoryError", {
  reason: Schema.Union([SystemError, Hung, Gone]),
  operation: Schema.String,
  path: Schema.String
}) {
  override get message(): string {
    return `${this.operation} ${FileName.display(this.path)}: ${this.reason.message}`
  }
}
