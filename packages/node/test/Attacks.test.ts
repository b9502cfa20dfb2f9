/**
 * The removals and unmounts against a real concurrent writer, in the private
 * mount namespace: a process of its own (`fixtures/racer.c`) swaps a
 * directory inside a pod's volume (or inside the CNI state) with a symbolic
 * link to a sentinel directory outside the host root, as fast as it can, or
 * bind-mounts the sentinel onto a directory being removed and detaches it
 * again, while `teardownKubeletDir`, `resetCniState` or `unmountBelow` runs.
 * After every run the sentinel (and a mount outside the root) must be exactly
 * as it was, and what the report says was kept must be there.
 *
 * Counts come from `Gate.loops` (under CI the issue's: 200 runs each of the
 * teardown and the reset, 50 with bind mounts, 100 of the unmount). Each
 * test prints its totals on stderr.
 */
import { assert, describe, layer } from "@effect/vitest"
import { HostCommand, HostPath, MountInfo, Repave, type SafeRemove, Unmount } from "@hostnode/core"
import { Lexical } from "@hostnode/core/Programs"
import { Gate, MountFixture } from "@hostnode/test"
import * as RepaveTrees from "@hostnode/test/internal/repave/trees"
import { Effect, FileSystem } from "effect"
import * as Racer from "./racer.ts"
import { realHost } from "./realHost.ts"

const gate = Gate.check("attacks by a concurrent writer on real mounts", [
  "root",
  "private-mount-namespace",
  { command: "mount" },
  { command: "cc", args: ["--version"] }
])

/** The sentinel's files: the same names as the raced directory's, so a walk that followed the link would find them. */
const names = [...Array.from({ length: 20 }, (_, i) => `f${i}`), ...Array.from({ length: 5 }, (_, i) => `sub/g${i}`)]

const say = (line: string) =>
  Effect.sync(() => {
    // Straight to stderr: vitest shows console output of failing tests only.
    process.stderr.write(`${line}\n`)
  })

/** A fresh sandbox with `outside/sentinel` and an empty `root/`; its canonical path. */
const sandbox = Effect.gen(function* () {
  const fx = yield* MountFixture.MountFixture
  const fs = yield* FileSystem.FileSystem
  const box = yield* fs.realPath(yield* fx.sandbox).pipe(Effect.orDie)
  const tree: Record<string, RepaveTrees.Plant> = {}
  for (const n of names) tree[`outside/sentinel/${n}`] = `sentinel ${n}`
  yield* RepaveTrees.plant(box, tree)
  yield* fs.makeDirectory(`${box}/root`).pipe(Effect.orDie)
  return box
})

/** Plants a raced directory `dir/d` (the sentinel's names, ours) and `dir/l`, a link to the sentinel. */
const plantRaced = (box: string, dir: string) => {
  const tree: Record<string, RepaveTrees.Plant> = { [`${dir}/l`]: { link: `${box}/outside/sentinel` } }
  for (const n of names) tree[`${dir}/d/${n}`] = `ours ${n}`
  return RepaveTrees.plant(box, tree)
}

/** How many of the sentinel's paths differ from `before`. */
const damage = (box: string, before: Readonly<Record<string, string>>) =>
  Effect.map(RepaveTrees.snapshot(`${box}/outside`), (after) => RepaveTrees.differences(before, after).length)

/** Every kept path is still there: the report is true about what stayed. */
const keptExist = (kept: ReadonlyArray<SafeRemove.Kept>) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    for (const k of kept) {
      const there = yield* Effect.result(fs.lstat(k.path))
      assert.strictEqual(there._tag, "Success", `kept ${k.path} (${k.reason}) is not there`)
    }
  })

describe.skipIf(gate.skip)("attacks by a concurrent writer (real mounts, private mount namespace)", () => {
  layer(realHost(), { excludeTestServices: true })("the attacks", (it) => {
    it.effect(
      "teardownKubeletDir while a directory in an emptyDir volume is swapped with a link outside the root",
      () =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const racer = yield* Racer.build
          const box = yield* sandbox
          const before = yield* RepaveTrees.snapshot(`${box}/outside`)
          const root = `${box}/root`
          const data = "root/var/lib/kubelet/pods/p1/volumes/kubernetes.io~empty-dir/data"
          const runs = Gate.loops(200)
          let lost = 0
          let swaps = 0
          let kept = 0
          for (let i = 0; i < runs; i++) {
            yield* plantRaced(box, data)
            yield* RepaveTrees.plant(box, { "root/var/lib/kubelet/pods/p1/etc-hosts": "hosts" })
            const report = yield* Effect.scoped(
              Effect.gen(function* () {
                const r = yield* Racer.start(racer, "exchange", `${box}/${data}/d`, `${box}/${data}/l`)
                const report = yield* Repave.teardownKubeletDir({
                  hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie)
                })
                swaps += yield* r.stop
                return report
              })
            )
            const d = yield* damage(box, before)
            lost += d
            kept += report.kept.length
            assert.strictEqual(d, 0, `run ${i}: the sentinel changed`)
            yield* keptExist(report.kept)
            for (const p of report.removed) assert.isTrue(Lexical.isWithin(root, p), `removed ${p}`)
            // The writer is stopped: clearing what is left cannot race.
            yield* fs.remove(`${root}/var`, { recursive: true, force: true }).pipe(Effect.orDie)
          }
          yield* say(
            `attack teardownKubeletDir/exchange: ${runs} runs, ${swaps} swaps, ${lost} files outside the root changed, ${kept} paths kept (reported)`
          )
          assert.isAbove(swaps, 0, "the writer never swapped anything")
        }).pipe(Effect.scoped),
      { timeout: 600_000 }
    )

    it.effect(
      "resetCniState while a directory in /var/lib/cni is swapped with a link outside the root",
      () =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const racer = yield* Racer.build
          const box = yield* sandbox
          const before = yield* RepaveTrees.snapshot(`${box}/outside`)
          const root = `${box}/root`
          const dir = "root/var/lib/cni/networks/k8s-pod-network"
          const runs = Gate.loops(200)
          let lost = 0
          let swaps = 0
          let kept = 0
          for (let i = 0; i < runs; i++) {
            yield* plantRaced(box, dir)
            yield* RepaveTrees.plant(box, { "root/etc/cni/net.d/10-calico.conflist": "{}" })
            const outcome = yield* Effect.scoped(
              Effect.gen(function* () {
                const r = yield* Racer.start(racer, "exchange", `${box}/${dir}/d`, `${box}/${dir}/l`)
                const outcome = yield* Effect.result(
                  Repave.resetCniState({ hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie) })
                )
                swaps += yield* r.stop
                return outcome
              })
            )
            const d = yield* damage(box, before)
            lost += d
            assert.strictEqual(d, 0, `run ${i}: the sentinel changed`)
            const keptNow =
              outcome._tag === "Success"
                ? outcome.success.kept
                : outcome.failure._tag === "ResetError"
                  ? outcome.failure.kept
                  : assert.fail(`run ${i}: ${outcome.failure.message}`)
            kept += keptNow.length
            yield* keptExist(keptNow)
            yield* fs.remove(`${root}/var`, { recursive: true, force: true }).pipe(Effect.orDie)
            yield* fs.remove(`${root}/etc`, { recursive: true, force: true }).pipe(Effect.orDie)
          }
          yield* say(
            `attack resetCniState/exchange: ${runs} runs, ${swaps} swaps, ${lost} files outside the root changed, ${kept} paths kept (reported)`
          )
          assert.isAbove(swaps, 0, "the writer never swapped anything")
        }).pipe(Effect.scoped),
      { timeout: 600_000 }
    )

    it.effect(
      "teardownKubeletDir while the sentinel is bind-mounted onto a directory being removed, and detached",
      () =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const racer = yield* Racer.build
          const box = yield* sandbox
          const before = yield* RepaveTrees.snapshot(`${box}/outside`)
          const root = `${box}/root`
          const data = "root/var/lib/kubelet/pods/p1/volumes/kubernetes.io~empty-dir/data"
          const runs = Gate.loops(50)
          let lost = 0
          let binds = 0
          let kept = 0
          for (let i = 0; i < runs; i++) {
            yield* plantRaced(box, data)
            const report = yield* Effect.scoped(
              Effect.gen(function* () {
                // Same device as the pod's directory (one sandbox tmpfs): only the mount id tells them apart.
                const r = yield* Racer.start(racer, "bind", `${box}/outside/sentinel`, `${box}/${data}/d`)
                const report = yield* Repave.teardownKubeletDir({
                  hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie)
                })
                binds += yield* r.stop
                return report
              })
            )
            const d = yield* damage(box, before)
            lost += d
            kept += report.kept.length
            assert.strictEqual(d, 0, `run ${i}: the sentinel changed`)
            yield* keptExist(report.kept)
            // A bind the racer left behind goes before the next run.
            yield* HostCommand.run("umount", ["-R", "-l", "--", `${box}/${data}/d`]).pipe(Effect.ignore)
            yield* fs.remove(`${root}/var`, { recursive: true, force: true }).pipe(Effect.orDie)
          }
          yield* say(
            `attack teardownKubeletDir/bind: ${runs} runs, ${binds} binds made, ${lost} files outside the root changed, ${kept} paths kept (reported)`
          )
          assert.isAbove(binds, 0, "the writer never mounted anything")
        }).pipe(Effect.scoped),
      { timeout: 600_000 }
    )

    it.effect(
      "unmountBelow while a parent of a listed mount is swapped with a link to a mount outside the root",
      () =>
        Effect.gen(function* () {
          const fx = yield* MountFixture.MountFixture
          const fs = yield* FileSystem.FileSystem
          const racer = yield* Racer.build
          const box = yield* sandbox
          const root = `${box}/root`
          const pod = `${root}/var/lib/kubelet/pods/p1`
          // Outside the root, a mount at the same relative place as the pod's volume.
          yield* fs.makeDirectory(`${box}/outside/vol/v`, { recursive: true }).pipe(Effect.orDie)
          yield* fx.tmpfs(`${box}/outside/vol/v`)
          const outsideId = (yield* fx.table).find((e) => e.mountPoint === `${box}/outside/vol/v`)?.id
          const runs = Gate.loops(100)
          let detachedOutside = 0
          let swaps = 0
          let unverified = 0
          for (let i = 0; i < runs; i++) {
            yield* fs.makeDirectory(`${pod}/volumes/v`, { recursive: true }).pipe(Effect.orDie)
            yield* fx.tmpfs(`${pod}/volumes/v`)
            yield* fs.symlink(`${box}/outside/vol`, `${pod}/evil`).pipe(Effect.orDie)
            const report = yield* Effect.scoped(
              Effect.gen(function* () {
                const r = yield* Racer.start(racer, "exchange", `${pod}/volumes`, `${pod}/evil`)
                const report = yield* Unmount.unmountBelowByPrefix(["/var/lib/kubelet/pods/p1"], {
                  hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie)
                })
                swaps += yield* r.stop
                return report
              })
            )
            unverified += [...report.failures.values()].flatMap(
              (e): ReadonlyArray<unknown> => (e.reason._tag === "MountsRemain" ? e.reason.remaining : [e.reason])
            ).length
            const table = yield* fx.table
            if (!table.some((e) => e.id === outsideId)) detachedOutside++
            assert.isTrue(
              table.some((e) => e.id === outsideId),
              `run ${i}: the mount outside the root was detached`
            )
            // The writer is stopped: put the pod back and clear what is left below it.
            const swapped = (yield* fs.lstat(`${pod}/volumes`).pipe(Effect.orDie)).type === "SymbolicLink"
            if (swapped) {
              yield* fs.rename(`${pod}/volumes`, `${pod}/evil2`).pipe(Effect.orDie)
              yield* fs.rename(`${pod}/evil`, `${pod}/volumes`).pipe(Effect.orDie)
              yield* fs.rename(`${pod}/evil2`, `${pod}/evil`).pipe(Effect.orDie)
            }
            const left = (yield* MountInfo.read()).filter((e) => Lexical.isWithin(pod, Lexical.clean(e.mountPoint)))
            for (const e of left.reverse())
              yield* HostCommand.run("umount", ["-l", "--", e.mountPoint]).pipe(Effect.ignore)
            yield* fs.remove(pod, { recursive: true, force: true }).pipe(Effect.orDie)
          }
          yield* say(
            `attack unmountBelow/exchange: ${runs} runs, ${swaps} swaps, ${detachedOutside} mounts outside the root detached, ${unverified} targets left unverified (reported)`
          )
          assert.isAbove(swaps, 0, "the writer never swapped anything")
        }).pipe(Effect.scoped),
      { timeout: 600_000 }
    )
  })
})
