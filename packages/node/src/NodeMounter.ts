/**
 * The real `Mounter`. `layer` verifies and unmounts through system calls
 * (koffi: prebuilt binaries, no compiler) in the helper process of the root
 * handle's `NodeDirectory`, never on the agent's event loop: each target is
 * held below the root with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`
 * and `O_PATH` (or, on a kernel without it, one `openat(O_PATH |
 * O_NOFOLLOW)` per component, each checked to be a directory and not a link),
 * the mount id of what it reached compared with the table's (`statx` with
 * cached attributes: a dead file system is not asked), and that very mount
 * detached through its descriptor (`umount2("/proc/self/fd/N",
 * MNT_DETACH)`, which needs no answer from it): a link swapped into a parent
 * after the check cannot redirect it. A thousand lazy unmounts take tens of
 * milliseconds, where one `umount` process per mount takes seconds. Who holds
 * a mount (`Mounter.holders`) is read from procfs in a helper of its own.
 *
 * `layerCommand` (core's `Mounter.layerCommand`, re-exported) runs `umount
 * -l` through the spawner in context, many targets per process: the fallback
 * where the FFI cannot load. What it guarantees is weaker, and said at
 * `Mounter.makeCommand`.
 *
 * @since 0.1.0
 */
import { type Directory, Mounter } from "@hostnode/core"
import { Effect, type FileSystem, Layer, Schema, type Scope } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import { pin } from "./internal/container/pin.ts"
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
  /** Most targets one call to the helper is given (default 256): the rest go in further calls. */
  readonly maxTargets?: number | undefined
}

/**
 * The `Mounter` of another mount namespace: the one host process `pid` (a
 * container's init) is in. A process can only unmount in its own mount
 * namespace (the kernel refuses a mount of another one with EINVAL, even
 * through a descriptor). So this layer has a helper process of its own that
 * enters that namespace (`unshare(CLONE_FS)`, then `setns` on
 * `/proc/<pid>/ns/mnt` and `chroot` to `/proc/<pid>/root`, both opened once
 * when the layer is built: a process whose threads share their file-system
 * state cannot `setns`, one that unshares it can) and does there what
 * {@link layer}'s helper does here: each target held below the namespace's
 * root as its table names it, its mount id compared, and that very mount
 * detached through its descriptor. No program of the container's runs, and
 * nothing outside its namespace can be detached. A stack is detached top
 * down in the same batch (each in turn reachable once the one above it
 * went). Strictly (no `MNT_DETACH`), the mount's directory is held and the
 * mount detached by its name in it: a parent swapped for a link cannot
 * redirect it. A target must still lie below the root the operation passes,
 * as for every `Mounter`.
 *
 * The process is pinned when the layer is built (a pidfd, then its
 * namespace and root as descriptors, then the pidfd asked that it still
 * lives): once it has exited every call fails (`ESRCH`), and a pid the
 * kernel gives another process later is never entered. A pid that names no
 * process when the layer is built gives a `Mounter` whose every target
 * fails the same way.
 *
 * @since 0.2.0
 */
export const makeIn: (
  pid: number,
  options?: InOptions
) => Effect.Effect<Mounter.Mounter, MounterUnavailable, Scope.Scope> = Effect.fn("NodeMounter.makeIn")(
  function* (pid, options) {
    yield* loadLibc
    const pinned = yield* Effect.result(pin(pid))
    if (pinned._tag === "Success") return yield* namespaceMounter(pinned.success, options)
    const why = `the mount namespace of process ${pid}: ${pinned.failure.detail}`
    return Mounter.Mounter.of({
      unmount: (_root, targets) =>
        Effect.succeed(
          targets.map(
            (t): Mounter.UnmountResult => ({
              _tag: "Failed",
              target: t.path,
              failure: { target: t.path, errno: "ESRCH", message: why }
            })
          )
        )
    })
  }
)

/**
 * The `Mounter` of the mount namespace of host process `pid` (see
 * {@link makeIn}); fails to build with {@link MounterUnavailable} where the
 * FFI cannot load. It needs no other service: its helper enters the namespace itself.
 *
 * @since 0.2.0
 */
export const layerIn = (pid: number, options?: InOptions): Layer.Layer<Mounter.Mounter, MounterUnavailable> =>
  Layer.effect(Mounter.Mounter, makeIn(pid, options))
