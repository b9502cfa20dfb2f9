/**
 * The `Mounter` service: the one primitive the unmount operations need from
 * the host. A `Mounter` only unmounts the targets it is given, in the order
 * given, and says what happened to each; the operations (deepest first,
 * re-reading the table) are in `Unmount`.
 *
 * - A target is unmounted only when its path, resolved below the root handle
 *   without following any link, still leads to the mount with its id, and
 *   through what was resolved; one that cannot be verified is left mounted.
 * - The in-process `Mounter` is in `@hostnode/node`; {@link layerCommand}
 *   (`umount` through the spawner in context) is here.
 *
 * @since 0.1.0
 */
import { Context, type Effect, type FileSystem, Layer, Schema } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import type * as Directory from "./Directory.ts"
import { commandMounter } from "./internal/mounter/command.ts"
import type { Target, UnmountResult } from "./Programs.ts"

/**
 * Who holds a mount: a process with a file open in it, its working directory
 * or its root in it, or another mount namespace that holds a copy of it
 * (which `fuser -m` and `lsof` cannot see). Why a mount will not go, or why a
 * path was kept because of a mount, names these.
 *
 * @since 0.4.0
 * @category models
 */
export const Holder = Schema.Struct({
  pid: Schema.Int,
  command: Schema.String,
  how: Schema.Literals(["file", "cwd", "root", "namespace"]),
  detail: Schema.String
})

/**
 * The type of {@link Holder}.
 *
 * @since 0.1.0
 * @category models
 */
export type Holder = typeof Holder.Type

/**
 * Unmounts mounts below a root. `unmount` takes each target once, in the
 * given order, verifies it (see the module comment) right before it
 * unmounts it, and never fails as a whole: each target's result says what
 * happened. On a path where several mounts are stacked, only the top one is
 * reachable; the caller lists a stack top first. With `lazy` (MNT_DETACH)
 * the mount leaves the namespace at once and is cleaned up when its last user
 * goes: a dead NFS server then cannot hang the agent, which is why the
 * operations always pass `true`. `holders`, where the layer can see
 * processes, says who holds each mount asked about (by its id, and the device
 * and root that tell its copies in other namespaces; the agent and its own
 * helpers left out).
 *
 * @since 0.1.0
 * @category services
 */
export interface Mounter {
  readonly unmount: (
    root: Directory.Handle,
    targets: ReadonlyArray<Target>,
    options: { readonly lazy: boolean }
  ) => Effect.Effect<ReadonlyArray<UnmountResult>>
  readonly holders?:
    | ((
        mounts: ReadonlyArray<{
          readonly mountId: number
          /** `major:minor`, as the table writes it. */
          readonly device: string
          /** The mount's root within its file system (the table's `root` field). */
          readonly root: string
        }>
      ) => Effect.Effect<ReadonlyMap<number, ReadonlyArray<Holder>>>)
    | undefined
}

/**
 * The key of the {@link Mounter} service.
 *
 * @since 0.1.0
 * @category services
 */
export const Mounter = Context.Service<Mounter>("@hostnode/core/Mounter")

/**
 * The `Mounter` that runs `umount [-l] -c -- targets...` through the
 * `ChildProcessSpawner` in context, many targets per process, in the
 * namespace the spawner's commands run in. It is for a host where the
 * in-process `Mounter` of @hostnode/node cannot load its FFI, and for another
 * mount namespace through a spawner wrapped with `nsenter` (the kernel lets
 * a process unmount only in its own mount namespace, and a threaded Node
 * process cannot enter another). It needs no Node API: the spawner, the
 * FileSystem and the `Directories` all come from context.
 *
 * What it can guarantee: before the commands run, each distinct target path
 * is verified through the `Directories` in context, below the root handle,
 * as the in-process layer does (resolved without following any link, its
 * mount id compared with the table's; a stack is verified at its top and
 * unmounted once per entry, top down); what fails verification is reported
 * `Unverified` and not given to `umount`. What it cannot: `umount` is a
 * process of its own and unmounts by path (`-c`: not canonicalised, but the
 * kernel still follows links in it), so a link swapped into a parent between
 * the check and the command can redirect that unmount. The operations read
 * the table again after every pass, so such a detach is seen, not trusted.
 *
 * umount reports failures as text, so which targets were unmounted is
 * decided from the mount table: for a path given k times, as many of its
 * occurrences succeeded as its entries decreased; the others take the reason
 * umount printed for that path.
 *
 * @since 0.3.0
 * @category layers
 */
export const layerCommand = (options?: {
  /**
   * The mount table of the namespace the spawner's commands run in, read to
   * tell which targets were unmounted (default `/proc/self/mountinfo`; for a
   * spawner wrapped with `nsenter -t PID`, `/proc/PID/mountinfo`).
   */
  readonly mountInfo?: string | undefined
  /** Most bytes of target arguments per `umount` process (default 64 KiB, far below ARG_MAX). */
  readonly maxArgBytes?: number | undefined
}): Layer.Layer<
  Mounter,
  never,
  ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem | Directory.Directories
> => Layer.effect(Mounter, commandMounter(options))
