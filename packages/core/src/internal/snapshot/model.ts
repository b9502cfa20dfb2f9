/**
 * What a snapshot is on disk: the manifest Schema (format version 2, which
 * adds file times; version 1 is still read) and the names of the files in a
 * snapshot directory. How its operations fail is `SnapshotError`.
 *
 * Internal: the format is not part of the public face (docs/design/snapshots.md
 * describes it); the steps in this directory share it.
 *
 * @since 0.2.0
 */
import { Schema } from "effect"

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
