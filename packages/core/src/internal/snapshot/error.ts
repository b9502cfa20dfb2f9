/**
 * How a snapshot operation fails: one error class, `SnapshotError`, naming
 * the snapshot directory and the host root, whose `reason` is one of the
 * reason classes below, each with the facts of its own case (the host path
 * concerned where there is one, the errno where a system call was refused,
 * the lock holder's pid where the platform says). `RollbackFailed`, an
 * upgrade whose rollback failed too, is one of them, so that the module has
 * one error and `Effect.catchReason("SnapshotError", ...)` reaches every case.
 *
 * Internal: `Snapshot` re-exports all of it; the steps in this directory
 * build it through `context.ts`.
 *
 * @since 0.3.0
 */
import { Schema } from "effect"
import { SystemdError } from "../../Systemd.ts"

/** What a reason reads as: its tag, the host path when there is one, and what exactly is wrong. */
const sentence = (tag: string, path: string | undefined, detail: string): string =>
  `${tag}${path === undefined ? "" : ` at ${JSON.stringify(path)}`}: ${detail}`

/** A take found a snapshot already in the directory: an earlier process left it; `recover` it first, or it is lost. */
export class Exists extends Schema.TaggedError<Exists>()("Exists", {
  detail: Schema.String
}) {
  override get message(): string {
    return sentence(this._tag, undefined, this.detail)
  }
}

/** There is no snapshot in the directory: it was discarded, or a restore consumed it. */
export class Missing extends Schema.TaggedError<Missing>()("Missing", {
  detail: Schema.String
}) {
  override get message(): string {
    return sentence(this._tag, undefined, this.detail)
  }
}

/**
 * An input is not usable: a path given to a take is not absolute (`path`
 * names it), the snapshot directory is at, below or above a recorded path
 * once both are resolved, or the snapshot directory or lock timeout itself
 * is malformed (no `path`: no host path is concerned).
 */
export class InvalidPath extends Schema.TaggedError<InvalidPath>()("InvalidPath", {
  path: Schema.optionalKey(Schema.String),
  detail: Schema.String
}) {
  override get message(): string {
    return sentence(this._tag, this.path, this.detail)
  }
}

/**
 * The manifest is not JSON, is truncated, too large, does not match the
 * Schema, or its entries do not form the trees it names (`path`: the entry
 * at fault, when one is).
 */
export class InvalidManifest extends Schema.TaggedError<InvalidManifest>()("InvalidManifest", {
  path: Schema.optionalKey(Schema.String),
  detail: Schema.String
}) {
  override get message(): string {
    return sentence(this._tag, this.path, this.detail)
  }
}

/** The manifest is of a format version this code does not read. */
export class UnsupportedVersion extends Schema.TaggedError<UnsupportedVersion>()("UnsupportedVersion", {
  detail: Schema.String
}) {
  override get message(): string {
    return sentence(this._tag, undefined, this.detail)
  }
}

/** A manifest path is not a clean absolute host path (or not a lossless name), so it could resolve outside the host root. */
export class PathOutsideRoot extends Schema.TaggedError<PathOutsideRoot>()("PathOutsideRoot", {
  path: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return sentence(this._tag, this.path, this.detail)
  }
}

/**
 * A file's bytes do not match their content hash (`path` names it), or
 * `data` has the wrong size or holes: it was not written by a take.
 */
export class Corrupt extends Schema.TaggedError<Corrupt>()("Corrupt", {
  path: Schema.optionalKey(Schema.String),
  detail: Schema.String
}) {
  override get message(): string {
    return sentence(this._tag, this.path, this.detail)
  }
}

/**
 * A file or directory of the snapshot is not what a take makes: a link, a
 * FIFO or other non-regular file, owned by another user, or writable by
 * group or others. The detail names which.
 */
export class Unsafe extends Schema.TaggedError<Unsafe>()("Unsafe", {
  detail: Schema.String
}) {
  override get message(): string {
    return sentence(this._tag, undefined, this.detail)
  }
}

/** Another process holds the snapshot's lock past the timeout; `pid` names it when the platform says. */
export class Busy extends Schema.TaggedError<Busy>()("Busy", {
  pid: Schema.optionalKey(Schema.Int),
  detail: Schema.String
}) {
  override get message(): string {
    return sentence(this._tag, undefined, this.detail)
  }
}

/** A recorded path is a socket, FIFO or device: it cannot be recorded and restored faithfully. */
export class UnsupportedFileType extends Schema.TaggedError<UnsupportedFileType>()("UnsupportedFileType", {
  path: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return sentence(this._tag, this.path, this.detail)
  }
}

/** A directory below a recorded path is another mount: a snapshot neither records nor restores across a mount. */
export class OtherMount extends Schema.TaggedError<OtherMount>()("OtherMount", {
  path: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return sentence(this._tag, this.path, this.detail)
  }
}

/**
 * A restore had to remove something it may not (a mount at or below
 * `path`): the detail lists what; the host is partly restored and the
 * snapshot kept.
 */
export class Kept extends Schema.TaggedError<Kept>()("Kept", {
  path: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return sentence(this._tag, this.path, this.detail)
  }
}

/** A host path could not be resolved below the root (a symlink loop, an unreadable link); `errno` says what refused it. */
export class Unresolvable extends Schema.TaggedError<Unresolvable>()("Unresolvable", {
  path: Schema.String,
  errno: Schema.optionalKey(Schema.String),
  detail: Schema.String
}) {
  override get message(): string {
    return sentence(this._tag, this.path, this.detail)
  }
}

/**
 * The snapshot was taken below another host root than the one it is being
 * restored below (a mistyped `--host-root` would otherwise remove every
 * recorded path that is missing there); pass `allowHostRootMismatch` when
 * the same tree really has another name.
 */
export class HostRootMismatch extends Schema.TaggedError<HostRootMismatch>()("HostRootMismatch", {
  detail: Schema.String
}) {
  override get message(): string {
    return sentence(this._tag, undefined, this.detail)
  }
}

/**
 * What is at the snapshot's directory is not one (a file, or a directory
 * holding more than a take writes: `--dir /etc` typed for `--dir /etc/snap`);
 * a discard refuses it and removes nothing, a take writes nothing.
 */
export class NotASnapshot extends Schema.TaggedError<NotASnapshot>()("NotASnapshot", {
  detail: Schema.String
}) {
  override get message(): string {
    return sentence(this._tag, undefined, this.detail)
  }
}

/**
 * The file system refused an operation: `errno` says which refusal (when a
 * system call was refused), `path` the host path concerned (none for the
 * snapshot's own files), `detail` the operation and where.
 */
export class Io extends Schema.TaggedError<Io>()("Io", {
  path: Schema.optionalKey(Schema.String),
  errno: Schema.optionalKey(Schema.String),
  detail: Schema.String
}) {
  override get message(): string {
    return sentence(this._tag, this.path, this.detail)
  }
}

/**
 * An upgrade failed and so did its rollback: the host is partly restored.
 * Carries both, so neither is lost: `upgrade` is the upgrade's cause,
 * `rollback` the restore's error. The snapshot is kept for `Snapshot.recover`.
 */
export class RollbackFailed extends Schema.TaggedError<RollbackFailed>()("RollbackFailed", {
  upgrade: Schema.Cause(Schema.Unknown, Schema.Defect()),
  rollback: Schema.Union([Schema.suspend((): Schema.Codec<SnapshotError, unknown> => SnapshotError), SystemdError])
}) {
  override get message(): string {
    return `${this._tag}: the upgrade failed and rolling the configuration back failed too (${this.rollback.message}); the snapshot is kept for Snapshot.recover`
  }
}

/** Why a snapshot operation failed: one reason class per case, told apart by `_tag`. */
export const SnapshotErrorReason = Schema.Union([
  Exists,
  Missing,
  InvalidPath,
  InvalidManifest,
  UnsupportedVersion,
  PathOutsideRoot,
  Corrupt,
  Unsafe,
  Busy,
  UnsupportedFileType,
  OtherMount,
  Kept,
  Unresolvable,
  HostRootMismatch,
  NotASnapshot,
  Io,
  RollbackFailed
])

/** Why a snapshot operation failed. */
export type SnapshotErrorReason =
  | Exists
  | Missing
  | InvalidPath
  | InvalidManifest
  | UnsupportedVersion
  | PathOutsideRoot
  | Corrupt
  | Unsafe
  | Busy
  | UnsupportedFileType
  | OtherMount
  | Kept
  | Unresolvable
  | HostRootMismatch
  | NotASnapshot
  | Io
  | RollbackFailed

/**
 * A snapshot could not be taken, checked, restored or rolled back. It names
 * the snapshot directory and the host root; its `reason` says what exactly
 * is wrong, with the facts of that case (the host path, the errno, the
 * lock holder's pid), so a person can go and look. A restore that fails
 * keeps the snapshot; a corrupt one fails before anything is written.
 */
export class SnapshotError extends Schema.TaggedError<SnapshotError>()("SnapshotError", {
  reason: SnapshotErrorReason,
  dir: Schema.String,
  hostRoot: Schema.String
}) {
  override get message(): string {
    return `snapshot ${JSON.stringify(this.dir)} (host root ${JSON.stringify(this.hostRoot || "/")}): ${this.reason.message}`
  }
}
