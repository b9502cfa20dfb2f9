/**
 * How a handle operation fails: one reason class per outcome, each with only
 * its own facts (an `errno` where a system call refused, or the simulated host
 * said what the kernel would), and the `DirectoryError` wrapper naming the
 * operation and the path.
 *
 * Internal: `Directory` re-exports all of it; the derived resolution in this
 * directory and every implementation build their errors from it.
 *
 * @since 0.3.0
 */
import { Schema } from "effect"
import * as FileName from "../../FileName.ts"
import { Gone } from "../hostPath/errors.ts"
import { reasonTagOf } from "../programs/ops.ts"

/** The errno, when there is one, then what it means. */
const said = (errno: string | undefined, detail: string): string =>
  errno === undefined ? detail : `${errno} ${detail}`

/** A name or a component that is not there (`ENOENT`; no errno for an empty link's target). */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  errno: Schema.optionalKey(Schema.String),
  detail: Schema.String
}) {
  override get message(): string {
    return said(this.errno, this.detail)
  }
}

/** A directory was needed and something else is there (`ENOTDIR`). */
export class NotADirectory extends Schema.TaggedError<NotADirectory>()("NotADirectory", {
  errno: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return said(this.errno, this.detail)
  }
}

/** A non-directory was needed and a directory is there (`EISDIR`). */
export class IsADirectory extends Schema.TaggedError<IsADirectory>()("IsADirectory", {
  errno: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return said(this.errno, this.detail)
  }
}

/** The name is taken (`EEXIST`: an exclusive create, a rename with `noReplace`, a `mkdir`). */
export class Exists extends Schema.TaggedError<Exists>()("Exists", {
  errno: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return said(this.errno, this.detail)
  }
}

/** A directory to remove still has entries (`ENOTEMPTY`). */
export class NotEmpty extends Schema.TaggedError<NotEmpty>()("NotEmpty", {
  errno: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return said(this.errno, this.detail)
  }
}

/** A symbolic link where none is followed (`ELOOP` of `O_NOFOLLOW`, or a resolution with `noSymlinks`). */
export class SymbolicLink extends Schema.TaggedError<SymbolicLink>()("SymbolicLink", {
  errno: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return said(this.errno, this.detail)
  }
}

/** A resolution met more than 40 links (`ELOOP`). */
export class TooManyLinks extends Schema.TaggedError<TooManyLinks>()("TooManyLinks", {
  errno: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return said(this.errno, this.detail)
  }
}

/** The child is the root of another mount than the directory it is in: mount ids compared, no system call refused. */
export class OtherMount extends Schema.TaggedError<OtherMount>()("OtherMount", {
  detail: Schema.String
}) {
  override get message(): string {
    return this.detail
  }
}

/** A regular file was needed and another kind of node is there (a FIFO or socket: `ENXIO`; a directory, a device). */
export class WrongType extends Schema.TaggedError<WrongType>()("WrongType", {
  errno: Schema.optionalKey(Schema.String),
  detail: Schema.String
}) {
  override get message(): string {
    return said(this.errno, this.detail)
  }
}

/** Something is mounted on it, or it is in use (`EBUSY`). */
export class Busy extends Schema.TaggedError<Busy>()("Busy", {
  errno: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return said(this.errno, this.detail)
  }
}

/** Refused for this process's credentials (`EACCES`, `EPERM`). */
export class PermissionDenied extends Schema.TaggedError<PermissionDenied>()("PermissionDenied", {
  errno: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return said(this.errno, this.detail)
  }
}

/** The file system is mounted read-only (`EROFS`). */
export class ReadOnly extends Schema.TaggedError<ReadOnly>()("ReadOnly", {
  errno: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return said(this.errno, this.detail)
  }
}

/** A rename between two mounts (`EXDEV`). */
export class CrossDevice extends Schema.TaggedError<CrossDevice>()("CrossDevice", {
  errno: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return said(this.errno, this.detail)
  }
}

/** No space or quota left (`ENOSPC`, `EDQUOT`). */
export class NoSpace extends Schema.TaggedError<NoSpace>()("NoSpace", {
  errno: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return said(this.errno, this.detail)
  }
}

/** A name or path the kernel would refuse (`ENAMETOOLONG`, `EINVAL`): refused before anything is looked at. */
export class InvalidName extends Schema.TaggedError<InvalidName>()("InvalidName", {
  errno: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return said(this.errno, this.detail)
  }
}

/** The kernel or file system does not have the operation (`ENOSYS`, `EOPNOTSUPP`). */
export class Unsupported extends Schema.TaggedError<Unsupported>()("Unsupported", {
  errno: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return said(this.errno, this.detail)
  }
}

/** Any other errno (`EIO`, ...). */
export class Other extends Schema.TaggedError<Other>()("Other", {
  errno: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return said(this.errno, this.detail)
  }
}

/**
 * A call that did not return within its timeout or the operation's deadline
 * (a dead or stalled file system): it was abandoned, and nothing after it on
 * that path was done. No errno: the kernel never answered.
 */
export class Hung extends Schema.TaggedError<Hung>()("Hung", {
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

/** Why a handle operation failed: one of the reason classes. */
export const DirectoryErrorReason = Schema.Union([
  Gone,
  Hung,
  NotFound,
  NotADirectory,
  IsADirectory,
  Exists,
  NotEmpty,
  SymbolicLink,
  TooManyLinks,
  OtherMount,
  WrongType,
  Busy,
  PermissionDenied,
  ReadOnly,
  CrossDevice,
  NoSpace,
  InvalidName,
  Unsupported,
  Other
])

/** Why a handle operation failed. */
export type DirectoryErrorReason = typeof DirectoryErrorReason.Type

/** A handle operation the kernel (or the simulated host) refused: which operation, on which path, and why. */
export class DirectoryError extends Schema.TaggedError<DirectoryError>()("DirectoryError", {
  reason: DirectoryErrorReason,
  operation: Schema.String,
  path: Schema.String
}) {
  override get message(): string {
    return `${this.operation} ${FileName.display(this.path)}: ${this.reason.message}`
  }
}

/** The reason for an errno name (with what it means), as every implementation classifies it. */
export const reasonOf = (errno: string, detail: string): DirectoryErrorReason => {
  const fields = { errno, detail }
  // One table for every layer (the helper process classifies with it too).
  switch (reasonTagOf(errno)) {
    case "NotFound":
      return new NotFound(fields)
    case "NotADirectory":
      return new NotADirectory(fields)
    case "IsADirectory":
      return new IsADirectory(fields)
    case "Exists":
      return new Exists(fields)
    case "NotEmpty":
      return new NotEmpty(fields)
    case "SymbolicLink":
      return new SymbolicLink(fields)
    case "Busy":
      return new Busy(fields)
    case "PermissionDenied":
      return new PermissionDenied(fields)
    case "ReadOnly":
      return new ReadOnly(fields)
    case "CrossDevice":
      return new CrossDevice(fields)
    case "NoSpace":
      return new NoSpace(fields)
    case "InvalidName":
      return new InvalidName(fields)
    case "Unsupported":
      return new Unsupported(fields)
    case "WrongType":
      return new WrongType(fields)
    default:
      return new Other(fields)
  }
}

/** The errno a failure carries, when a system call (or the simulated host) refused with one. */
export const errnoOf = (error: DirectoryError): string | undefined =>
  "errno" in error.reason ? error.reason.errno : undefined

/** A `DirectoryError` of `operation` on `path`. */
export const fail = (reason: DirectoryErrorReason, operation: string, path: string): DirectoryError =>
  new DirectoryError({ reason, operation, path })
