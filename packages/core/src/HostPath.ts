/**
 * Host roots and host paths: a root decoded once per operation, and paths
 * joined or resolved below it without ever leaving it.
 *
 * A node agent runs against a host root: `""` or `"/"` for the real host, a
 * temporary tree in tests, `/proc/<pid>/root` for another mount namespace.
 * Neither `..` nor a symlink planted in the tree can take an operation outside
 * it: {@link resolve} follows links as though the root were `/` (chroot
 * semantics, as filepath-securejoin does). Failures of the FileSystem are read
 * by their PlatformError reason tags only.
 *
 * @since 0.1.0
 */
import { Effect, FileSystem } from "effect"
import { type Gone, type HostPathError, Refused } from "./HostPathError.ts"
import { refusal } from "./internal/hostPath/errors.ts"
import { whileThere } from "./internal/hostPath/gone.ts"
import type { RootInput } from "./internal/hostPath/nodeRoot.ts"
import { walk } from "./internal/hostPath/resolve.ts"
import { checkPath, HostRootTypeId, hostPathOf, isHostRoot, tablePathOf } from "./internal/hostPath/root.ts"
import { rootFrom } from "./internal/hostPath/rootFrom.ts"

/**
 * The errors of this module, defined in the leaf module `HostPathError`.
 *
 * @since 0.4.0
 * @category errors
 */
export * from "./HostPathError.ts"

/**
 * Resolves `path` below the decoded `root` (see {@link decodeRoot}), following
 * every symlink it meets as though `root` were `/`: an absolute target is taken relative to the root and `..`
 * never climbs above it, so the result is always `root` or below it. What does
 * not exist is joined lexically. A symlink in the last component is followed
 * unless `followFinal` is false (operations that act on a link itself, removing
 * it or reading its target, pass false: only the parents are resolved, the last
 * name is kept). A trailing slash (in the path, or in the
 * target of a link that ends it) follows a link in the last component even
 * when `followFinal` is false, as the kernel does. A symlink loop, more than
 * 40 links, or a link that cannot be read is a
 * {@link HostPathError}; so is, before anything is looked at
 * (`InvalidPath`), a NUL byte, a path of `PathMax` (4096) bytes or more, or
 * a component longer than `NameMax` (255) bytes.
 *
 * The result is a path at the time of the call: a tree that changes afterwards
 * can still swap a component for a link (a check-then-use race no path-based
 * API avoids). Operations that remove things therefore also refuse to follow
 * links at the point of use.
 *
 * @example
 * ```ts
 * import { HostPath } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // Below the root /srv/node: a link /srv/node/etc/x -> /etc/shadow resolves to
 * // /srv/node/etc/shadow, and "../../etc" never climbs above /srv/node.
 * const program = Effect.gen(function* () {
 *   const root = yield* HostPath.decodeRoot("/srv/node")
 *   const shadow = yield* HostPath.resolve(root, "/etc/x")
 *   const etc = yield* HostPath.resolve(root, "../../etc")
 *   return [shadow, etc]
 * })
 * ```
 *
 * @since 0.1.0
 * @category operations
 */
export const resolve: (
  root: HostRoot,
  path: string,
  options?: { readonly followFinal?: boolean | undefined }
) => Effect.Effect<string, HostPathError, FileSystem.FileSystem> = Effect.fn("HostPath.resolve")(function* (
  root: HostRoot,
  path: string,
  options?: { readonly followFinal?: boolean | undefined }
) {
  const fs = yield* FileSystem.FileSystem
  const decoded = yield* typed(root, path)
  // The root was decoded (absolute, clean, canonical): a raw relative, empty or unclean root never reaches the walk.
  const walked = walk(fs, decoded.path, path, { followFinal: options?.followFinal ?? true }, true).pipe(
    Effect.mapError((e) => refusal(e.reason, decoded.given, path))
  )
  return yield* whileThere(decoded, walked)
})

/**
 * The root as every operation takes it (`rootFrom`: a decoded root asked
 * again whether it is gone, or taken outside the composition that names the
 * node's root); a root a caller without types passed (a string, from
 * JavaScript or a decoded file) is decoded by `decodeRoot`'s rules, and an
 * empty one refused (the real host is named `/`, or decoded with
 * `decodeRoot("")`): a raw root never reaches the walk.
 */
const typed = (root: HostRoot, path: string): Effect.Effect<HostRoot, HostPathError, FileSystem.FileSystem> => {
  if (isHostRoot(root)) return rootFrom(root)
  const given: unknown = root
  if (typeof given !== "string" || given === "") {
    return Effect.fail(
      refusal(
        new Refused({
          _tag: "InvalidPath",
          detail: `the host root ${JSON.stringify(given)} was not decoded: pass HostPath.decodeRoot's result`
        }),
        typeof given === "string" ? given : String(given),
        path
      )
    )
  }
  return rootFrom(given)
}

/**
 * A host root as every operation uses it: decoded once per operation by
 * {@link decodeRoot}, never a string joined to another string. It is
 * absolute, canonical (the symbolic links in the root's own path were
 * resolved once, at decode) and was an existing directory then. It also says
 * which mount table describes the mounts below it and where that table's `/`
 * is, so a path of this process can be looked up in the table and back.
 *
 * Three names for one place are used throughout: a *host path* is what the
 * node sees (`/var/lib/kubelet`); a *full path* is the same place as this
 * process sees it (`/tmp/node/var/lib/kubelet`, or `/proc/42/root/var/lib/kubelet`);
 * a *table path* is how the mount table names it.
 *
 * @since 0.2.0
 * @category models
 */
export interface HostRoot {
  readonly [HostRootTypeId]: typeof HostRootTypeId
  /** The root exactly as it was given, for messages. */
  readonly given: string
  /** The canonical root as this process sees it: `/` for the real host. */
  readonly path: string
  /** The mount table that lists the mounts below the root. */
  readonly mountInfo: string
  /**
   * Where the `/` of that table's mount namespace is in this process: `/` for
   * this process's own table, `/proc/<pid>/root` for another namespace's.
   */
  readonly tableRoot: string
  /**
   * True when the root is the node's real root: this process's own `/`, or
   * the root a composition in context names as the node's (`Layers.NodeRoot`,
   * a container's `/proc/<pid>/root`). Operations then end with node-wide
   * side effects: a restore reloads the systemd in context, which is that
   * node's.
   */
  readonly isReal: boolean
  /**
   * What names this root across time, for a snapshot to record and a restore
   * to compare (see `Layers.RootInput`'s `identity`): the canonical path for a
   * directory of this host; for a container's root, what its composition
   * says stays the same while the container does.
   */
  readonly identity: string
  /**
   * For a root that belongs to a process that can exit (a container's): why
   * it is gone, or `undefined` while it is there. Asked when the root is
   * decoded and by the services that work through it before each call.
   */
  readonly gone?: Effect.Effect<Gone | undefined> | undefined
}

/**
 * How an operation is told its host root: the options every operation that touches host paths takes.
 *
 * @since 0.2.0
 * @category models
 */
export interface RootOptions {
  /**
   * The host root, decoded by {@link decodeRoot} (absent: the real host).
   * Never a string: a relative, empty or unclean root cannot reach the file
   * system through an operation. (A string given without types, from
   * JavaScript or a decoded file, is still decoded first, never used raw.)
   */
  readonly hostRoot?: HostRoot | undefined
  /** The mount table describing the root (`""` or absent: the root's own, see `Layers.RootInput`'s `mountInfo`). */
  readonly mountInfo?: string | undefined
}

/**
 * Decodes a host root, the only way to make a {@link HostRoot}: `""` and `"/"`
 * are the real host (the node's root a composition provides as
 * `Layers.NodeRoot`, a container's `/proc/<pid>/root`, else this process's
 * `/`); anything else must be an absolute path to an existing directory,
 * without a `..` component (`/srv/node/../etc` names a place nobody wrote;
 * `.` and repeated or trailing slashes are cleaned). The root's own symbolic links
 * are resolved here, once (`realpath`; below `tableRoot` for a root in another
 * mount namespace, with chroot semantics), so the root every later step uses
 * is canonical and matches the mount table's paths. A relative, missing or
 * non-directory root, or one outside its table's root, is a
 * {@link HostPathError} naming the value; nothing has been changed.
 *
 * @since 0.2.0
 * @category constructors
 */
export const decodeRoot: (input: string | RootInput) => Effect.Effect<HostRoot, HostPathError, FileSystem.FileSystem> =
  Effect.fn("HostPath.decodeRoot")(function* (input: string | RootInput) {
    return yield* rootFrom(input)
  })

/**
 * A host path decoded below a root: what was given, what it resolved to, and the names the mount table and this process use.
 *
 * @since 0.2.0
 * @category models
 */
export interface Resolved {
  /** The path exactly as the caller gave it. */
  readonly given: string
  /** The host path it resolved to: clean, absolute, below the root. */
  readonly path: string
  /** The same place as this process sees it. */
  readonly full: string
  /** The same place as the root's mount table names it. */
  readonly table: string
}

/**
 * Decodes a host path given by a caller (a prefix to unmount below, a path
 * to remove): it must be non-empty, absolute and free of NUL bytes; `/`, and
 * any path that resolves to the host root itself, are refused unless
 * `allowRoot`. It is then resolved below `root` with chroot semantics
 * ({@link resolve}; the last component followed unless `followFinal` is
 * false) and named as the mount table names it. Anything wrong is a
 * {@link HostPathError} naming the value, before the caller changes anything.
 *
 * @example
 * ```ts
 * import { HostPath } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // A prefix given by a caller: refused when it is empty, relative or the whole host.
 * const program = Effect.gen(function* () {
 *   const root = yield* HostPath.decodeRoot("/srv/node")
 *   const prefix = yield* HostPath.decodePath(root, "/var/lib/kubelet/pods", { what: "prefix" })
 *   return prefix.table
 * })
 * ```
 *
 * @since 0.2.0
 * @category operations
 */
export const decodePath: (
  root: HostRoot,
  path: string,
  options?: {
    /** Allow `/`, or a path that resolves to the host root itself (default false: a typo must not select the whole host). */
    readonly allowRoot?: boolean | undefined
    /** Follow a symbolic link in the last component, below the root (default true). */
    readonly followFinal?: boolean | undefined
    /** What the path is, for messages ("prefix", "path"; default "path"). */
    readonly what?: string | undefined
  }
) => Effect.Effect<Resolved, HostPathError, FileSystem.FileSystem> = Effect.fn("HostPath.decodePath")(function* (
  root: HostRoot,
  path: string,
  options?: Parameters<typeof decodePath>[2]
) {
  const what = options?.what ?? "path"
  const allowRoot = options?.allowRoot ?? false
  root = yield* typed(root, path)
  yield* checkPath(root, path, options)
  const full = yield* resolve(root, path, { followFinal: options?.followFinal ?? true })
  const hostPath = hostPathOf(root, full) ?? "/"
  if (hostPath === "/" && !allowRoot) {
    return yield* refusal(
      new Refused({
        _tag: "IsHostRoot",
        detail: `the ${what} resolves to the host root itself; pass allowRoot to mean the whole host`
      }),
      root.given,
      path
    )
  }
  const table = tablePathOf(root, full)
  if (table === undefined) {
    return yield* refusal(
      new Refused({
        _tag: "OutsideTable",
        detail: `the ${what} resolves to ${full}, which the mount table (root ${root.tableRoot}) cannot name`
      }),
      root.given,
      path
    )
  }
  return { given: path, path: hostPath, full, table } satisfies Resolved
})
