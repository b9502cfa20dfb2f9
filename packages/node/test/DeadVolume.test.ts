/**
 * Dead storage, for real: a FUSE daemon that never answers (what a dead NFS
 * server or a crashed CSI driver looks like to the kernel; built at test time
 * from `fixtures/deadfs.c`) mounted on a pod volume below a host root, a
 * tmpfs mounted below it (while it still answered), a tmpfs secret beside
 * it, another pod, and a second dead mount below `/var/lib/cni`. Every
 * operation ends by its deadline with a report; calls that cannot be made
 * are abandoned `Hung` and the test process (and a CLI run) keeps going and
 * exits. The same again with a daemon that answers after 5 s per call.
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { assert, describe, layer } from "@effect/vitest"
import { Deadline, Directory, Paths, Repave, SafeRemove, Unmount } from "@hostnode/core"
import { Gate, MountFixture } from "@hostnode/test"
import { Clock, Duration, Effect, FileSystem } from "effect"
import * as DeadFs from "./deadFs.ts"
import { realHost } from "./realHost.ts"

const gate = Gate.check("dead storage (a real FUSE daemon that never answers)", [
  "root",
  "private-mount-namespace",
  { command: "mount" },
  { command: "cc", args: ["--version"] },
  { command: "fusermount3", args: ["-V"] }
])

const pod = "/var/lib/kubelet/pods/p1"
const csiMount = `${pod}/volumes/kubernetes.io~csi/pvc-dead/mount`
const secret = `${pod}/volumes/kubernetes.io~secret/token`
const otherSecret = "/var/lib/kubelet/pods/p2/volumes/kubernetes.io~secret/token"
const cniDead = "/var/lib/cni/networks/dead"

/**
 * The host root with its mounts; the daemons stall (as `mode` says) once
 * everything is mounted. Everything dies with the scope: the daemons by their
 * pids, then the sandbox.
 */
const deadNode = (mode: "dead" | number) =>
  Effect.gen(function* () {
    const fx = yield* MountFixture.MountFixture
    const fs = yield* FileSystem.FileSystem
    const binary = yield* DeadFs.build
    const root = `${yield* fx.sandbox}/root`
    const mkdir = (p: string) => fs.makeDirectory(`${root}${p}`, { recursive: true }).pipe(Effect.orDie)
    for (const p of [csiMount, secret, otherSecret, cniDead, "/var/lib/cni/networks/cbr0", "/etc/cni/net.d"])
      yield* mkdir(p)
    yield* fs.writeFileString(`${root}/var/lib/cni/networks/cbr0/10.244.0.7`, "c0ffee").pipe(Effect.orDie)
    yield* fs.writeFileString(`${root}${pod}/etc-hosts`, "127.0.0.1 localhost\n").pipe(Effect.orDie)
    const csi = yield* DeadFs.mount(binary, `${root}${csiMount}`, mode)
    yield* fx.tmpfs(`${root}${csiMount}/sub`)
    yield* fx.tmpfs(`${root}${secret}`)
    yield* fx.tmpfs(`${root}${otherSecret}`)
    const cni = yield* DeadFs.mount(binary, `${root}${cniDead}`, mode)
    yield* csi.stall
    yield* cni.stall
    return { root, mountInfo: fx.mountInfo }
  })

/** `effect` and the seconds it took, by the clock. */
const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const start = yield* Clock.currentTimeMillis
    const result = yield* Effect.result(effect)
    return { result, seconds: ((yield* Clock.currentTimeMillis) - start) / 1000 }
  })

const mountPointsBelow = (table: ReadonlyArray<{ readonly mountPoint: string }>, dir: string) =>
  table.map((e) => e.mountPoint).filter((m) => m.startsWith(`${dir}/`))

for (const mode of ["dead", 5] as const) {
  const what = mode === "dead" ? "a daemon that never answers" : "a daemon that answers after 5 s per call"
  describe.skipIf(gate.skip)(`dead storage: ${what}`, () => {
    layer(realHost(), { excludeTestServices: true })((it) => {
      it.effect(
        "unmountBelow detaches the dead volume (and what is mounted below it) without asking it, by its deadline",
        () =>
          Effect.gen(function* () {
            const fx = yield* MountFixture.MountFixture
            const { root, mountInfo } = yield* deadNode(mode)
            const run = yield* timed(
              Unmount.unmountBelow([Paths.KubeletDir], { hostRoot: root, mountInfo, deadline: "20 seconds" })
            )
            assert.isBelow(run.seconds, 20)
            assert.strictEqual(run.result._tag, "Success")
            const report = run.result._tag === "Success" ? run.result.success : undefined
            const gone = (report?.unmounted ?? []).map((m) => m.mountPoint)
            for (const p of [csiMount, `${csiMount}/sub`, secret, otherSecret]) assert.include(gone, `${root}${p}`)
            assert.deepStrictEqual(mountPointsBelow(yield* fx.table, `${root}${Paths.KubeletDir}`), [])
            // The dead mount below the CNI directory was not a target: still there.
            assert.include(mountPointsBelow(yield* fx.table, root), `${root}${cniDead}`)
          }).pipe(Effect.scoped),
        60_000
      )

      it.effect(
        "unmountStrictlyBelow and teardownKubeletDir end by their deadlines; the pods are gone",
        () =>
          Effect.gen(function* () {
            const fx = yield* MountFixture.MountFixture
            const fs = yield* FileSystem.FileSystem
            const { root, mountInfo } = yield* deadNode(mode)
            const strict = yield* timed(
              Unmount.unmountStrictlyBelow([`${pod}/volumes`], { hostRoot: root, mountInfo, deadline: "20 seconds" })
            )
            assert.isBelow(strict.seconds, 20)
            assert.strictEqual(strict.result._tag, "Success")
            assert.deepStrictEqual(mountPointsBelow(yield* fx.table, `${root}${pod}`), [])
            const teardown = yield* timed(
              Repave.teardownKubeletDir({ hostRoot: root, mountInfo, deadline: "20 seconds" })
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
            const { root, mountInfo } = yield* deadNode(mode)
            const run = yield* timed(Repave.resetCniState({ hostRoot: root, mountInfo, deadline: "20 seconds" }))
            assert.isBelow(run.seconds, 20)
            assert.strictEqual(run.result._tag, "Failure")
            const error = run.result._tag === "Failure" ? run.result.failure : undefined
            assert.strictEqual(error?._tag, "ResetError")
            const kept = error?._tag === "ResetError" ? error.kept : []
            assert.deepStrictEqual(
              kept.map((k) => [k.path, k.reason, k.mountPoint]),
              [[`${root}${Paths.CniStateDir}`, "MountBelow", `${root}${cniDead}`]]
            )
          }).pipe(Effect.scoped),
        60_000
      )

      it.effect(
        "a removal inside the dead volume: Effect.timeout fires on time, the deadline ends it Hung, a call timeout abandons the helper, and the next call works",
        () =>
          Effect.gen(function* () {
            const { root, mountInfo } = yield* deadNode(mode)
            const inside = `${csiMount}/sub/../x`
            const options = { hostRoot: root, mountInfo }
            // 1. Interrupted from outside: the event loop is free, so the timeout fires on time.
            const interrupted = yield* timed(SafeRemove.remove([inside], options).pipe(Effect.timeout("2 seconds")))
            if (mode === "dead") {
              assert.strictEqual(interrupted.result._tag, "Failure")
              assert.isBelow(interrupted.seconds, 4)
            }
            // 2. Its own deadline: a report, the path kept Hung.
            const bounded = yield* timed(SafeRemove.remove([inside], { ...options, deadline: "2 seconds" }))
            assert.isBelow(bounded.seconds, 5)
            if (mode === "dead") {
              assert.strictEqual(bounded.result._tag, "Success")
              const report = bounded.result._tag === "Success" ? bounded.result.success : undefined
              assert.deepStrictEqual(
                report?.kept.map((k) => k.reason),
                ["Hung"]
              )
            }
            // 3. No deadline, a short call timeout: the call is abandoned Hung, naming the call.
            const dirs = yield* Directory.Directories
            const abandoned = yield* timed(
              Effect.scoped(
                Effect.gen(function* () {
                  const h = yield* dirs.openRoot(`${root}${csiMount}`)
                  return yield* dirs.list(h)
                })
              ).pipe(Deadline.withCallTimeout("2 seconds"))
            )
            assert.isBelow(abandoned.seconds, 5)
            if (mode === "dead") {
              assert.strictEqual(abandoned.result._tag, "Failure")
              const e = abandoned.result._tag === "Failure" ? abandoned.result.failure : undefined
              assert.strictEqual(e?.reason._tag, "Hung")
            }
            // 4. The next call gets a new helper, and the live parts work.
            const pods = yield* Effect.scoped(
              Effect.flatMap(dirs.openRoot(`${root}/var/lib/kubelet/pods`), (h) => dirs.list(h))
            )
            assert.deepStrictEqual(pods.map((e) => new TextDecoder().decode(e.name)).sort(), ["p1", "p2"])
          }).pipe(Effect.scoped),
        60_000
      )

      it.effect(
        "the CLI exits by its --timeout, with the dead volume still dead",
        () =>
          Effect.gen(function* () {
            const { root } = yield* deadNode(mode)
            const bin = fileURLToPath(new URL("../../cli/src/bin.ts", import.meta.url))
            const run = yield* timed(
              Effect.callback<{ readonly code: number | null; readonly stdout: string }>((resume) => {
                const child = spawn(
                  process.execPath,
                  [
                    "--conditions=@hostnode/source",
                    bin,
                    "--host-root",
                    root,
                    "--timeout",
                    "3",
                    "--json",
                    "snapshot",
                    "take",
                    "--dir",
                    `${root}/snapshots/s`,
                    "--path",
                    `${csiMount}/sub/x`
                  ],
                  { stdio: ["ignore", "pipe", "pipe"] }
                )
                let stdout = ""
                child.stdout.on("data", (b: Buffer) => {
                  stdout += b.toString()
                })
                child.on("exit", (code) => resume(Effect.succeed({ code, stdout })))
              })
            )
            assert.isBelow(run.seconds, 15)
            const out = run.result._tag === "Success" ? run.result.success : undefined
            assert.isDefined(out)
            if (mode === "dead") assert.notStrictEqual(out?.code, 0)
            void Duration
          }).pipe(Effect.scoped),
        60_000
      )
    })
  })
}
