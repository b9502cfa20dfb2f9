/**
 * The real `Mounter`. `layer` verifies and unmounts in-process through koffi
 * (prebuilt binaries, no compiler): each target's path is resolved below the
 * root handle with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` (or, on a
 * kernel without it, one `openat(O_PATH | O_NOFOLLOW)` per component, each
 * checked to be a directory and not a link), the mount id of what it reached
 * compared with the table's (`statx`), and that very mount detached through
 * its descriptor (`umount2("/proc/self/fd/N", MNT_DETACH)`): a link swapped
 * into a parent after the check cannot redirect it. A thousand lazy unmounts
 * take tens of milliseconds, where one `umount` process per mount takes
 * seconds.
 *
 * `layerCommand` (core's `Mounter.layerCommand`, re-exported) runs `umount
 * -l` through the spawner in context, many targets per process: the path for
 * another mount namespace (a spawner wrapped with `nsenter`; the kernel lets
 * a process unmount only in its own mount namespace, and a threaded Node
 * process cannot enter another), and the fallback where the FFI cannot load.
 * What it guarantees is weaker, and said at `Mounter.makeCommand`.
 *
 * @since 0.1.0
 */
import { type Directory, Mounter } from "@hostnode/core"
import { Effect, type FileSystem, Layer, Schema, type Scope } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import * as Io from "./internal/io/client.ts"
import { LibcUnavailable, load } from "./internal/libc.ts"
import { inProcessMounter } from "./internal/mounter/inProcess.ts"
import { namespaceMounter } from "./internal/mounter/namespace.ts"

/**
 * Why: koffi or libc's `umount2` could not be loaded (no prebuilt binary for
 * this platform, no libc.so.6); `detail` says what the loader said.
 *
 * @since 0.3.0
 */
export class FfiUnavailable extends Schema.TaggedError<FfiUnavailable>()("FfiUnavailable", {
  detail: Schema.String
}) {
  override get message(): string {
    return this.detail
  }
}

/**
 * Why the in-process `Mounter` is unavailable: {@link FfiUnavailable}.
 *
 * @since 0.3.0
 */
export const MounterUnavailableReason = Schema.Union([FfiUnavailable])

/**
 * Why the in-process `Mounter` is unavailable.
 *
 * @since 0.3.0
 */
export type MounterUnavailableReason = typeof MounterUnavailableReason.Type

/**
 * The FFI could not be loaded (no libc.so.6, an unsupported platform); `reason`
 * says why (since 0.3.0 a class, {@link FfiUnavailable}, that holds the
 * `detail`). `layerCommand` still works.
 *
 * @since 0.1.0
 */
export class MounterUnavailable extends Schema.TaggedError<MounterUnavailable>()("MounterUnavailable", {
  reason: MounterUnavailableReason
}) {
  override get message(): string {
    return `in-process umount2 is unavailable: ${this.reason.message}`
  }
}

const loadLibc = Effect.suspend(() => {
  const c = load()
  return c instanceof LibcUnavailable
    ? Effect.fail(new MounterUnavailable({ reason: new FfiUnavailable({ detail: c.message }) }))
    : Effect.succeed(c)
})

/**
 * The `Mounter` backed by in-process system calls (see the module comment).
 * All targets of one call are verified and unmounted in one synchronous
 * loop: with MNT_DETACH the syscall does not wait for busy or unreachable
 * file systems, so the loop cannot hang on them. The root handle must be the
 * real `Directories`' (`NodeDirectory`).
 *
 * @since 0.1.0
 */
export const make: Effect.Effect<Mounter.Mounter, MounterUnavailable, Scope.Scope> = Effect.gen(function* () {
  yield* loadLibc
  // Its own helper, started only if `holders` is asked: the unmounts go to the root handle's.
  const client = yield* Effect.acquireRelease(Io.make({ name: "this host" }), (c) => c.shutdown)
  return inProcessMounter(client)
}).pipe(Effect.withSpan("NodeMounter.make"))

/**
 * The in-process `Mounter` (see {@link make}); fails to build with {@link MounterUnavailable}.
 *
 * @since 0.1.0
 */
export const layer: Layer.Layer<Mounter.Mounter, MounterUnavailable> = Layer.effect(Mounter.Mounter, make)

/**
 * Options of {@link layerCommand}: the same as `Mounter.CommandOptions`, kept
 * here so {@link layerWithFallback} and existing callers read alike.
 *
 * @since 0.1.0
 */
export type CommandOptions = Mounter.CommandOptions

/**
 * The command-based `Mounter`: the same as `Mounter.makeCommand` (in
 * @hostnode/core since 0.3.0, where what it guarantees is said), kept here
 * so {@link layerWithFallback} and existing callers read alike.
 *
 * @since 0.1.0
 */
export const makeCommand: (
  options?: CommandOptions
) => Effect.Effect<
  Mounter.Mounter,
  never,
  ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem | Directory.Directories
> = Mounter.makeCommand

/**
 * The command-based `Mounter` as a layer: the same as `Mounter.layerCommand`,
 * kept here so {@link layerWithFallback} and existing callers read alike.
 * Requires a spawner, a FileSystem and the `Directories`.
 *
 * @since 0.1.0
 */
export const layerCommand: (
  options?: CommandOptions
) => Layer.Layer<
  Mounter.Mounter,
  never,
  ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem | Directory.Directories
> = Mounter.layerCommand

/**
 * The in-process `Mounter`, or the command-based one where the FFI cannot load.
 *
 * @since 0.1.0
 */
export const layerWithFallback = (
  options?: CommandOptions
): Layer.Layer<
  Mounter.Mounter,
  never,
  ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem | Directory.Directories
> => Layer.catch(layer, () => layerCommand(options))

/**
 * Options of {@link layerIn}.
 *
 * @since 0.2.0
 */
export interface InOptions {
  /** Most targets one helper process is given (default 256: one descriptor each, well below the open-file limit). */
  readonly maxTargets?: number | undefined
}

/**
 * The `Mounter` of another mount namespace: the one host process `pid` (a
 * container's init) is in. A process can only unmount in its own mount
 * namespace (the kernel refuses a mount of another one with EINVAL, even
 * through a descriptor), and a process with threads, as Node is, cannot
 * enter another. So the work is split, and the guarantee of the in-process
 * {@link layer} kept:
 *
 * - Verification, here, in-process: each target's path *as the container's
 *   table names it* is resolved below a handle on the container's root
 *   (`/proc/<pid>/root`, opened for each call) with `openat2(RESOLVE_BENEATH
 *   | RESOLVE_NO_SYMLINKS)`, and the mount id it reaches compared with the
 *   table's (`statx`). What passes is held open as an `O_PATH` descriptor of
 *   that very mount; what fails is `Unverified` and left mounted. The root
 *   the operation passes is not resolved in: whatever host root the caller's files
 *   are below, a mount is only ever looked for in the container (a target
 *   must still lie below that root, as for every `Mounter`).
 * - The unmount, in a helper: `nsenter -t <pid> -m --root=/ -- umount -l -c
 *   -- /proc/<self>/fd/N...`, a single-threaded process entered into the
 *   container's mount namespace, its root set back to this process's `/` (so
 *   `umount` and `/proc` are this host's, whatever the container's image
 *   has), that detaches each mount through this process's descriptor of it.
 *   A descriptor names a mount, not a path, so a link swapped into a parent
 *   after the check cannot redirect the unmount, and since the helper is in
 *   the container's namespace the kernel cannot detach anything outside it.
 *
 * Which targets went is read from the container's table afterwards (mount
 * ids are unique), not from umount's text. A stack is unmounted top down in
 * rounds of one helper each, since only its top is reachable. A non-lazy
 * unmount cannot go through a descriptor (the descriptor keeps the mount
 * busy): it is given `/proc/<pid>/root<path>` after the check, a path.
 *
 * @since 0.2.0
 */
export const makeIn: (
  pid: number,
  options?: InOptions
) => Effect.Effect<Mounter.Mounter, MounterUnavailable, Scope.Scope> = Effect.fn("NodeMounter.makeIn")(
  function* (pid, options) {
    yield* loadLibc
    return yield* namespaceMounter(pid, options)
  }
)

/**
 * The `Mounter` of the mount namespace of host process `pid` (see
 * {@link makeIn}); fails to build with {@link MounterUnavailable} where the
 * FFI cannot load. Requires this host's spawner (not one wrapped with
 * `nsenter`: the layer enters the namespace itself), a FileSystem and the
 * real `Directories`.
 *
 * @since 0.2.0
 */
export const layerIn = (pid: number, options?: InOptions): Layer.Layer<Mounter.Mounter, MounterUnavailable> =>
  Layer.effect(Mounter.Mounter, makeIn(pid, options))
