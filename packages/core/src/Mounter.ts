/**
 * The `Mounter` service: the one primitive the unmount operations need from
 * the host. The operations (deepest first, re-reading the table, attributing
 * failures to prefixes) live in core; a `Mounter` only unmounts the targets it
 * is given, in the order given, and says what happened to each.
 *
 * @since 0.1.0
 */
import { Context, type Effect, Schema } from "effect"

/**
 * Why one target could not be unmounted, in errno terms (`EBUSY`, `EINVAL` for
 * "not a mount point", `ENOENT`, `EPERM`, ...), so the reason survives the trip
 * through a command or an FFI call unchanged.
 */
export const UnmountFailure = Schema.Struct({
  target: Schema.String,
  errno: Schema.String,
  message: Schema.String
})

/** Why one target could not be unmounted. */
export type UnmountFailure = typeof UnmountFailure.Type

/** The outcome for one target: unmounted, or the failure. */
export type UnmountResult =
  | { readonly _tag: "Unmounted"; readonly target: string }
  | { readonly _tag: "Failed"; readonly target: string; readonly failure: UnmountFailure }

/** Options of {@link Mounter.unmount}. */
export interface UnmountOptions {
  /**
   * Detach lazily (MNT_DETACH): the mount leaves the namespace at once and is
   * cleaned up when its last user goes. A dead NFS server then cannot hang the
   * agent, which is why the operations always pass `true`.
   */
  readonly lazy: boolean
}

/**
 * Unmounts mount points. `unmount` unmounts each target once, in the given
 * order, and never fails as a whole: each target's result says whether it was
 * unmounted. Unmounting a path on which several mounts are stacked removes the
 * top one; the caller repeats the target to remove more.
 */
export interface Mounter {
  readonly unmount: (
    targets: ReadonlyArray<string>,
    options: UnmountOptions
  ) => Effect.Effect<ReadonlyArray<UnmountResult>>
}

/** The key of the {@link Mounter} service. */
export const Mounter = Context.Service<Mounter>("@hostnode/core/Mounter")
