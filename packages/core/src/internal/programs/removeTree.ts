/**
 * The removal walk: removes one entry of an open directory, a whole tree for
 * a directory, without following a link and without entering another mount,
 * with a bounded number of open handles and memory that does not grow with
 * the square of the depth.
 *
 * Internal: `Programs` exports it; `Directory.make` runs it over any layer's
 * primitives and the real layer runs it in its helper process.
 *
 * @since 0.4.0
 */

import * as FileName from "../../FileName.ts"
import type { Entry } from "../../Programs.ts"
import * as FileNames from "../fileName.ts"
import { type Failure, type Identity, isFailure, type Listing, type Op, type Opened, sameNode } from "./ops.ts"

/*
 * The rules:
 * - The entry is identified first (`identify`: type and mount id, without
 *   asking its file system): on another mount than the directory it is in,
 *   it is kept (`OtherFileSystem`).
 * - A directory is opened from its parent's handle, never through a link,
 *   refused when it is the root of another mount (decided before its file
 *   system is asked anything). Its listing is read in batches; what a batch
 *   says is not a directory goes in one `unlinkAll`, the rest one by one.
 *   Once its listing ends, it is removed from its parent's handle.
 * - At most `window` directories of the walk are held open, as coreutils'
 *   fts does: the deepest ones, and the top. Going back up to a directory
 *   that was closed, it is reached again through `..` of its child and must
 *   be the same node (device, inode, mount id); otherwise it is opened again
 *   by name from the nearest open ancestor, each step verified the same way.
 *   A directory that is no longer where it was is kept (`Failed`), never
 *   entered through what replaced it.
 * - A listing that restarts (a directory reached again, or one that was not
 *   empty when removed) skips the names already kept; a directory is
 *   restarted at most twice for entries that appeared while it was removed,
 *   so a writer that keeps adding cannot hold the walk.
 * - A call that does not return (`Hung`) ends the walk: what was not reached
 *   is not looked at, and the place it hung is kept (`Hung`).
 * - The report holds counts, every kept path up to a bound, and the removed
 *   paths up to a bound (children before their directory); a caller that
 *   asks for them is given each removed path as an event.
 */

/** Why the walk left a path in place (the `SafeRemove` reasons a walk can give). */
export type KeptReason = "OtherFileSystem" | "NotADirectory" | "Failed" | "Hung"

/** A path the walk left in place, and why. */
export interface Kept {
  readonly path: string
  readonly reason: KeptReason
  readonly detail: string
}

/** Where the walk stopped because a call did not return. */
export interface Hung {
  readonly path: string
  readonly call: string
  readonly seconds: number
}

/** The bounds of a walk. */
export interface Limits {
  /** Most directories held open at once (default 32; at least 2). */
  readonly window?: number | undefined
  /** Most removed paths kept in the report (default 1,000). */
  readonly removedPaths?: number | undefined
  /** Most bytes of removed paths kept in the report (default 256 KiB). */
  readonly removedBytes?: number | undefined
  /** Most kept paths listed (default 10,000); the count goes on. */
  readonly keptPaths?: number | undefined
  /** Most bytes of kept paths listed (default 1 MiB). */
  readonly keptBytes?: number | undefined
}

/** What to remove: `name` of the open directory `dir`, whose full path is `path`. */
export interface RemoveInput<H> {
  readonly dir: H
  readonly name: Uint8Array
  readonly path: string
  /** Yield a `removed` event for every path removed (default false: only counted). */
  readonly events?: boolean | undefined
  readonly limits?: Limits | undefined
}

/** What a walk did. */
export interface RemoveResult {
  /** Nothing is left at the path (removed, or it was not there). */
  readonly gone: boolean
  /** How many entries were removed (files, links, directories). */
  readonly removed: number
  /** Removed paths, children before their directory, up to the limits. */
  readonly removedPaths: ReadonlyArray<string>
  /** Kept paths, up to the limits (their ancestors stay too and are not listed). */
  readonly kept: ReadonlyArray<Kept>
  /** How many paths were kept, listed or not. */
  readonly keptCount: number
  /** The call that did not return, if one did not: the walk stopped there. */
  readonly hung: Hung | undefined
}

/** A directory of the walk: where it is, what is left of its listing, and its handle while it is held. */
interface Frame<H> {
  readonly name: Uint8Array
  readonly identity: Identity
  handle: H | undefined
  pending: Array<Entry>
  pos: number
  end: boolean
  restart: boolean
  restarts: number
  /** Names kept in it, skipped when its listing restarts (latin1 keys of the bytes). */
  keptNames: Set<string> | undefined
  /** Something in it stays: it cannot be removed. */
  keeps: boolean
}

const latin1 = (bytes: Uint8Array): string => {
  let s = ""
  for (let i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i] as number)
  return s
}

const childOf = (parent: string, name: Uint8Array): string =>
  parent === "/" ? `/${FileName.decode(name)}` : `${parent}/${FileName.decode(name)}`

/** The accumulated outcome, within its bounds. */
class Acc {
  removed = 0
  readonly removedPaths: Array<string> = []
  removedBytes = 0
  readonly kept: Array<Kept> = []
  keptBytes = 0
  keptCount = 0
  hung: Hung | undefined = undefined
  readonly maxRemovedPaths: number
  readonly maxRemovedBytes: number
  readonly maxKeptPaths: number
  readonly maxKeptBytes: number
  constructor(limits: Limits | undefined) {
    this.maxRemovedPaths = limits?.removedPaths ?? 1000
    this.maxRemovedBytes = limits?.removedBytes ?? 256 * 1024
    this.maxKeptPaths = limits?.keptPaths ?? 10_000
    this.maxKeptBytes = limits?.keptBytes ?? 1024 * 1024
  }
  /** The report has no more room for removed paths (the first that did not fit closes it). */
  full = false
  /** Whether a removed path should be built: for the report while it has room, or for an event. */
  wantsPath(events: boolean): boolean {
    return events || !this.full
  }
  addRemoved(path: string | undefined): void {
    this.removed++
    if (path === undefined || this.full) return
    if (this.removedPaths.length < this.maxRemovedPaths && this.removedBytes + path.length <= this.maxRemovedBytes) {
      this.removedPaths.push(path)
      this.removedBytes += path.length
    } else this.full = true
  }
  keep(kept: Kept): void {
    this.keptCount++
    if (this.kept.length < this.maxKeptPaths && this.keptBytes + kept.path.length <= this.maxKeptBytes) {
      this.kept.push(kept)
      this.keptBytes += kept.path.length
    }
  }
}

const describe = (what: string, f: Failure): string => `${what}: ${f.errno ?? f.reason} ${f.detail}`.replace(/\s+$/, "")

const otherMount = (path: string, detail: string): Kept => ({
  path,
  reason: "OtherFileSystem",
  detail: `${detail}: a mount the table does not show; not entered`
})

/**
 * The removal walk (see the module comment): removes `name` of `dir` and,
 * for a directory, everything below it on the same mount.
 */
export function* removeTree<H>(input: RemoveInput<H>): Generator<Op<H>, RemoveResult, unknown> {
  const acc = new Acc(input.limits)
  const events = input.events === true
  const window = Math.max(2, input.limits?.window ?? 32)
  const frames: Array<Frame<H>> = []
  let open = 0

  const result = (gone: boolean): RemoveResult => ({
    gone: gone && acc.hung === undefined,
    removed: acc.removed,
    removedPaths: acc.removedPaths,
    kept: acc.kept,
    keptCount: acc.keptCount,
    hung: acc.hung
  })

  /** The full path of frame `i` (the top is `input.path`). */
  const pathOf = (i: number): string => {
    let p = input.path
    for (let j = 1; j <= i; j++) p = childOf(p, (frames[j] as Frame<H>).name)
    return p
  }

  /** Records a hang at `path`; the walk stops. */
  const hungAt = (path: string, f: Failure): void => {
    const seconds = f.seconds ?? 0
    const call = f.call ?? "a call"
    acc.hung = { path, call, seconds }
    acc.keep({ path, reason: "Hung", detail: `${call} did not return within ${seconds} s: ${f.detail}` })
  }

  function* removed(path: () => string): Generator<Op<H>, void, unknown> {
    if (!acc.wantsPath(events)) {
      acc.addRemoved(undefined)
      return
    }
    const p = path()
    acc.addRemoved(p)
    if (events) yield { _op: "removed", path: p }
  }

  /** Marks frame `i` as keeping something named `name` (skipped on a restart). */
  const keptIn = (i: number, name: Uint8Array | undefined): void => {
    const f = frames[i]
    if (f === undefined) return
    f.keeps = true
    if (name === undefined) return
    if (f.keptNames === undefined) f.keptNames = new Set()
    f.keptNames.add(latin1(name))
  }

  function* close(f: Frame<H>): Generator<Op<H>, void, unknown> {
    if (f.handle === undefined) return
    const h = f.handle
    f.handle = undefined
    open--
    yield { _op: "close", handle: h }
  }

  /** Closes every handle still held (the walk ends early). */
  function* closeAll(): Generator<Op<H>, void, unknown> {
    for (const f of frames) yield* close(f)
  }

  // Frames below this index (but the top one) are closed: eviction starts here, so a deep
  // chain is not scanned from its top again for every level.
  let heldFrom = 1

  /** Keeps the window: closes the oldest held directories below the top while more than `window` are held. */
  function* evict(): Generator<Op<H>, void, unknown> {
    if (heldFrom > frames.length) heldFrom = Math.max(1, frames.length)
    for (let i = heldFrom; open > window && i < frames.length - 1; i++) {
      const f = frames[i] as Frame<H>
      if (f.handle !== undefined) yield* close(f)
      heldFrom = i + 1
    }
  }

  /** Holds `opened` as frame `i`'s handle, or closes it and says why not. */
  function* adopt(i: number, opened: unknown, how: string): Generator<Op<H>, Failure | undefined, unknown> {
    const f = frames[i] as Frame<H>
    if (isFailure(opened)) return opened
    const o = opened as Opened<H>
    if (!sameNode(o.identity, f.identity)) {
      yield { _op: "close", handle: o.handle }
      return {
        _tag: "Failure",
        reason: "Other",
        detail: `${how} leads to another directory (${o.identity.device}:${o.identity.inode} on mount ${o.identity.mountId}, not ${f.identity.device}:${f.identity.inode} on mount ${f.identity.mountId})`
      }
    }
    f.handle = o.handle
    open++
    if (i < heldFrom) heldFrom = Math.max(1, i)
    // It was closed: where its listing stood is lost, so it starts again (kept names skipped).
    if (!f.end) f.restart = true
    return undefined
  }

  /**
   * Holds frame `i` again: through `..` of the child `child` when it is held,
   * else by name from the nearest held ancestor, each step verified. A frame
   * that cannot be reached as the same directory is abandoned with the frames
   * below it: it is kept (`Failed`), and so is what it is in.
   */
  function* reach(i: number, child: H | undefined): Generator<Op<H>, boolean, unknown> {
    const f = frames[i] as Frame<H>
    if (f.handle !== undefined) return true
    if (child !== undefined) {
      const up = yield { _op: "openParent", dir: child }
      if (isFailure(up) && up.reason === "Hung") {
        hungAt(pathOf(i), up)
        return false
      }
      const adopted = yield* adopt(i, up, "`..`")
      if (adopted === undefined) {
        yield* evict()
        return true
      }
    }
    let j = i - 1
    while (j > 0 && (frames[j] as Frame<H>).handle === undefined) j--
    for (let k = j + 1; k <= i; k++) {
      const parent = frames[k - 1] as Frame<H>
      const fk = frames[k] as Frame<H>
      const opened = yield {
        _op: "openDirectory",
        dir: parent.handle as H,
        name: fk.name,
        sameMount: true
      }
      if (isFailure(opened) && opened.reason === "Hung") {
        hungAt(pathOf(k), opened)
        return false
      }
      const why = yield* adopt(k, opened, "its name")
      // A directory opened again only to reach the next one is not kept open.
      if (why === undefined && k - 1 > j && k - 1 > 0) yield* close(parent)
      if (why !== undefined) {
        acc.keep({
          path: pathOf(k),
          reason: "Failed",
          detail: describe("moved or replaced while it was being removed; not followed", why)
        })
        // Abandon k and everything below it.
        while (frames.length > k) yield* close(frames.pop() as Frame<H>)
        keptIn(k - 1, fk.name)
        return false
      }
    }
    yield* evict()
    return true
  }

  /**
   * Unlinks the non-directory `name` of the frame `i`'s directory (or of the
   * caller's directory for `i` = -1). `"directory"` when a directory is there
   * now (swapped in since it was listed): the caller removes it as one.
   */
  function* unlinkEntry(
    dir: H,
    i: number,
    name: Uint8Array,
    path: () => string
  ): Generator<Op<H>, boolean | "directory", unknown> {
    const r = yield { _op: "unlink", dir, name, directory: false }
    if (!isFailure(r)) {
      yield* removed(path)
      return true
    }
    switch (r.reason) {
      case "NotFound":
        return true
      case "IsADirectory":
        return "directory"
      case "Busy":
        acc.keep(otherMount(path(), "something is mounted on it"))
        keptIn(i, name)
        return false
      case "Hung":
        hungAt(path(), r)
        return false
      default:
        acc.keep({ path: path(), reason: "Failed", detail: describe("unlink", r) })
        keptIn(i, name)
        return false
    }
  }

  /**
   * Opens the directory `name` of `dir` as a new frame. True when it was
   * pushed; false when it is not a directory of this mount (handled: removed
   * as what it is now, or kept).
   */
  function* descend(dir: H, i: number, name: Uint8Array, path: () => string): Generator<Op<H>, boolean, unknown> {
    const opened = yield { _op: "openDirectory", dir, name, sameMount: true }
    if (isFailure(opened)) {
      switch (opened.reason) {
        case "NotFound":
          return false
        case "OtherMount":
          acc.keep(otherMount(path(), opened.detail))
          keptIn(i, name)
          return false
        // No longer a directory (a link or a file swapped in): unlinked as what it is now, never followed.
        case "SymbolicLink":
        case "NotADirectory": {
          const r = yield* unlinkEntry(dir, i, name, path)
          if (r === "directory") {
            acc.keep({ path: path(), reason: "Failed", detail: "swapped back and forth while it was being removed" })
            keptIn(i, name)
          }
          return false
        }
        case "Hung":
          hungAt(path(), opened)
          return false
        default:
          acc.keep({ path: path(), reason: "Failed", detail: describe("open", opened) })
          keptIn(i, name)
          return false
      }
    }
    const o = opened as Opened<H>
    frames.push({
      name,
      identity: o.identity,
      handle: o.handle,
      pending: [],
      pos: 0,
      end: false,
      restart: false,
      restarts: 0,
      keptNames: undefined,
      keeps: false
    })
    open++
    yield* evict()
    return true
  }

  // The entry itself: identified without asking its file system, on the mount of the directory it is in.
  const here = yield { _op: "identify", dir: input.dir, name: undefined }
  if (isFailure(here)) {
    if (here.reason === "Hung") hungAt(input.path, here)
    else acc.keep({ path: input.path, reason: "Failed", detail: describe("stat of the directory it is in", here) })
    return result(false)
  }
  const it = yield { _op: "identify", dir: input.dir, name: input.name }
  if (isFailure(it)) {
    if (it.reason === "NotFound" || it.reason === "NotADirectory") return result(true)
    if (it.reason === "Hung") hungAt(input.path, it)
    else acc.keep({ path: input.path, reason: "Failed", detail: describe("stat", it) })
    return result(false)
  }
  const mountId = (here as Identity).mountId
  if ((it as Identity).mountId !== mountId) {
    acc.keep(otherMount(input.path, `on mount ${(it as Identity).mountId}, the directory it is in on mount ${mountId}`))
    return result(false)
  }
  const topPath = () => input.path
  if ((it as Identity).type !== "Directory") {
    const r = yield* unlinkEntry(input.dir, -1, input.name, topPath)
    if (r !== "directory") return result(r)
  }
  if (!(yield* descend(input.dir, -1, input.name, topPath))) {
    return result(acc.keptCount === 0 && acc.hung === undefined)
  }

  while (frames.length > 0 && acc.hung === undefined) {
    const i = frames.length - 1
    const f = frames[i] as Frame<H>
    if (f.pos >= f.pending.length && !f.end) {
      if (!(yield* reach(i, undefined))) continue
      const listing = yield { _op: "readDirectory", dir: f.handle as H, restart: f.restart }
      f.restart = false
      if (isFailure(listing)) {
        if (listing.reason === "Hung") hungAt(pathOf(i), listing)
        else acc.keep({ path: pathOf(i), reason: "Failed", detail: describe("list", listing) })
        yield* close(frames.pop() as Frame<H>)
        keptIn(i - 1, f.name)
        continue
      }
      const l = listing as Listing
      f.end = l.end
      const fresh =
        f.keptNames === undefined
          ? [...l.entries]
          : l.entries.filter((e) => !(f.keptNames as Set<string>).has(latin1(e.name)))
      fresh.sort((a, b) => FileNames.compare(a.name, b.name))
      // What the listing says is not a directory goes in one batch of unlinks.
      const plain = fresh.filter((e) => e.type !== "Directory" && e.type !== "Unknown")
      const rest: Array<Entry> = []
      if (plain.length > 0) {
        const outcomes = (yield {
          _op: "unlinkAll",
          dir: f.handle as H,
          names: plain.map((e) => e.name)
        }) as ReadonlyArray<Failure | undefined>
        // Built only when a path is wanted: a deep tree's paths are long.
        let base: string | undefined
        const baseOf = () => {
          if (base === undefined) base = pathOf(i)
          return base
        }
        for (let k = 0; k < plain.length; k++) {
          const entry = plain[k] as Entry
          const o = outcomes[k]
          const path = () => childOf(baseOf(), entry.name)
          if (o === undefined) {
            yield* removed(path)
            continue
          }
          switch (o.reason) {
            case "NotFound":
              break
            case "IsADirectory":
              rest.push({ name: entry.name, type: "Directory" })
              break
            case "Busy":
              acc.keep(otherMount(path(), "something is mounted on it"))
              keptIn(i, entry.name)
              break
            case "Hung":
              hungAt(path(), o)
              break
            default:
              acc.keep({ path: path(), reason: "Failed", detail: describe("unlink", o) })
              keptIn(i, entry.name)
          }
          if (acc.hung !== undefined) break
        }
      }
      for (const e of fresh) if (e.type === "Directory" || e.type === "Unknown") rest.push(e)
      f.pending = rest
      f.pos = 0
      continue
    }
    if (f.pos < f.pending.length) {
      const entry = f.pending[f.pos++] as Entry
      // A batch used up is let go at once: a chain deep below keeps only its frames.
      if (f.pos >= f.pending.length) {
        f.pending = []
        f.pos = 0
      }
      if (!(yield* reach(i, undefined))) continue
      const base = () => childOf(pathOf(i), entry.name)
      let type = entry.type
      if (type === "Unknown") {
        const st = yield { _op: "identify", dir: f.handle as H, name: entry.name }
        if (isFailure(st)) {
          if (st.reason === "NotFound") continue
          if (st.reason === "Hung") hungAt(base(), st)
          else {
            acc.keep({ path: base(), reason: "Failed", detail: describe("stat", st) })
            keptIn(i, entry.name)
          }
          continue
        }
        type = (st as Identity).type
      }
      if (type !== "Directory") {
        const r = yield* unlinkEntry(f.handle as H, i, entry.name, base)
        if (r !== "directory") continue
      }
      yield* descend(f.handle as H, i, entry.name, base)
      continue
    }
    // Its listing is done: remove it from its parent, or keep it.
    frames.pop()
    if (f.keeps) {
      yield* close(f)
      keptIn(i - 1, f.name)
      continue
    }
    if (i > 0 && !(yield* reach(i - 1, f.handle))) {
      yield* close(f)
      continue
    }
    yield* close(f)
    const parent = i > 0 ? ((frames[i - 1] as Frame<H>).handle as H) : input.dir
    const path = () => (i > 0 ? childOf(pathOf(i - 1), f.name) : input.path)
    const r = yield { _op: "unlink", dir: parent, name: f.name, directory: true }
    if (!isFailure(r)) {
      yield* removed(path)
      continue
    }
    switch (r.reason) {
      case "NotFound":
        break
      case "NotEmpty":
        if (f.restarts < 2) {
          // Entries appeared while it was being listed (or a listing missed them): once more.
          const again = yield { _op: "openDirectory", dir: parent, name: f.name, sameMount: true }
          if (!isFailure(again) && sameNode((again as Opened<H>).identity, f.identity)) {
            frames.push({ ...f, handle: (again as Opened<H>).handle, pending: [], pos: 0, end: false, restart: true })
            ;(frames[frames.length - 1] as Frame<H>).restarts = f.restarts + 1
            open++
            yield* evict()
            break
          }
          if (!isFailure(again)) yield { _op: "close", handle: (again as Opened<H>).handle }
          if (isFailure(again) && again.reason === "Hung") {
            hungAt(path(), again)
            break
          }
        }
        acc.keep({ path: path(), reason: "Failed", detail: "entries appeared while it was being removed" })
        keptIn(i - 1, f.name)
        break
      case "NotADirectory":
        acc.keep({
          path: path(),
          reason: "Failed",
          detail: "replaced while it was being removed (now not a directory); not followed"
        })
        keptIn(i - 1, f.name)
        break
      case "Busy":
        acc.keep(otherMount(path(), "something was mounted on it"))
        keptIn(i - 1, f.name)
        break
      case "Hung":
        hungAt(path(), r)
        break
      default:
        acc.keep({ path: path(), reason: "Failed", detail: describe("rmdir", r) })
        keptIn(i - 1, f.name)
    }
  }
  yield* closeAll()
  return result(acc.keptCount === 0)
}
