/**
 * The removal of one path that starts a removal: checked against the mount
 * table, then handed to the removal walk (`Programs.removeTree`, through
 * `Directories.removeTree`: the real layer runs it in its helper process,
 * any other layer over its primitives), which checks the mount id, never
 * follows a link, never enters another mount, and keeps a bounded number of
 * handles open. Every keep is recorded and logged; removed paths are counted
 * and kept up to a bound.
 *
 * Internal: `SafeRemove.session` builds a {@link Removal} once per session; the
 * session's operations (`./session.ts`) call {@link removeTop}.
 *
 * @since 0.3.0
 */

import { Effect } from "effect"
import type * as Directory from "../../Directory.ts"
import * as FileName from "../../FileName.ts"
import type * as HostPath from "../../HostPath.ts"
import type { Kept, Report } from "../../SafeRemove.ts"
import * as DirectoryErrors from "../directory/errors.ts"
import * as Names from "../directory/names.ts"
import * as HostRoots from "../hostPath/root.ts"
import { describeHolders } from "../mounter/describe.ts"
import * as Holders from "../mounter/holders.ts"
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
  removedCount: number
  keptCount: number
}

/** Most removed paths a report lists (the count goes on). */
export const MaxRemovedPaths = 1000

/** Most kept paths a report lists (the count goes on). */
export const MaxKeptPaths = 10_000

/** A fresh outcome. */
export const emptyAcc = (): Acc => ({ removed: [], kept: [], removedCount: 0, keptCount: 0 })

/** Records a kept path, within the bound. */
export const addKept = (acc: Acc, kept: Kept): void => {
  acc.keptCount++
  if (acc.kept.length < MaxKeptPaths) acc.kept.push(kept)
}

/** Logs a kept path as a warning with its reason (and the mount that kept it). */
export const logKept = (kept: Kept): Effect.Effect<void> =>
  Effect.logWarning(`kept ${FileName.display(kept.path)}: ${kept.detail}`).pipe(
    Effect.annotateLogs({ path: FileName.display(kept.path), reason: kept.reason, mountPoint: kept.mountPoint ?? "" })
  )

/** `name` below the full path `dir` (lossless string forms). */
export const fullChild = Names.childPath

/** Records and logs a kept path; false: it is not gone. */
export const keep = (acc: Acc, kept: Kept): Effect.Effect<boolean> =>
  Effect.sync(() => addKept(acc, kept)).pipe(Effect.andThen(logKept(kept)), Effect.as(false))

/** Keeps `path` because the file system refused `what` (`Failed`, the errno or the reason and what it means), or did not answer (`Hung`). */
export const failed = (acc: Acc, path: string, what: string, e: Directory.DirectoryError): Effect.Effect<boolean> =>
  keep(
    acc,
    e.reason._tag === "Hung"
      ? { path, reason: "Hung", detail: `${what}: ${e.reason.message}` }
      : { path, reason: "Failed", detail: `${what}: ${DirectoryErrors.errnoOf(e) ?? e.reason._tag} ${e.reason.detail}` }
  )

/** A path kept because it is on another mount than the one being removed from. */
export const otherMount = (path: string, detail: string): Kept => ({
  path,
  reason: "OtherFileSystem",
  detail: `${detail}: a mount the table does not show; not entered`
})

/** Why the table keeps the full path `path`, or `undefined` when it does not. */
const blockedBy = (r: Removal, path: string): Kept | undefined => {
  const t = HostRoots.tablePathOf(r.root, path)
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
 * checked against the table, then removed by the walk. True when it is gone.
 */
export const removeTop = (
  r: Removal,
  acc: Acc,
  dir: Directory.Handle,
  name: Uint8Array,
  path: string
): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    const blocked = blockedBy(r, path)
    if (blocked !== undefined) {
      // Who holds the mount that keeps it, where the Mounter in context can tell.
      const entry =
        blocked.mountPoint === undefined
          ? undefined
          : r.index.entries.find((x) => x.entry.mountPoint === blocked.mountPoint)?.entry
      const held =
        entry === undefined
          ? undefined
          : (yield* Holders.holdersOf([
              { mountId: entry.id, device: `${entry.major}:${entry.minor}`, root: entry.root }
            ])).get(entry.id)
      return yield* keep(
        acc,
        held === undefined || held.length === 0
          ? blocked
          : { ...blocked, detail: `${blocked.detail}${describeHolders(held)}`, holders: held }
      )
    }
    const walked = yield* r.dirs.removeTree(dir, name, path, { events: r.debug })
    acc.removedCount += walked.removed
    for (const p of walked.removedPaths) if (acc.removed.length < MaxRemovedPaths) acc.removed.push(p)
    for (const k of walked.kept) yield* keep(acc, k)
    // Kept beyond what the walk listed: counted, not listed.
    acc.keptCount += walked.keptCount - walked.kept.length
    return walked.gone
  })

/**
 * The report of a removal that found nothing to do.
 */
export const emptyReport: Report = { removed: [], kept: [], removedCount: 0, keptCount: 0 }

/**
 * A report of `kept` paths and nothing removed (the paths a caller kept before any removal).
 */
export const keptOnly = (kept: ReadonlyArray<Kept>): Report => ({
  removed: [],
  kept,
  removedCount: 0,
  keptCount: kept.length
})

/**
 * The reports of several removals as one, in order, within the bounds.
 */
export const merge = (...reports: ReadonlyArray<Report>): Report => ({
  removed: reports.flatMap((r) => r.removed).slice(0, MaxRemovedPaths),
  kept: reports.flatMap((r) => r.kept).slice(0, MaxKeptPaths),
  removedCount: reports.reduce((n, r) => n + r.removedCount, 0),
  keptCount: reports.reduce((n, r) => n + r.keptCount, 0)
})
