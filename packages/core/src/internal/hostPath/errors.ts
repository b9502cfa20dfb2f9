/**
 * How a host root, a host path or a prefix is refused: one reason class per
 * outcome (each says why, in `detail`), and the `HostPathError` wrapper
 * naming the root and, where the refusal is about a path below it, the path.
 *
 * Internal: `HostPath` re-exports all of it; `refusal` is the one
 * constructor the modules of this directory use.
 *
 * @since 0.3.0
 */
import { Schema } from "effect"

const reasonFields = { detail: Schema.String }

/** Not a path at all: empty where a path is required, a NUL byte, longer than the kernel takes. */
export class InvalidPath extends Schema.TaggedError<InvalidPath>()("InvalidPath", reasonFields) {
  override get message(): string {
    return `${this._tag}: ${this.detail}`
  }
}

/** A relative path: the library never guesses what it is relative to. */
export class NotAbsolute extends Schema.TaggedError<NotAbsolute>()("NotAbsolute", reasonFields) {
  override get message(): string {
    return `${this._tag}: ${this.detail}`
  }
}

/** The host root (or the mount table's root) does not exist. */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", reasonFields) {
  override get message(): string {
    return `${this._tag}: ${this.detail}`
  }
}

/** The host root (or the mount table's root) is not a directory. */
export class NotADirectory extends Schema.TaggedError<NotADirectory>()("NotADirectory", reasonFields) {
  override get message(): string {
    return `${this._tag}: ${this.detail}`
  }
}

/** A prefix or path that is `/`, or resolves to the host root itself, where the caller did not allow it. */
export class IsHostRoot extends Schema.TaggedError<IsHostRoot>()("IsHostRoot", reasonFields) {
  override get message(): string {
    return `${this._tag}: ${this.detail}`
  }
}

/** The root, or a path, lies outside the root of the mount table that is to describe it. */
export class OutsideTable extends Schema.TaggedError<OutsideTable>()("OutsideTable", reasonFields) {
  override get message(): string {
    return `${this._tag}: ${this.detail}`
  }
}

/** Resolving never ends: a link leads back to itself. */
export class SymlinkLoop extends Schema.TaggedError<SymlinkLoop>()("SymlinkLoop", reasonFields) {
  override get message(): string {
    return `${this._tag}: ${this.detail}`
  }
}

/** Resolving meets more than 40 links (MAXSYMLINKS). */
export class TooManyLinks extends Schema.TaggedError<TooManyLinks>()("TooManyLinks", reasonFields) {
  override get message(): string {
    return `${this._tag}: ${this.detail}`
  }
}

/** A link or directory on the way could not be read. */
export class Unreadable extends Schema.TaggedError<Unreadable>()("Unreadable", reasonFields) {
  override get message(): string {
    return `${this._tag}: ${this.detail}`
  }
}

/**
 * The root belongs to a process that has exited (a container's init): its
 * files, mounts and namespaces are no longer that process's, and a pid it
 * had may name another process now, so nothing is done there. Shared by
 * every error of a service that works through such a root (`DirectoryError`,
 * `SystemdError`): one class wherever a caller catches it.
 */
export class Gone extends Schema.TaggedError<Gone>()("Gone", {
  /** The host pid the process had, where one was given. */
  pid: Schema.optionalKey(Schema.Number),
  /** The slot whose container it was, where a resolver named one. */
  slot: Schema.optionalKey(Schema.String),
  detail: Schema.String
}) {
  override get message(): string {
    return `${this._tag}: ${this.detail}`
  }
}

/** Why a host root, a host path or a prefix was refused. */
export const HostPathErrorReason = Schema.Union([
  Gone,
  InvalidPath,
  NotAbsolute,
  NotFound,
  NotADirectory,
  IsHostRoot,
  OutsideTable,
  SymlinkLoop,
  TooManyLinks,
  Unreadable
])

/** Why a host root, a host path or a prefix was refused. */
export type HostPathErrorReason = typeof HostPathErrorReason.Type

/** A host root, host path or prefix that was refused, naming the root and the path exactly as they were given. */
export class HostPathError extends Schema.TaggedError<HostPathError>()("HostPathError", {
  reason: HostPathErrorReason,
  root: Schema.String,
  path: Schema.optionalKey(Schema.String)
}) {
  override get message(): string {
    // What (the reason and why) and where (the root, and the path below it when it is not the root itself).
    const where =
      this.path === undefined || this.path === "/"
        ? `host root ${JSON.stringify(this.root)}`
        : `${JSON.stringify(this.path)} below host root ${JSON.stringify(this.root || "/")}`
    return `${where}: ${this.reason.message}`
  }
}

/** The refusal of `path` below the root `root` as given (of the root itself without `path`). */
export const refusal = (reason: HostPathErrorReason, root: string, path?: string): HostPathError =>
  new HostPathError(path === undefined ? { reason, root } : { reason, root, path })
