/**
 * What a repave removes from a node's host before the node stack starts again
 * (the Go package's `ResetCNIState`, `ResetKubeletIdentity`, and the
 * composition its `UnmountBelowByPrefix` describes): the CNI configuration and
 * state, the kubelet's rotated client identity, and the pod volume directories.
 *
 * Boundary: which paths go, and what a path that had to stay means for each
 * operation. Every removal goes through `SafeRemove` (no symlink followed, no
 * mount crossed, contained below the host root), every unmount through
 * `Unmount`.
 *
 * @since 0.1.0
 */
import { Effect, type FileSystem, Schema } from "effect"
import * as Deadline from "./Deadline.ts"
import type * as Directory from "./Directory.ts"
import type * as HostPath from "./HostPath.ts"
import * as Lexical from "./internal/hostPath/lexical.ts"
import { rootOf } from "./internal/hostPath/rootOf.ts"
import * as Track from "./internal/metrics.ts"
import { usesBootstrapToken } from "./internal/nodeStart.ts"
import { isClientCredential } from "./internal/repave.ts"
import * as Reports from "./internal/safeRemove/walk.ts"
import * as UnmountPlan from "./internal/unmount/plan.ts"
import type { Mounter } from "./Mounter.ts"
import type * as MountInfo from "./MountInfo.ts"
import type * as NodeStart from "./NodeStart.ts"
import * as Paths from "./Paths.ts"
import * as SafeRemove from "./SafeRemove.ts"
import * as Unmount from "./Unmount.ts"

/**
 * The kubelet's paths the repave operations act on, below the host root.
 *
 * @category models
 * @since 0.4.0
 */
export const KubeletPaths = {
  /**
   * The kubeconfig the kubelet writes after TLS bootstrapping, pointing at
   * `kubelet-client-current.pem`. While it exists the kubelet does not bootstrap.
   */
  kubeconfig: "/var/lib/kubelet/kubeconfig",
  /** The pod directories: one `<uid>` directory per pod, its volumes mounted below it. */
  podsDir: "/var/lib/kubelet/pods"
} as const

/** The operations that fail with a {@link ResetError}. */
const ResetOperation = Schema.Literals(["resetCniState", "resetKubeletIdentity"])

type ResetOperation = typeof ResetOperation.Type

const keptText = (path: string, reason: string, detail: string): string =>
  `${JSON.stringify(path)} (${reason}: ${detail})`

/**
 * Why a reset could not remove everything: the first path kept (`path`), told
 * by its `_tag`, a `SafeRemove.Kept["reason"]`:
 * - `MountBelow`: a mount at or below it (`mountPoint`, when the table shows it);
 * - `MountSourceBelow`: the source of a mount (`mountPoint`) lies at or below it;
 * - `OtherFileSystem`: it is on another mount than its directory, one the table
 *   did not show;
 * - `NotADirectory`: a symlink or a file is where a directory to empty should
 *   be; not followed;
 * - `UnmountFailed`: its mounts could not be unmounted (`mountPoint` names one
 *   that remains);
 * - `Failed`: the file system refused to remove it, or it changed meanwhile;
 * - `Hung`: a call on it did not return within its deadline (a dead or
 *   stalled file system); `detail` names the call and how long it was waited for.
 *
 * @category errors
 * @since 0.4.0
 */
export class Failure extends Schema.Error<Failure>("@hostnode/core/Repave/Failure")({
  _tag: Schema.Literals([
    "MountBelow",
    "MountSourceBelow",
    "OtherFileSystem",
    "NotADirectory",
    "UnmountFailed",
    "Failed",
    "Hung"
  ]),
  path: Schema.String,
  mountPoint: Schema.optionalKey(Schema.String),
  detail: Schema.String
}) {
  override get message(): string {
    return keptText(this.path, this._tag, this.detail)
  }
}

/**
 * A reset that could not remove everything it must: a mount inside the CNI
 * configuration directory, a symlink where the pki directory should be, a file
 * the file system refused to remove. `reason` is that of the first path kept
 * (its tag is the `SafeRemove.Kept["reason"]`, its fields that path's); `kept` lists each with its reason and `removed` what did go,
 * so a person can see what state the host is in. Running the reset again
 * after fixing the cause finishes it.
 *
 * @category errors
 * @since 0.1.0
 */
export class ResetError extends Schema.TaggedError<ResetError>()("ResetError", {
  reason: Failure,
  operation: ResetOperation,
  kept: Schema.Array(SafeRemove.Kept),
  removed: Schema.Array(Schema.String)
}) {
  override get message(): string {
    const shown = [this.reason.message, ...this.kept.slice(1, 5).map((k) => keptText(k.path, k.reason, k.detail))]
    const more = this.kept.length > 5 ? `; and ${this.kept.length - 5} more` : ""
    return `${this.operation} could not remove everything (${this.removed.length} removed, ${this.kept.length} kept): ${shown.join("; ")}${more}`
  }
}

const withMount: ReadonlySet<string> = new Set(["MountBelow", "MountSourceBelow", "UnmountFailed"])

/** The reason of a kept path, with its own facts. */
const reasonOf = (k: SafeRemove.Kept): Failure =>
  new Failure({
    _tag: k.reason,
    path: k.path,
    // Only these reasons name a mount; the others never carried one.
    ...(k.mountPoint === undefined || !withMount.has(k.reason) ? {} : { mountPoint: k.mountPoint }),
    detail: k.detail
  })

const failIfKept = (
  operation: ResetOperation,
  report: SafeRemove.Report
): Effect.Effect<SafeRemove.Report, ResetError> => {
  const first = report.kept[0]
  return first === undefined
    ? Effect.succeed(report)
    : Effect.fail(new ResetError({ reason: reasonOf(first), operation, kept: report.kept, removed: report.removed }))
}

/**
 * Removes the CNI configuration and state a stopped node stack left below
 * `hostRoot`: every entry of `/etc/cni/net.d` goes (add-ons' included: their
 * DaemonSets write them again), the directory stays; `/var/lib/cni` goes whole
 * (host-local IPAM's reservations in `networks/<net>/`, its `last_reserved_ip`
 * files and lock, cached results). A repave can give the node a new pod CIDR:
 * left in place, the old configuration makes containerd report the network
 * ready and hand out addresses from the old range.
 *
 * Missing directories are success. A symlink or file where `/etc/cni/net.d`
 * should be is removed (never followed) and an empty directory made in its
 * place, so nothing stale stays where containerd looks. What cannot be removed
 * (a mount inside, the directory itself a mount point) fails the call with a
 * {@link ResetError} after everything else was removed.
 *
 * @example
 * ```ts
 * import { Repave } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // A mount left inside /etc/cni/net.d keeps it; the error says which path and why.
 * const reset = Repave.resetCniState().pipe(
 *   Effect.catchReason("ResetError", "MountBelow", (kept) => Effect.logError(`kept ${kept.path}: ${kept.detail}`))
 * )
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const resetCniState: (
  options?: SafeRemove.Options
) => Effect.Effect<
  SafeRemove.Report,
  ResetError | HostPath.HostPathError | MountInfo.MountInfoError,
  FileSystem.FileSystem | Directory.Directories
> = Effect.fn("Repave.resetCniState")(
  function* (options) {
    const session = yield* SafeRemove.session(options)
    // A link or file where net.d should be goes, never followed, and an empty directory takes its place.
    const confReport = yield* session.empty(Paths.Node.CniConfDir, { replaceNonDirectory: true })
    const stateReport = yield* session.remove([Paths.Node.CniStateDir])
    const report = yield* failIfKept("resetCniState", Reports.merge(confReport, stateReport))
    yield* Effect.logInfo("CNI state reset").pipe(
      Effect.annotateLogs({ hostRoot: session.root.path, removed: report.removedCount })
    )
    return report
  },
  (effect, options) =>
    Track.scopedRemoval("Repave.resetCniState")(effect, options).pipe(Deadline.within(options?.deadline))
)

/**
 * Removes the kubelet's client identity below `hostRoot` when the node
 * authenticates with a bootstrap token, so the next start bootstraps again
 * and gets a certificate for the new machine: the client credentials in
 * `/var/lib/kubelet/pki`, as client-go's certificate store names them (the
 * rotated pairs `kubelet-client-<date>.pem`, the `kubelet-client-current.pem`
 * link, `kubelet-client-updated.pem` left by an interrupted rotation, the key
 * `kubelet-client.key.tmp` a pending bootstrap leaves), and
 * `/var/lib/kubelet/kubeconfig`, which points at them. The bootstrap
 * kubeconfig, the CA and the serving certificates (`kubelet.crt`,
 * `kubelet.key`, `kubelet-server-*`) stay. In the direct
 * kubeconfig and exec credential modes nothing is removed: configuration
 * rewrites those credentials.
 *
 * Links are removed, never followed. A symlink or file where the pki
 * directory should be is left alone and fails the call with a
 * {@link ResetError} (`NotADirectory`), as does anything else that could not be
 * removed; the rest is removed first.
 *
 * @example
 * ```ts
 * import { type NodeStart, Repave } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // A repaved machine joins as a new node: its old client certificates go, the bootstrap kubeconfig stays.
 * const newIdentity = (nodeStart: NodeStart.NodeStart) =>
 *   Effect.gen(function* () {
 *     const report = yield* Repave.resetKubeletIdentity(nodeStart)
 *     yield* Effect.logInfo(`${report.removedCount} kubelet credential file(s) removed`)
 *   })
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const resetKubeletIdentity: (
  // Only the authentication mode matters here, so that is all it asks for.
  nodeStart: Pick<NodeStart.NodeStart, "auth">,
  options?: SafeRemove.Options
) => Effect.Effect<
  SafeRemove.Report,
  ResetError | HostPath.HostPathError | MountInfo.MountInfoError,
  FileSystem.FileSystem | Directory.Directories
> = Effect.fn("Repave.resetKubeletIdentity")(
  function* (nodeStart, options) {
    if (!usesBootstrapToken(nodeStart)) {
      yield* Effect.logInfo(
        `kubelet identity left in place: auth mode ${nodeStart.auth._tag} is rewritten by configuration`
      ).pipe(Effect.annotateLogs({ auth: nodeStart.auth._tag }))
      return Reports.emptyReport
    }
    const bootstrap = Lexical.clean(nodeStart.auth.bootstrapKubeconfig)
    const session = yield* SafeRemove.session(options)
    const certs = yield* session.empty(Paths.Node.KubeletClientPkiDir, {
      // Never the bootstrap kubeconfig, wherever the goal state put it.
      select: (name) => isClientCredential(name) && `${Paths.Node.KubeletClientPkiDir}/${name}` !== bootstrap
    })
    let kubeconfig = Reports.emptyReport
    if (bootstrap === KubeletPaths.kubeconfig) {
      yield* Effect.logWarning(`${KubeletPaths.kubeconfig} is the bootstrap kubeconfig; left in place`).pipe(
        Effect.annotateLogs({ path: KubeletPaths.kubeconfig })
      )
    } else {
      kubeconfig = yield* session.remove([KubeletPaths.kubeconfig])
    }
    const report = yield* failIfKept("resetKubeletIdentity", Reports.merge(certs, kubeconfig))
    yield* Effect.logInfo("kubelet identity reset").pipe(
      Effect.annotateLogs({ hostRoot: session.root.path, removed: report.removedCount })
    )
    return report
  },
  (effect, nodeStart, options) =>
    Track.scopedRemoval("Repave.resetKubeletIdentity")(effect, nodeStart, options).pipe(
      Deadline.within(options?.deadline)
    )
)

/**
 * What {@link teardownKubeletDir} did: the removal's report, the prefixes and the unmount failures.
 *
 * @category models
 * @since 0.1.0
 */
export interface TeardownReport extends SafeRemove.Report {
  /** The prefixes as the mount table shows them, in order. */
  readonly prefixes: ReadonlyArray<string>
  /** For each prefix (as the table shows it) whose mounts could not all be unmounted, the failure. */
  readonly unmountFailures: ReadonlyMap<string, Unmount.UnmountError>
  /** The mounts the unmount detached below the prefixes (see `Unmount.Report.unmounted`). */
  readonly unmounted: Unmount.Report["unmounted"]
  /** The mounts elsewhere the kernel detached with them by propagation (see `Unmount.Report.propagated`). */
  readonly propagated: Unmount.Report["propagated"]
}

/**
 * Tears down pod volume directories below `hostRoot`: `unmountBelowByPrefix`
 * on the prefixes (each pod's directory by default), then removes, under the
 * rules of `SafeRemove`, the directories whose prefixes reported no unmount
 * failure. Those that did are kept, not looked at, and reported
 * (`UnmountFailed`); so is anything the removal itself had to keep (a mount
 * that appeared, the source of a bind mount elsewhere). A kept directory is
 * not an error: the report says what stays.
 *
 * Fails, before anything is unmounted, when the mount table cannot be read or
 * a prefix cannot be resolved below the root (a prefix that is the host root
 * itself is refused), or, with `peersOutsideRoot: "refuse"`, when the
 * unmounts would detach copies outside the host root by propagation.
 *
 * @example
 * ```ts
 * import { Repave } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // Before the node stack starts on a repaved node: the old pods' volumes, CNI state and identity go.
 * const repave = Effect.gen(function* () {
 *   const teardown = yield* Repave.teardownKubeletDir()
 *   if (teardown.kept.length > 0) yield* Effect.logWarning(`${teardown.kept.length} pod path(s) kept`)
 *   yield* Repave.resetCniState()
 * })
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const teardownKubeletDir: (
  options?: SafeRemove.Options & {
    /**
     * The host paths to unmount below and remove. The default is each entry of
     * `/var/lib/kubelet/pods` as its own prefix, so one pod's stuck mount keeps
     * only that pod's directory. The pods directory itself, and the rest of the
     * kubelet directory, stay.
     */
    readonly prefixes?: ReadonlyArray<string> | undefined
    /** What to do about copies outside the host root the unmounts would detach by propagation (see `Unmount.Options`). */
    readonly peersOutsideRoot?: "detach" | "refuse" | undefined
  }
) => Effect.Effect<
  TeardownReport,
  HostPath.HostPathError | MountInfo.MountInfoError | Unmount.UnmountError,
  FileSystem.FileSystem | Mounter | Directory.Directories
> = Effect.fn("Repave.teardownKubeletDir")(
  function* (options) {
    const root = yield* rootOf(options)
    // The pods, listed through a handle: names as bytes, a pods directory that is a link not followed.
    const listed =
      options?.prefixes === undefined
        ? yield* Effect.scoped(
            Effect.map(
              Effect.flatMap(SafeRemove.session({ hostRoot: root }), (s) => s.children(KubeletPaths.podsDir)),
              (c) => ({
                prefixes: c.names.map((n) => `${KubeletPaths.podsDir}/${n}`),
                kept: c.kept
              })
            )
          )
        : { prefixes: options.prefixes, kept: [] }
    // Decoded before anything is unmounted; a pod directory that is a link is
    // not followed (it is removed as a link).
    const targets = yield* UnmountPlan.decodePrefixes(root, listed.prefixes, { followFinal: false })
    const unmount: Pick<Unmount.Report, "failures" | "unmounted" | "propagated"> =
      targets.length === 0
        ? { failures: new Map(), unmounted: [], propagated: [] }
        : yield* Unmount.unmountBelowByPrefix(
            targets.map((t) => t.path),
            { hostRoot: root, followLinks: false, peersOutsideRoot: options?.peersOutsideRoot }
          )
    const failures = unmount.failures
    // The report names each prefix as the mount table does.
    const unmountFailures = new Map<string, Unmount.UnmountError>()
    const kept: Array<SafeRemove.Kept> = [...listed.kept]
    const toRemove: Array<string> = []
    for (const t of targets) {
      const failure = failures.get(t.path)
      if (failure !== undefined) unmountFailures.set(t.table, failure)
      if (failure === undefined) {
        toRemove.push(t.path)
        continue
      }
      const first = failure.reason._tag === "MountsRemain" ? failure.reason.remaining[0] : undefined
      const k: SafeRemove.Kept = {
        path: t.full,
        reason: "UnmountFailed",
        ...(first === undefined ? {} : { mountPoint: first.mountPoint }),
        detail: failure.message
      }
      kept.push(k)
      yield* Reports.logKept(k)
    }
    // The table is read again now: the unmounts changed it.
    const removal = yield* Effect.scoped(
      Effect.flatMap(SafeRemove.session({ hostRoot: root }), (s) => s.remove(toRemove))
    )
    const report = Reports.merge(Reports.keptOnly(kept), removal)
    yield* Effect.logInfo("kubelet pod directories torn down").pipe(
      Effect.annotateLogs({
        hostRoot: root.path,
        prefixes: targets.length,
        removed: report.removedCount,
        kept: report.keptCount
      })
    )
    return {
      ...report,
      prefixes: targets.map((t) => t.table),
      unmountFailures,
      unmounted: unmount.unmounted,
      propagated: unmount.propagated
    }
  },
  (effect, options) =>
    Track.removal("Repave.teardownKubeletDir")(effect, options).pipe(Deadline.within(options?.deadline))
)
