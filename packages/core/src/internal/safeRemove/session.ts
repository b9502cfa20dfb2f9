/**
 * A session's operations over one {@link Removal}: each host path is
 * checked, resolved once below the root's handle (its last component never
 * followed) and handed to the walk (`./walk.ts`); a directory to empty or
 * list is opened from its parent's handle, or kept with its reason.
 *
 * Internal: `SafeRemove.session` returns {@link make}'s session.
 *
 * @since 0.3.0
 */
import { Effect, type Scope } from "effect"
import type * as Directory from "../../Directory.ts"
import * as FileName from "../../FileName.ts"
import * as HostPath from "../../HostPath.ts"
import type { Entry } from "../../Programs.ts"
import type { EmptyOptions, Kept, Report, Session } from "../../SafeRemove.ts"
import * as FileNames from "../fileName.ts"
import * as HostRoots from "../hostPath/root.ts"
import { type Acc, emptyAcc, failed, fullChild, keep, otherMount, type Removal, removeTop } from "./walk.ts"

/** A resolved path: where it is, its full path, and the (directory, name) the removal acts on. */
interface Target {
  readonly full: string
  readonly dir: Directory.Handle
  readonly name: Uint8Array | undefined
}

/** A path whose resolution did not return within its deadline: kept, never looked at again. */
interface Stalled {
  readonly _tag: "Stalled"
  readonly kept: Kept
}

/** Runs `body` on a fresh outcome, in its own scope (the handles it opens close with it), and reports it. */
const run = <E>(body: (acc: Acc) => Effect.Effect<void, E, Scope.Scope>): Effect.Effect<Report, E> =>
  Effect.gen(function* () {
    const acc = emptyAcc()
    yield* body(acc)
    return {
      removed: acc.removed,
      kept: acc.kept,
      removedCount: acc.removedCount,
      keptCount: acc.keptCount
    } satisfies Report
  }).pipe(Effect.scoped)

/** A `HostPathError` about the path `given` below the session's root. */
const refused = (r: Removal, given: string, reason: HostPath.HostPathError["reason"]) =>
  new HostPath.HostPathError({ reason, root: r.root.given, path: given })

/**
 * Decodes a host path and resolves it once below the root's handle; a
 * missing or non-directory parent means nothing is there (`undefined`).
 */
const resolveTarget = (
  r: Removal,
  given: string,
  checked: HostRoots.Checked | undefined = undefined
): Effect.Effect<Target | Stalled | undefined, HostPath.HostPathError, Scope.Scope> =>
  Effect.gen(function* () {
    const decoded = checked ?? (yield* HostRoots.checkPath(r.root, given))
    const resolved = yield* Effect.result(r.dirs.resolve(r.rootHandle, decoded.path, { followFinal: false }))
    if (resolved._tag === "Failure") {
      const e = resolved.failure
      const tag = e.reason._tag
      if (tag === "NotFound" || tag === "NotADirectory") return undefined
      if (e.reason._tag === "Hung") {
        const kept: Kept = {
          path: HostRoots.fullPath(r.root, decoded.path),
          reason: "Hung",
          detail: `resolving it: ${e.reason.message}`
        }
        return { _tag: "Stalled", kept } satisfies Stalled
      }
      if (tag === "TooManyLinks")
        return yield* refused(r, given, new HostPath.Refused({ _tag: "TooManyLinks", detail: e.message }))
      return yield* refused(r, given, new HostPath.Refused({ _tag: "Unreadable", detail: e.message }))
    }
    const full = HostRoots.fullPath(r.root, resolved.success.path)
    if (resolved.success.name === undefined || full === r.root.path) {
      return yield* refused(
        r,
        given,
        new HostPath.Refused({ _tag: "IsHostRoot", detail: "the path resolves to the host root itself" })
      )
    }
    return { full, dir: resolved.success.parent, name: resolved.success.name } satisfies Target
  })

/** Keeps the directory at `t`, replaced by a non-directory (`NotADirectory`); not followed. */
const keepNotADirectory = (acc: Acc, t: Target, detail: string) =>
  keep(acc, { path: t.full, reason: "NotADirectory", detail })

/** The directory at `t`, opened: or why it was kept, or `undefined` when it is not there. */
const openDir = (
  r: Removal,
  acc: Acc,
  t: Target,
  options?: EmptyOptions
): Effect.Effect<Directory.Handle | undefined, never, Scope.Scope> =>
  Effect.gen(function* () {
    const name = t.name as Uint8Array
    const tablePath = HostRoots.tablePathOf(r.root, t.full)
    const at = tablePath === undefined ? undefined : r.index.entries.find((e) => e.mountPoint === tablePath)
    if (tablePath === undefined || at !== undefined) {
      yield* keep(acc, {
        path: t.full,
        reason: "MountBelow",
        ...(at === undefined ? {} : { mountPoint: at.entry.mountPoint }),
        detail:
          at === undefined
            ? "outside the mount table's root"
            : `${at.entry.fsType} ${JSON.stringify(at.entry.source)} is mounted on it; not emptied`
      })
      return undefined
    }
    const st = yield* Effect.result(r.dirs.stat(t.dir, name))
    if (st._tag === "Failure") {
      if (st.failure.reason._tag !== "NotFound") yield* failed(acc, t.full, "stat", st.failure)
      return undefined
    }
    if (st.success.type !== "Directory") {
      if (options?.replaceNonDirectory === true) {
        if (!(yield* removeTop(r, acc, t.dir, name, t.full))) return undefined
        const made = yield* Effect.result(r.dirs.makeDirectory(t.dir, name, 0o755))
        if (made._tag === "Failure") yield* failed(acc, t.full, "mkdir", made.failure)
        else
          yield* Effect.logInfo(
            `replaced the ${st.success.type} at ${FileName.display(t.full)} with an empty directory`
          ).pipe(Effect.annotateLogs({ path: FileName.display(t.full), type: st.success.type }))
        return undefined
      }
      const target =
        st.success.type === "SymbolicLink"
          ? yield* r.dirs.readLink(t.dir, name).pipe(
              Effect.map((b) => ` to ${JSON.stringify(FileName.display(FileName.decode(b)))}`),
              Effect.orElseSucceed(() => "")
            )
          : ""
      yield* keepNotADirectory(acc, t, `is a ${st.success.type}${target}, not a directory; not followed`)
      return undefined
    }
    const opened = yield* Effect.result(r.dirs.openDirectory(t.dir, name, { sameMount: true }))
    if (opened._tag === "Failure") {
      const e = opened.failure
      const tag = e.reason._tag
      if (e.reason._tag === "OtherMount") yield* keep(acc, otherMount(t.full, e.reason.detail))
      else if (tag === "SymbolicLink" || tag === "NotADirectory") {
        yield* keepNotADirectory(acc, t, "replaced by something that is not a directory; not followed")
      } else if (tag !== "NotFound") yield* failed(acc, t.full, "open", e)
      return undefined
    }
    return opened.success
  })

/** The entries of the open directory `h`, sorted by name; `undefined` (and the directory kept) when it cannot be listed. */
const sortedEntries = (
  r: Removal,
  acc: Acc,
  h: Directory.Handle,
  full: string
): Effect.Effect<ReadonlyArray<Entry> | undefined> =>
  Effect.flatMap(Effect.result(r.dirs.list(h)), (l) =>
    l._tag === "Failure"
      ? Effect.as(failed(acc, full, "list", l.failure), undefined)
      : Effect.succeed([...l.success].sort((a, b) => FileNames.compare(a.name, b.name)))
  )

/** `Session.remove`: every path checked before the first removal, then each resolved and removed. */
const remove =
  (r: Removal): Session["remove"] =>
  (paths) =>
    run((acc) =>
      Effect.gen(function* () {
        // Every path is checked before the first removal.
        const checked = yield* Effect.forEach(paths, (p) => HostRoots.checkPath(r.root, p))
        for (const [i, p] of paths.entries()) {
          const t = yield* resolveTarget(r, p, checked[i])
          if (t === undefined) continue
          if ("_tag" in t) {
            yield* keep(acc, t.kept)
            continue
          }
          if (t.name === undefined) continue
          yield* removeTop(r, acc, t.dir, t.name, t.full)
        }
      })
    ).pipe(Effect.withSpan("SafeRemove.Session.remove"), Effect.annotateLogs({ hostRoot: r.root.path }))

/** `Session.empty`: the directory opened through handles, and each selected entry removed as a path of its own. */
const empty =
  (r: Removal): Session["empty"] =>
  (dir, options) =>
    run((acc) =>
      Effect.gen(function* () {
        const t = yield* resolveTarget(r, dir)
        if (t === undefined) return
        if ("_tag" in t) {
          yield* keep(acc, t.kept)
          return
        }
        const h = yield* openDir(r, acc, t, options)
        if (h === undefined) return
        const entries = yield* sortedEntries(r, acc, h, t.full)
        if (entries === undefined) return
        const select = options?.select ?? (() => true)
        for (const entry of entries) {
          if (select(FileName.decode(entry.name)))
            yield* removeTop(r, acc, h, entry.name, fullChild(t.full, entry.name))
        }
      })
    ).pipe(Effect.withSpan("SafeRemove.Session.empty"), Effect.annotateLogs({ hostRoot: r.root.path }))

/** `Session.children`: the names in a directory opened through handles, or why it was kept. */
const children =
  (r: Removal): Session["children"] =>
  (dir) =>
    Effect.gen(function* () {
      const acc = emptyAcc()
      const t = yield* resolveTarget(r, dir)
      if (t === undefined) return { names: [], kept: [] }
      if ("_tag" in t) return { names: [], kept: [t.kept] }
      const h = yield* openDir(r, acc, t)
      if (h === undefined) return { names: [], kept: acc.kept }
      const entries = yield* sortedEntries(r, acc, h, t.full)
      if (entries === undefined) return { names: [], kept: acc.kept }
      return { names: entries.map((e) => FileName.decode(e.name)), kept: acc.kept }
    }).pipe(Effect.scoped, Effect.withSpan("SafeRemove.Session.children"))

/** `Session.removeAt`: the entry of a directory the caller holds, removed as a path of its own. */
const removeAt =
  (r: Removal): Session["removeAt"] =>
  (dir, name, path) =>
    run((acc) => Effect.asVoid(removeTop(r, acc, dir, name, path))).pipe(Effect.withSpan("SafeRemove.Session.removeAt"))

/** The session over `r`. */
export const make = (r: Removal): Session => ({
  root: r.root,
  remove: remove(r),
  empty: empty(r),
  children: children(r),
  removeAt: removeAt(r)
})
