/**
 * The saved copy of the shared configuration (the Go package's `Snapshot`,
 * `TakeSnapshot`, `TakeSnapshotOf`, `Restore`, `Discard`, `Restored` and
 * `RestoreSnapshot`): taken before an upgrade rewrites the configuration,
 * restored when the upgrade fails, discarded when it succeeds, and crash safe
 * at every step, so that a node agent killed in the middle of an upgrade can
 * put the host back from a fresh process with {@link recover}.
 *
 * On disk a snapshot is a directory holding `manifest.json` (the
 * {@link Manifest} Schema: versioned, one entry per recorded path, a SHA-256
 * content hash per file) and `data` (every file's bytes, concatenated). A take
 * writes both into a temporary sibling directory, fsyncs them and the
 * directory, then renames it into place and fsyncs the parent: the snapshot
 * exists whole or not at all. A discard renames it aside before removing it,
 * so a half-removed snapshot is never mistaken for one to restore.
 *
 * A restore reads and checks the whole snapshot (Schema, paths, every content
 * hash) before it writes anything, then makes each recorded path exactly what
 * was recorded: each file is written to a temporary file in its own directory,
 * fsynced and renamed over the target; what is in the way is removed; what was
 * created below a recorded directory since is removed; modes and owners are
 * put back; every directory touched is fsynced at the end. Each step converges
 * on the recorded state whatever state it starts from, so running a restore
 * again after a crash at any point gives the same result. Paths are joined
 * below the host root with `HostPath` (parents resolved, the last component
 * never followed), and symlinks are recorded and restored as links, never
 * followed.
 *
 * Boundary: the paths themselves come from the caller or `ConfSnap`; the
 * content hash is effect's `Digest` (SHA-256 on WebCrypto, provided here, so
 * a snapshot needs only `FileSystem`, plus `Systemd` to restore).
 *
 * @since 0.1.0
 */
import { Effect, Exit, FileSystem, Option, Ref, Schema, type Scope, Semaphore } from "effect"
import { Digest } from "effect/crypto"
import type { PlatformError } from "effect/PlatformError"
import * as ConfSnap from "./ConfSnap.ts"
import * as HostPath from "./HostPath.ts"
import { Systemd, type SystemdError } from "./Systemd.ts"

/** The manifest's file name inside a snapshot directory. */
export const ManifestName = "manifest.json"

/** The name of the file holding every recorded file's bytes, concatenated, inside a snapshot directory. */
export const DataName = "data"

/** The manifest format version this module writes and reads. */
export const FormatVersion = 1

// ---------------------------------------------------------------------------
// The manifest
// ---------------------------------------------------------------------------

const PermissionBits = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 0o7777 }))
const Id = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 0xffffffff }))
const ByteCount = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
const Sha256Hex = Schema.String.check(Schema.isPattern(/^[0-9a-f]{64}$/))
const LinkTarget = Schema.NonEmptyString.check(
  Schema.makeFilter((s: string) => (s.includes("\0") ? "contains a NUL byte" : undefined))
)

/** A regular file: its permission bits, owner, size, and where its bytes are in `data` with their SHA-256. */
export const FileEntry = Schema.Struct({
  type: Schema.Literal("File"),
  path: Schema.String,
  mode: PermissionBits,
  uid: Id,
  gid: Id,
  size: ByteCount,
  offset: ByteCount,
  sha256: Sha256Hex
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

/** A symbolic link: its target, verbatim (never followed, never normalised). */
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
 * taken below (for a person; a restore uses the root it is given, which may
 * name the same tree differently, such as `/proc/<pid>/root`), the paths asked
 * for, the exclusions, the size of `data`, and the entries in pre-order (a
 * directory before its children). Paths are clean absolute host paths.
 */
export const Manifest = Schema.Struct({
  format: Schema.Literal("hostnode-snapshot"),
  version: Schema.Literal(FormatVersion),
  hostRoot: Schema.String,
  paths: Schema.Array(Schema.String),
  exclude: Schema.Array(Schema.String),
  dataSize: ByteCount,
  entries: Schema.Array(Entry)
})

/** A snapshot's manifest. */
export type Manifest = typeof Manifest.Type

const ManifestJson = Schema.fromJsonString(Manifest)
const UnknownJson = Schema.fromJsonString(Schema.Unknown)

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/**
 * Why a snapshot operation failed:
 * - `Exists`: a take found a snapshot already in `dir` (an earlier process
 *   left it; `recover` it first, or it is lost).
 * - `Missing`: there is no snapshot in `dir` (it was discarded).
 * - `InvalidPath`: a path given to a take is not absolute, or the snapshot
 *   directory lies inside a recorded path (or the other way round).
 * - `InvalidManifest`: the manifest is not JSON, is truncated, does not match
 *   the Schema, or its entries do not form the trees it names.
 * - `UnsupportedVersion`: the manifest is of a format version this code does
 *   not read.
 * - `PathOutsideRoot`: a manifest path is not a clean absolute host path, so
 *   it could resolve outside the host root.
 * - `Corrupt`: a file's bytes do not match their content hash, or `data` has
 *   the wrong size.
 * - `UnsupportedFileType`: a recorded path is a socket, FIFO or device.
 * - `Unresolvable`: a host path could not be resolved below the root
 *   (a symlink loop, an unreadable link).
 * - `HostRootMismatch`: the snapshot was taken below another host root than
 *   the one it is being restored below (a mistyped `--host-root` would
 *   otherwise remove every recorded path that is missing there); pass
 *   `allowHostRootMismatch` when the same tree really has another name.
 * - `Io`: the file system refused an operation; `detail` says which.
 */
export const SnapshotErrorReason = Schema.Literals([
  "Exists",
  "Missing",
  "InvalidPath",
  "InvalidManifest",
  "UnsupportedVersion",
  "PathOutsideRoot",
  "Corrupt",
  "UnsupportedFileType",
  "Unresolvable",
  "HostRootMismatch",
  "Io"
])

/** Why a snapshot operation failed. */
export type SnapshotErrorReason = typeof SnapshotErrorReason.Type

/**
 * A snapshot could not be taken, checked or restored. It names the snapshot
 * directory, the host root, the host path concerned (empty when none) and
 * what exactly is wrong, so a person can go and look. A restore that fails
 * keeps the snapshot; a corrupt one fails before anything is written.
 */
export class SnapshotError extends Schema.TaggedError<SnapshotError>()("SnapshotError", {
  reason: SnapshotErrorReason,
  dir: Schema.String,
  hostRoot: Schema.String,
  path: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    const at = this.path === "" ? "" : ` at ${JSON.stringify(this.path)}`
    return `snapshot ${JSON.stringify(this.dir)} (host root ${JSON.stringify(this.hostRoot || "/")}): ${this.reason}${at}: ${this.detail}`
  }
}

// ---------------------------------------------------------------------------
// The API
// ---------------------------------------------------------------------------

/**
 * A taken snapshot. `restore` puts the recorded paths back (and reloads
 * systemd on the real root); it can run again after a failure, and keeps the
 * snapshot whatever happens. `discard` removes the saved copy and never
 * fails: by then the configuration is in its final state, so a failure is
 * logged. `restored` says whether a restore has succeeded.
 */
export interface Snapshot {
  /** Where the snapshot is saved. */
  readonly dir: string
  /** The canonical host root it was taken below and restores to. */
  readonly hostRoot: string
  /**
   * The recorded paths that were absent when it was taken. When that is every
   * path, the host root was probably not the node's (a mistyped root): a
   * restore would remove them all there.
   */
  readonly absent: ReadonlyArray<string>
  /** The recorded host paths (cleaned, those below another listed path dropped). */
  readonly paths: ReadonlyArray<string>
  /**
   * Makes every recorded path exactly as recorded, after checking the whole
   * snapshot; on the real root ends with `daemonReload`. Idempotent; a
   * failure keeps the snapshot for another try or `recover`.
   */
  readonly restore: Effect.Effect<void, SnapshotError | SystemdError, Systemd>
  /** Removes the saved copy; a failure is logged, not returned. */
  readonly discard: Effect.Effect<void>
  /** Whether a `restore` of this handle has succeeded. */
  readonly restored: Effect.Effect<boolean>
}

/** Where a snapshot goes and which host root it records. */
export interface TakeOptions {
  /** The snapshot directory (a real path, not joined below `hostRoot`); it must not exist yet. */
  readonly dir: string
  /**
   * The host root (`""` or `"/"` for the real host, an absolute directory, or
   * a decoded `HostPath.HostRoot`). The manifest records it canonical.
   */
  readonly hostRoot: string | HostPath.HostRoot
}

/** {@link TakeOptions} with the paths to record. */
export interface TakeOfOptions extends TakeOptions {
  /**
   * Absolute host paths, each a file, symlink, directory (recorded
   * recursively) or absent. A path below another listed path is covered by
   * it and dropped.
   */
  readonly paths: ReadonlyArray<string>
  /**
   * Host paths a directory walk skips and a restore never touches (default
   * `ConfSnap.Exclude`: the Kubernetes PKI). A listed path is taken even when
   * excluded; exclusion prunes only what a walk finds.
   */
  readonly exclude?: ReadonlyArray<string> | undefined
}

/** Options of {@link scoped}: {@link TakeOptions} and, optionally, the paths ({@link ConfSnap.DefaultPaths} by default). */
export interface ScopedOptions extends TakeOptions {
  readonly paths?: ReadonlyArray<string> | undefined
  readonly exclude?: ReadonlyArray<string> | undefined
}

// ---------------------------------------------------------------------------
// Paths
// ---------------------------------------------------------------------------

const isHostPath = (p: string): boolean =>
  p.startsWith("/") && p !== "/" && !p.includes("\0") && HostPath.clean(p) === p

const baseOf = (p: string): string => p.slice(p.lastIndexOf("/") + 1)

const isBelow = (ancestor: string, p: string): boolean => ancestor !== p && HostPath.covers(ancestor, p)

/** The staging directories of a take into `dir` start with this; `recover` removes them. */
const stagingPrefix = (dir: string) => `${baseOf(dir)}.tmp-`

/** A discarded snapshot is renamed to this before it is removed. */
const discardingPath = (dir: string) => `${dir}.discarding`

// ---------------------------------------------------------------------------
// Helpers over one FileSystem, one snapshot directory and one host root
// ---------------------------------------------------------------------------

interface Ctx {
  readonly fs: FileSystem.FileSystem
  readonly dir: string
  /** The canonical host root path, for messages and the manifest. */
  readonly hostRoot: string
  readonly root: HostPath.HostRoot
  /** Restore a snapshot recorded below another host root (see `HostRootMismatch`). */
  readonly allowHostRootMismatch: boolean
}

/**
 * The context of one operation: the host root decoded (a bad one fails here,
 * before anything is read or written); the snapshot directory must be an
 * absolute path other than `/`.
 */
const makeCtx = (dir: string, hostRoot: string | HostPath.HostRoot, allowHostRootMismatch = false) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const root = yield* HostPath.rootOf({ hostRoot })
    const ctx: Ctx = { fs, dir: HostPath.clean(dir), hostRoot: root.path, root, allowHostRootMismatch }
    if (!isHostPath(ctx.dir) || !dir.startsWith("/")) {
      return yield* fail(
        ctx,
        "InvalidPath",
        "",
        `the snapshot directory ${JSON.stringify(dir)} must be an absolute path`
      )
    }
    return ctx
  })

/** The host root of an operation's options, for log annotations before it is decoded. */
const rootLabel = (hostRoot: string | HostPath.HostRoot): string =>
  HostPath.isHostRoot(hostRoot) ? hostRoot.path : hostRoot === "" ? "/" : hostRoot

/** The listed paths a manifest records as absent. */
const absentPaths = (manifest: Manifest): ReadonlyArray<string> => {
  const listed = new Set(manifest.paths)
  return manifest.entries.filter((e) => e.type === "Absent" && listed.has(e.path)).map((e) => e.path)
}

/** The error of this snapshot: its directory and host root, the reason, the path and what happened. */
const snapshotError = (ctx: Ctx, reason: SnapshotErrorReason, path: string, detail: string) =>
  new SnapshotError({ reason, dir: ctx.dir, hostRoot: ctx.hostRoot, path, detail })

const fail = (ctx: Ctx, reason: SnapshotErrorReason, path: string, detail: string) =>
  Effect.fail(snapshotError(ctx, reason, path, detail))

const io =
  (ctx: Ctx, what: string, path = "") =>
  (e: PlatformError): SnapshotError =>
    snapshotError(ctx, "Io", path, `${what}: ${e.message}`)

/** `lstat`, with a missing path (or a parent that is not a directory) as `None`. */
const lstatOption = (ctx: Ctx, full: string, path: string) =>
  ctx.fs.lstat(full).pipe(
    Effect.map(Option.some),
    Effect.catchTag("PlatformError", (e) =>
      HostPath.isMissing(e)
        ? Effect.succeed(Option.none<FileSystem.File.Info>())
        : Effect.fail(io(ctx, `lstat ${full}`, path)(e))
    )
  )

const resolveFull = (ctx: Ctx, path: string) =>
  HostPath.resolve(ctx.root.path, path, { followFinal: false }).pipe(
    Effect.provideService(FileSystem.FileSystem, ctx.fs),
    Effect.mapError((e) => snapshotError(ctx, "Unresolvable", path, e.message))
  )

/** fsync of a file or directory by path (a directory is opened read-only, which Linux allows and fsync accepts). */
const syncPath = (ctx: Ctx, full: string, path = "") =>
  Effect.scoped(
    Effect.flatMap(ctx.fs.open(full, { flag: "r" }), (f) => f.sync).pipe(
      Effect.mapError(io(ctx, `fsync ${full}`, path))
    )
  )

const ownerOf = (ctx: Ctx, info: FileSystem.File.Info, path: string) =>
  Option.isSome(info.uid) && Option.isSome(info.gid)
    ? Effect.succeed({ uid: info.uid.value, gid: info.gid.value })
    : fail(ctx, "Io", path, "the file system does not report owners, so they could not be recorded")

/** Reads `size` bytes at `position` of `file`; fewer means the file is shorter. */
const readExactly = (file: FileSystem.File, position: number, size: number) =>
  Effect.gen(function* () {
    const buf = new Uint8Array(size)
    let n = 0
    while (n < size) {
      const r = yield* file.read(buf.subarray(n), { position: BigInt(position + n) })
      if (r === 0) break
      n += r
    }
    return n === size ? buf : buf.subarray(0, n)
  })

/**
 * Reads a whole open file of `size` bytes (from fstat of the same open file).
 * A file a concurrent writer grows meanwhile is read up to `size`, one that
 * shrinks up to its end: a snapshot of a file being written is of some state.
 */
const readAll = (file: FileSystem.File, size: number) => readExactly(file, 0, size)

const sha256 = (bytes: Uint8Array) => Effect.flatMap(Digest.Digest, (d) => d.digestHex(Digest.sha256, bytes))

/**
 * Byte equality. Both sides are viewed as plain `Uint8Array`s (file reads may
 * hand back a subclass), which keeps the loop monomorphic and fast, and
 * compared four bytes at a time where their offsets allow.
 */
const bytesEqual = (x: Uint8Array, y: Uint8Array): boolean => {
  if (x.length !== y.length) return false
  const a = new Uint8Array(x.buffer, x.byteOffset, x.byteLength)
  const b = new Uint8Array(y.buffer, y.byteOffset, y.byteLength)
  let i = 0
  if (a.byteOffset % 4 === b.byteOffset % 4) {
    const head = (4 - (a.byteOffset % 4)) % 4
    for (; i < head && i < a.length; i++) if (a[i] !== b[i]) return false
    const words = Math.floor((a.length - i) / 4)
    if (words > 0) {
      const wa = new Uint32Array(a.buffer, a.byteOffset + i, words)
      const wb = new Uint32Array(b.buffer, b.byteOffset + i, words)
      for (let w = 0; w < words; w++) if (wa[w] !== wb[w]) return false
      i += words * 4
    }
  }
  for (; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** Names in the parent of `dir` left by a take that never committed or a discard that never finished. */
const leftovers = (ctx: Ctx) =>
  Effect.gen(function* () {
    const parent = HostPath.dirname(ctx.dir)
    const names = yield* ctx.fs
      .readDirectory(parent)
      .pipe(
        Effect.catchTag("PlatformError", (e) =>
          HostPath.isMissing(e) ? Effect.succeed<Array<string>>([]) : Effect.fail(io(ctx, `readdir ${parent}`)(e))
        )
      )
    const prefix = stagingPrefix(ctx.dir)
    const discarding = baseOf(discardingPath(ctx.dir))
    return names.filter((n) => n.startsWith(prefix) || n === discarding).map((n) => HostPath.child(parent, n))
  })

const removeLeftovers = (ctx: Ctx) =>
  Effect.gen(function* () {
    const found = yield* leftovers(ctx)
    for (const p of found) {
      yield* ctx.fs.remove(p, { recursive: true }).pipe(Effect.mapError(io(ctx, `remove leftover ${p}`)))
      yield* Effect.logInfo("removed an uncommitted or half-discarded snapshot").pipe(Effect.annotateLogs({ path: p }))
    }
    if (found.length > 0) yield* syncPath(ctx, HostPath.dirname(ctx.dir))
  })

// ---------------------------------------------------------------------------
// Take
// ---------------------------------------------------------------------------

/** The listed paths, checked and cleaned; a path at or below another listed one is dropped. */
const normalizePaths = (ctx: Ctx, paths: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const cleaned: Array<string> = []
    for (const p of paths) {
      if (!p.startsWith("/") || p.includes("\0")) {
        return yield* fail(ctx, "InvalidPath", p, "a snapshot path must be an absolute host path without NUL bytes")
      }
      const c = HostPath.clean(p)
      if (c === "/") return yield* fail(ctx, "InvalidPath", p, "the whole host root cannot be snapshotted")
      cleaned.push(c)
    }
    const kept = [...new Set(cleaned)].filter((p) => !cleaned.some((q) => isBelow(q, p)))
    const dirFull = HostPath.clean(ctx.dir)
    for (const p of kept) {
      const full = HostPath.fullPath(ctx.root, p)
      if (HostPath.covers(full, dirFull) || HostPath.covers(dirFull, full)) {
        // The snapshot would record itself (and a restore remove it as
        // created since), or a restore would write into the snapshot.
        return yield* fail(ctx, "InvalidPath", p, `the snapshot directory and the recorded path ${full} overlap`)
      }
    }
    return kept
  })

/** Concurrent file-system calls a take or restore keeps in flight; each is a round trip to libuv's pool. */
const Concurrency = 16

/** Files read (and held in memory) at once by a take before their bytes are appended to `data`. */
const TakeBatch = 64

/** A recorded file before its bytes are read: where it is and the slot of its entry. */
interface PendingFile {
  readonly path: string
  readonly full: string
  readonly slot: number
}

interface Walk {
  /** The entries in pre-order; a file's slot is filled once its bytes are read. */
  readonly entries: Array<Entry | undefined>
  readonly files: Array<PendingFile>
}

/**
 * Records `path` (at `full`; `known` is its lstat when its parent's listing
 * already looked) and, for a directory, everything below it that is not
 * excluded, in pre-order. Files are only noted here; {@link readFiles} reads them.
 */
const walkPath = (
  ctx: Ctx,
  walk: Walk,
  exclude: ReadonlyArray<string>,
  path: string,
  full: string,
  known?: Option.Option<FileSystem.File.Info>
): Effect.Effect<void, SnapshotError> =>
  Effect.gen(function* () {
    const info = known ?? (yield* lstatOption(ctx, full, path))
    if (Option.isNone(info)) {
      walk.entries.push({ type: "Absent", path })
      return
    }
    switch (info.value.type) {
      case "File":
        walk.files.push({ path, full, slot: walk.entries.length })
        walk.entries.push(undefined)
        return
      case "SymbolicLink": {
        const target = yield* ctx.fs.readLink(full).pipe(Effect.mapError(io(ctx, `readlink ${full}`, path)))
        walk.entries.push({ type: "SymbolicLink", path, target })
        return
      }
      case "Directory": {
        const owner = yield* ownerOf(ctx, info.value, path)
        walk.entries.push({ type: "Directory", path, mode: info.value.mode & 0o7777, ...owner })
        const names = yield* ctx.fs.readDirectory(full).pipe(Effect.mapError(io(ctx, `readdir ${full}`, path)))
        names.sort()
        const kept = names.filter((name) => !exclude.some((x) => HostPath.covers(x, HostPath.child(path, name))))
        const infos = yield* Effect.forEach(
          kept,
          (name) => lstatOption(ctx, HostPath.child(full, name), HostPath.child(path, name)),
          {
            concurrency: Concurrency
          }
        )
        for (const [i, name] of kept.entries()) {
          yield* walkPath(ctx, walk, exclude, HostPath.child(path, name), HostPath.child(full, name), infos[i])
        }
        return
      }
      default:
        return yield* fail(
          ctx,
          "UnsupportedFileType",
          path,
          `a ${info.value.type} cannot be recorded and restored faithfully`
        )
    }
  })

/**
 * Reads the noted files, several at once, hashes them and appends their
 * bytes to `data` in order, filling in their entries. Returns the size of
 * `data`.
 */
const readFiles = (ctx: Ctx, walk: Walk, data: FileSystem.File) =>
  Effect.gen(function* () {
    let offset = 0
    for (let from = 0; from < walk.files.length; from += TakeBatch) {
      const batch = walk.files.slice(from, from + TakeBatch)
      const read = yield* Effect.forEach(
        batch,
        (f) =>
          Effect.gen(function* () {
            // Opened without following, and described by fstat of the same
            // open file, so bytes, mode and owner belong to one inode even if
            // the path is swapped for a link meanwhile.
            const { bytes, st } = yield* Effect.scoped(
              Effect.gen(function* () {
                const file = yield* ctx.fs.open(f.full, { flag: "r", noFollow: true })
                const st = yield* file.stat
                const bytes = yield* readAll(file, Number(st.size))
                return { bytes, st }
              })
            ).pipe(Effect.mapError(io(ctx, `read ${f.full}`, f.path)))
            const owner = yield* ownerOf(ctx, st, f.path)
            return { f, bytes, st, owner, hash: yield* sha256(bytes) }
          }),
        { concurrency: Concurrency }
      )
      // One append per batch rather than one per file.
      const chunk = new Uint8Array(read.reduce((n, r) => n + r.bytes.length, 0))
      let at = 0
      for (const r of read) {
        chunk.set(r.bytes, at)
        at += r.bytes.length
      }
      yield* data.writeAll(chunk).pipe(Effect.mapError(io(ctx, `write ${DataName}`)))
      for (const { f, bytes, st, owner, hash } of read) {
        walk.entries[f.slot] = {
          type: "File",
          path: f.path,
          mode: st.mode & 0o7777,
          ...owner,
          size: bytes.length,
          offset,
          sha256: hash
        }
        offset += bytes.length
      }
    }
    return offset
  })

const makeHandle = (ctx: Ctx, manifest: Manifest) =>
  Effect.gen(function* () {
    const restored = yield* Ref.make(false)
    const lock = yield* Semaphore.make(1)
    const snapshot: Snapshot = {
      dir: ctx.dir,
      hostRoot: ctx.hostRoot,
      paths: manifest.paths,
      absent: absentPaths(manifest),
      restore: lock.withPermits(1)(
        restoreAt(ctx).pipe(
          Effect.tap(() => Ref.set(restored, true)),
          Effect.withSpan("Snapshot.restore", { attributes: { dir: ctx.dir, hostRoot: ctx.hostRoot } })
        )
      ),
      discard: lock.withPermits(1)(discardAt(ctx)),
      restored: Ref.get(restored)
    }
    return snapshot
  })

/**
 * Saves `paths` below `hostRoot` into `dir` (the Go package's
 * `TakeSnapshotOf`), for a mode whose node stack writes more of the host in
 * place (see `ConfSnap.pathsFor`). Fails with `Exists` when `dir` already
 * holds a snapshot: that one records the state before an interrupted upgrade
 * and must be recovered first. A take that fails or is killed leaves no
 * snapshot, only a temporary sibling that the next take or `recover` removes;
 * the recorded paths are only ever read.
 */
export const takeOf: (
  options: TakeOfOptions
) => Effect.Effect<Snapshot, SnapshotError | HostPath.HostPathError, FileSystem.FileSystem> = Effect.fn(
  "Snapshot.takeOf"
)(
  function* (options: TakeOfOptions) {
    const ctx = yield* makeCtx(options.dir, options.hostRoot)
    const fs = ctx.fs
    const exclude = (options.exclude ?? ConfSnap.Exclude).map(HostPath.clean)
    for (const x of exclude) {
      if (!isHostPath(x))
        return yield* fail(ctx, "InvalidPath", x, "an exclusion must be an absolute host path other than /")
    }
    const paths = yield* normalizePaths(ctx, options.paths)
    if (Option.isSome(yield* lstatOption(ctx, ctx.dir, ""))) {
      return yield* fail(
        ctx,
        "Exists",
        "",
        "a snapshot is already there (an earlier upgrade did not finish); recover or discard it first"
      )
    }
    yield* removeLeftovers(ctx)
    const parent = HostPath.dirname(ctx.dir)
    yield* fs.makeDirectory(parent, { recursive: true }).pipe(Effect.mapError(io(ctx, `mkdir ${parent}`)))
    const staging = yield* fs
      .makeTempDirectory({ directory: parent, prefix: stagingPrefix(ctx.dir) })
      .pipe(Effect.mapError(io(ctx, `mkdtemp in ${parent}`)))
    const written = Effect.gen(function* () {
      const manifest = yield* Effect.scoped(
        Effect.gen(function* () {
          const data = yield* fs
            .open(`${staging}/${DataName}`, { flag: "wx", mode: 0o600 })
            .pipe(Effect.mapError(io(ctx, `create ${DataName}`)))
          const walk: Walk = { entries: [], files: [] }
          for (const p of paths) yield* walkPath(ctx, walk, exclude, p, yield* resolveFull(ctx, p))
          const dataSize = yield* readFiles(ctx, walk, data)
          yield* data.sync.pipe(Effect.mapError(io(ctx, `fsync ${DataName}`)))
          const manifest: Manifest = {
            format: "hostnode-snapshot",
            version: FormatVersion,
            hostRoot: ctx.hostRoot,
            paths,
            exclude,
            dataSize,
            entries: walk.entries.filter((e): e is Entry => e !== undefined)
          }
          return manifest
        })
      )
      const text = yield* Schema.encodeEffect(ManifestJson)(manifest).pipe(
        Effect.mapError((e) =>
          snapshotError(ctx, "InvalidManifest", "", `the manifest could not be encoded: ${e.message}`)
        )
      )
      const manifestPath = `${staging}/${ManifestName}`
      yield* fs
        .writeFileString(manifestPath, text, { flag: "wx", mode: 0o600 })
        .pipe(Effect.mapError(io(ctx, `write ${ManifestName}`)))
      yield* syncPath(ctx, manifestPath)
      yield* syncPath(ctx, staging)
      return manifest
    })
    const manifest = yield* written.pipe(
      Effect.tapError(() => fs.remove(staging, { recursive: true }).pipe(Effect.ignore))
    )
    // The commit point: before the rename there is no snapshot, after it a whole one.
    yield* fs.rename(staging, ctx.dir).pipe(
      Effect.mapError(io(ctx, `rename ${staging} to ${ctx.dir}`)),
      Effect.tapError(() => fs.remove(staging, { recursive: true }).pipe(Effect.ignore))
    )
    yield* syncPath(ctx, parent)
    yield* Effect.logInfo("configuration snapshot taken").pipe(
      Effect.annotateLogs({ entries: manifest.entries.length, bytes: manifest.dataSize })
    )
    const absent = absentPaths(manifest)
    if (absent.length === paths.length) {
      yield* Effect.logWarning(
        `every recorded path is absent below host root ${ctx.hostRoot}: is that the node's root? A restore there would only remove them`
      ).pipe(Effect.annotateLogs({ paths: absent.length }))
    }
    return yield* makeHandle(ctx, manifest)
  },
  (effect, options) =>
    effect.pipe(
      Effect.provide(Digest.layerWebCrypto),
      Effect.annotateLogs({ snapshotDir: options.dir, hostRoot: rootLabel(options.hostRoot) })
    )
)

/**
 * Saves the shared configuration ({@link ConfSnap.DefaultPaths}, without
 * {@link ConfSnap.Exclude}) below `hostRoot` into `dir` (the Go package's
 * `TakeSnapshot`). See {@link takeOf}.
 */
export const take = (
  options: TakeOptions
): Effect.Effect<Snapshot, SnapshotError | HostPath.HostPathError, FileSystem.FileSystem> =>
  takeOf({ ...options, paths: ConfSnap.DefaultPaths, exclude: ConfSnap.Exclude })

// ---------------------------------------------------------------------------
// Load and check
// ---------------------------------------------------------------------------

/** A manifest with its entries indexed, after every structural check. */
interface Checked {
  readonly manifest: Manifest
  /** The names each recorded directory must hold, by directory path. */
  readonly children: ReadonlyMap<string, ReadonlySet<string>>
  readonly topLevel: ReadonlySet<string>
}

const invalid = (ctx: Ctx, path: string, detail: string) => fail(ctx, "InvalidManifest", path, detail)

/** Every check that needs no file contents: paths, tree shape, data ranges. */
const check = (ctx: Ctx, manifest: Manifest) =>
  Effect.gen(function* () {
    for (const p of [...manifest.paths, ...manifest.exclude, ...manifest.entries.map((e) => e.path)]) {
      if (!isHostPath(p)) {
        return yield* fail(
          ctx,
          "PathOutsideRoot",
          p,
          "not a clean absolute host path, so it could resolve outside the host root"
        )
      }
    }
    const topLevel = new Set(manifest.paths)
    if (topLevel.size !== manifest.paths.length) return yield* invalid(ctx, "", "a path is listed twice")
    for (const p of manifest.paths) {
      if (manifest.paths.some((q) => isBelow(q, p))) {
        return yield* invalid(ctx, p, "a listed path lies below another listed path")
      }
    }
    const types = new Map<string, Entry["type"]>()
    const children = new Map<string, Set<string>>()
    for (const e of manifest.entries) {
      if (types.has(e.path)) return yield* invalid(ctx, e.path, "recorded twice")
      if (!topLevel.has(e.path)) {
        const parent = HostPath.dirname(e.path)
        if (types.get(parent) !== "Directory") {
          return yield* invalid(ctx, e.path, "neither a listed path nor below a directory recorded before it")
        }
        if (e.type === "Absent") return yield* invalid(ctx, e.path, "only a listed path can be absent")
        if (manifest.exclude.some((x) => HostPath.covers(x, e.path))) {
          return yield* invalid(ctx, e.path, "an excluded path cannot be recorded below a directory")
        }
        children.get(parent)?.add(baseOf(e.path))
      }
      types.set(e.path, e.type)
      if (e.type === "Directory") children.set(e.path, new Set())
      if (e.type === "File" && e.offset + e.size > manifest.dataSize) {
        return yield* fail(ctx, "Corrupt", e.path, `its bytes lie outside ${DataName} (${manifest.dataSize} bytes)`)
      }
    }
    for (const p of manifest.paths) {
      if (!types.has(p)) return yield* invalid(ctx, p, "a listed path has no entry")
    }
    return { manifest, children, topLevel } satisfies Checked
  })

const loadManifest = (ctx: Ctx) =>
  Effect.gen(function* () {
    const manifestPath = `${ctx.dir}/${ManifestName}`
    const text = yield* ctx.fs
      .readFileString(manifestPath)
      .pipe(
        Effect.catchTag("PlatformError", (e) =>
          HostPath.isMissing(e)
            ? Effect.flatMap(lstatOption(ctx, ctx.dir, ""), (d) =>
                Option.isNone(d)
                  ? fail(ctx, "Missing", "", "there is no snapshot in this directory")
                  : fail(ctx, "InvalidManifest", "", `${ManifestName} is missing`)
              )
            : Effect.fail(io(ctx, `read ${ManifestName}`)(e))
        )
      )
    const raw = yield* Schema.decodeUnknownEffect(UnknownJson)(text).pipe(
      Effect.mapError((e) =>
        snapshotError(ctx, "InvalidManifest", "", `${ManifestName} is not valid JSON (truncated?): ${e.message}`)
      )
    )
    if (typeof raw === "object" && raw !== null && "version" in raw && raw.version !== FormatVersion) {
      return yield* fail(
        ctx,
        "UnsupportedVersion",
        "",
        `format version ${JSON.stringify(raw.version)}; this code reads version ${FormatVersion}`
      )
    }
    const manifest = yield* Schema.decodeUnknownEffect(Manifest)(raw).pipe(
      Effect.mapError((e) =>
        snapshotError(ctx, "InvalidManifest", "", `${ManifestName} does not match the manifest Schema: ${e.message}`)
      )
    )
    return yield* check(ctx, manifest)
  })

/** The largest `data` a restore reads in one go and keeps from its check to its writes; a larger one is read file by file, twice. */
const CacheBudget = 64 * 1024 * 1024

/**
 * Reads a file entry's bytes from `data` and checks their hash. A mismatch
 * is `Corrupt` naming the path.
 */
const readVerified = (ctx: Ctx, data: FileSystem.File, e: FileEntry) =>
  Effect.gen(function* () {
    const bytes = yield* readExactly(data, e.offset, e.size).pipe(Effect.mapError(io(ctx, `read ${DataName}`, e.path)))
    if (bytes.length !== e.size) {
      return yield* fail(ctx, "Corrupt", e.path, `${DataName} ends before this file's ${e.size} bytes`)
    }
    return yield* verified(ctx, e, bytes)
  })

/** `bytes` when their hash is the one recorded for `e`; otherwise `Corrupt` naming the path. */
const verified = (ctx: Ctx, e: FileEntry, bytes: Uint8Array) =>
  Effect.flatMap(sha256(bytes), (hash) =>
    hash === e.sha256
      ? Effect.succeed(bytes)
      : fail(ctx, "Corrupt", e.path, `content hash ${hash} does not match the recorded ${e.sha256}`)
  )

// ---------------------------------------------------------------------------
// Restore
// ---------------------------------------------------------------------------

/** The temporary name a file or link is written under before it is renamed over `path`. */
const tempName = (index: number, taken: ReadonlySet<string> | undefined): string => {
  let name = `.hostnode-restore-${index}.tmp`
  while (taken?.has(name)) name = `${name}~`
  return name
}

interface Leaf {
  readonly entry: FileEntry | SymlinkEntry
  readonly index: number
  readonly full: string
  readonly parentFull: string
  readonly topLevel: boolean
  readonly current: Option.Option<FileSystem.File.Info>
}

/** The restore itself, after the snapshot has been loaded and checked. */
const restoreChecked = (ctx: Ctx, checked: Checked, data: FileSystem.File) =>
  Effect.gen(function* () {
    const { fs } = ctx
    const { manifest, children, topLevel } = checked
    const exclude = manifest.exclude
    const isExcluded = (path: string) => exclude.some((x) => HostPath.covers(x, path))

    // 1. Check every file's bytes before anything is written. A snapshot of
    //    up to CacheBudget bytes is read in one go and kept for step 3.
    const files = manifest.entries.filter((e): e is FileEntry => e.type === "File")
    const whole =
      manifest.dataSize <= CacheBudget
        ? yield* readExactly(data, 0, manifest.dataSize).pipe(Effect.mapError(io(ctx, `read ${DataName}`)))
        : undefined
    // From the cache (checked here), or read and checked file by file (again in step 3).
    const contents = (e: FileEntry) =>
      whole !== undefined ? Effect.succeed(whole.subarray(e.offset, e.offset + e.size)) : readVerified(ctx, data, e)
    yield* Effect.forEach(
      files,
      (e) => (whole !== undefined ? verified(ctx, e, whole.subarray(e.offset, e.offset + e.size)) : contents(e)),
      { concurrency: Concurrency, discard: true }
    )

    let changes = 0
    const changed = () => {
      changes++
    }

    /**
     * Removes what is at `full` (host path `path`) without following links.
     * Excluded paths below it stay, with the directories leading to them.
     */
    const removeTree = (full: string, path: string): Effect.Effect<void, SnapshotError> =>
      Effect.gen(function* () {
        if (isExcluded(path)) return
        changed()
        if (!exclude.some((x) => isBelow(path, x))) {
          yield* fs.remove(full, { recursive: true }).pipe(Effect.mapError(io(ctx, `remove ${full}`, path)))
          return
        }
        const info = yield* lstatOption(ctx, full, path)
        if (Option.isNone(info)) return
        if (info.value.type !== "Directory") {
          yield* fs.remove(full).pipe(Effect.mapError(io(ctx, `remove ${full}`, path)))
          return
        }
        const names = yield* fs.readDirectory(full).pipe(Effect.mapError(io(ctx, `readdir ${full}`, path)))
        for (const name of names) yield* removeTree(HostPath.child(full, name), HostPath.child(path, name))
      })

    const ensureParent = (parentFull: string, path: string) =>
      fs.makeDirectory(parentFull, { recursive: true }).pipe(Effect.mapError(io(ctx, `mkdir ${parentFull}`, path)))

    // 2. Structure, parents first: directories exist as directories, absent
    //    paths are gone, and recorded directories hold nothing unrecorded.
    const dirFull = new Map<string, string>()
    const leaves: Array<Leaf> = []
    const toSync = new Set<string>()
    // What a recorded directory's children are, looked up together when the
    // directory is reached (several at once) rather than one by one.
    const known = new Map<string, Option.Option<FileSystem.File.Info>>()
    for (const [index, e] of manifest.entries.entries()) {
      const isTop = topLevel.has(e.path)
      const full = isTop
        ? yield* resolveFull(ctx, e.path)
        : HostPath.child(dirFull.get(HostPath.dirname(e.path)) ?? "", baseOf(e.path))
      const parentFull = HostPath.dirname(full)
      toSync.add(parentFull)
      const current = known.get(e.path) ?? (yield* lstatOption(ctx, full, e.path))
      known.delete(e.path)
      switch (e.type) {
        case "Absent":
          if (Option.isSome(current)) yield* removeTree(full, e.path)
          break
        case "Directory": {
          dirFull.set(e.path, full)
          toSync.add(full)
          const want = [...(children.get(e.path) ?? [])]
          if (Option.isSome(current) && current.value.type === "Directory") {
            const wanted = new Set(want)
            const names = yield* fs.readDirectory(full).pipe(Effect.mapError(io(ctx, `readdir ${full}`, e.path)))
            for (const name of names) {
              if (!wanted.has(name)) yield* removeTree(HostPath.child(full, name), HostPath.child(e.path, name))
            }
            const present = new Set(names)
            const infos = yield* Effect.forEach(
              want,
              (name) =>
                present.has(name)
                  ? lstatOption(ctx, HostPath.child(full, name), HostPath.child(e.path, name))
                  : Effect.succeed(Option.none<FileSystem.File.Info>()),
              { concurrency: Concurrency }
            )
            for (const [i, name] of want.entries()) known.set(HostPath.child(e.path, name), infos[i] ?? Option.none())
            break
          }
          if (Option.isSome(current)) yield* removeTree(full, e.path)
          else if (isTop) yield* ensureParent(parentFull, e.path)
          // Private until its mode is set in step 4, once its contents are back.
          yield* fs.makeDirectory(full, { mode: 0o700 }).pipe(Effect.mapError(io(ctx, `mkdir ${full}`, e.path)))
          for (const name of want) known.set(HostPath.child(e.path, name), Option.none())
          changed()
          break
        }
        default:
          leaves.push({ entry: e, index, full, parentFull, topLevel: isTop, current })
      }
    }

    // 3. Files and links, several at once: each is written beside its target
    //    under a temporary name, fsynced, then renamed over it.
    const restoreLeaf = (leaf: Leaf) =>
      Effect.gen(function* () {
        const { entry: e, full, parentFull, current } = leaf
        const siblings = leaf.topLevel ? undefined : children.get(HostPath.dirname(e.path))
        const tmp = HostPath.child(parentFull, tempName(leaf.index, siblings))
        // A crash may have left this leaf's temporary file; below a recorded
        // directory step 2 removed it, beside a listed path it goes here.
        const clearTemp = leaf.topLevel
          ? fs.remove(tmp, { force: true }).pipe(Effect.mapError(io(ctx, `remove ${tmp}`, e.path)))
          : Effect.void
        const cur = Option.getOrUndefined(current)
        if (e.type === "SymbolicLink") {
          if (cur?.type === "SymbolicLink") {
            const target = yield* fs.readLink(full).pipe(Effect.mapError(io(ctx, `readlink ${full}`, e.path)))
            if (target === e.target) return yield* clearTemp
          }
          yield* clearTemp
          if (leaf.topLevel && cur === undefined) yield* ensureParent(parentFull, e.path)
          yield* fs.symlink(e.target, tmp).pipe(Effect.mapError(io(ctx, `symlink ${tmp}`, e.path)))
        } else {
          const bytes = yield* contents(e)
          if (
            cur?.type === "File" &&
            Number(cur.size) === e.size &&
            (cur.mode & 0o7777) === e.mode &&
            Option.getOrUndefined(cur.uid) === e.uid &&
            Option.getOrUndefined(cur.gid) === e.gid
          ) {
            // Already as recorded: left alone (no new inode, nothing for
            // inotify watchers to see). Anything else, metadata included, is
            // rewritten through a temporary file: chown and chmod by path
            // would follow a link swapped in meanwhile.
            const same = yield* Effect.scoped(
              Effect.gen(function* () {
                const f = yield* fs.open(full, { flag: "r", noFollow: true })
                return bytesEqual(yield* readAll(f, e.size), bytes)
              })
            ).pipe(Effect.mapError(io(ctx, `read ${full}`, e.path)))
            if (same) return yield* clearTemp
          }
          yield* clearTemp
          if (leaf.topLevel && cur === undefined) yield* ensureParent(parentFull, e.path)
          yield* Effect.scoped(
            Effect.gen(function* () {
              // "wx": created fresh, never through a link planted at the name;
              // without setuid, setgid or sticky bits until its owner is right.
              const f = yield* fs.open(tmp, { flag: "wx", mode: e.mode & 0o777 })
              yield* f.writeAll(bytes)
              // Usually the new file already has the recorded owner and mode
              // (an agent running as root restoring root's files under umask
              // 022); then neither call is needed.
              const st = yield* f.stat
              const ownerDiffers = Option.getOrUndefined(st.uid) !== e.uid || Option.getOrUndefined(st.gid) !== e.gid
              if (ownerDiffers) yield* fs.chown(tmp, e.uid, e.gid)
              // After chown, which clears setuid and setgid.
              if (ownerDiffers || (st.mode & 0o7777) !== e.mode) yield* fs.chmod(tmp, e.mode)
              yield* f.sync
            })
          ).pipe(Effect.mapError(io(ctx, `write ${tmp}`, e.path)))
        }
        // rename(2) replaces a file or link, not a directory: a directory in
        // the way (never recorded below a recorded leaf) goes first.
        if (cur !== undefined && cur.type !== "File" && cur.type !== "SymbolicLink") yield* removeTree(full, e.path)
        yield* fs.rename(tmp, full).pipe(Effect.mapError(io(ctx, `rename ${tmp} to ${full}`, e.path)))
        changed()
      })
    yield* Effect.forEach(leaves, restoreLeaf, { concurrency: Concurrency, discard: true })

    // 4. Directory modes and owners, deepest first, now that their contents are back.
    for (const e of [...manifest.entries].reverse()) {
      if (e.type !== "Directory") continue
      const full = dirFull.get(e.path) ?? ""
      const info = yield* lstatOption(ctx, full, e.path)
      if (Option.isNone(info) || info.value.type !== "Directory") {
        return yield* fail(ctx, "Io", e.path, `${full} changed under the restore; run it again`)
      }
      const uid = Option.getOrUndefined(info.value.uid)
      const gid = Option.getOrUndefined(info.value.gid)
      if (uid !== e.uid || gid !== e.gid) {
        yield* fs.chown(full, e.uid, e.gid).pipe(Effect.mapError(io(ctx, `chown ${full}`, e.path)))
        changed()
      }
      if ((info.value.mode & 0o7777) !== e.mode || uid !== e.uid || gid !== e.gid) {
        yield* fs.chmod(full, e.mode).pipe(Effect.mapError(io(ctx, `chmod ${full}`, e.path)))
        changed()
      }
    }

    // 5. Every directory that holds a recorded path, so the renames and
    //    removals (of this run or of a crashed earlier one) are durable.
    yield* Effect.forEach(
      toSync,
      (d) =>
        dirFull.has(d)
          ? syncPath(ctx, d)
          : // The parent of a listed path, which may not exist when that path is absent.
            Effect.flatMap(lstatOption(ctx, d, ""), (o) =>
              Option.isSome(o) && o.value.type === "Directory" ? syncPath(ctx, d) : Effect.void
            ),
      { concurrency: Concurrency, discard: true }
    )
    return changes
  })

const restoreAt = (ctx: Ctx): Effect.Effect<void, SnapshotError | SystemdError, Systemd> =>
  Effect.gen(function* () {
    const checked = yield* loadManifest(ctx)
    yield* checkRoot(ctx, checked.manifest)
    const changes = yield* Effect.scoped(
      Effect.gen(function* () {
        const dataPath = `${ctx.dir}/${DataName}`
        const data = yield* ctx.fs.open(dataPath, { flag: "r" }).pipe(Effect.mapError(io(ctx, `open ${DataName}`)))
        const size = Number((yield* data.stat.pipe(Effect.mapError(io(ctx, `stat ${DataName}`)))).size)
        if (size !== checked.manifest.dataSize) {
          return yield* fail(
            ctx,
            "Corrupt",
            "",
            `${DataName} is ${size} bytes; the manifest says ${checked.manifest.dataSize}`
          )
        }
        return yield* restoreChecked(ctx, checked, data)
      })
    )
    if (ctx.root.isReal) {
      // Unit files and drop-ins were rewritten: systemd must read them again.
      yield* Effect.flatMap(Effect.service(Systemd), (s) => s.daemonReload)
    }
    yield* Effect.logInfo("configuration snapshot restored").pipe(
      Effect.annotateLogs({ entries: checked.manifest.entries.length, changes })
    )
  }).pipe(Effect.provide(Digest.layerWebCrypto), Effect.annotateLogs({ snapshotDir: ctx.dir, hostRoot: ctx.hostRoot }))

// ---------------------------------------------------------------------------
// Discard and recover
// ---------------------------------------------------------------------------

const discardNow = (ctx: Ctx) =>
  Effect.gen(function* () {
    const aside = discardingPath(ctx.dir)
    yield* ctx.fs.remove(aside, { recursive: true, force: true }).pipe(Effect.mapError(io(ctx, `remove ${aside}`)))
    const present = yield* lstatOption(ctx, ctx.dir, "")
    if (Option.isNone(present)) return
    // Renamed aside first: a crash while removing leaves a name `recover`
    // removes, never a half-deleted snapshot it would try to restore.
    yield* ctx.fs.rename(ctx.dir, aside).pipe(Effect.mapError(io(ctx, `rename ${ctx.dir} to ${aside}`)))
    yield* syncPath(ctx, HostPath.dirname(ctx.dir))
    yield* ctx.fs.remove(aside, { recursive: true }).pipe(Effect.mapError(io(ctx, `remove ${aside}`)))
  })

const discardAt = (ctx: Ctx): Effect.Effect<void> =>
  discardNow(ctx).pipe(
    Effect.tap(() => Effect.logDebug("configuration snapshot discarded")),
    Effect.catch((e) =>
      Effect.logWarning("could not discard the configuration snapshot; remove it by hand", { error: e.message })
    ),
    Effect.annotateLogs({ snapshotDir: ctx.dir, hostRoot: ctx.hostRoot }),
    Effect.withSpan("Snapshot.discard", { attributes: { dir: ctx.dir } })
  )

/**
 * Fails with `HostRootMismatch` when `manifest` was taken below another host
 * root than the one of `ctx`, unless the caller allowed it: the host root is
 * an operator's input, and a restore below the wrong tree removes every
 * recorded path that is not there.
 */
const checkRoot = (ctx: Ctx, manifest: Manifest) => {
  const recorded = manifest.hostRoot === "" ? "/" : manifest.hostRoot
  return recorded === ctx.hostRoot || ctx.allowHostRootMismatch
    ? Effect.void
    : fail(
        ctx,
        "HostRootMismatch",
        "",
        `it was taken below host root ${JSON.stringify(recorded)}, not ${JSON.stringify(ctx.hostRoot)}; pass allowHostRootMismatch (--allow-root-mismatch) if that is the same tree under another name`
      )
}

/** Options of {@link open} and {@link recover}. */
export interface OpenOptions {
  /** The snapshot directory an earlier process may have left. */
  readonly dir: string
  /**
   * The host root to restore below (`""` or `"/"` for the real host, an
   * absolute directory, or a decoded `HostPath.HostRoot`). It must be the root
   * the snapshot records, unless `allowHostRootMismatch`.
   */
  readonly hostRoot: string | HostPath.HostRoot
  /** Restore below another host root than the one recorded (default false; see `HostRootMismatch`). */
  readonly allowHostRootMismatch?: boolean | undefined
}

/**
 * A handle on a snapshot already in `dir`, for instance one an earlier process
 * took: its manifest is read and checked (content hashes are checked by the
 * restore). Fails with `Missing` when there is none. Unlike {@link recover},
 * nothing is restored or removed until the caller says so.
 */
export const open: (
  options: OpenOptions
) => Effect.Effect<Snapshot, SnapshotError | HostPath.HostPathError, FileSystem.FileSystem> = Effect.fn(
  "Snapshot.open"
)(function* (options: OpenOptions) {
  const ctx = yield* makeCtx(options.dir, options.hostRoot, options.allowHostRootMismatch)
  const checked = yield* loadManifest(ctx)
  yield* checkRoot(ctx, checked.manifest)
  return yield* makeHandle(ctx, checked.manifest)
})

/** Options of {@link recover}. */
export type RecoverOptions = OpenOptions

/**
 * Restores a snapshot an earlier process left in `dir` (the Go package's
 * `RestoreSnapshot`), for instance one a crash interrupted in the middle of
 * an upgrade or of its rollback; reloads systemd on the real root; then
 * removes it. Returns whether there was one. With no snapshot it does
 * nothing; a temporary snapshot from a take that never committed (the
 * recorded paths were only read) and a half-finished discard are removed. A
 * snapshot that fails its checks is a `SnapshotError`, nothing is written and
 * it is kept; so is one whose restore fails.
 */
export const recover: (
  options: RecoverOptions
) => Effect.Effect<boolean, SnapshotError | SystemdError | HostPath.HostPathError, FileSystem.FileSystem | Systemd> =
  Effect.fn("Snapshot.recover")(
    function* (options: RecoverOptions) {
      const ctx = yield* makeCtx(options.dir, options.hostRoot, options.allowHostRootMismatch)
      yield* removeLeftovers(ctx)
      if (Option.isNone(yield* lstatOption(ctx, ctx.dir, ""))) {
        yield* Effect.logDebug("no configuration snapshot to recover")
        return false
      }
      yield* Effect.logWarning("restoring a configuration snapshot an earlier process left")
      yield* restoreAt(ctx)
      yield* discardAt(ctx)
      return true
    },
    (effect, options) =>
      effect.pipe(Effect.annotateLogs({ snapshotDir: options.dir, hostRoot: rootLabel(options.hostRoot) }))
  )

/**
 * The snapshot as a scoped resource around an upgrade: acquiring takes it
 * ({@link takeOf}, with `ConfSnap.DefaultPaths` unless `paths` is given);
 * releasing discards it when the scope succeeds, and restores it, then
 * discards it, when the scope fails or is interrupted. If that restore fails,
 * the error is logged with the snapshot's location and the snapshot is kept,
 * for `recover` in this or a later process.
 */
export const scoped = (
  options: ScopedOptions
): Effect.Effect<Snapshot, SnapshotError | HostPath.HostPathError, FileSystem.FileSystem | Systemd | Scope.Scope> =>
  Effect.acquireRelease(
    takeOf({
      dir: options.dir,
      hostRoot: options.hostRoot,
      paths: options.paths ?? ConfSnap.DefaultPaths,
      exclude: options.exclude
    }),
    (snapshot, exit) =>
      Exit.isSuccess(exit)
        ? snapshot.discard
        : snapshot.restore.pipe(
            Effect.andThen(snapshot.discard),
            Effect.catch((e) =>
              Effect.logError("rolling back the configuration failed; the snapshot is kept for Snapshot.recover", {
                error: e.message
              }).pipe(Effect.annotateLogs({ snapshotDir: snapshot.dir, hostRoot: snapshot.hostRoot }))
            )
          )
  )
