/**
 * Taking a snapshot: every recorded path is walked through directory
 * handles from the host root's (a directory opened from its parent without
 * following a link and, below a listed path, without entering another
 * mount), every file opened without following and described by `fstat` of
 * the open file, and its bytes streamed through one bounded buffer into the
 * staging directory's `data` while they are hashed. The manifest is written
 * beside it, both are made durable with the staging directory, and the
 * staging directory is renamed into place: the commit point.
 *
 * Internal to `Snapshot`.
 *
 * @since 0.2.0
 */
import { Effect, Random } from "effect"
import type * as Directory from "../../Directory.ts"
import * as FileName from "../../FileName.ts"
import type * as Programs from "../../Programs.ts"
import { Failure, type SnapshotError } from "../../SnapshotError.ts"
import { identity } from "../directory/handle.ts"
import * as FileNames from "../fileName.ts"
import { type Ctx, childOf, error, fail, fromDirectory, nameOf, unresolvable } from "./context.ts"
import * as ManifestCodec from "./manifest.ts"
import { DataName, type Entry, FormatVersion, type Manifest, ManifestName } from "./model.ts"
import { checkOverlap } from "./overlap.ts"
import * as Store from "./store.ts"

/*
 * Memory: one {@link BufferBytes} buffer, whatever the files' sizes, plus
 * the manifest's entries.
 */

/** The take's buffer between the files it reads and `data`. */
export const BufferBytes = 4 * 1024 * 1024

/** Appends to `data` through one buffer; `position` is where the next byte goes. */
class DataWriter {
  readonly buffer = new Uint8Array(BufferBytes)
  readonly data: Programs.File
  fill = 0
  flushed = 0
  constructor(data: Programs.File) {
    this.data = data
  }
  get position() {
    return this.flushed + this.fill
  }
}

const flush = (ctx: Ctx, w: DataWriter) =>
  Effect.suspend(() => {
    if (w.fill === 0) return Effect.void
    const at = w.flushed
    const n = w.fill
    w.flushed += n
    w.fill = 0
    return w.data.write(w.buffer.subarray(0, n), at).pipe(Effect.mapError(fromDirectory(ctx)))
  })

/** Appends `bytes` (a file read whole) to `data`, through the buffer; their hash. */
const appendBytes = (ctx: Ctx, w: DataWriter, bytes: Uint8Array) =>
  Effect.gen(function* () {
    const hasher = ctx.hashing.sha256()
    hasher.update(bytes)
    for (let at = 0; at < bytes.length; ) {
      if (w.fill === w.buffer.length) yield* flush(ctx, w)
      const n = Math.min(bytes.length - at, w.buffer.length - w.fill)
      w.buffer.set(bytes.subarray(at, at + n), w.fill)
      w.fill += n
      at += n
    }
    return hasher.digestHex()
  })

/**
 * The most bytes one batch of a directory's files is read with
 * (`Directories.readFiles`): a file larger than this is streamed through the
 * buffer instead, so memory stays bounded whatever the files' sizes.
 */
export const BatchBytes = 4 * 1024 * 1024

/** Reads the open file (of `size` bytes by its fstat) into `data`, hashing as it goes; the bytes read and their hash. */
const streamFile = (ctx: Ctx, w: DataWriter, file: Programs.File, size: number, path: string) =>
  Effect.gen(function* () {
    const hasher = ctx.hashing.sha256()
    let got = 0
    // A file a concurrent writer grows meanwhile is read up to `size`, one
    // that shrinks up to its end: a snapshot of a file being written is of some state.
    while (got < size) {
      if (w.fill === w.buffer.length) yield* flush(ctx, w)
      const want = Math.min(size - got, w.buffer.length - w.fill)
      const view = w.buffer.subarray(w.fill, w.fill + want)
      const n = yield* file.read(view, got).pipe(Effect.mapError(fromDirectory(ctx, path)))
      if (n === 0) break
      hasher.update(view.subarray(0, n))
      w.fill += n
      got += n
    }
    return { size: got, sha256: hasher.digestHex() }
  })

interface Walk {
  readonly ctx: Ctx
  readonly writer: DataWriter
  readonly entries: Array<Entry>
  readonly isExcluded: (path: string) => boolean
  /** The staging directory's identity: met in a walk, it is inside a recorded path. */
  readonly staging: string
}

/** Records the node `name` of `dir` (host path `path`, stat `st`) and, for a directory, what is below it. */
const record = (
  walk: Walk,
  dir: Directory.Handle,
  name: Uint8Array,
  path: string,
  st: Directory.Stat,
  top: boolean
): Effect.Effect<void, SnapshotError> =>
  Effect.gen(function* () {
    const { ctx } = walk
    // Each file and directory is closed once recorded: a take of a wide tree holds one handle per level.
    switch (st.type) {
      case "File": {
        const opened = yield* Effect.result(ctx.dirs.openFile(dir, name, { mode: "read" }))
        if (opened._tag === "Failure") return yield* openFailed(ctx, path, opened.failure)
        const file = opened.success
        const fst = yield* file.stat.pipe(Effect.mapError(fromDirectory(ctx, path)))
        const offset = walk.writer.position
        const read = yield* streamFile(ctx, walk.writer, file, fst.size, path)
        walk.entries.push({
          type: "File",
          path,
          mode: fst.mode,
          uid: fst.uid,
          gid: fst.gid,
          size: read.size,
          offset,
          sha256: read.sha256,
          atimeNs: fst.atimeNs.toString(),
          mtimeNs: fst.mtimeNs.toString()
        })
        return
      }
      case "SymbolicLink": {
        const target = yield* ctx.dirs.readLink(dir, name).pipe(Effect.mapError(fromDirectory(ctx, path)))
        walk.entries.push({ type: "SymbolicLink", path, target: FileName.decode(target) })
        return
      }
      case "Directory": {
        const opened = yield* Effect.result(ctx.dirs.openDirectory(dir, name, { sameMount: !top }))
        if (opened._tag === "Failure") {
          const e = opened.failure
          if (e.reason._tag === "OtherMount") {
            return yield* fail(
              ctx,
              new Failure({
                _tag: "OtherMount",
                path,
                detail: `${e.reason.detail}: a snapshot does not cross mounts; exclude it, or list it as a path of its own`
              })
            )
          }
          if (e.reason._tag === "SymbolicLink" || e.reason._tag === "NotADirectory") {
            return yield* fail(
              ctx,
              new Failure({
                _tag: "Io",
                path,
                detail: "it changed while the snapshot was taken (no longer a directory); take it again"
              })
            )
          }
          return yield* fromDirectory(ctx, path)(e)
        }
        const h = opened.success
        const own = yield* ctx.dirs.stat(h).pipe(Effect.mapError(fromDirectory(ctx, path)))
        if (identity(own) === walk.staging) {
          return yield* fail(
            ctx,
            new Failure({
              _tag: "InvalidPath",
              path,
              detail: `the snapshot's staging directory is below the recorded path ${path}`
            })
          )
        }
        walk.entries.push({ type: "Directory", path, mode: own.mode, uid: own.uid, gid: own.gid })
        const listed = yield* ctx.dirs.list(h).pipe(Effect.mapError(fromDirectory(ctx, path)))
        const names = [...listed]
          .sort((a, b) => FileNames.compare(a.name, b.name))
          .filter((e) => !walk.isExcluded(childOf(path, e.name)))
        // Every child's stat in one call, and the small files' bytes in batches: a call each would
        // cost a round trip to the real layer's helper process per file.
        const stats = yield* ctx.dirs.statAll(
          h,
          names.map((e) => e.name)
        )
        const isSmall = (i: number) => {
          const cst = stats[i]
          return cst !== undefined && !isError(cst) && cst.type === "File" && cst.size <= BatchBytes
        }
        // What the last batch read, by name: a run of small files next to each other in the walk's order, so
        // nothing else goes to `data` between them (appended by the layer, they are there already, in order).
        const read = new Map<Uint8Array, Programs.ReadFile | Programs.AppendedFile | Directory.DirectoryError>()
        for (const [i, entry] of names.entries()) {
          const child = childOf(path, entry.name)
          const cst = stats[i] as Directory.Stat | Directory.DirectoryError
          if (isError(cst)) {
            // Removed since the listing: it is not part of the state recorded.
            if (cst.reason._tag === "NotFound") continue
            return yield* fromDirectory(ctx, child)(cst)
          }
          if (isSmall(i)) {
            if (!read.has(entry.name)) {
              read.clear()
              let end = i
              while (end < names.length && isSmall(end)) end++
              const run = names.slice(i, end)
              const append = ctx.dirs.appendFiles
              const runNames = run.map((e) => e.name)
              let batch: ReadonlyArray<Programs.ReadFile | Programs.AppendedFile | Directory.DirectoryError>
              if (append === undefined) batch = yield* ctx.dirs.readFiles(h, runNames, BatchBytes)
              else {
                // Where the layer can, the bytes go to `data` and are hashed without leaving it.
                yield* flush(ctx, walk.writer)
                batch = yield* append(walk.writer.data, walk.writer.position, h, runNames, BatchBytes).pipe(
                  Effect.mapError(fromDirectory(ctx, path))
                )
              }
              for (const [k, r] of batch.entries()) read.set((run[k] as Programs.Entry).name, r)
            }
            const got = read.get(entry.name)
            read.delete(entry.name)
            if (got !== undefined) {
              yield* recordRead(walk, child, got)
              continue
            }
            // Not read in the batch (it grew past the batch's bytes): streamed, as a large file is; the rest
            // of the run is read again after it.
            read.clear()
          }
          yield* record(walk, h, entry.name, child, cst, false)
        }
        return
      }
      default:
        return yield* fail(
          ctx,
          new Failure({
            _tag: "UnsupportedFileType",
            path,
            detail: `a ${st.type} cannot be recorded and restored faithfully`
          })
        )
    }
  }).pipe(Effect.scoped)

/** What `openFile` of a file the walk stat'd as one said: it changed meanwhile, or its error. */
const openFailed = (ctx: Ctx, path: string, e: Directory.DirectoryError) =>
  e.reason._tag === "WrongType" || e.reason._tag === "SymbolicLink"
    ? fail(
        ctx,
        new Failure({
          _tag: "Io",
          path,
          detail: `it changed while the snapshot was taken (${e.reason.detail}); take it again`
        })
      )
    : Effect.fail(fromDirectory(ctx, path)(e))

/**
 * Records the file at `path` read whole in a batch: by `readFiles` (its bytes
 * appended to `data` and hashed here) or by `appendFiles` (already in `data`
 * where the buffer's position was, and hashed).
 */
const recordRead = (
  walk: Walk,
  path: string,
  got: Programs.ReadFile | Programs.AppendedFile | Directory.DirectoryError
) =>
  Effect.gen(function* () {
    const { ctx } = walk
    if (isError(got)) return yield* openFailed(ctx, path, got)
    const fst = got.stat
    const offset = walk.writer.position
    let size: number
    let sha256: string
    if ("bytes" in got) {
      size = got.bytes.length
      sha256 = yield* appendBytes(ctx, walk.writer, got.bytes)
    } else {
      // Appended in order since the buffer was flushed: it starts where the buffer is.
      if (got.offset !== offset || walk.writer.fill !== 0) {
        return yield* fail(
          ctx,
          new Failure({ _tag: "Io", path, detail: `written to data at ${got.offset}, not at ${offset}` })
        )
      }
      size = got.size
      sha256 = got.sha256
      walk.writer.flushed += got.size
    }
    walk.entries.push({
      type: "File",
      path,
      mode: fst.mode,
      uid: fst.uid,
      gid: fst.gid,
      size,
      offset,
      sha256,
      atimeNs: fst.atimeNs.toString(),
      mtimeNs: fst.mtimeNs.toString()
    })
  })

const isError = (x: unknown): x is Directory.DirectoryError =>
  typeof x === "object" && x !== null && (x as { readonly _tag?: unknown })._tag === "DirectoryError"

/** Records the listed path `path`, resolved below the root (its last component not followed); absent when it is not there. */
const recordTop = (walk: Walk, root: Directory.Handle, path: string) =>
  Effect.gen(function* () {
    const { ctx } = walk
    const r = yield* Effect.result(ctx.dirs.resolve(root, path, { followFinal: false }))
    if (r._tag === "Failure") {
      if (r.failure.reason._tag === "NotFound" || r.failure.reason._tag === "NotADirectory") {
        walk.entries.push({ type: "Absent", path })
        return
      }
      return yield* Effect.fail(unresolvable(ctx, path, r.failure))
    }
    if (r.success.name === undefined)
      return yield* fail(ctx, new Failure({ _tag: "InvalidPath", path, detail: "it resolves to the host root itself" }))
    const st = yield* Effect.result(ctx.dirs.stat(r.success.parent, r.success.name))
    if (st._tag === "Failure") {
      if (st.failure.reason._tag === "NotFound") {
        walk.entries.push({ type: "Absent", path })
        return
      }
      return yield* fromDirectory(ctx, path)(st.failure)
    }
    yield* record(walk, r.success.parent, r.success.name, path, st.success, true)
  })

/** Writes `bytes` to a new file `name` of `dir` (exclusively, mode 0600) and syncs it. */
const writeNew = (ctx: Ctx, dir: Directory.Handle, name: string, bytes: Uint8Array) =>
  Effect.scoped(
    Effect.gen(function* () {
      const f = yield* ctx.dirs.openFile(dir, FileName.encode(name), { mode: "create", permissions: 0o600 })
      yield* f.write(bytes, 0)
      yield* f.sync
    })
  ).pipe(Effect.mapError(fromDirectory(ctx)))

/**
 * Takes the snapshot of `paths` (checked and cleaned) into the snapshot
 * directory in `parent`, whose lock the caller holds. A failure removes the
 * staging directory; a crash leaves it for the next take or `recover`.
 */
export const take = (
  ctx: Ctx,
  parent: Directory.Handle,
  paths: ReadonlyArray<string>,
  exclude: ReadonlyArray<string>
) =>
  Effect.gen(function* () {
    const { dirs } = ctx
    const present = yield* Effect.result(dirs.stat(parent, nameOf(`/${ctx.base}`)))
    if (present._tag === "Success") {
      yield* Store.checkIsSnapshot(ctx, parent, present.success, true)
      return yield* fail(
        ctx,
        new Failure({
          _tag: "Exists",
          detail: "a snapshot is already there (an earlier upgrade did not finish); recover or discard it first"
        })
      )
    }
    if (present.failure.reason._tag !== "NotFound") return yield* fromDirectory(ctx)(present.failure)
    yield* Store.removeLeftovers(ctx, parent)
    const root = yield* dirs.openRoot(ctx.root.path).pipe(Effect.mapError(fromDirectory(ctx)))
    const chain = yield* dirs.ancestors(parent).pipe(Effect.mapError(fromDirectory(ctx)))
    yield* checkOverlap(ctx, root, paths, chain, { below: false })

    const stagingName = `${Store.stagingPrefix(ctx)}${(yield* Random.nextIntBetween(0, 0x7fffffff)).toString(36)}`
    const stagingBytes = FileName.encode(stagingName)
    yield* dirs.makeDirectory(parent, stagingBytes, 0o700).pipe(Effect.mapError(fromDirectory(ctx)))
    const written = Effect.gen(function* () {
      const staging = yield* dirs.openDirectory(parent, stagingBytes).pipe(Effect.mapError(fromDirectory(ctx)))
      const stagingStat = yield* dirs.stat(staging).pipe(Effect.mapError(fromDirectory(ctx)))
      const data = yield* dirs
        .openFile(staging, FileName.encode(DataName), { mode: "create", permissions: 0o600 })
        .pipe(Effect.mapError(fromDirectory(ctx)))
      const walk: Walk = {
        ctx,
        writer: new DataWriter(data),
        entries: [],
        isExcluded: ManifestCodec.exclusions(exclude).isExcluded,
        staging: identity(stagingStat)
      }
      for (const p of paths) yield* recordTop(walk, root, p)
      yield* flush(ctx, walk.writer)
      yield* data.sync.pipe(Effect.mapError(fromDirectory(ctx)))
      const manifest: Manifest = {
        format: "hostnode-snapshot",
        version: FormatVersion,
        // What names the root across time: its path on a host, what the composition says for a container's.
        hostRoot: ctx.root.identity,
        paths,
        exclude,
        dataSize: walk.writer.position,
        entries: walk.entries
      }
      yield* writeNew(ctx, staging, ManifestName, yield* ManifestCodec.encode(ctx, manifest))
      yield* dirs.sync(staging).pipe(Effect.mapError(fromDirectory(ctx)))
      return manifest
    }).pipe(Effect.scoped)
    const removeStaging = Effect.scoped(Store.removeLeftovers(ctx, parent)).pipe(Effect.ignore)
    const manifest = yield* written.pipe(Effect.tapError(() => removeStaging))
    // The commit point: before the rename there is no snapshot, after it a whole one.
    yield* dirs.rename(parent, stagingBytes, parent, FileName.encode(ctx.base), { noReplace: true }).pipe(
      Effect.mapError((e) =>
        e.reason._tag === "Exists"
          ? error(
              ctx,
              new Failure({
                _tag: "Exists",
                detail: "a snapshot appeared while this one was taken (a process that does not lock)"
              })
            )
          : fromDirectory(ctx)(e)
      ),
      Effect.tapError(() => removeStaging)
    )
    yield* dirs.sync(parent).pipe(Effect.mapError(fromDirectory(ctx)))
    return manifest
  })
