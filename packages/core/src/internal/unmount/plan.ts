/**
 * What the unmount operations decide before they call the `Mounter`: the
 * prefixes decoded below the root, and the plan (which entries, deepest
 * first, each stack top down).
 *
 * @since 0.4.0
 */
import { Effect, type Scope } from "effect"
import * as Directory from "../../Directory.ts"
import * as HostPath from "../../HostPath.ts"
import type * as MountInfo from "../../MountInfo.ts"
import * as Lexical from "../hostPath/lexical.ts"
import * as HostRoots from "../hostPath/root.ts"

/** A handle on the decoded root, its failure said as the root's (the prefixes are resolved, and mounts verified, below it). */
export const openRootOf = (
  dirs: Directory.Directories,
  root: HostPath.HostRoot
): Effect.Effect<Directory.Handle, HostPath.HostPathError, Scope.Scope> =>
  dirs.openRoot(root.path).pipe(
    Effect.mapError(
      (e) =>
        new HostPath.HostPathError({
          reason: new HostPath.Refused({ _tag: "Unreadable", detail: e.message }),
          root: root.given
        })
    )
  )

/**
 * Decodes `prefixes` below `root`: each non-empty, absolute, without NUL
 * bytes, not `/` or the root itself unless `allowRoot` (`HostRoots.checkPath`);
 * then resolved once through a handle on the root (`Directory.resolve`: a
 * link followed below the root, never out of it; not the last one with
 * `followFinal: false`) and named as the mount table names it. The first bad
 * prefix fails the whole call, before anything is unmounted.
 */
export const decodePrefixes: (
  root: HostPath.HostRoot,
  prefixes: ReadonlyArray<string>,
  options?: {
    readonly allowRoot?: boolean | undefined
    readonly followFinal?: boolean | undefined
    /** A handle on `root` the caller holds (an unmount verifies its mounts below it): not opened again. */
    readonly handle?: Directory.Handle | undefined
  }
) => Effect.Effect<ReadonlyArray<HostPath.Resolved>, HostPath.HostPathError, Directory.Directories> = Effect.fn(
  "Unmount.decodePrefixes"
)(function* (root, prefixes, options) {
  const dirs = yield* Directory.Directories
  const allowRoot = options?.allowRoot ?? false
  const checked = yield* Effect.forEach(prefixes, (p) => HostRoots.checkPath(root, p, { allowRoot, what: "prefix" }))
  const refuse = (given: string, reason: HostPath.HostPathError["reason"]) =>
    new HostPath.HostPathError({ reason, root: root.given, path: given })
  const rootHandle = options?.handle ?? (yield* openRootOf(dirs, root))
  return yield* Effect.forEach(checked, (c) =>
    Effect.gen(function* () {
      const r = yield* dirs.resolve(rootHandle, c.path, { followFinal: options?.followFinal ?? true }).pipe(
        Effect.map((x) => x.path),
        Effect.catchTag("DirectoryError", (e) =>
          // A prefix whose parents do not exist names nothing mounted: it is matched as written.
          e.reason._tag === "NotFound" || e.reason._tag === "NotADirectory"
            ? Effect.succeed(Lexical.clean(c.path))
            : Effect.fail(
                refuse(
                  c.given,
                  e.reason._tag === "TooManyLinks"
                    ? new HostPath.Refused({ _tag: "TooManyLinks", detail: `the prefix: ${e.message}` })
                    : new HostPath.Refused({ _tag: "Unreadable", detail: `the prefix: ${e.message}` })
                )
              )
        )
      )
      if (r === "/" && !allowRoot) {
        return yield* refuse(
          c.given,
          new HostPath.Refused({
            _tag: "IsHostRoot",
            detail: "the prefix resolves to the host root itself; pass allowRoot to mean the whole host"
          })
        )
      }
      const full = HostRoots.fullPath(root, r)
      const table = HostRoots.tablePathOf(root, full)
      if (table === undefined) {
        return yield* refuse(
          c.given,
          new HostPath.Refused({
            _tag: "OutsideTable",
            detail: `the prefix resolves to ${full}, which the mount table cannot name`
          })
        )
      }
      return { given: c.given, path: r, full, table } satisfies HostPath.Resolved
    })
  )
}, Effect.scoped)

/**
 * The prefixes of `set` that cover the clean `mountPoint`: the path itself and
 * each ancestor on a `/` boundary, looked up in the set. The cost grows with
 * the path's depth, not with the number of prefixes: a teardown passes one
 * prefix per pod, and the table can hold thousands of mounts.
 */
export const coveringPrefixes = (set: ReadonlySet<string>, mountPoint: string): Array<string> => {
  const out: Array<string> = []
  if (set.has(mountPoint)) out.push(mountPoint)
  for (let i = mountPoint.lastIndexOf("/"); i > 0; i = mountPoint.lastIndexOf("/", i - 1)) {
    const ancestor = mountPoint.slice(0, i)
    if (set.has(ancestor)) out.push(ancestor)
  }
  if (mountPoint !== "/" && set.has("/")) out.push("/")
  return out
}

/** `Lexical.covers` without building a string: thousands of mount points are compared on each pass. */
const coversAt = (prefix: string, path: string): boolean =>
  prefix === "/" ||
  (path.startsWith(prefix) && (path.length === prefix.length || path.charCodeAt(prefix.length) === 47))

const depth = (path: string): number => {
  let n = 0
  for (let i = 0; i < path.length; i++) if (path.charCodeAt(i) === 47) n++
  return path === "/" ? 0 : n
}

/**
 * The entries to unmount, deepest first. One entry per table line: stacked
 * mounts on one path appear once each, since each unmount of a path removes
 * only its top mount. At equal depth a stack is peeled from its top (told by
 * parent ids: a mount's id says nothing of its place, the kernel reuses
 * them), then higher ids first.
 */
export const plan = (
  table: ReadonlyArray<MountInfo.MountEntry>,
  prefixes: ReadonlyArray<string>,
  strict: boolean
): Array<MountInfo.MountEntry> => {
  // Each mount point is cleaned once; on tables of thousands of entries this
  // runs on every pass.
  const set = new Set(prefixes)
  // A few prefixes (the usual call) are compared with each mount point; many (one per pod) looked up by ancestor.
  const few = prefixes.length <= 8
  const selected: Array<{ readonly e: MountInfo.MountEntry; readonly mp: string; readonly d: number; h: number }> = []
  for (const e of table) {
    const mp = Lexical.clean(e.mountPoint)
    if (strict && set.has(mp)) continue
    if (few ? prefixes.some((p) => coversAt(p, mp)) : coveringPrefixes(set, mp).length > 0) {
      selected.push({ e, mp, d: depth(mp), h: -1 })
    }
  }
  stackHeights(selected)
  // Deepest first: a parent cannot be detached cleanly while it has children,
  // and removing children first keeps each failure attributable to one mount.
  // On one path, the top of the stack first.
  return selected.sort((a, b) => b.d - a.d || b.h - a.h || b.e.id - a.e.id).map(({ e }) => e)
}

/**
 * Sets each entry's height in the stack at its mount point: how many mounts
 * of `entries` lie below it there (its parent, mounted at the same path, and
 * so on down). Mount ids say nothing of the order: the kernel gives a new
 * mount the lowest free id, so the top of a stack can have the lowest; and
 * the table's order is not the stack's either once mounts are moved. The
 * parent ids are: a mount stacked on another has it as its parent. Linear:
 * each height is computed once.
 */
const stackHeights = (entries: Array<{ readonly e: MountInfo.MountEntry; readonly mp: string; h: number }>): void => {
  const byId = new Map<number, (typeof entries)[number]>()
  for (const x of entries) byId.set(x.e.id, x)
  const chain: Array<(typeof entries)[number]> = []
  for (const x of entries) {
    let at: (typeof entries)[number] | undefined = x
    // Down the stack to an entry whose height is known, or its bottom (a table whose parents loop ends there too).
    while (at !== undefined && at.h < 0 && chain.length <= entries.length) {
      chain.push(at)
      const below: (typeof entries)[number] | undefined = byId.get(at.e.parentId)
      at = below !== undefined && below !== at && below.mp === at.mp ? below : undefined
    }
    let h = at !== undefined && at.h >= 0 ? at.h + 1 : 0
    for (let i = chain.length - 1; i >= 0; i--) {
      const c = chain[i] as (typeof entries)[number]
      if (c.h < 0) c.h = h++
    }
    chain.length = 0
  }
}
