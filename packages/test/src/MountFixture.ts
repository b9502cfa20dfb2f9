/**
 * Making mounts for tests, on the real host or the simulated one, behind one
 * interface, so the same conformance suites run against both. The real
 * implementation runs `mount` through the spawner in context and must run in a
 * private mount namespace (see `Gate`); every mount it makes lives below a
 * sandbox directory that is itself a fresh tmpfs and is detached recursively
 * when the sandbox's scope closes, even when the test failed. The memory
 * implementation (`layerMemory`) makes the same mounts on the `MemoryHost` in
 * context.
 *
 * @since 0.1.0
 */
import { HostCommand, MountInfo } from "@hostnode/core"
import * as Programs from "@hostnode/core/Programs"
import { MemoryHost } from "@hostnode/sim"
import { Context, Effect, Exit, FileSystem, Layer, type Scope } from "effect"
import type { ChildProcessSpawner } from "effect/process"

/**
 * A mount could not be made or removed by a fixture. Tests treat it as a defect of the setup, not of the code under test.
 *
 * @since 0.1.0
 */
class MountFixtureError extends Error {
  /**
   * The error's name in stack traces and logs.
   *
   * @since 0.1.0
   */
  override readonly name = "MountFixtureError"
}

/**
 * Makes mounts for a test.
 *
 * @category services
 * @since 0.1.0
 */
export interface MountFixture {
  /** A fresh empty directory where mounts can be made; everything below it is unmounted and removed when the scope closes. */
  readonly sandbox: Effect.Effect<string, never, Scope.Scope>
  /** Mounts a new empty tmpfs at `target` (which must be a directory). */
  readonly tmpfs: (target: string) => Effect.Effect<void>
  /** Bind-mounts `source` at `target`: a directory on a directory, or a regular file on a regular file. */
  readonly bind: (source: string, target: string) => Effect.Effect<void>
  /**
   * Unmounts the top mount at `target` (not lazily): setup, e.g. to free a
   * mount id the kernel then gives the next mount. Optional: the cases that
   * need it are skipped (with a note in their name's log) without it.
   *
   * @since 0.4.0
   */
  readonly unmount?: ((target: string) => Effect.Effect<void>) | undefined
  /**
   * Makes the mount whose root `target` is shared, a slave of its peer group,
   * or private (`mount --make-shared|--make-slave|--make-private`), so a test
   * can build peers and slaves.
   */
  readonly propagation: (target: string, kind: "shared" | "slave" | "private") => Effect.Effect<void>
  /** The path of the mount table the code under test reads. */
  readonly mountInfo: string
  /** The current mount table. */
  readonly table: Effect.Effect<ReadonlyArray<MountInfo.MountEntry>>
}

/**
 * The key of the {@link MountFixture} service.
 *
 * @category services
 * @since 0.1.0
 */
export const MountFixture = Context.Service<MountFixture>("@hostnode/test/MountFixture")

const mountCommand = (args: ReadonlyArray<string>) =>
  HostCommand.run("mount", args).pipe(
    Effect.flatMap((o) =>
      o.exitCode === 0
        ? Effect.void
        : Effect.die(new MountFixtureError(`mount ${args.join(" ")} exited ${o.exitCode}: ${o.stderr.trim()}`))
    ),
    Effect.orDie
  )

/**
 * The real fixture: `mount -t tmpfs` and `mount --bind` in this process's
 * mount namespace, which must be private (the test runner's `unshare`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layerReal: Layer.Layer<
  MountFixture,
  never,
  ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem
> = Layer.effect(
  MountFixture,
  Effect.gen(function* () {
    const context = yield* Effect.context<ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem>()
    const fs = yield* FileSystem.FileSystem
    const tmpfs = (target: string) =>
      mountCommand(["-t", "tmpfs", "-o", "size=16m", "tmpfs", target]).pipe(Effect.provide(context))
    return MountFixture.of({
      sandbox: Effect.gen(function* () {
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-mounts-" }).pipe(Effect.orDie)
        // A lazy detach of the sandbox takes every mount below it along, and asks none of them
        // (`umount -R` would visit each, and a dead FUSE or NFS one below would stop it).
        yield* Effect.acquireRelease(tmpfs(dir), () =>
          HostCommand.run("umount", ["-l", "-c", "--", dir]).pipe(Effect.ignore, Effect.provide(context))
        )
        return dir
      }),
      tmpfs,
      bind: (source, target) => mountCommand(["--bind", source, target]).pipe(Effect.provide(context)),
      unmount: (target) =>
        HostCommand.run("umount", ["--", target]).pipe(
          Effect.flatMap((o) =>
            o.exitCode === 0
              ? Effect.void
              : Effect.die(new MountFixtureError(`umount ${target} exited ${o.exitCode}: ${o.stderr.trim()}`))
          ),
          Effect.orDie,
          Effect.provide(context)
        ),
      propagation: (target, kind) => mountCommand([`--make-${kind}`, target]).pipe(Effect.provide(context)),
      mountInfo: Programs.DefaultMountInfo,
      table: MountInfo.read().pipe(Effect.provide(context), Effect.orDie)
    })
  })
)

/**
 * The fixture on the simulated host in context: the same sandbox (a fresh
 * temporary directory with a tmpfs on it, detached with everything below it
 * when the scope closes), tmpfs and bind mounts made directly on the host's
 * mount tree, and the table `/proc/self/mountinfo` serves.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerMemory: Layer.Layer<MountFixture, never, MemoryHost.MemoryHost | FileSystem.FileSystem> =
  Layer.effect(
    MountFixture,
    Effect.gen(function* () {
      const host = yield* MemoryHost.MemoryHost
      const fs = yield* FileSystem.FileSystem
      const orDie = <A, E>(effect: Effect.Effect<A, E>) =>
        Effect.catch(effect, (e) =>
          Effect.die(new MountFixtureError(String((e as { message?: unknown }).message ?? e)))
        )
      const tmpfs = (target: string) => orDie(host.tmpfs(target))
      return MountFixture.of({
        sandbox: Effect.gen(function* () {
          const dir = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-mounts-" }).pipe(Effect.orDie)
          yield* Effect.acquireRelease(tmpfs(dir), () =>
            // umount -R -l: whatever is mounted at the sandbox goes, with everything below it.
            // Until nothing is mounted there any more (the unmount then fails, EINVAL).
            Effect.gen(function* () {
              for (let i = 0; i < 1000; i++) {
                if (Exit.isFailure(yield* Effect.exit(host.unmount(dir, { lazy: true })))) break
              }
            })
          )
          return dir
        }),
        tmpfs,
        bind: (source, target) => orDie(host.bind(source, target)),
        unmount: (target) =>
          host
            .unmount(target)
            .pipe(Effect.catch((e) => Effect.die(new MountFixtureError(`umount ${target}: ${e.reason.errno}`)))),
        propagation: (target, kind) => orDie(host.propagation(target, kind)),
        mountInfo: Programs.DefaultMountInfo,
        table: host.mountTable
      })
    })
  )
