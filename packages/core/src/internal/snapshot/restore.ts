/**
 * Restoring a snapshot, in steps, each of which converges on the recorded
 * state whatever state it starts from (so a restore run again after a crash
 * at any point gives the same result):
 *
 * Internal to `Snapshot`.
 *
 * @since 0.2.0
 */
import { Effect, Fiber, type Result } from "effect"
import type * as Directory from "../../Directory.ts"
import * as FileName from "../../FileName.ts"
import type * as Programs from "../../Programs.ts"
import * as SafeRemove from "../../SafeRemove.ts"
import { Failure, type SnapshotError } from "../../SnapshotError.ts"
import * as Lexical from "../hostPath/lexical.ts"
import * as HostRoots from "../hostPath/root.ts"
import { type Ctx, childOf, error, fail, fromDirectory, nameOf, unresolvable } from "./context.ts"
import type { Checked } from "./manifest.ts"
import type { FileEntry, SymlinkEntry } from "./model.ts"
import { checkOverlap } from "./overlap.ts"
import { provide } from "./store.ts"

/*
 * 1. {@link verify}: every file's bytes in `data` are hashed, streamed
 *    through a window, before anything is written: alongside the reads of
 *    the steps after it (the real layer hashes on a thread of its helper
 *    process meanwhile), and waited for before their first change
 *    ({@link State.verified}). A failure it meets is the restore's, whatever
 *    the other steps met since.
 * 2. {@link structure}: parents first, every recorded directory is a
 *    directory (opened from its parent's handle without following a link
 *    and, below a listed path, without entering another mount), absent paths
 *    are gone, and recorded directories hold nothing unrecorded; whatever is
 *    in the way is removed by `SafeRemove` on the handle it is in. What a
 *    directory holds is read with it, and its recorded subdirectories are
 *    opened, listed and stat'ed together (`Directories.openDirectories`)
 *    before their turn: only reads, the changes still made in each one's turn.
 * 3. {@link stage}: each file or link that differs is written beside its
 *    target under a temporary name, created exclusively in the directory's
 *    handle, its owner, mode and times set on the open file. A file already
 *    as recorded (metadata and bytes) is left alone.
 * 4. {@link commit}: the temporary files are made durable as one batch
 *    (`syncfs` of each file system they are on), then renamed over their
 *    targets within their handles.
 * 5. {@link settle}: directory owners and modes, deepest first, on the
 *    handles; then one `syncfs` per file system makes the renames and
 *    removals durable.
 *
 * Memory: two {@link WindowBytes} buffers (the window on `data` and one for
 * comparing a current file), plus the manifest, whatever the files' sizes.
 * Descriptors: one per recorded directory, held until the restore ends (the
 * batch sync and the renames need them all).
 */

/** The window a restore reads `data` through, and the size of the buffer it compares a current file with. */
export const WindowBytes = 1024 * 1024

/** A window on `data`: reads are served from it when they fall inside, else it moves. */
interface Reader {
  readonly data: Programs.File
  readonly window: Uint8Array
  start: number
  end: number
}

/** `length` (at most {@link WindowBytes}) bytes of `data` at `offset`, as a view into the window. */
const readAt = (ctx: Ctx, r: Reader, offset: number, length: number, path: string) =>
  Effect.gen(function* () {
    if (offset >= r.start && offset + length <= r.end)
      return r.window.subarray(offset - r.start, offset - r.start + length)
    let n = 0
    while (n < r.window.length) {
      const k = yield* r.data.read(r.window.subarray(n), offset + n).pipe(Effect.mapError(fromDirectory(ctx, path)))
      if (k === 0) break
      n += k
    }
    r.start = offset
    r.end = offset + n
    if (n < length)
      return yield* fail(ctx, new Failure({ _tag: "Corrupt", path, detail: "data ends before this file's bytes" }))
    return r.window.subarray(0, length)
  })

/** How many files, and how many of their bytes, one `sha256` call of step 1 hashes at most. */
const HashBatch = { files: 1024, bytes: 64 * 1024 * 1024 }

/**
 * Step 1: every file's hash, streamed, in `data` order: where the layer
 * hashes without the bytes leaving it (`Directories.sha256`, the real one's
 * helper process), in batches there; else read through the window and
 * hashed with the `Hashing` service.
 */
const verify = (ctx: Ctx, r: Reader, checked: Checked) =>
  Effect.gen(function* () {
    const files = checked.manifest.entries.filter((e): e is FileEntry => e.type === "File")
    files.sort((a, b) => a.offset - b.offset)
    const native = ctx.dirs.sha256
    if (native !== undefined) {
      for (let at = 0; at < files.length; ) {
        let end = at
        let bytes = 0
        while (end < files.length && end - at < HashBatch.files) {
          const size = (files[end] as FileEntry).size
          if (end > at && bytes + size > HashBatch.bytes) break
          bytes += size
          end++
        }
        const part = files.slice(at, end)
        const hashes = yield* native(
          r.data,
          part.map((e) => ({ offset: e.offset, size: e.size }))
          // `data`'s size was checked against the manifest: its ranges are inside it.
        ).pipe(Effect.mapError(fromDirectory(ctx, (part[0] as FileEntry).path)))
        for (const [k, e] of part.entries()) {
          const hash = hashes[k]
          if (hash !== e.sha256) {
            return yield* fail(
              ctx,
              new Failure({
                _tag: "Corrupt",
                path: e.path,
                detail: `content hash ${hash} does not match the recorded ${e.sha256}`
              })
            )
          }
        }
        at = end
      }
      return
    }
    for (const e of files) {
      const hasher = ctx.hashing.sha256()
      for (let at = 0; at < e.size; at += WindowBytes) {
        hasher.update(yield* readAt(ctx, r, e.offset + at, Math.min(WindowBytes, e.size - at), e.path))
      }
      const hash = hasher.digestHex()
      if (hash !== e.sha256) {
        return yield* fail(
          ctx,
          new Failure({
            _tag: "Corrupt",
            path: e.path,
            detail: `content hash ${hash} does not match the recorded ${e.sha256}`
          })
        )
      }
    }
  })

/** A recorded directory as the restore holds it: its handle and where it is below the root. */
interface Place {
  readonly handle: Directory.Handle
  /** Where it is, as a path below the root (lossless string form). */
  readonly below: string
}

/** A recorded file or link to put in place, in the directory `parent`. */
interface Leaf {
  readonly entry: FileEntry | SymlinkEntry
  readonly index: number
  readonly parent: Directory.Handle
  readonly name: Uint8Array
  /** Where the leaf is, as a path below the root. */
  readonly below: string
  readonly top: boolean
  readonly current: Directory.Stat | undefined
}

interface State {
  readonly ctx: Ctx
  readonly checked: Checked
  readonly root: Directory.Handle
  readonly session: SafeRemove.Session
  readonly places: Map<string, Place>
  /** The recorded directories in pre-order, with their entries. */
  readonly directories: Array<{ readonly path: string; readonly place: Place }>
  readonly leaves: Array<Leaf>
  /** One handle per file system touched, for its `syncfs`. */
  readonly devices: Map<string, Directory.Handle>
  /**
   * The stats of recorded entries, read for a whole directory at once when
   * it was listed (`undefined`: not there), taken as each entry's turn comes.
   */
  readonly prefetched: Map<string, Directory.Stat | undefined>
  /** The recorded directories opened with their parent, and what they hold, taken as each one's turn comes. */
  readonly opened: Map<string, Contents>
  /**
   * Step 1's outcome, waited for: every change (a removal, a directory made,
   * a file written) comes after it, so a snapshot whose bytes are not the
   * recorded ones changes nothing.
   */
  readonly verified: Effect.Effect<void, SnapshotError>
  changes: number
}

const full = (s: State, below: string) => HostRoots.fullPath(s.ctx.root, below)

/** Notes the file system `h` is on, for the batch syncs. */
const onDevice = (s: State, h: Directory.Handle) =>
  Effect.flatMap(s.ctx.dirs.stat(h).pipe(Effect.mapError(fromDirectory(s.ctx))), (st) =>
    Effect.sync(() => {
      if (!s.devices.has(st.device)) s.devices.set(st.device, h)
    })
  )

/**
 * Removes the entry `name` of `dir` (host path `path`, `below` where it is),
 * keeping excluded paths and the directories that lead to them. A removal
 * `SafeRemove` refuses (a mount at or below it) fails the restore as `Kept`.
 */
const removeTree = (
  s: State,
  dir: Directory.Handle,
  name: Uint8Array,
  path: string,
  below: string
): Effect.Effect<void, SnapshotError> =>
  Effect.gen(function* () {
    const { ctx, checked } = s
    if (checked.isExcluded(path)) return
    if (checked.holdsExcluded(path)) {
      const opened = yield* Effect.result(ctx.dirs.openDirectory(dir, name, { sameMount: true }))
      if (opened._tag === "Success") {
        const listed = yield* ctx.dirs.list(opened.success).pipe(Effect.mapError(fromDirectory(ctx, path)))
        for (const e of listed) {
          yield* removeTree(s, opened.success, e.name, childOf(path, e.name), childOf(below, e.name))
        }
        return
      }
      if (opened.failure.reason._tag === "NotFound") return
      // Not a directory (or another mount, which the removal below keeps and reports).
    }
    yield* s.verified
    const report = yield* s.session.removeAt(dir, name, full(s, below))
    if (report.removed.length > 0) s.changes++
    if (report.kept.length > 0) {
      return yield* fail(
        ctx,
        new Failure({
          _tag: "Kept",
          path,
          detail: `${report.kept.map((k) => `${FileName.display(k.path)} (${k.reason}: ${k.detail})`).join("; ")}: it is in the way of the recorded state and may not be removed; the host is partly restored`
        })
      )
    }
  }).pipe(Effect.scoped)

/**
 * The directory a listed path is in, for a path to put back below a missing
 * parent: resolved below the root with its missing directories made (mode
 * 0755), as `mkdir -p` makes them, links on the way followed below the root.
 */
const parentOf = (s: State, path: string) =>
  Effect.gen(function* () {
    const { ctx } = s
    yield* s.verified
    const r = yield* ctx.dirs
      .resolve(s.root, path, { followFinal: false, makeMissing: 0o755 })
      .pipe(Effect.mapError((e) => unresolvable(ctx, path, e)))
    if (r.name === undefined)
      return yield* fail(ctx, new Failure({ _tag: "InvalidPath", path, detail: "it resolves to the host root itself" }))
    s.changes++
    return { parent: { handle: r.parent, below: Lexical.dirname(r.path) } satisfies Place, name: r.name }
  })

/** Stat of `name` in `dir`, `undefined` when there is nothing there. */
const statOf = (ctx: Ctx, dir: Directory.Handle, name: Uint8Array, path: string) =>
  Effect.flatMap(Effect.result(ctx.dirs.stat(dir, name)), (r) =>
    r._tag === "Success"
      ? Effect.succeed<Directory.Stat | undefined>(r.success)
      : r.failure.reason._tag === "NotFound"
        ? Effect.succeed(undefined)
        : Effect.fail(fromDirectory(ctx, path)(r.failure))
  )

/** What a recorded directory holds, read when it was opened: its entries, and the stats of `names` (its recorded ones). */
interface Contents {
  readonly handle: Directory.Handle
  readonly entries: ReadonlyArray<Programs.Entry>
  readonly stats: ReadonlyArray<Directory.Stat | Directory.DirectoryError>
  readonly names: ReadonlyArray<Uint8Array>
}

/** How many names (directories and the entries to stat in them) one `openDirectories` call asks about at most. */
const OpenBatchNames = 4096

/**
 * Opens the recorded subdirectories of `dir` that are directories now
 * (`Directories.openDirectories`: a call for many, where a call each would
 * cost round trips to the real layer's helper process per directory), each
 * listed and its recorded entries stat'ed, for their turn in step 2. Only
 * reads: what is in the way is still removed in each one's turn, and one
 * that could not be opened so is opened there again, one call at a time.
 */
const openSubdirectories = (
  s: State,
  dir: Directory.Handle,
  subdirectories: ReadonlyArray<{ readonly name: Uint8Array; readonly path: string }>
) =>
  Effect.gen(function* () {
    for (let at = 0; at < subdirectories.length; ) {
      let end = at
      let asked = 0
      while (end < subdirectories.length) {
        const n = 1 + (s.checked.children.get((subdirectories[end] as { readonly path: string }).path)?.size ?? 0)
        if (end > at && asked + n > OpenBatchNames) break
        asked += n
        end++
      }
      const part = subdirectories.slice(at, end).map((d) => ({
        ...d,
        names: [...(s.checked.children.get(d.path) ?? [])].map(FileName.encode)
      }))
      const opened = yield* s.ctx.dirs.openDirectories(
        dir,
        part.map((d) => ({ name: d.name, stat: d.names })),
        { sameMount: true }
      )
      for (const [k, d] of part.entries()) {
        const o = opened[k]
        if (o !== undefined && !isError(o)) s.opened.set(d.path, { ...o, names: d.names })
      }
      at = end
    }
  })

/** Step 2: the structure, parents first (see the module comment). */
const structure = (s: State) =>
  Effect.gen(function* () {
    const { ctx, checked } = s
    for (const [index, e] of checked.manifest.entries.entries()) {
      const top = checked.topLevel.has(e.path)
      let parent: Place
      let name: Uint8Array
      if (top) {
        const r = yield* Effect.result(ctx.dirs.resolve(s.root, e.path, { followFinal: false }))
        if (r._tag === "Success") {
          if (r.success.name === undefined) {
            return yield* fail(
              ctx,
              new Failure({ _tag: "InvalidPath", path: e.path, detail: "it resolves to the host root itself" })
            )
          }
          parent = { handle: r.success.parent, below: Lexical.dirname(r.success.path) }
          name = r.success.name
        } else if (r.failure.reason._tag === "NotFound" || r.failure.reason._tag === "NotADirectory") {
          // A parent is missing: nothing to remove for an absent path; made for anything else.
          if (e.type === "Absent") continue
          const made = yield* parentOf(s, e.path)
          parent = made.parent
          name = made.name
        } else {
          return yield* Effect.fail(unresolvable(ctx, e.path, r.failure))
        }
        yield* onDevice(s, parent.handle)
      } else {
        const p = s.places.get(Lexical.dirname(e.path))
        if (p === undefined)
          return yield* fail(
            ctx,
            new Failure({ _tag: "InvalidManifest", path: e.path, detail: "its directory was not restored first" })
          )
        parent = p
        name = nameOf(e.path)
      }
      const below = childOf(parent.below, name)
      let current = s.prefetched.has(e.path)
        ? s.prefetched.get(e.path)
        : yield* statOf(ctx, parent.handle, name, e.path)
      s.prefetched.delete(e.path)
      switch (e.type) {
        case "Absent":
          if (current !== undefined) yield* removeTree(s, parent.handle, name, e.path, below)
          break
        case "Directory": {
          let handle: Directory.Handle | undefined
          const wanted = checked.children.get(e.path) ?? new Set<string>()
          // What the directory holds, read with it: from its parent's batch (see `openSubdirectories`), or, for a
          // listed path, a batch of one. Anything but a directory opened, listed and stat'ed is asked again
          // one call at a time below, which says what it is.
          let contents = s.opened.get(e.path)
          s.opened.delete(e.path)
          if (contents === undefined && top && current?.type === "Directory") {
            const names = [...wanted].map(FileName.encode)
            const [one] = yield* ctx.dirs.openDirectories(parent.handle, [{ name, stat: names }], { sameMount: false })
            if (one !== undefined && !isError(one)) contents = { ...one, names }
          }
          if (contents !== undefined) {
            handle = contents.handle
            if (top) yield* onDevice(s, handle)
          } else if (current?.type === "Directory") {
            const opened = yield* Effect.result(ctx.dirs.openDirectory(parent.handle, name, { sameMount: !top }))
            if (opened._tag === "Success") {
              handle = opened.success
              // A listed directory may be a mount of its own: its file system is synced too. Every other
              // directory is opened on its parent's mount, so on a file system already noted.
              if (top) yield* onDevice(s, handle)
            } else if (opened.failure.reason._tag === "OtherMount") {
              return yield* fail(
                ctx,
                new Failure({
                  _tag: "OtherMount",
                  path: e.path,
                  detail: `${opened.failure.reason.detail}: a restore does not write across a mount below a recorded path`
                })
              )
            } else if (
              opened.failure.reason._tag !== "SymbolicLink" &&
              opened.failure.reason._tag !== "NotADirectory"
            ) {
              return yield* fromDirectory(ctx, e.path)(opened.failure)
            }
            // Swapped for something else since the stat: removed and made below.
          }
          if (handle === undefined) {
            if (current !== undefined) yield* removeTree(s, parent.handle, name, e.path, below)
            // Private until its mode is set in the last step, once its contents are back.
            yield* s.verified
            yield* ctx.dirs.makeDirectory(parent.handle, name, 0o700).pipe(Effect.mapError(fromDirectory(ctx, e.path)))
            s.changes++
            handle = yield* ctx.dirs
              .openDirectory(parent.handle, name, { sameMount: true })
              .pipe(Effect.mapError(fromDirectory(ctx, e.path)))
          }
          const place: Place = { handle, below }
          s.places.set(e.path, place)
          s.directories.push({ path: e.path, place })
          if (contents === undefined) {
            // The listing, and the recorded entries' stats in one call (a call each would cost a round
            // trip to the real layer's helper process per file), asked together: neither waits for the
            // other's answer. A recorded entry that is not there is `NotFound`.
            const names = [...wanted].map(FileName.encode)
            const [entries, stats] = yield* Effect.all(
              [
                ctx.dirs.list(handle).pipe(Effect.mapError(fromDirectory(ctx, e.path))),
                ctx.dirs.statAll(handle, names)
              ],
              { concurrency: 2 }
            )
            contents = { handle, entries, stats, names }
          }
          for (const entry of contents.entries) {
            if (!wanted.has(FileName.decode(entry.name))) {
              yield* removeTree(s, handle, entry.name, childOf(e.path, entry.name), childOf(below, entry.name))
            }
          }
          const subdirectories: Array<{ readonly name: Uint8Array; readonly path: string }> = []
          for (const [k, n] of contents.names.entries()) {
            const st = contents.stats[k] as Directory.Stat | Directory.DirectoryError
            const path = childOf(e.path, n)
            if (!isError(st)) {
              s.prefetched.set(path, st)
              if (st.type === "Directory" && checked.children.has(path)) subdirectories.push({ name: n, path })
            } else if (st.reason._tag === "NotFound") s.prefetched.set(path, undefined)
            else return yield* fromDirectory(ctx, path)(st)
          }
          yield* openSubdirectories(s, handle, subdirectories)
          break
        }
        default:
          // rename(2) replaces a file or link, not a directory: a directory in the way goes now.
          if (current !== undefined && current.type === "Directory") {
            yield* removeTree(s, parent.handle, name, e.path, below)
            current = undefined
          }
          s.leaves.push({ entry: e, index, parent: parent.handle, name, below, top, current })
      }
    }
  })

/** True when the file `name` of `dir` holds exactly the bytes of `e` in `data`. */
const sameBytes = (s: State, r: Reader, compare: Uint8Array, leaf: Leaf, e: FileEntry) =>
  Effect.gen(function* () {
    const { ctx } = s
    const opened = yield* Effect.result(ctx.dirs.openFile(leaf.parent, leaf.name, { mode: "read" }))
    if (opened._tag === "Failure") {
      const reason = opened.failure.reason._tag
      if (reason === "NotFound" || reason === "SymbolicLink" || reason === "WrongType") return false
      return yield* fromDirectory(ctx, e.path)(opened.failure)
    }
    const f = opened.success
    for (let at = 0; at < e.size; at += WindowBytes) {
      const want = Math.min(WindowBytes, e.size - at)
      const recorded = yield* readAt(ctx, r, e.offset + at, want, e.path)
      // Read at the same alignment as the recorded bytes, so they compare a word at a time.
      const shift = recorded.byteOffset % 4
      const view = compare.subarray(shift, shift + want)
      let n = 0
      while (n < want) {
        const k = yield* f.read(view.subarray(n), at + n).pipe(Effect.mapError(fromDirectory(ctx, e.path)))
        if (k === 0) return false
        n += k
      }
      if (!bytesEqual(view, recorded)) return false
    }
    return true
  }).pipe(Effect.scoped)

/** Byte equality, four bytes at a time where both views are aligned alike. */
const bytesEqual = (a: Uint8Array, b: Uint8Array): boolean => {
  if (a.length !== b.length) return false
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

/** The temporary name a file or link is written under before it is renamed over its target. */
const tempName = (index: number, taken: ReadonlySet<string> | undefined): string => {
  let name = `.hostnode-restore-${index}.tmp`
  while (taken?.has(name)) name = `${name}~`
  return name
}

/** Whether a file leaf already is as recorded: type, size, mode, owner, modification time, then bytes. */
const unchanged = (s: State, r: Reader, compare: Uint8Array, leaf: Leaf, e: FileEntry) => {
  const c = leaf.current
  if (
    c === undefined ||
    c.type !== "File" ||
    c.size !== e.size ||
    c.mode !== e.mode ||
    c.uid !== e.uid ||
    c.gid !== e.gid ||
    (e.mtimeNs !== undefined && c.mtimeNs !== BigInt(e.mtimeNs))
  ) {
    return Effect.succeed(false)
  }
  return sameBytes(s, r, compare, leaf, e)
}

/** Step 3: each leaf that differs written under its temporary name (see the module comment). */
const stage = (s: State, r: Reader) =>
  Effect.gen(function* () {
    const { ctx, checked } = s
    const compare = new Uint8Array(WindowBytes + 4)
    const same = yield* unchangedInBatches(s)
    // Only reads before this; from here on files are written (and `data` is read through the window).
    yield* s.verified
    const staged: Array<{ readonly leaf: Leaf; readonly tmp: Uint8Array }> = []
    const copies: Array<{ readonly leaf: Leaf; readonly e: FileEntry; readonly tmp: Uint8Array }> = []
    for (const leaf of s.leaves) {
      const e = leaf.entry
      const c = leaf.current
      if (e.type === "SymbolicLink") {
        if (c?.type === "SymbolicLink") {
          const target = yield* ctx.dirs
            .readLink(leaf.parent, leaf.name)
            .pipe(Effect.mapError(fromDirectory(ctx, e.path)))
          if (FileName.decode(target) === e.target) continue
        }
      } else if (same.equal.has(leaf) || (!same.decided.has(leaf) && (yield* unchanged(s, r, compare, leaf, e))))
        continue
      const tmp = FileName.encode(
        tempName(leaf.index, leaf.top ? undefined : checked.children.get(Lexical.dirname(e.path)))
      )
      // A crash may have left this leaf's temporary file: below a recorded
      // directory step 2 removed it, beside a listed path it goes here.
      if (leaf.top && (yield* statOf(ctx, leaf.parent, tmp, e.path)) !== undefined) {
        const at = (p: string) => childOf(Lexical.dirname(p), tmp)
        yield* removeTree(s, leaf.parent, tmp, at(e.path), at(leaf.below))
      }
      if (e.type === "SymbolicLink") {
        yield* ctx.dirs
          .symlink(leaf.parent, tmp, FileName.encode(e.target))
          .pipe(Effect.mapError(fromDirectory(ctx, e.path)))
      } else {
        copies.push({ leaf, e, tmp })
      }
      staged.push({ leaf, tmp })
    }
    yield* writeTemps(s, r, copies)
    return staged
  })

/** How many files, and how many of their bytes, one `copyFiles` call makes at most. */
const CopyBatch = { files: 1024, bytes: 32 * 1024 * 1024 }

/**
 * Writes the temporary files of `copies`, in batches (`Directories.copyFiles`:
 * a call each would cost round trips to the real layer's helper process per
 * file): each created exclusively in its leaf's directory, never through a
 * link planted at the name, private (0600) until its owner and mode are set,
 * its bytes copied from `data`, then its owner, mode and times.
 */
const writeTemps = (
  s: State,
  r: Reader,
  copies: ReadonlyArray<{ readonly leaf: Leaf; readonly e: FileEntry; readonly tmp: Uint8Array }>
) =>
  Effect.gen(function* () {
    const { ctx } = s
    for (let at = 0; at < copies.length; ) {
      let end = at
      let bytes = 0
      while (end < copies.length && end - at < CopyBatch.files) {
        const size = (copies[end] as { readonly e: FileEntry }).e.size
        if (end > at && bytes + size > CopyBatch.bytes) break
        bytes += size
        end++
      }
      const part = copies.slice(at, end)
      const result = yield* ctx.dirs.copyFiles(
        r.data,
        part.map(
          ({ leaf, e, tmp }): Programs.CopyFile => ({
            dir: leaf.parent,
            name: tmp,
            permissions: 0o600,
            offset: e.offset,
            size: e.size,
            mode: e.mode,
            uid: e.uid,
            gid: e.gid,
            times:
              e.mtimeNs === undefined
                ? undefined
                : {
                    atimeNs: e.atimeNs === undefined ? BigInt(e.mtimeNs) : BigInt(e.atimeNs),
                    mtimeNs: BigInt(e.mtimeNs)
                  }
          })
        )
      )
      if (result.failure !== undefined) {
        const failed = part[result.done]?.e.path
        return yield* fromDirectory(ctx, failed)(result.failure)
      }
      at = end
    }
  })

/**
 * The file leaves whose bytes are as recorded, of those whose type, size,
 * mode, owner and modification time already are: hashed in batches, a call
 * for many files of a directory (`Directories.hashFiles` where the layer
 * hashes without the bytes leaving it, else `readFiles` and the `Hashing`
 * service), and their SHA-256 compared with the recorded one (which step 1
 * checked `data` against: equal hashes are equal bytes, and `data` need not
 * be read again): `equal`, of the leaves in `decided` (every one the batches
 * looked at; the others, larger than a batch, are compared byte by byte one
 * at a time).
 */
const unchangedInBatches = (s: State) =>
  Effect.gen(function* () {
    const { ctx } = s
    const same = { equal: new Set<Leaf>(), decided: new Set<Leaf>() }
    const native = ctx.dirs.hashFiles
    const batchBytes = native === undefined ? BatchBytes : HashBatchBytes
    const candidates = s.leaves.filter((leaf) => {
      const e = leaf.entry
      const c = leaf.current
      return (
        e.type === "File" &&
        c !== undefined &&
        c.type === "File" &&
        c.size === e.size &&
        c.mode === e.mode &&
        c.uid === e.uid &&
        c.gid === e.gid &&
        (e.mtimeNs === undefined || c.mtimeNs === BigInt(e.mtimeNs)) &&
        e.size <= batchBytes
      )
    })
    const hashOf = (bytes: Uint8Array) => {
      const hasher = ctx.hashing.sha256()
      hasher.update(bytes)
      return { size: bytes.length, sha256: hasher.digestHex() }
    }
    for (let at = 0; at < candidates.length; ) {
      const parent = (candidates[at] as Leaf).parent
      let end = at
      while (end < candidates.length && (candidates[end] as Leaf).parent === parent) end++
      const group = candidates.slice(at, end)
      const names = group.map((l) => l.name)
      const hashed: ReadonlyArray<{ readonly size: number; readonly sha256: string } | Directory.DirectoryError> =
        native !== undefined
          ? yield* native(parent, names, batchBytes)
          : (yield* ctx.dirs.readFiles(parent, names, batchBytes)).map((r) => (isError(r) ? r : hashOf(r.bytes)))
      // At least one is hashed: the first of a group is within the batch's bytes by the filter.
      for (const [k, got] of hashed.entries()) {
        const leaf = group[k] as Leaf
        const e = leaf.entry as FileEntry
        same.decided.add(leaf)
        if (isError(got)) {
          const reason = got.reason._tag
          if (reason === "NotFound" || reason === "SymbolicLink" || reason === "WrongType") continue
          return yield* fromDirectory(ctx, e.path)(got)
        }
        if (got.size === e.size && got.sha256 === e.sha256) same.equal.add(leaf)
      }
      at += Math.max(1, hashed.length)
    }
    return same
  })

const isError = (x: unknown): x is Directory.DirectoryError =>
  typeof x === "object" && x !== null && (x as { readonly _tag?: unknown })._tag === "DirectoryError"

/** The most bytes of current files one `readFiles` call reads to compare them (they cross to the agent). */
const BatchBytes = 4 * 1024 * 1024

/** The most bytes of current files one `hashFiles` call hashes (none cross; a batch is one helper call's work). */
const HashBatchBytes = 64 * 1024 * 1024

/** One `syncfs` per file system touched. */
const syncAll = (s: State) =>
  Effect.forEach(s.devices.values(), (h) => s.ctx.dirs.syncFileSystem(h).pipe(Effect.mapError(fromDirectory(s.ctx))), {
    discard: true
  })

/** Step 4: the staged files durable as one batch, then renamed over their targets. */
const commit = (s: State, staged: ReadonlyArray<{ readonly leaf: Leaf; readonly tmp: Uint8Array }>) =>
  Effect.gen(function* () {
    if (staged.length === 0) return
    yield* syncAll(s)
    // In batches (a call each would cost a round trip to the real layer's helper process per file).
    for (let at = 0; at < staged.length; at += RenameBatch) {
      const part = staged.slice(at, at + RenameBatch)
      const r = yield* s.ctx.dirs.renameAll(
        part.map(({ leaf, tmp }) => ({ from: leaf.parent, fromName: tmp, to: leaf.parent, toName: leaf.name }))
      )
      s.changes += r.done
      if (r.failure !== undefined) {
        return yield* fromDirectory(s.ctx, part[r.done]?.leaf.entry.path)(r.failure)
      }
    }
  })

/** How many renames one `renameAll` call makes at most. */
const RenameBatch = 1024

/** Step 5: directory owners and modes, deepest first, then the final batch sync. */
const settle = (s: State) =>
  Effect.gen(function* () {
    const { ctx, checked } = s
    const recorded = new Map(
      checked.manifest.entries.filter((e) => e.type === "Directory").map((e) => [e.path, e] as const)
    )
    const deepestFirst = [...s.directories].reverse()
    // Every directory's stat asked at once, a few dozen in flight (one after the other, each would wait a round
    // trip to the real layer's helper process); each taken, and its error met, in its turn below.
    const stats = yield* Effect.forEach(deepestFirst, ({ place }) => Effect.result(ctx.dirs.stat(place.handle)), {
      concurrency: 64
    })
    for (const [k, { path, place }] of deepestFirst.entries()) {
      const e = recorded.get(path)
      if (e === undefined || e.type !== "Directory") continue
      const stat = stats[k] as Result.Result<Directory.Stat, Directory.DirectoryError>
      if (stat._tag === "Failure") return yield* fromDirectory(ctx, path)(stat.failure)
      const st = stat.success
      const ownerDiffers = st.uid !== e.uid || st.gid !== e.gid
      if (ownerDiffers) {
        yield* ctx.dirs.chown(place.handle, undefined, e.uid, e.gid).pipe(Effect.mapError(fromDirectory(ctx, path)))
        s.changes++
      }
      if (ownerDiffers || st.mode !== e.mode) {
        yield* ctx.dirs.chmod(place.handle, e.mode).pipe(Effect.mapError(fromDirectory(ctx, path)))
        s.changes++
      }
    }
    yield* syncAll(s)
  })

/**
 * Restores a checked snapshot whose `data` is open (its size already
 * checked): every step of the module comment. `snapshot` is the snapshot
 * directory's handle, for the overlap check. Returns how many changes it
 * made.
 */
export const restore = (ctx: Ctx, checked: Checked, data: Programs.File, snapshot: Directory.Handle) =>
  Effect.gen(function* () {
    const reader: Reader = { data, window: new Uint8Array(WindowBytes), start: 0, end: 0 }
    const verification = yield* Effect.forkChild(verify(ctx, reader, checked))
    const verified = Fiber.join(verification)
    return yield* rest(ctx, checked, snapshot, reader, verified).pipe(
      // A failure of step 1 comes first, as though it had run alone before the others.
      Effect.catch((e) =>
        Effect.flatMap(Effect.exit(verified), (v) =>
          v._tag === "Failure" ? Effect.failCause(v.cause) : Effect.fail(e)
        )
      )
    )
  })

/** Every step after the first (see {@link restore}); `verified` waits for step 1. */
const rest = (
  ctx: Ctx,
  checked: Checked,
  snapshot: Directory.Handle,
  reader: Reader,
  verified: Effect.Effect<void, SnapshotError>
) =>
  Effect.gen(function* () {
    const root = yield* ctx.dirs.openRoot(ctx.root.path).pipe(Effect.mapError(fromDirectory(ctx)))
    const chain = yield* ctx.dirs.ancestors(snapshot).pipe(Effect.mapError(fromDirectory(ctx)))
    const absent = new Set(checked.manifest.entries.filter((e) => e.type === "Absent").map((e) => e.path))
    yield* checkOverlap(ctx, root, checked.manifest.paths, chain, { below: true, absent })
    const session = yield* SafeRemove.session({ hostRoot: ctx.root, handle: root }).pipe(
      provide(ctx),
      Effect.mapError((e) =>
        error(ctx, new Failure({ _tag: "Io", detail: `the host root's mounts cannot be read: ${e.message}` }))
      )
    )
    const s: State = {
      ctx,
      checked,
      root,
      session,
      places: new Map(),
      directories: [],
      leaves: [],
      devices: new Map(),
      prefetched: new Map(),
      opened: new Map(),
      verified,
      changes: 0
    }
    yield* onDevice(s, root)
    yield* structure(s)
    const staged = yield* stage(s, reader)
    yield* commit(s, staged)
    yield* settle(s)
    return s.changes
  })
