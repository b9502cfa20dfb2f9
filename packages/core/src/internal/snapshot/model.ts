/**
 * What a snapshot is on disk and how its operations fail: the manifest
 * Schema (format version 2, which adds file times; version 1 is still
 * read), the names of the files in a snapshot directory, and the errors.
 *
 * Internal: `Snapshot` re-exports all of it; the steps in this directory
 * share it.
 *
 * @since 0.2.0
 */
import { Schema } from "effect"
import { SystemdError } from "../../Systemd.ts"

/** The manifest's file name inside a snapshot directory. */
export const ManifestName = "manifest.json"

/** The name of the file holding every recorded file's bytes, concatenated, inside a snapshot directory. */
export const DataName = "data"

/** The manifest format version this module writes. */
export const FormatVersion = 2

/** The format versions this module reads: 1 (no file times) and 2. */
export const ReadableVersions: ReadonlyArray<number> = [1, 2]

const PermissionBits = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 0o7777 }))
const Id = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 0xffffffff }))
const ByteCount = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
const Sha256Hex = Schema.String.check(Schema.isPattern(/^[0-9a-f]{64}$/))
/** Nanoseconds since the epoch, as decimal digits (a JSON number cannot hold them exactly). */
const Nanoseconds = Schema.String.check(Schema.isPattern(/^-?\d{1,20}$/))
const LinkTarget = Schema.NonEmptyString.check(
  Schema.makeFilter((s: string) => (s.includes("\0") ? "contains a NUL byte" : undefined))
)

/**
 * A regular file: its permission bits, owner, size, where its bytes are in
 * `data` with their SHA-256, and (from version 2) its access and
 * modification times.
 */
export const FileEntry = Schema.Struct({
  type: Schema.Literal("File"),
  path: Schema.String,
  mode: PermissionBits,
  uid: Id,
  gid: Id,
  size: ByteCount,
  offset: ByteCount,
  sha256: Sha256Hex,
  atimeNs: Schema.optionalKey(Nanoseconds),
  mtimeNs: Schema.optionalKey(Nanoseconds)
})

/** A regular file entry. */
export type FileEntry = typeof FileEntry.Type

/** A directory: its permission bits and owner. Its children are the entries whose parent it is. */
export const DirectoryEntry = Schema.Struct({
  type: Schema.Literal("Directory"),
  path: Schema.String,
  mode: PermissionBits,
  uid: Id,
  gid: Id
})

/** A directory entry. */
export type DirectoryEntry = typeof DirectoryEntry.Type

/** A symbolic link: its target, verbatim (never followed, never normalised), in the lossless string form. */
export const SymlinkEntry = Schema.Struct({
  type: Schema.Literal("SymbolicLink"),
  path: Schema.String,
  target: LinkTarget
})

/** A symbolic link entry. */
export type SymlinkEntry = typeof SymlinkEntry.Type

/** A path that did not exist: a restore removes whatever is there. */
export const AbsentEntry = Schema.Struct({
  type: Schema.Literal("Absent"),
  path: Schema.String
})

/** An absent entry. */
export type AbsentEntry = typeof AbsentEntry.Type

/** One recorded host path. */
export const Entry = Schema.Union([FileEntry, DirectoryEntry, SymlinkEntry, AbsentEntry])

/** One recorded host path. */
export type Entry = typeof Entry.Type

/**
 * What a snapshot recorded: the format and version, the host root it was
 * taken below (a restore below another root is refused unless allowed), the
 * paths asked for, the exclusions, the size of `data`, and the entries in
 * pre-order (a directory before its children). Paths are clean absolute host
 * paths in `FileName`'s lossless string form: a name that is not UTF-8 is
 * stored exactly (JSON keeps the lone surrogates that stand for its bytes).
 */
export const Manifest = Schema.Struct({
  format: Schema.Literal("hostnode-snapshot"),
  version: Schema.Literals([1, 2]),
  hostRoot: Schema.String,
  paths: Schema.Array(Schema.String),
  exclude: Schema.Array(Schema.String),
  dataSize: ByteCount,
  entries: Schema.Array(Entry)
})

/** A snapshot's manifest. */
export type Manifest = typeof Manifest.Type

/**
 * Why a snapshot operation failed:
 * - `Exists`: a take found a snapshot already in `dir` (an earlier process
 *   left it; `recover` it first, or it is lost).
 * - `Missing`: there is no snapshot in `dir` (it was discarded, or a restore
 *   consumed it).
 * - `InvalidPath`: a path given to a take is not absolute, or the snapshot
 *   directory is at, below or above a recorded path once both are resolved.
 * - `InvalidManifest`: the manifest is not JSON, is truncated, too large,
 *   does not match the Schema, or its entries do not form the trees it names.
 * - `UnsupportedVersion`: the manifest is of a format version this code does
 *   not read.
 * - `PathOutsideRoot`: a manifest path is not a clean absolute host path (or
 *   not a lossless name), so it could resolve outside the host root.
 * - `Corrupt`: a file's bytes do not match their content hash, or `data` has
 *   the wrong size or holes (it was not written by a take).
 * - `Unsafe`: a file or directory of the snapshot is not what a take makes:
 *   a link, a FIFO or other non-regular file, owned by another user, or
 *   writable by group or others.
 * - `Busy`: another process holds the snapshot's lock past the timeout;
 *   `pid` names it when the platform says.
 * - `UnsupportedFileType`: a recorded path is a socket, FIFO or device.
 * - `OtherMount`: a directory below a recorded path is another mount; a
 *   snapshot neither records nor restores across a mount.
 * - `Kept`: a restore had to remove something it may not (a mount at or
 *   below it); the detail lists what, the host is partly restored and the
 *   snapshot kept.
 * - `Unresolvable`: a host path could not be resolved below the root
 *   (a symlink loop, an unreadable link).
 * - `HostRootMismatch`: the snapshot was taken below another host root than
 *   the one it is being restored below (a mistyped `--host-root` would
 *   otherwise remove every recorded path that is missing there); pass
 *   `allowHostRootMismatch` when the same tree really has another name.
 * - `NotASnapshot`: what is at the snapshot's directory is not one (a file,
 *   or a directory holding more than a take writes: `--dir /etc` typed for
 *   `--dir /etc/snap`); a discard refuses it and removes nothing, a take
 *   writes nothing.
 * - `Io`: the file system refused an operation; `errno` and `detail` say
 *   which and where.
 */
export const SnapshotErrorReason = Schema.Literals([
  "Exists",
  "Missing",
  "InvalidPath",
  "InvalidManifest",
  "UnsupportedVersion",
  "PathOutsideRoot",
  "Corrupt",
  "Unsafe",
  "Busy",
  "UnsupportedFileType",
  "OtherMount",
  "Kept",
  "Unresolvable",
  "HostRootMismatch",
  "NotASnapshot",
  "Io"
])

/** Why a snapshot operation failed. */
export type SnapshotErrorReason = typeof SnapshotErrorReason.Type

/**
 * A snapshot could not be taken, checked or restored. It names the snapshot
 * directory, the host root, the host path concerned (empty when none), the
 * errno of a refused system call (empty when none), the pid of a lock's
 * holder (for `Busy`, when known) and what exactly is wrong, so a person can
 * go and look. A restore that fails keeps the snapshot; a corrupt one fails
 * before anything is written.
 */
export class SnapshotError extends Schema.TaggedError<SnapshotError>()("SnapshotError", {
  reason: SnapshotErrorReason,
  dir: Schema.String,
  hostRoot: Schema.String,
  path: Schema.String,
  errno: Schema.optionalKey(Schema.String),
  pid: Schema.optionalKey(Schema.Int),
  detail: Schema.String
}) {
  override get message(): string {
    const at = this.path === "" ? "" : ` at ${JSON.stringify(this.path)}`
    return `snapshot ${JSON.stringify(this.dir)} (host root ${JSON.stringify(this.hostRoot || "/")}): ${this.reason}${at}: ${this.detail}`
  }
}

/**
 * An upgrade failed and so did its rollback: the host is partly restored.
 * Carries both, so neither is lost: `upgrade` is the upgrade's cause,
 * `rollback` the restore's error. The snapshot is kept for `Snapshot.recover`.
 */
export class RollbackFailed extends Schema.TaggedError<RollbackFailed>()("RollbackFailed", {
  dir: Schema.String,
  hostRoot: Schema.String,
  upgrade: Schema.Cause(Schema.Unknown, Schema.Defect()),
  rollback: Schema.Union([SnapshotError, SystemdError])
}) {
  override get message(): string {
    return `the upgrade failed and rolling the configuration back failed too (${this.rollback.message}); the snapshot ${JSON.stringify(this.dir)} is kept for Snapshot.recover`
  }
}
