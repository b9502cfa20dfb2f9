/**
 * The conformance suite of dead storage: a file system that stops answering
 * (a dead NFS server, a crashed CSI or FUSE daemon) mounted on a pod volume
 * below a host root, with a tmpfs mounted below it (while it still
 * answered), a tmpfs secret beside it, another pod, and a second dead mount
 * below `/var/lib/cni`. Every operation ends by its deadline with a report;
 * what can be detached is, without asking the dead file system; a call that
 * cannot be made is abandoned `Hung`, and the next one works. Runs on the
 * real layers (a FUSE daemon that never answers, or answers late) and on
 * `MemoryHost` (its `hang` fault): a fake that behaves otherwise is a bug.
 *
 * @since 0.4.0
 */
import { assert, layer } from "@effect/vitest"
import { Directory, type Mounter, Paths, Repave, SafeRemove, Unmount } from "@hostnode/core"
import * as Layers from "@hostnode/core/Layers"
import { Clock, Effect, FileSystem, type Layer, type Scope } from "effect"
import { rootAt } from "./internal/rootAt.ts"
import { MountFixture } from "./MountFixture.ts"

/**
 * Options of {@link suite}.
 *
 * @category conformance
 * @since 0.4.0
 */
export interface Options<R> {
  /**
   * How the host makes a dead volume: mounts a file system at `mountPoint` (an
   * existing directory) that holds a directory `sub`, and answers until
   * `stall`; from then on it does not answer (or answers late).
   */
  readonly deadVolume: (
    mountPoint: string
  ) => Effect.Effect<{ readonly stall: Effect.Effect<void> }, never, R | Scope.Scope>
  /** The file system answers late rather than never: a call may end, late, instead of `Hung`. */
  readonly late?: boolean | undefined
}

const pod = "/var/lib/kubelet/pods/p1"
const csiMount = `${pod}/volumes/kubernetes.io~csi/pvc-dead/mount`
const secret = `${pod}/volumes/kubernetes.io~secret/token`
const otherSecret = "/var/lib/kubelet/pods/p2/volumes/kubernetes.io~secret/token"
const cniDead = "/var/lib/cni/networks/dead"

/** `effect` and the seconds it took, by the clock. */
const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const start = yield* Clock.currentTimeMillis
    const result = yield* Effect.result(effect)
    return { result, seconds: ((yield* Clock.currentTimeMillis) - start) / 1000 }
  })

const mountPointsBelow = (table: ReadonlyArray<{ readonly mountPoint: string }>, dir: string) =>
  table.map((e) => e.mountPoint).filter((m) => m.startsWith(`${dir}/`))

/**
 * Registers the suite on `host` (which provides the operations' services and
 * a `MountFixture`), run with the real clock: deadlines are seconds.
 *
 * @category conformance
 * @since 0.4.0
 */
export const suite = <R, E>(
  name: string,
  host: Layer.Layer<FileSystem.FileSystem | Directory.Directories | Mounter.Mounter | MountFixture | R, E>,
  options: Options<R>
) => {
  /** The host root with its mounts; the dead ones stall once everything is mounted. */
  const deadNode = Effect.gen(function* () {
    const fx = yield* MountFixture
    const fs = yield* FileSystem.FileSystem
    const root = `${yield* fx.sandbox}/root`
    const mkdir = (p: string) => fs.makeDirectory(`${root}${p}`, { recursive: true }).pipe(Effect.orDie)
    for (const p of [csiMount, secret, otherSecret, cniDead, "/var/lib/cni/networks/cbr0", "/etc/cni/net.d"]) {
      yield* mkdir(p)
    }
    yield* fs.writeFileString(`${root}/var/lib/cni/networks/cbr0/10.244.0.7`, "c0ffee").pipe(Effect.orDie)
    yield* fs.writeFileString(`${root}${pod}/etc-hosts`, "127.0.0.1 localhost\n").pipe(Effect.orDie)
    const csi = yield* options.deadVolume(`${root}${csiMount}`)
    yield* fx.tmpfs(`${root}${csiMount}/sub`)
    yield* fx.tmpfs(`${root}${secret}`)
    yield* fx.tmpfs(`${root}${otherSecret}`)
    const cni = yield* options.deadVolume(`${root}${cniDead}`)
    yield* csi.stall
    yield* cni.stall
    return { root, mountInfo: fx.mountInfo }
  })

  layer(host, { excludeTestServices: true })(`dead storage: ${name}`, (it) => {
    it.effect(
      "unmountBelow detaches the dead volume (and what is mounted below it) without asking it, by its deadline",
      () =>
        Effect.gen(function* () {
          const fx = yield* MountFixture
          const { root, mountInfo } = yield* deadNode
          const run = yield* timed(
            Unmount.unmountBelow([Paths.Node.KubeletDir], {
              hostRoot: yield* rootAt(root),
              mountInfo,
              deadline: "20 seconds"
            })
          )
          assert.isBelow(run.seconds, 20)
          assert.strictEqual(run.result._tag, "Success")
          const report = run.result._tag === "Success" ? run.result.success : undefined
          const gone = (report?.unmounted ?? []).map((m) => m.mountPoint)
          for (const p of [csiMount, `${csiMount}/sub`, secret, otherSecret]) assert.include(gone, `${root}${p}`)
          assert.deepStrictEqual(mountPointsBelow(yield* fx.table, `${root}${Paths.Node.KubeletDir}`), [])
          // The dead mount below the CNI directory was not a target: still there.
          assert.include(mountPointsBelow(yield* fx.table, root), `${root}${cniDead}`)
        }).pipe(Effect.scoped),
      60_000
    )

    it.effect(
      "unmountStrictlyBelow and teardownKubeletDir end by their deadlines; the pods are gone",
      () =>
        Effect.gen(function* () {
          const fx = yield* MountFixture
          const fs = yield* FileSystem.FileSystem
          const { root, mountInfo } = yield* deadNode
          const strict = yield* timed(
            Unmount.unmountStrictlyBelow([`${pod}/volumes`], {
              hostRoot: yield* rootAt(root),
              mountInfo,
              deadline: "20 seconds"
            })
          )
          assert.isBelow(strict.seconds, 20)
          assert.strictEqual(strict.result._tag, "Success")
          assert.deepStrictEqual(mountPointsBelow(yield* fx.table, `${root}${pod}`), [])
          const teardown = yield* timed(
            Repave.teardownKubeletDir({ hostRoot: yield* rootAt(root), mountInfo, deadline: "20 seconds" })
          )
          assert.isBelow(teardown.seconds, 20)
          assert.strictEqual(teardown.result._tag, "Success")
          const report = teardown.result._tag === "Success" ? teardown.result.success : undefined
          assert.deepStrictEqual(report?.kept, [])
          assert.isFalse(yield* fs.exists(`${root}${pod}`))
          assert.isFalse(yield* fs.exists(`${root}/var/lib/kubelet/pods/p2`))
        }).pipe(Effect.scoped),
      60_000
    )

    it.effect(
      "resetCniState keeps the dead mount below /var/lib/cni, never enters it, and ends by its deadline",
      () =>
        Effect.gen(function* () {
          const { root, mountInfo } = yield* deadNode
          const run = yield* timed(
            Repave.resetCniState({ hostRoot: yield* rootAt(root), mountInfo, deadline: "20 seconds" })
          )
          assert.isBelow(run.seconds, 20)
          const error = run.result._tag === "Failure" ? run.result.failure : undefined
          assert.strictEqual(error?._tag, "ResetError")
          const kept = error?._tag === "ResetError" ? error.kept : []
          assert.deepStrictEqual(
            kept.map((k) => [k.path, k.reason, k.mountPoint]),
            [[`${root}${Paths.Node.CniStateDir}`, "MountBelow", `${root}${cniDead}`]]
          )
        }).pipe(Effect.scoped),
      60_000
    )

    it.effect(
      "inside the dead volume: Effect.timeout fires on time, a deadline ends it Hung, a call timeout abandons the call, and the next call works",
      () =>
        Effect.gen(function* () {
          const { root, mountInfo } = yield* deadNode
          const inside = `${csiMount}/sub/../x`
          const where = { hostRoot: yield* rootAt(root), mountInfo }
          // 1. Interrupted from outside: nothing blocks the event loop, so the timeout fires on time.
          const interrupted = yield* timed(SafeRemove.remove([inside], where).pipe(Effect.timeout("2 seconds")))
          assert.isBelow(interrupted.seconds, 4)
          if (options.late !== true) assert.strictEqual(interrupted.result._tag, "Failure")
          // 2. Its own deadline: a report, the path kept Hung.
          const bounded = yield* timed(SafeRemove.remove([inside], { ...where, deadline: "2 seconds" }))
          assert.isBelow(bounded.seconds, 5)
          if (options.late !== true) {
            const report = bounded.result._tag === "Success" ? bounded.result.success : undefined
            assert.deepStrictEqual(
              report?.kept.map((k) => [k.path, k.reason]),
              [[`${root}${csiMount}/x`, "Hung"]]
            )
          }
          // 3. No deadline, a short call timeout: the call is abandoned Hung, naming the call.
          const dirs = yield* Directory.Directories
          const abandoned = yield* timed(
            Effect.scoped(Effect.flatMap(dirs.openRoot(`${root}${csiMount}`), (h) => dirs.list(h))).pipe(
              Layers.withCallTimeout("2 seconds")
            )
          )
          assert.isBelow(abandoned.seconds, 5)
          if (options.late !== true) {
            const e = abandoned.result._tag === "Failure" ? abandoned.result.failure : undefined
            assert.strictEqual(e?.reason._tag, "Hung")
          }
          // 4. The next call works on what still answers.
          const pods = yield* Effect.scoped(
            Effect.flatMap(dirs.openRoot(`${root}/var/lib/kubelet/pods`), (h) => dirs.list(h))
          )
          assert.deepStrictEqual(pods.map((e) => new TextDecoder().decode(e.name)).sort(), ["p1", "p2"])
        }).pipe(Effect.scoped),
      60_000
    )
  })
}
