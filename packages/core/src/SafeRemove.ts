/**
 * Removing paths below a host root so that nothing is deleted where it must
 * not be: not through a bind mount (into its source), not through a planted
 * symlink, not while a pod's process changes the tree between two calls
 * (the rules in full: `docs/design/safe-remove.md`).
 *
 * - Every name unlinked is, at the moment of the `unlinkat`, an entry of a
 *   directory opened by name from the one above it, without following a link
 *   and without crossing into another mount, starting from the root's handle.
 * - A path with a mount, or a mount's source, at or below it is kept whole and
 *   reported with the mount that keeps it; a concurrent writer can make a
 *   removal keep more, never reach outside. Missing is success.
 *
 * @since 0.1.0
 */
import { Effect, type FileSystem, LogLevel, References, Schema, type Scope } from "effect"
import * as Deadline from "./Deadline.ts"
import * as Directory from "./Directory.ts"
import * as HostPath from "./HostPath.ts"
import { whileThere } from "./internal/hostPath/gone.ts"
import { rootOf } from "./internal/hostPath/rootOf.ts"
import * as Track from "./internal/metrics.ts"
import * as Sessions from "./internal/safeRemove/session.ts"
import { indexTable } from "./internal/safeRemove/table.ts"
import * as Mounter from "./Mounter.ts"
import * as MountInfo from "./MountInfo.ts"

/**
 * A path left in place, why, and (for the mount reasons) the mount point as the table shows it. The reasons:
 *
 * - `MountBelow`: a mount at or below it (the table says so; `mountPoint` names it).
 * - `MountSourceBelow`: the source of a mount lies at or below it: removing it
 *   would delete files that are still reachable through that mount (`mountPoint`).
 * - `OtherFileSystem`: it is on another mount than the directory it is in (by
 *   mount id: a same-device bind mount counts), a mount the table did not
 *   show; it is not entered.
 * - `NotADirectory`: a directory was to be emptied, but a symlink or a file is
 *   there; it is not followed.
 * - `UnmountFailed`: its mounts could not be unmounted (teardown), so it was
 *   not looked at (`mountPoint` names one that remains).
 * - `Failed`: the file system refused (EACCES, EROFS, ...) or the path
 *   changed while it was being removed; `detail` says how.
 * - `Hung`: a call on it did not return within its deadline (a dead or
 *   stalled file system); what is below it was not looked at.
 *
 * @since 0.1.0
 * @category models
 */
export const Kept = Schema.Struct({
  path: Schema.String,
  reason: Schema.Literals([
    "MountBelow",
    "MountSourceBelow",
    "OtherFileSystem",
    "NotADirectory",
    "UnmountFailed",
    "Failed",
    "Hung"
  ]),
  mountPoint: Schema.optionalKey(Schema.String),
  detail: Schema.String,
  /** For a path kept because of a mount: who holds that mount, where the `Mounter` in context can tell. */
  holders: Schema.optionalKey(Schema.Array(Mounter.Holder))
})

/**
 * The type of {@link Kept}.
 *
 * @since 0.1.0
 * @category models
 */
export type Kept = typeof Kept.Type

/**
 * What a removal did: how many paths were removed and kept, the removed
 * paths (full paths below the canonical host root, in the order they went,
 * children before their directory) up to 1,000, and the
 * kept ones up to 10,000: a report stays small whatever the
 * tree (a million files, a chain of directories 100,000 deep). Each removed
 * path is logged at debug as it goes. A kept path's ancestors stay too and
 * are not listed again.
 *
 * @since 0.1.0
 * @category models
 */
export const Report = Schema.Struct({
  removed: Schema.Array(Schema.String),
  kept: Schema.Array(Kept),
  removedCount: Schema.Int,
  keptCount: Schema.Int
})

/**
 * The type of {@link Report}.
 *
 * @since 0.1.0
 * @category models
 */
export type Report = typeof Report.Type

/**
 * Options of every removal: the host root the paths are host paths of (the
 * real host by default), the mount table that describes it (see
 * `HostPath.RootOptions`), and the deadline (see `Deadline.Options`: when it
 * passes, no further call is made and what was not reached is kept `Hung`).
 *
 * @since 0.1.0
 * @category models
 */
export type Options = HostPath.RootOptions & Deadline.Options

/**
 * Options of {@link Session.empty}.
 *
 * @since 0.1.0
 * @category models
 */
export interface EmptyOptions {
  /** Which entries of the directory to remove, by name in the lossless string form of `FileName` (default: all). */
  readonly select?: ((name: string) => boolean) | undefined
  /**
   * When the path is not a directory (a link, a file), remove it and make an
   * empty directory (mode 0755) in its place, instead of keeping it as
   * `NotADirectory`. The CNI reset uses it: nothing stale may stay where
   * containerd looks.
   */
  readonly replaceNonDirectory?: boolean | undefined
}

/**
 * Removals against one host root, one handle on it and one reading of its
 * mount table. Read it again (a new session) after anything is mounted or
 * unmounted. The handle closes with the scope the session was opened in.
 *
 * @since 0.1.0
 * @category models
 */
export interface Session {
  /** The canonical host root the reported paths start with. */
  readonly root: HostPath.HostRoot
  /** Removes each host path (a file, a link, a directory tree) under the rules of this module. */
  readonly remove: (paths: ReadonlyArray<string>) => Effect.Effect<Report, HostPath.HostPathError>
  /**
   * Removes the entries of the directory at host path `dir` (those `select`
   * picks), keeping the directory. A symlink or file at `dir` is not followed
   * and is reported `NotADirectory` (unless `replaceNonDirectory`); a mount at
   * `dir` keeps it whole. A bind mount elsewhere whose source is `dir` itself
   * does not keep it: that mount shows the very directory being emptied.
   */
  readonly empty: (dir: string, options?: EmptyOptions) => Effect.Effect<Report, HostPath.HostPathError>
  /**
   * The names in the directory at host path `dir` (lossless strings), through a handle; a link or file there is
   * kept, not followed, and `kept` says why.
   */
  readonly children: (
    dir: string
  ) => Effect.Effect<
    { readonly names: ReadonlyArray<string>; readonly kept: ReadonlyArray<Kept> },
    HostPath.HostPathError
  >
  /**
   * Removes the entry `name` of a directory the caller already holds open
   * (reached without following links, as every handle here is), under the
   * rules of this module; `path` is its full path, for the mount table and
   * the report. Nothing is resolved: code that walks a tree by handles (a
   * snapshot's restore) removes what is in the way without a path lookup.
   */
  readonly removeAt: (dir: Directory.Handle, name: Uint8Array, path: string) => Effect.Effect<Report>
}

// A session on a decoded root (see `session`).
const open = Effect.fnUntraced(function* (root: HostPath.HostRoot, handle: Directory.Handle | undefined) {
  const dirs = yield* Directory.Directories
  const table = yield* whileThere(root, MountInfo.read(root.mountInfo))
  const unusable = (e: Directory.DirectoryError) =>
    new HostPath.HostPathError({
      reason: e.reason._tag === "Gone" ? e.reason : new HostPath.Refused({ _tag: "Unreadable", detail: e.message }),
      root: root.given
    })
  const rootHandle = handle ?? (yield* dirs.openRoot(root.path).pipe(Effect.mapError(unusable)))
  const rootStat = yield* dirs.stat(rootHandle).pipe(Effect.mapError(unusable))
  if (!table.some((e) => e.id === rootStat.mountId)) {
    return yield* new MountInfo.MountInfoError({
      reason: new MountInfo.Problem({
        _tag: "DoesNotCover",
        detail: `the host root ${root.path} is on mount ${rootStat.mountId}, which the table does not list (${table.length} entries): it describes another mount namespace, or none`
      }),
      path: root.mountInfo
    })
  }
  return Sessions.make({
    dirs,
    root,
    rootHandle,
    index: indexTable(table),
    debug: LogLevel.isGreaterThanOrEqualTo("Debug", yield* References.MinimumLogLevel)
  })
})

/**
 * Opens a session on the host root of `options` (decoded with
 * `Layers.rootOf`; pass a decoded root as `hostRoot` to reuse it): reads
 * and indexes its mount table and opens the root's handle, then checks that
 * the table lists the mount the root is on. An unreadable, malformed or
 * foreign table fails here, before anything is removed. A caller that holds a
 * handle on the root already (its path must be the root's) passes it as
 * `handle`: the session uses it instead of opening the root again, so the
 * root's path is trusted once.
 *
 * @example
 * ```ts
 * import { SafeRemove } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // The directories of pods that no longer run: listed and removed on one handle and one reading of the mount table.
 * const removeStalePods = (running: ReadonlySet<string>) =>
 *   Effect.scoped(
 *     Effect.gen(function* () {
 *       const session = yield* SafeRemove.session({ deadline: "1 minute" })
 *       const { names } = yield* session.children("/var/lib/kubelet/pods")
 *       const stale = names.filter((uid) => !running.has(uid))
 *       return yield* session.remove(stale.map((uid) => `/var/lib/kubelet/pods/${uid}`))
 *     })
 *   )
 * ```
 *
 * @since 0.1.0
 * @category operations
 */
export const session: (
  options?: Options & { readonly handle?: Directory.Handle | undefined }
) => Effect.Effect<
  Session,
  HostPath.HostPathError | MountInfo.MountInfoError,
  FileSystem.FileSystem | Directory.Directories | Scope.Scope
> = Effect.fn("SafeRemove.session")(function* (options?: Options & { readonly handle?: Directory.Handle | undefined }) {
  return yield* open(yield* rootOf(options), options?.handle)
})

/**
 * Removes each host path below `options.hostRoot`: files and links are
 * unlinked (a link is never followed), directory trees are walked through
 * handles and removed bottom-up, and anything with a mount at or below it,
 * the source of a mount below it, or on another mount is kept and reported.
 * Missing is success. Fails only when the root, a path or the mount table
 * cannot be used, before anything is removed.
 *
 * @example
 * ```ts
 * import { SafeRemove } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // A pod's directory, removed without following a link or entering a mount;
 * // what had to stay (a volume still mounted below it) is in the report.
 * const program = SafeRemove.remove(["/var/lib/kubelet/pods/0f3c"], { deadline: "1 minute" }).pipe(
 *   Effect.tap((report) => Effect.forEach(report.kept, (k) => Effect.logWarning(`kept ${k.path}: ${k.reason}`)))
 * )
 * ```
 *
 * @since 0.1.0
 * @category operations
 */
export const remove: (
  paths: ReadonlyArray<string>,
  options?: Options
) => Effect.Effect<
  Report,
  HostPath.HostPathError | MountInfo.MountInfoError,
  FileSystem.FileSystem | Directory.Directories
> = Effect.fn("SafeRemove.remove")(function* (paths: ReadonlyArray<string>, options?: Options) {
  return yield* Effect.scoped(Effect.flatMap(session(options), (s) => s.remove(paths))).pipe(
    Deadline.within(options?.deadline)
  )
}, Track.removal("SafeRemove.remove"))

/**
 * Removes the entries of the directory at host path `dir` (those
 * `options.select` picks) under the rules of {@link remove}; the directory
 * itself stays. A symlink at `dir` is not followed (`NotADirectory`); a mount
 * on `dir` keeps it whole.
 *
 * @example
 * ```ts
 * import { Paths, SafeRemove } from "@hostnode/core"
 *
 * // The CNI configurations go, the directory stays; a link in its place is replaced by an empty directory.
 * const program = SafeRemove.empty(Paths.Node.CniConfDir, { replaceNonDirectory: true, deadline: "30 seconds" })
 * ```
 *
 * @since 0.1.0
 * @category operations
 */
export const empty: (
  dir: string,
  options?: Options & EmptyOptions
) => Effect.Effect<
  Report,
  HostPath.HostPathError | MountInfo.MountInfoError,
  FileSystem.FileSystem | Directory.Directories
> = Effect.fn("SafeRemove.empty")(function* (dir: string, options?: Options & EmptyOptions) {
  return yield* Effect.scoped(Effect.flatMap(session(options), (s) => s.empty(dir, options))).pipe(
    Deadline.within(options?.deadline)
  )
}, Track.removal("SafeRemove.empty"))
