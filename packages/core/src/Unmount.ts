/**
 * Unmounting everything at or below a set of prefixes (the Go package's
 * `UnmountBelow`, `UnmountBelowByPrefix` and `UnmountStrictlyBelow`).
 *
 * Pod volumes (tmpfs secrets, projected volumes, CSI bind mounts) are mounted
 * under the kubelet directory and can outlive the node stack. Before that
 * directory is removed they must be gone, or removing it fails (EBUSY) or,
 * worse, recurses through a bind mount into its source. This module decides
 * what to unmount from the kernel's table and in which order; the `Mounter`
 * service does the unmounting.
 *
 * @since 0.1.0
 */
import { Effect, type FileSystem, LogLevel, References, Schema } from "effect"
import * as Deadline from "./Deadline.ts"
import * as Directory from "./Directory.ts"
import type * as HostPath from "./HostPath.ts"
import { whileThere } from "./internal/hostPath/gone.ts"
import * as Lexical from "./internal/hostPath/lexical.ts"
import * as HostRoots from "./internal/hostPath/root.ts"
import { rootOf } from "./internal/hostPath/rootOf.ts"
import * as Track from "./internal/metrics.ts"
import { describeHolders } from "./internal/mounter/describe.ts"
import { holdersOf } from "./internal/mounter/holders.ts"
import { cognates, propagated as propagatedBy, subtrees } from "./internal/mountinfo/propagation.ts"
import { coveringPrefixes, decodePrefixes, openRootOf, plan } from "./internal/unmount/plan.ts"
import { Holder, Mounter } from "./Mounter.ts"
import * as MountInfo from "./MountInfo.ts"
import type { UnmountResult } from "./Programs.ts"

/**
 * Why: mounts are still there after the unmount passes. Each names its mount
 * point, fs type and the errno the last attempt gave (`EBUSY`, `EPERM`,
 * ...), which is what a person needs to go and look.
 *
 * @since 0.3.0
 * @category errors
 */
export class MountsRemain extends Schema.Error<MountsRemain>("@hostnode/core/Unmount/MountsRemain")({
  _tag: Schema.tag("MountsRemain"),
  /** Each mount still there, and the last reason its unmount gave. */
  remaining: Schema.Array(
    Schema.Struct({
      mountPoint: Schema.String,
      fsType: Schema.String,
      mountId: Schema.Int,
      errno: Schema.String,
      message: Schema.String,
      /** Who holds it, where the `Mounter` can tell (processes, other mount namespaces with a copy). */
      holders: Schema.optionalKey(Schema.Array(Holder))
    })
  )
}) {
  override get message(): string {
    const shown = this.remaining
      .slice(0, 5)
      .map((m) => `${JSON.stringify(m.mountPoint)} (${m.fsType}): ${m.errno} ${m.message}${describeHolders(m.holders)}`)
      .join("; ")
    const more = this.remaining.length > 5 ? `; and ${this.remaining.length - 5} more` : ""
    return `${shown}${more}`
  }
}

/**
 * Why: `peersOutsideRoot: "refuse"` was given and detaching the mounts below
 * the prefixes would make the kernel detach these copies outside the host
 * root too (their parents are peers or slaves of the parents of mounts to
 * detach). Nothing was unmounted.
 *
 * @since 0.4.0
 * @category errors
 */
export class PeersOutsideRoot extends Schema.Error<PeersOutsideRoot>("@hostnode/core/Unmount/PeersOutsideRoot")({
  _tag: Schema.tag("PeersOutsideRoot"),
  /**
   * Mounts the kernel detaches (or, predicted, would detach) by propagation:
   * each a copy of a detached mount on a peer or slave of that mount's parent
   * (`shared:N`, `master:N` in the table), at the same place of the same file
   * system, wherever that peer is mounted. Its mount point as the table names
   * it, its fs type and id, the id of the detached mount it is a copy of, and
   * whether it lies outside the host root (another view of the same volume
   * elsewhere on the machine, such as a second bind of a data disk).
   */
  mounts: Schema.Array(
    Schema.Struct({
      mountPoint: Schema.String,
      fsType: Schema.String,
      mountId: Schema.Int,
      cognateOf: Schema.Int,
      outsideRoot: Schema.Boolean
    })
  )
}) {
  override get message(): string {
    const shown = this.mounts
      .slice(0, 5)
      .map((m) => `${JSON.stringify(m.mountPoint)} (${m.fsType}, a copy of mount ${m.cognateOf})`)
      .join("; ")
    const more = this.mounts.length > 5 ? `; and ${this.mounts.length - 5} more` : ""
    return `detaching them would detach ${this.mounts.length} mount(s) outside the host root by propagation: ${shown}${more}; nothing was unmounted`
  }
}

/**
 * Mounts at or below `prefixes` that could not be unmounted, or that were not
 * unmounted: `reason` says why, with its facts.
 *
 * @since 0.1.0
 * @category errors
 */
export class UnmountError extends Schema.TaggedError<UnmountError>()("UnmountError", {
  reason: Schema.Union([MountsRemain, PeersOutsideRoot]),
  prefixes: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return this.reason._tag === "MountsRemain"
      ? `${this.reason.remaining.length} mount(s) below ${this.prefixes.join(", ")} could not be unmounted: ${this.reason.message}`
      : `the mounts below ${this.prefixes.join(", ")} were not unmounted: ${this.reason.message}`
  }
}

type RemainingMount = MountsRemain["remaining"][number]
type PropagatedMount = PeersOutsideRoot["mounts"][number]
type UnmountedMount = Report["unmounted"][number]

const mountsRemain = (prefixes: ReadonlyArray<string>, remaining: ReadonlyArray<RemainingMount>): UnmountError =>
  new UnmountError({ reason: new MountsRemain({ remaining }), prefixes })

/**
 * Options of the unmount operations: the host root the prefixes are host
 * paths of (the real host by default) and the mount table that describes it
 * (see `HostPath.RootOptions`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Options extends HostPath.RootOptions, Deadline.Options {
  /**
   * Allow a prefix that is `/` or resolves to the host root itself (default
   * false): an empty variable or a stray `..` must not select every mount of
   * the machine.
   */
  readonly allowRoot?: boolean | undefined
  /**
   * Follow a prefix that is a symbolic link, below the root, and unmount below
   * its target (default true; the report says what each prefix resolved to).
   * A teardown passes false: a pod directory replaced by a link is removed as
   * a link, and nothing is unmounted through it.
   */
  readonly followLinks?: boolean | undefined
  /**
   * What to do when detaching the mounts below the prefixes would make the
   * kernel detach copies of them outside the host root (mount propagation:
   * the parent of a mount to detach is shared with a peer elsewhere, such as
   * a second bind of the data disk the kubelet directory is on).
   * `"detach"` (the default) detaches and reports them (`Report.propagated`,
   * and a warning); `"refuse"` fails with `PeersOutsideRoot` before anything
   * is unmounted. Copies inside the host root are always detached and
   * reported. The default follows the kernel and every earlier release: a
   * teardown must clear the pod volumes on a node whose kubelet directory is
   * a shared bind (the usual layout), and the copies are views of the same
   * volumes, which the kernel takes down with them.
   */
  readonly peersOutsideRoot?: "detach" | "refuse" | undefined
}

/**
 * What an unmount call did: each prefix as given with what it resolved to
 * (a prefix that is a symlink is followed below the root, and matched by its
 * target), the mounts unmounted (every mount at or below the prefixes that
 * left the table during the call, deepest first: a lazy detach of a mount
 * takes those below it along, and they are listed too), and, for each given
 * prefix with mounts that remain, why.
 *
 * @since 0.2.0
 * @category models
 */
export interface Report {
  readonly prefixes: ReadonlyArray<HostPath.Resolved>
  /** Each as the table names its mount point, with its fs type and mount id. */
  readonly unmounted: ReadonlyArray<{ readonly mountPoint: string; readonly fsType: string; readonly mountId: number }>
  /**
   * Mounts outside the prefixes the kernel detached by propagation along with
   * those: every mount that left the table during the call, not
   * at or below a prefix, that is a copy of a detached one on a peer or slave
   * of its parent (found from the table before and after each pass).
   */
  readonly propagated: PeersOutsideRoot["mounts"]
  /** The prefixes, as given, that name nothing below the host root (mistyped?). */
  readonly missing: ReadonlyArray<string>
  /** Keyed by the prefix exactly as it was given; only prefixes with a mount that remains are here. */
  readonly failures: ReadonlyMap<string, UnmountError>
}

/** Most passes over the table in one call. */
const MaxPasses = 64

/**
 * The entries of `planned` at the topmost mount points: those with no other
 * mount point of `planned` above them, every mount stacked there, top first.
 * A lazy detach of each takes what is mounted below it along.
 */
const topmost = (planned: ReadonlyArray<MountInfo.MountEntry>): Array<MountInfo.MountEntry> => {
  const points = new Set(planned.map((e) => Lexical.clean(e.mountPoint)))
  const covered = (mp: string) => {
    for (let i = mp.lastIndexOf("/"); i > 0; i = mp.lastIndexOf("/", i - 1)) if (points.has(mp.slice(0, i))) return true
    return mp !== "/" && points.has("/")
  }
  return planned.filter((e) => !covered(Lexical.clean(e.mountPoint)))
}

/** True when the host path `path` names something below the root handle (its last component not followed). */
const exists = (dirs: Directory.Directories, rootHandle: Directory.Handle, path: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      if (path === "/") return true
      const r = yield* Effect.result(dirs.resolve(rootHandle, path, { followFinal: false }))
      if (r._tag === "Failure") return r.failure.reason._tag !== "NotFound" && r.failure.reason._tag !== "NotADirectory"
      if (r.success.name === undefined) return true
      const st = yield* Effect.result(dirs.identify(r.success.parent, r.success.name))
      return st._tag === "Success" || st.failure.reason._tag !== "NotFound"
    })
  )

const run = Effect.fnUntraced(function* (
  prefixesIn: ReadonlyArray<string>,
  strict: boolean,
  options: Options | undefined
) {
  const mounter = yield* Mounter
  const dirs = yield* Directory.Directories
  const root = yield* rootOf(options)
  // Every unmount is verified below this handle: the path, resolved without
  // following a link, must still lead to the mount the table listed. The prefixes are resolved below it too.
  const rootHandle = yield* openRootOf(dirs, root)
  // Every prefix is decoded before the table is even read: a bad one changes nothing.
  const resolved = yield* decodePrefixes(root, prefixesIn, {
    allowRoot: options?.allowRoot,
    followFinal: options?.followLinks,
    handle: rootHandle
  })
  const prefixes = [...new Set(resolved.map((r) => r.table))]
  const path = root.mountInfo
  // An unreadable or malformed table fails here, before anything is unmounted.
  let table = yield* whileThere(root, MountInfo.read(path))
  let targets = plan(table, prefixes, strict)
  const outsideRoot = (e: MountInfo.MountEntry) =>
    HostRoots.hostPathOf(root, HostRoots.fromTablePath(root, e.mountPoint)) === undefined
  const asPropagated = (e: MountInfo.MountEntry, cognateOf: number): PropagatedMount => ({
    mountPoint: e.mountPoint,
    fsType: e.fsType,
    mountId: e.id,
    cognateOf,
    outsideRoot: outsideRoot(e)
  })
  if (options?.peersOutsideRoot === "refuse") {
    // Predicted from the table as it is, for every mount the call would detach: nothing has changed yet.
    const byId = new Map(table.map((e) => [e.id, e] as const))
    const outside: Array<PropagatedMount> = []
    for (const [id, of] of propagatedBy(
      table,
      subtrees(
        table,
        targets.map((e) => e.id)
      )
    )) {
      const e = byId.get(id) as MountInfo.MountEntry
      if (outsideRoot(e)) outside.push(asPropagated(e, of))
    }
    if (outside.length > 0) {
      return yield* new UnmountError({
        reason: new PeersOutsideRoot({ mounts: outside }),
        prefixes: resolved.map((r) => r.given)
      })
    }
  }
  // A prefix that names nothing below the root (a typo) is said, not silently matched. One with a mount at or
  // below it is there: only the others are looked up (a teardown's pods with volumes cost nothing).
  const missing: Array<string> = []
  const prefixSet = new Set(prefixes)
  const mounted = new Set(targets.flatMap((e) => coveringPrefixes(prefixSet, Lexical.clean(e.mountPoint))))
  for (const r of resolved) {
    if (!mounted.has(r.table) && !(yield* exists(dirs, rootHandle, r.path))) missing.push(r.given)
  }
  const lastFailure = new Map<number, { errno: string; message: string }>()
  // Mounts whose verification or unmount did not return: never tried again in this call.
  const hung = new Set<number>()
  const unmounted: Array<UnmountedMount> = []
  const propagated: Array<PropagatedMount> = []
  // Thousands of unmounts make thousands of debug lines; building them costs
  // as much as the syscalls, so they are only built when debug is enabled.
  const debug = LogLevel.isGreaterThanOrEqualTo("Debug", yield* References.MinimumLogLevel)
  let passes = 0
  let before = targets
  // Mounts that would not go (failed, or not verified): those below them are tried in the next pass.
  const refused = new Set<number>()
  const attempted = new Set<number>()
  // Each mount is tried once; passes are bounded too, against mounts made as fast as they go.
  while (targets.length > 0 && passes < MaxPasses) {
    // Only the topmost mount points are detached: a lazy detach takes every
    // mount below it along, so a mount below a dead one is never verified
    // through it (its file system would be asked), and is detached with it.
    const todo = topmost(targets.filter((e) => !refused.has(e.id))).filter(
      (e) => !hung.has(e.id) && !attempted.has(e.id)
    )
    if (todo.length === 0) break
    for (const e of todo) attempted.add(e.id)
    passes++
    const results: ReadonlyArray<UnmountResult> = yield* mounter.unmount(
      rootHandle,
      todo.map((e) => ({
        path: HostRoots.fromTablePath(root, e.mountPoint),
        mountId: e.id,
        tablePath: e.mountPoint
      })),
      // Lazy (MNT_DETACH): a mount whose server is gone (NFS) or that is busy
      // leaves the namespace at once instead of hanging or failing the teardown.
      { lazy: true }
    )
    // The failure of each mount point's top in this pass: what keeps the rest of a stack unreachable.
    const stuck = new Map<string, { readonly id: number; readonly errno: string; readonly message: string }>()
    for (let i = 0; i < results.length; i++) {
      const r = results[i] as UnmountResult
      const e = todo[i] as MountInfo.MountEntry
      if (r._tag === "Unmounted") {
        if (debug) {
          yield* Effect.logDebug("unmounted").pipe(
            Effect.annotateLogs({ mountPoint: e.mountPoint, fsType: e.fsType, mountId: e.id, pass: passes })
          )
        }
        continue
      }
      const annotations = { mountPoint: e.mountPoint, fsType: e.fsType, mountId: e.id, pass: passes }
      if (r._tag === "Failed") {
        refused.add(e.id)
        lastFailure.set(e.id, { errno: r.failure.errno, message: r.failure.message })
        if (!stuck.has(e.mountPoint)) stuck.set(e.mountPoint, { id: e.id, ...r.failure })
        yield* Effect.logWarning(`unmount failed: ${r.failure.errno} ${r.failure.message}`).pipe(
          Effect.annotateLogs({ ...annotations, errno: r.failure.errno, detail: r.failure.message })
        )
      } else if (r._tag === "Hung") {
        // Kept as it is: a file system that does not answer is not asked again.
        hung.add(e.id)
        lastFailure.set(e.id, { errno: "HUNG", message: `${r.call} did not return within ${r.seconds} s: ${r.detail}` })
        if (!stuck.has(e.mountPoint)) stuck.set(e.mountPoint, { id: e.id, errno: "HUNG", message: r.detail })
        yield* Effect.logWarning(`not unmounted: ${r.call} did not return within ${r.seconds} s: ${r.detail}`).pipe(
          Effect.annotateLogs({ ...annotations, call: r.call, seconds: r.seconds })
        )
      } else if (r.reason === "Moved" && stuck.has(e.mountPoint)) {
        refused.add(e.id)
        // Below a mount of the same stack that would not go: it is that failure that keeps it.
        const top = stuck.get(e.mountPoint) as { readonly id: number; readonly errno: string; readonly message: string }
        lastFailure.set(e.id, {
          errno: top.errno,
          message: `${top.message} (mount ${top.id}, stacked on it at the same path, could not be unmounted)`
        })
      } else {
        // Never unmounted blind: the path no longer leads to the mount the table listed.
        refused.add(e.id)
        lastFailure.set(e.id, { errno: "UNVERIFIED", message: `${r.reason}: ${r.detail}` })
        yield* Effect.logWarning(`not unmounted, could not be verified: ${r.reason}: ${r.detail}`).pipe(
          Effect.annotateLogs({ ...annotations, reason: r.reason, detail: r.detail })
        )
      }
    }
    // Re-read rather than trust the results: a lazy unmount of a parent takes
    // its children along, an "EINVAL not mounted" may mean a parent already did,
    // and something may have been mounted meanwhile. What left the table is
    // what was unmounted, whichever call took it.
    const after = yield* whileThere(root, MountInfo.read(path))
    const next = plan(after, prefixes, strict)
    const still = new Set(after.map((e) => e.id))
    const gone = new Set<number>()
    for (const e of before) {
      if (!still.has(e.id)) {
        gone.add(e.id)
        unmounted.push({ mountPoint: e.mountPoint, fsType: e.fsType, mountId: e.id })
      }
    }
    // What else left: the copies the kernel detached by propagation, elsewhere in the namespace.
    if (gone.size > 0) {
      const copies = cognates(table, gone)
      for (const e of table) {
        const of = copies.get(e.id)
        if (of !== undefined && !still.has(e.id) && !gone.has(e.id)) propagated.push(asPropagated(e, of))
      }
    }
    table = after
    before = next
    targets = next
  }
  // A mount below one that could not go was not tried: the one above says why.
  const failedAt = new Map<string, { readonly id: number; readonly errno: string; readonly message: string }>()
  for (const e of targets) {
    const f = lastFailure.get(e.id)
    if (f !== undefined && !failedAt.has(Lexical.clean(e.mountPoint)))
      failedAt.set(Lexical.clean(e.mountPoint), { id: e.id, ...f })
  }
  const above = (mountPoint: string) => {
    const mp = Lexical.clean(mountPoint)
    for (let i = mp.lastIndexOf("/"); i > 0; i = mp.lastIndexOf("/", i - 1)) {
      const f = failedAt.get(mp.slice(0, i))
      if (f !== undefined) return { at: mp.slice(0, i), ...f }
    }
    return undefined
  }
  // What keeps each one that remains, where the Mounter can tell.
  const held = yield* holdersOf(targets.map((e) => ({ mountId: e.id, device: `${e.major}:${e.minor}`, root: e.root })))
  const remaining = targets.map((e): RemainingMount => {
    const own = lastFailure.get(e.id)
    const up = own === undefined ? above(e.mountPoint) : undefined
    const holders = held.get(e.id)
    return {
      mountPoint: e.mountPoint,
      fsType: e.fsType,
      mountId: e.id,
      ...(own ??
        (up === undefined
          ? { errno: "EAGAIN", message: "still mounted after the last pass" }
          : {
              errno: up.errno,
              message: `below ${up.at} (mount ${up.id}), which could not be unmounted: ${up.message}`
            })),
      ...(holders === undefined || holders.length === 0 ? {} : { holders })
    }
  })
  yield* Effect.annotateCurrentSpan({
    passes,
    remaining: remaining.length,
    unmounted: unmounted.length,
    propagated: propagated.length
  })
  // A mount is attributed to every prefix that covers it: each such directory
  // still has a mount below it and must be kept by the caller.
  const set = new Set(prefixes)
  const mineOf = new Map<string, Array<RemainingMount>>()
  for (const m of remaining) {
    const mp = Lexical.clean(m.mountPoint)
    for (const p of coveringPrefixes(set, mp)) {
      if (strict && mp === p) continue
      const mine = mineOf.get(p)
      if (mine === undefined) mineOf.set(p, [m])
      else mine.push(m)
    }
  }
  const failures = new Map<string, UnmountError>()
  for (const r of resolved) {
    const mine = mineOf.get(r.table)
    if (mine !== undefined && !failures.has(r.given)) {
      failures.set(r.given, mountsRemain([r.given], mine))
    }
  }
  const report: Report = { prefixes: resolved, unmounted, propagated, missing, failures }
  yield* Track.recordUnmounts(report, remaining)
  const outside = propagated.filter((m) => m.outsideRoot)
  if (outside.length > 0) {
    yield* Effect.logWarning(
      `the kernel also detached ${outside.length} mount(s) outside the host root by propagation (peers of the detached mounts' parents): ${outside
        .slice(0, 5)
        .map((m) => m.mountPoint)
        .join(", ")}${outside.length > 5 ? ", ..." : ""}`
    ).pipe(Effect.annotateLogs({ hostRoot: root.path, propagated: outside.length }))
  }
  yield* Track.logSummary(
    `unmounted ${unmounted.length} mount(s) ${strict ? "strictly below" : "at or below"} ${resolved.map((r) => r.path).join(", ")}${propagated.length === 0 ? "" : `, and ${propagated.length} elsewhere by propagation`}${remaining.length === 0 ? "" : `; ${remaining.length} remain`}`
  ).pipe(
    Effect.annotateLogs({
      hostRoot: root.path,
      prefixes: resolved.map((r) => r.path),
      strict,
      unmounted: unmounted.length,
      propagated: propagated.length,
      remaining: remaining.length
    })
  )
  return { report, remaining }
}, Effect.scoped)

const failIfAny = (r: {
  readonly report: Report
  readonly remaining: ReadonlyArray<RemainingMount>
}): Effect.Effect<Report, UnmountError> =>
  r.report.failures.size === 0
    ? Effect.succeed(r.report)
    : Effect.fail(mountsRemain([...r.report.failures.keys()], r.remaining))

/**
 * Lazily unmounts every mount at or below `prefixes` (host paths below
 * `options.hostRoot`), deepest first, passing over the table until nothing at
 * or below them remains or a pass makes no progress. Fails with the mounts
 * that remain; a bad root or prefix fails before anything is unmounted.
 *
 * @example
 * ```ts
 * import { Unmount } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // Every pod volume below the kubelet directory, deepest first; the layers
 * // (NodeHost.layer, or MemoryHost.layer() in a test) provide the services.
 * const program = Unmount.unmountBelow(["/var/lib/kubelet/pods"], { deadline: "2 minutes" }).pipe(
 *   Effect.tap((report) => Effect.log(`${report.unmounted.length} unmounted`))
 * )
 * ```
 *
 * @since 0.1.0
 * @category operations
 */
export const unmountBelow: (
  prefixes: ReadonlyArray<string>,
  options?: Options
) => Effect.Effect<
  Report,
  UnmountError | MountInfo.MountInfoError | HostPath.HostPathError,
  FileSystem.FileSystem | Mounter | Directory.Directories
> = Effect.fn("Unmount.unmountBelow")(function* (prefixes, options) {
  return yield* failIfAny(yield* run(prefixes, false, options).pipe(Deadline.within(options?.deadline)))
}, Track.unmount("Unmount.unmountBelow"))

/**
 * {@link unmountBelow} with the failures attributed to the prefixes whose
 * mounts could not be unmounted: the report's `failures` holds an entry only
 * for such prefixes. Callers keep those directories and remove the rest. The
 * call itself fails only when the mount table cannot be read or parsed, in
 * which case nothing was unmounted and no prefix can be trusted, when the
 * root or a prefix is refused, or (with `peersOutsideRoot: "refuse"`) with an
 * `UnmountError` whose reason is `PeersOutsideRoot`, each before anything is
 * unmounted.
 *
 * @example
 * ```ts
 * import { SafeRemove, Unmount } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // Each pod's volumes: a pod whose mounts stay busy keeps its directory, the others' directories are removed.
 * const teardownPods = (podDirs: ReadonlyArray<string>) =>
 *   Effect.gen(function* () {
 *     const report = yield* Unmount.unmountBelowByPrefix(podDirs, { followLinks: false })
 *     return yield* SafeRemove.remove(podDirs.filter((dir) => !report.failures.has(dir)))
 *   })
 * ```
 *
 * @since 0.1.0
 * @category operations
 */
export const unmountBelowByPrefix: (
  prefixes: ReadonlyArray<string>,
  options?: Options
) => Effect.Effect<
  Report,
  MountInfo.MountInfoError | HostPath.HostPathError | UnmountError,
  FileSystem.FileSystem | Mounter | Directory.Directories
> = Effect.fn("Unmount.unmountBelowByPrefix")(function* (prefixes, options) {
  return (yield* run(prefixes, false, options).pipe(Deadline.within(options?.deadline))).report
}, Track.unmount("Unmount.unmountBelowByPrefix"))

/**
 * {@link unmountBelow} for the mounts strictly below `prefixes`: a mount whose
 * mount point is a prefix itself is left in place. A node uses it on the
 * kubelet directory to clear the pod volumes while keeping the directory's own
 * mount (a shared bind, a dedicated disk) through which the next pods' mounts
 * propagate; kubeadm regressed on exactly this twice.
 *
 * @example
 * ```ts
 * import { Paths, Unmount } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // The pod volumes go; the kubelet directory's own mount (a data disk, a shared bind) stays for the next pods.
 * const clearVolumes = Unmount.unmountStrictlyBelow([Paths.Node.KubeletDir], { deadline: "2 minutes" }).pipe(
 *   Effect.catchReason("UnmountError", "MountsRemain", (busy) =>
 *     Effect.fail(`${busy.remaining.length} volume(s) still mounted: ${busy.message}`)
 *   )
 * )
 * ```
 *
 * @since 0.1.0
 * @category operations
 */
export const unmountStrictlyBelow: (
  prefixes: ReadonlyArray<string>,
  options?: Options
) => Effect.Effect<
  Report,
  UnmountError | MountInfo.MountInfoError | HostPath.HostPathError,
  FileSystem.FileSystem | Mounter | Directory.Directories
> = Effect.fn("Unmount.unmountStrictlyBelow")(function* (prefixes, options) {
  return yield* failIfAny(yield* run(prefixes, true, options).pipe(Deadline.within(options?.deadline)))
}, Track.unmount("Unmount.unmountStrictlyBelow"))
