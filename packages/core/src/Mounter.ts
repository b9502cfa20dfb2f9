/**
 * The `Mounter` service: the one primitive the unmount operations need from
 * the host. The operations (deepest first, re-reading the table, attributing
 * failures to prefixes) live in core; a `Mounter` only unmounts the targets it
 * is given, in the order given, and says what happened to each.
 *
 * A target is a mount the table listed: where it showed it and its mount id.
 * A `Mounter` unmounts it only when that path, resolved below the root handle
 * without following any link, still leads to the mount with that id, and then
 * unmounts it through what it resolved (a link swapped into a parent
 * afterwards cannot redirect it). A target that cannot be verified is
 * reported as such and left mounted.
 *
 * @since 0.1.0
 */
import { Context, type Effect, Schema } from "effect"
import type * as Directory from "./Directory.ts"

/**
 * Why one target could not be unmounted, in errno terms (`EBUSY`, `EINVAL` for
 * "not a mount point", `ENOENT`, `EPERM`, ...), so the reason survives the trip
 * through a command or an FFI call unchanged.
 *
 * @since 0.1.0
 */
export const UnmountFailure = Schema.Struct({
  target: Schema.String,
  errno: Schema.String,
  message: Schema.String
})

/**
 * Why one target could not be unmounted.
 *
 * @since 0.1.0
 */
export type UnmountFailure = typeof UnmountFailure.Type

/**
 * Why a target was not unmounted because it could not be verified:
 * - `Moved`: the path now leads to another mount than the table listed
 *   (unmounted meanwhile, or something mounted over it);
 * - `LinkInPath`: a symbolic link, or something that is not a directory, is
 *   where the table's path has a directory: it is not followed;
 * - `Gone`: the path no longer exists;
 * - `OutsideRoot`: the path is not below the root handle.
 *
 * @since 0.2.0
 */
export const UnverifiedReason = Schema.Literals(["Moved", "LinkInPath", "Gone", "OutsideRoot"])

/**
 * Why a target could not be verified.
 *
 * @since 0.2.0
 */
export type UnverifiedReason = typeof UnverifiedReason.Type

/**
 * A mount to unmount, as the table listed it.
 *
 * @since 0.2.0
 */
export interface Target {
  /** Where the table shows it, as a full path of this process, below the root handle. */
  readonly path: string
  /** Its mount id (the table's first field): only that mount is unmounted. */
  readonly mountId: number
  /** Where the table shows it, as the table names it (what a command in the table's namespace is given). */
  readonly tablePath: string
}

/**
 * The outcome for one target: unmounted, refused by the kernel, or not verified (left mounted).
 *
 * @since 0.1.0
 */
export type UnmountResult =
  | { readonly _tag: "Unmounted"; readonly target: string }
  | { readonly _tag: "Failed"; readonly target: string; readonly failure: UnmountFailure }
  | { readonly _tag: "Unverified"; readonly target: string; readonly reason: UnverifiedReason; readonly detail: string }

/**
 * Options of {@link Mounter.unmount}.
 *
 * @since 0.1.0
 */
export interface UnmountOptions {
  /**
   * Detach lazily (MNT_DETACH): the mount leaves the namespace at once and is
   * cleaned up when its last user goes. A dead NFS server then cannot hang the
   * agent, which is why the operations always pass `true`.
   */
  readonly lazy: boolean
}

/**
 * Unmounts mounts below a root. `unmount` takes each target once, in the
 * given order, verifies it (see the module comment) right before it
 * unmounts it, and never fails as a whole: each target's result says what
 * happened. On a path where several mounts are stacked, only the top one is
 * reachable; the caller lists a stack top first.
 *
 * @since 0.1.0
 */
export interface Mounter {
  readonly unmount: (
    root: Directory.Handle,
    targets: ReadonlyArray<Target>,
    options: UnmountOptions
  ) => Effect.Effect<ReadonlyArray<UnmountResult>>
}

/**
 * The key of the {@link Mounter} service.
 *
 * @since 0.1.0
 */
export const Mounter = Context.Service<Mounter>("@hostnode/core/Mounter")

/**
 * Where `target` (a full path) is below `root` (a handle's full path): the components, or undefined outside.
 *
 * @since 0.2.0
 */
export const below = (root: string, target: string): string | undefined => {
  if (root === "/") return target
  if (target === root) return "/"
  return target.startsWith(`${root}/`) ? target.slice(root.length) : undefined
}
