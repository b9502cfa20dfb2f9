/**
 * What a host root is decoded from, and the node's root in context: what a
 * composition provides. Re-exported by `@hostnode/core/Layers`.
 *
 * @since 0.4.0
 */
import { Context, type Effect } from "effect"
import type { Gone } from "../../HostPathError.ts"

/**
 * What `HostPath.decodeRoot` takes besides a plain path: the root and, optionally, the table that describes it.
 *
 * @since 0.2.0
 * @category models
 */
export interface RootInput {
  /** The host root: `""` or `"/"` for the real host, otherwise an absolute directory. */
  readonly path: string
  /** The mount table (default: `/proc/self/mountinfo`, or `/proc/<pid>/mountinfo` for a root below `/proc/<pid>/root`). */
  readonly mountInfo?: string | undefined
  /**
   * Where that table's `/` is in this process (default `/`, or
   * `/proc/<pid>/root` for a root below it). A root in another mount
   * namespace is resolved below this, never with `realpath`, which would
   * resolve `/proc/<pid>/root` as this process's own `/`.
   */
  readonly tableRoot?: string | undefined
  /**
   * What names the root across time (default: its canonical path). A
   * snapshot records it and a restore refuses a root with another
   * (`HostRootMismatch`). A container's composition gives something that
   * survives the container's restart and that another container cannot
   * have (its slot, or where its root file system comes from), never the
   * `/proc/<pid>/...` path, which a reused pid would match.
   */
  readonly identity?: string | undefined
  /**
   * For a root that belongs to a process that can exit: why it is gone, or
   * `undefined` while it is there (see `HostPath.HostRoot`'s `gone`). A gone root is
   * refused when decoded, with the `HostPath.Gone` reason.
   */
  readonly gone?: Effect.Effect<Gone | undefined> | undefined
}

/**
 * Where the node's real root is, when it is not this process's own `/`: the
 * root an operation works below when its options name none (or name `""` or
 * `"/"`, the Go contract's "the real host"). A composition whose node stack
 * runs in another mount namespace provides it (`NodeContainer.layer` in
 * @hostnode/node: the container's `/proc/<pid>/root` and its
 * `/proc/<pid>/mountinfo`, or the same-path host locations the container
 * shares), so a program written for the host runs unchanged against the
 * container. Unset (the default), the real root is this process's `/`.
 *
 * @since 0.2.0
 * @category services
 */
export const NodeRoot = Context.Reference<RootInput | undefined>("@hostnode/core/HostPath/NodeRoot", {
  defaultValue: () => undefined
})
