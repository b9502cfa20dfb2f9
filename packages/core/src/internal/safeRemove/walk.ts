/**
 * The removal itself: a path that starts a removal is checked against the
 * mount table, then by mount id, then removed through handles without
 * following anything; a directory is opened from its parent's handle
 * (`O_NOFOLLOW`, same mount), listed, emptied and removed by name once
 * empty. Every keep is recorded and logged as it happens.
 *
 * Internal: `SafeRemove.open` builds a {@link Removal} once per session; the
 * session's operations (`./session.ts`) call {@link removeTop}.
 *
 * @since 0.3.0
 */
import { Effect } from "effect"
import * as Directory from "../../Directory.ts"
import * as FileName from "../../FileName.ts"
import * as HostPath from "../../HostPath.ts"
import type { Kept } from "../../SafeRemove.ts"
import { blockers, type TableIndex } from "./table.ts"

/** What every step of a session's removals shares: the service, the root, its handle and the table. */
export interface Removal {
  readonly dirs: Directory.Directories
  readonly root: HostPath.HostRoot
  readonly rootHandle: Directory.Handle
  readonly index: TableIndex
  /**
   * Per path at debug: a teardown removes thousands, and building their lines
   * costs as much as the system calls, so only when debug is on; the
   * operation logs one summary at info.
   */
  readonly debug: boolean
}

/** One call's accumulated outcome. Each public call starts a fresh one. */
export interface Acc {
  readonly removed: Array<string>
  readonly kept: Array<Kept>
}

/** A fresh outcome. */
export const emptyAcc = (): Acc => ({ removed: [], kept: [] })

/** Logs a kept path as a warning with its reason (and the mount that kept it). */
export const logKept = (kept: Kept): Effect.Effect<void> =>
  Effect.logWarning(`kept ${FileName.display(kept.path)}: ${kept.detail}`).pipe(
    Effect.annotateLogs({ path: FileName.display(kept.path), reason: kept.reason, mountPoint: kept.mountPoint ?? "" })
  )

/** `name` below the full path `dir` (lossless string forms). */
export const fullChild = Directory.childPath

/** Records and logs a kept path; false: it is not gone. */
export const keep = (acc: Acc, kept: Kept): Effect.Effect<boolean> =>
  Effect.sync(() => acc.kept.push(kept)).pipe(Effect.andThen(logKept(kept)), Effect.as(false))

/** Keeps `path` because the file system refused `what` (`Failed`, the errno or the reason and what it means). */
export const failed = (acc: Acc, path: string, what: string, e: Directory.DirectoryError): Effect.Effect<boolean> =>
  keep(acc, {
    path,
    reason: "Failed",
    detail: `${what}: ${Directory.errnoOf(e) ?? e.reason._tag} ${e.reason.detail}`
  })

/** Records a removed path (logged at debug when debug is on); true: it is gone. */
const removed = (r: Removal, acc: Acc, path: string, type: Directory.Type): Effect.Effect<boolean> => {
  acc.removed.push(path)
  return r.debug
    ? Effect.logDebug(`removed ${FileName.display(path)}`).pipe(Effect.annotateLogs({ type }), Effect.as(true))
    : Effect.succeed(true)
}

/** A path kept because it is on another mount than the one being removed from. */
export const otherMount = (path: string, detail: string): Kept => ({
  path,
  reason: "OtherFileSystem",
  detail: `${detail}: a mount the table does not show; not entered`
})

/** Removes the non-directory `name` of `dir`; true when nothing is left there. */
const unlinkEntry = (
  r: Removal,
  acc: Acc,
  dir: Directory.Handle,
  name: FileName.Bytes,
  path: string,
  mountId: number
): Effect.Effect<boolean> =>
  Effect.flatMap(Effect.result(r.dirs.unlink(dir, name)), (u): Effect.Effect<boolean> => {
    if (u._tag === "Success") return removed(r, acc, path, "File")
    const e = u.failure
    switch (e.reason._tag) {
      case "NotFound":
        return Effect.succeed(true)
      // A directory now, swapped in since it was listed: removed as one.
      case "IsADirectory":
        return removeDirectory(r, acc, dir, name, path, mountId)
      case "Busy":
        return keep(acc, otherMount(path, "something is mounted on it"))
      default:
        return failed(acc, path, "unlink", e)
    }
  })

/** Unlinks, in one batch, the entries of the open directory `h` the listing says are not directories; false when one stays. */
const unlinkPlain = (
  r: Removal,
  acc: Acc,
  h: Directory.Handle,
  path: string,
  plain: ReadonlyArray<Directory.Entry>,
  mountId: number
): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    let gone = true
    const outcomes = yield* r.dirs.unlinkAll(
      h,
      plain.map((e) => e.name)
    )
    for (const [i, entry] of plain.entries()) {
      const child = fullChild(path, entry.name)
      const e = outcomes[i]
      if (e === undefined) {
        yield* removed(r, acc, child, entry.type)
        continue
      }
      const tag = e.reason._tag
      const ok =
        tag === "NotFound"
          ? true
          : tag === "IsADirectory"
            ? yield* removeDirectory(r, acc, h, entry.name, child, mountId)
            : tag === "Busy"
              ? yield* keep(acc, otherMount(child, "something is mounted on it"))
              : yield* failed(acc, child, "unlink", e)
      if (!ok) gone = false
    }
    return gone
  })

/** Empties and removes the directory `name` of `dir` (on mount `mountId`); true when it is gone. */
const removeDirectory = (
  r: Removal,
  acc: Acc,
  dir: Directory.Handle,
  name: FileName.Bytes,
  path: string,
  mountId: number
): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    const opened = yield* Effect.result(r.dirs.openDirectory(dir, name, { sameMount: true }))
    if (opened._tag === "Failure") {
      const e = opened.failure
      switch (e.reason._tag) {
        case "NotFound":
          return true
        case "OtherMount":
          return yield* keep(acc, otherMount(path, e.reason.detail))
        // No longer a directory (a link or a file swapped in): unlinked as what it is now, never followed.
        case "SymbolicLink":
        case "NotADirectory":
          return yield* unlinkEntry(r, acc, dir, name, path, mountId)
        default:
          return yield* failed(acc, path, "open", e)
      }
    }
    const h = opened.success
    const listed = yield* Effect.result(r.dirs.list(h))
    if (listed._tag === "Failure") return yield* failed(acc, path, "list", listed.failure)
    const entries = [...listed.success].sort((a, b) => FileName.compare(a.name, b.name))
    // What the listing says is not a directory goes in one batch of unlinks;
    // anything that turns out otherwise is handled one by one below.
    let gone = yield* unlinkPlain(
      r,
      acc,
      h,
      path,
      entries.filter((e) => e.type !== "Directory" && e.type !== "Unknown"),
      mountId
    )
    for (const entry of entries) {
      if (entry.type !== "Directory" && entry.type !== "Unknown") continue
      const child = fullChild(path, entry.name)
      let type: Directory.Type = entry.type
      if (type === "Unknown") {
        const st = yield* Effect.result(r.dirs.stat(h, entry.name))
        if (st._tag === "Failure") {
          if (st.failure.reason._tag === "NotFound") continue
          gone = yield* failed(acc, child, "stat", st.failure)
          continue
        }
        type = st.success.type
      }
      const ok =
        type === "Directory"
          ? yield* removeDirectory(r, acc, h, entry.name, child, mountId)
          : yield* unlinkEntry(r, acc, h, entry.name, child, mountId)
      if (!ok) gone = false
    }
    if (!gone) return false
    const rmdir = yield* Effect.result(r.dirs.unlink(dir, name, { directory: true }))
    if (rmdir._tag === "Success") return yield* removed(r, acc, path, "Directory")
    const e = rmdir.failure
    switch (e.reason._tag) {
      case "NotFound":
        return true
      case "NotEmpty":
        return yield* keep(acc, { path, reason: "Failed", detail: "entries appeared while it was being removed" })
      case "NotADirectory":
        return yield* keep(acc, {
          path,
          reason: "Failed",
          detail: "replaced while it was being removed (now not a directory); not followed"
        })
      case "Busy":
        return yield* keep(acc, otherMount(path, "something was mounted on it"))
      default:
        return yield* failed(acc, path, "rmdir", e)
    }
  }).pipe(Effect.scoped)

/** Why the table keeps the full path `path`, or `undefined` when it does not. */
const blockedBy = (r: Removal, path: string): Kept | undefined => {
  const t = HostPath.tablePathOf(r.root, path)
  // A path the table cannot show is not removed: nothing is known about its mounts.
  if (t === undefined) return { path, reason: "Failed", detail: "outside the mount table's root" }
  const b = blockers(r.index, t)[0]
  if (b === undefined) return undefined
  const where = `${b.entry.fsType} ${JSON.stringify(b.entry.source)} mounted at ${b.entry.mountPoint}`
  return b.reason === "MountBelow"
    ? { path, reason: "MountBelow", mountPoint: b.entry.mountPoint, detail: `a mount at or below it: ${where}` }
    : {
        path,
        reason: "MountSourceBelow",
        mountPoint: b.entry.mountPoint,
        detail: `${b.at} is the source of ${where}`
      }
}

/**
 * Removes `name` of `dir` (full path `path`), a path that starts a removal:
 * checked against the table, then by mount id, then removed without
 * following anything. True when it is gone.
 */
export const removeTop = (
  r: Removal,
  acc: Acc,
  dir: Directory.Handle,
  name: FileName.Bytes,
  path: string
): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    const blocked = blockedBy(r, path)
    if (blocked !== undefined) return yield* keep(acc, blocked)
    const parent = yield* Effect.result(r.dirs.stat(dir))
    if (parent._tag === "Failure") return yield* failed(acc, path, "stat of the directory it is in", parent.failure)
    const st = yield* Effect.result(r.dirs.stat(dir, name))
    if (st._tag === "Failure") {
      const tag = st.failure.reason._tag
      return tag === "NotFound" || tag === "NotADirectory" ? true : yield* failed(acc, path, "stat", st.failure)
    }
    if (st.success.mountId !== parent.success.mountId) {
      return yield* keep(
        acc,
        otherMount(path, `on mount ${st.success.mountId}, the directory it is in on mount ${parent.success.mountId}`)
      )
    }
    return st.success.type === "Directory"
      ? yield* removeDirectory(r, acc, dir, name, path, parent.success.mountId)
      : yield* unlinkEntry(r, acc, dir, name, path, parent.success.mountId)
  })
