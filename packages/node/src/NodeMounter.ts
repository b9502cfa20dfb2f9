/**
 * The real `Mounter`. `layer` verifies and unmounts through system calls
 * (koffi) in the helper process of the root handle's `NodeDirectory`:
 * - each target is held below the root (`openat2(RESOLVE_BENEATH |
 *   RESOLVE_NO_SYMLINKS)`, `O_PATH`), its mount id compared with the table's,
 *   and that very mount detached through its descriptor
 *   (`umount2("/proc/self/fd/N", MNT_DETACH)`): a link swapped into a parent
 *   after the check cannot redirect it, and a dead file system is not asked;
 * - `layerIn(pid)` does the same in another mount namespace (a container's);
 * - `layerCommand` (core's `Mounter.layerCommand`) runs `umount -l` through
 *   the spawner: the fallback where the FFI cannot load, with the weaker
 *   guarantees said at `Mounter.layerCommand`.
 *
 * @since 0.1.0
 */
import { type Directory, Mounter } from "@hostnode/core"
import type * as Programs from "@hostnode/core/Programs"
import { Effect, type FileSystem, Layer, Schema, type Scope } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import { pin } from "./internal/container/pin.ts"
import * as Io from "./internal/io/client.ts"
import { LibcUnavailable, load } from "./internal/libc.ts"
import { inProcessMounter } from "./internal/mounter/inProcess.ts"
import { namespaceMounter } from "./internal/mounter/namespace.ts"

/**
 * The in-process `Mounter` could not be built: koffi or libc's `umount2`
 * could not be loaded (no prebuilt binary for this platform, no
 * libc.so.6); `detail` says what the loader said. `layerCommand` still works.
 *
 * @category errors
 * @since 0.1.0
 */
export class MounterUnavailable extends Schema.TaggedError<MounterUnavailable>()("MounterUnavailable", {
  detail: Schema.String
}) {
  override get message(): string {
    return `in-process umount2 is unavailable: ${this.detail}`
  }
}

const loadLibc = Effect.suspend(() => {
  const c = load()
  return c instanceof LibcUnavailable ? Effect.fail(new MounterUnavailable({ detail: c.message })) : Effect.succeed(c)
})

/**
 * All targets of one call are verified and unmounted in one synchronous
 * loop: with MNT_DETACH the syscall does not wait for busy or unreachable
 * file systems, so the loop cannot hang on them.
 */
const make: Effect.Effect<Mounter.Mounter, MounterUnavailable, Scope.Scope> = Effect.gen(function* () {
  yield* loadLibc
  // Its own helper, started only if `holders` is asked: the unmounts go to the root handle's.
  const client = yield* Effect.acquireRelease(Io.make({ name: "this host" }), (c) => c.shutdown)
  return inProcessMounter(client)
}).pipe(Effect.withSpan("NodeMounter.make"))

/**
 * The in-process `Mounter` (see the module comment). The root handle must be
 * the real `Directories`' (`NodeDirectory`). Who holds a mount
 * (`Mounter.holders`) is read from procfs in a helper of its own. Fails to
 * build with {@link MounterUnavailable} where the FFI cannot load.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<Mounter.Mounter, MounterUnavailable> = Layer.effect(Mounter.Mounter, make)

/**
 * The command-based `Mounter` (`umount -l` through the spawner in context,
 * many targets per process): core's `Mounter.layerCommand`, named here
 * beside {@link layer} and {@link layerWithFallback}. Requires a spawner, a
 * FileSystem and the `Directories`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerCommand: (
  options?: Parameters<typeof Mounter.layerCommand>[0]
) => Layer.Layer<
  Mounter.Mounter,
  never,
  ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem | Directory.Directories
> = Mounter.layerCommand

/**
 * The in-process `Mounter`, or the command-based one where the FFI cannot load.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerWithFallback = (
  options?: Parameters<typeof Mounter.layerCommand>[0]
): Layer.Layer<
  Mounter.Mounter,
  never,
  ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem | Directory.Directories
> => Layer.catch(layer, () => layerCommand(options))

/**
 * Options of {@link layerIn}.
 *
 * @category models
 * @since 0.2.0
 */
export interface InOptions {
  /** Most targets one call to the helper is given (default 256): the rest go in further calls. */
  readonly maxTargets?: number | undefined
}

/**
 * A process can only unmount in its own mount namespace (the kernel refuses
 * a mount of another one with EINVAL, even through a descriptor). So the
 * helper enters that namespace (`unshare(CLONE_FS)`, then `setns` on
 * `/proc/<pid>/ns/mnt` and `chroot` to `/proc/<pid>/root`, both opened once
 * when the layer is built: a process whose threads share their file-system
 * state cannot `setns`, one that unshares it can). A pid that names no
 * process when the layer is built gives a `Mounter` whose every target fails
 * with `ESRCH`.
 */
const makeIn: (pid: number, options?: InOptions) => Effect.Effect<Mounter.Mounter, MounterUnavailable, Scope.Scope> =
  Effect.fn("NodeMounter.makeIn")(function* (pid, options) {
    yield* loadLibc
    const pinned = yield* Effect.result(pin(pid))
    if (pinned._tag === "Success") return yield* namespaceMounter(pinned.success, options)
    const why = `the mount namespace of process ${pid}: ${pinned.failure.detail}`
    return Mounter.Mounter.of({
      unmount: (_root, targets) =>
        Effect.succeed(
          targets.map(
            (t): Programs.UnmountResult => ({
              _tag: "Failed",
              target: t.path,
              failure: { target: t.path, errno: "ESRCH", message: why }
            })
          )
        )
    })
  })

/**
 * The `Mounter` of another mount namespace: the one host process `pid` (a
 * container's init) is in. A helper process of its own enters that
 * namespace and does there what {@link layer}'s helper does here: each
 * target held below the namespace's root as its table names it, its mount id
 * compared, and that very mount detached through its descriptor (a stack top
 * down in the same batch; strictly, without `MNT_DETACH`, by its name in its
 * held directory). No program of the container's runs, and nothing outside
 * its namespace can be detached. A target must still lie below the root the
 * operation passes, as for every `Mounter`.
 *
 * The process is pinned when the layer is built (a pidfd, then its namespace
 * and root as descriptors, then the pidfd asked that it still lives): once it
 * has exited every call fails (`ESRCH`), and a pid the kernel gives another
 * process later is never entered. Fails to build with
 * {@link MounterUnavailable} where the FFI cannot load; needs no other service.
 *
 * @category layers
 * @since 0.2.0
 */
export const layerIn = (pid: number, options?: InOptions): Layer.Layer<Mounter.Mounter, MounterUnavailable> =>
  Layer.effect(Mounter.Mounter, makeIn(pid, options))
