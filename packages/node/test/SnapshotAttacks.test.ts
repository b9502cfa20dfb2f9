/**
 * The snapshot against a real concurrent writer and a second process, on the
 * real disk, in the private mount namespace:
 *
 * - A process of its own (`fixtures/racer.c`) exchanges a recorded
 *   directory (the listed `/etc/kubernetes` itself in even runs, a directory
 *   below it in odd ones) with a symbolic link to a sentinel directory
 *   outside the host root, as fast as it can, while a restore (even runs) or
 *   a recover (odd runs) puts the snapshot back. After every run the sentinel
 *   must be exactly as it was: nothing deleted, overwritten or created there.
 * - Two child processes (an agent's unit and an operator's manual run)
 *   recover one snapshot at the same moment: exactly one restores it, the
 *   other waits for the lock and then finds nothing to do, the tree equals
 *   the original and no temporary file is left.
 *
 * Counts come from `Gate.loops` (under CI the issue's: 200 runs of the
 * writer, 30 trials of the two recovers). Each test prints its totals on
 * stderr.
 */
import { assert, describe, layer } from "@effect/vitest"
import { HostPath, Snapshot, Systemd } from "@hostnode/core"
import { Gate, MountFixture, RefusingSystemd } from "@hostnode/test"
import * as RepaveTrees from "@hostnode/test/internal/repave/trees"
import * as SnapshotTrees from "@hostnode/test/internal/snapshot/trees"
import { Effect, FileSystem } from "effect"
import * as Racer from "./racer.ts"
import { realHost } from "./realHost.ts"
import { cmd, DataName, ManifestName, spawnChild } from "./snapshotChild.ts"

const gate = Gate.check("the snapshot against a concurrent writer and a second process", [
  "root",
  "private-mount-namespace",
  { command: "cc", args: ["--version"] }
])

const say = (line: string) =>
  Effect.sync(() => {
    // Straight to stderr: vitest shows console output of failing tests only.
    process.stderr.write(`${line}\n`)
  })

/** The sentinel's names: the raced directory's own, so following the link would find (and overwrite) them. */
const names = [
  ...Array.from({ length: 20 }, (_, i) => `f${i}.conf`),
  ...Array.from({ length: 5 }, (_, i) => `sub/g${i}`)
]

/** The recorded tree, with the raced directory `manifests` holding the sentinel's names. */
const tree = (box: string): Record<string, RepaveTrees.Plant> => {
  const t: Record<string, RepaveTrees.Plant> = {
    "root/etc/kubernetes/kubelet.conf": "apiVersion: v1\n",
    "root/etc/kubernetes/admin.conf": "admin\n",
    "root/etc/kubernetes/empty": { dir: true },
    // Unrecorded, beside the listed path: the link the top-level race swaps in.
    "root/etc/kube-link": { link: `${box}/outside/sentinel` },
    // Recorded, beside the raced subdirectory: the link the subdirectory race swaps in.
    "root/etc/kubernetes/manifests-link": { link: `${box}/outside/sentinel` }
  }
  for (const n of names) t[`root/etc/kubernetes/manifests/${n}`] = `ours ${n}\n`
  return t
}

/** An upgrade's changes: every raced file rewritten, files added and removed, so a restore has work everywhere. */
const upgrade = (root: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    for (const n of names) yield* fs.writeFileString(`${root}/etc/kubernetes/manifests/${n}`, `upgraded ${n}\n`)
    yield* fs.writeFileString(`${root}/etc/kubernetes/manifests/new.yaml`, "new\n")
    yield* fs.writeFileString(`${root}/etc/kubernetes/manifests/sub/new`, "new\n")
    yield* fs.remove(`${root}/etc/kubernetes/admin.conf`)
    yield* fs.writeFileString(`${root}/etc/kubernetes/kubelet.conf`, "apiVersion: v2\n")
  }).pipe(Effect.orDie)

const noSystemd = RefusingSystemd.make("below a temporary host root nothing reloads systemd")

describe.skipIf(gate.skip)("the snapshot against a concurrent writer and a second process", () => {
  layer(realHost(), { excludeTestServices: true })("real disk, private mount namespace", (it) => {
    it.effect(
      "restore and recover while a recorded directory is exchanged with a link out of the root",
      () =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const fx = yield* MountFixture.MountFixture
          const racer = yield* Racer.build
          const box = yield* fs.realPath(yield* fx.sandbox).pipe(Effect.orDie)
          const sentinel: Record<string, RepaveTrees.Plant> = {}
          for (const n of names) sentinel[`outside/sentinel/${n}`] = `sentinel ${n}\n`
          yield* RepaveTrees.plant(box, sentinel)
          const before = yield* RepaveTrees.snapshot(`${box}/outside`)
          const root = `${box}/root`
          const dir = `${box}/snaps/s`
          const runs = Gate.loops(200)
          let swaps = 0
          let changed = 0
          let restored = 0
          for (let i = 0; i < runs; i++) {
            yield* RepaveTrees.plant(box, tree(box))
            const snapshot = yield* Snapshot.takeOf({
              dir,
              hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie),
              paths: ["/etc/kubernetes"]
            })
            yield* upgrade(root)
            const [a, b] =
              i % 2 === 0
                ? [`${root}/etc/kubernetes`, `${root}/etc/kube-link`]
                : [`${root}/etc/kubernetes/manifests`, `${root}/etc/kubernetes/manifests-link`]
            const outcome = yield* Effect.scoped(
              Effect.gen(function* () {
                const r = yield* Racer.start(racer, "exchange", a, b)
                const outcome = yield* Effect.result(
                  i % 4 < 2
                    ? snapshot.restore
                    : Snapshot.recover({ dir, hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie) })
                )
                swaps += yield* r.stop
                return outcome
              })
            ).pipe(Effect.provideService(Systemd.Systemd, noSystemd))
            if (outcome._tag === "Success") restored++
            const d = RepaveTrees.differences(before, yield* RepaveTrees.snapshot(`${box}/outside`))
            changed += d.length
            assert.deepStrictEqual(d, [], `run ${i}: paths outside the root changed`)
            // The writer is stopped: clearing up cannot race.
            yield* Snapshot.discard({ dir })
            yield* fs.remove(`${root}/etc`, { recursive: true, force: true }).pipe(Effect.orDie)
          }
          yield* say(
            `attack snapshot restore/recover under exchange: ${runs} runs, ${swaps} swaps, ${changed} paths outside the root changed, ${restored} restores succeeded (the others failed typed, the snapshot kept)`
          )
          assert.isAbove(swaps, 0, "the writer never swapped anything")
        }).pipe(Effect.scoped),
      { timeout: 900_000 }
    )

    it.effect("a mount put on a recorded directory after the take stops the restore there (OtherMount)", () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const fx = yield* MountFixture.MountFixture
        const box = yield* fs.realPath(yield* fx.sandbox).pipe(Effect.orDie)
        const sentinel: Record<string, RepaveTrees.Plant> = {}
        for (const n of names) sentinel[`outside/sentinel/${n}`] = `sentinel ${n}\n`
        yield* RepaveTrees.plant(box, { ...sentinel, ...tree(box) })
        const before = yield* RepaveTrees.snapshot(`${box}/outside`)
        const root = `${box}/root`
        const dir = `${box}/snaps/s`
        const snapshot = yield* Snapshot.takeOf({
          dir,
          hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie),
          paths: ["/etc/kubernetes"]
        })
        yield* upgrade(root)
        // The outside bound onto the recorded subdirectory, which the restore reads with its parent's others:
        // it holds the recorded names, so a restore that entered it would write over them.
        yield* fx.bind(`${box}/outside/sentinel`, `${root}/etc/kubernetes/manifests`)
        const outcome = yield* Effect.flip(snapshot.restore.pipe(Effect.provideService(Systemd.Systemd, noSystemd)))
        assert.strictEqual(outcome._tag, "SnapshotError")
        assert.strictEqual(outcome.reason._tag, "OtherMount", outcome.message)
        assert.deepStrictEqual(RepaveTrees.differences(before, yield* RepaveTrees.snapshot(`${box}/outside`)), [])
      }).pipe(Effect.scoped)
    )

    it.effect(
      "two processes recover one snapshot at once: one restores it, the other waits and finds nothing",
      () =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const fx = yield* MountFixture.MountFixture
          const box = yield* fs.realPath(yield* fx.sandbox).pipe(Effect.orDie)
          const root = `${box}/root`
          const dir = `${box}/snaps/s`
          yield* RepaveTrees.plant(box, tree(box))
          const original = yield* SnapshotTrees.treeOf(root, "/etc")
          // Taken once; each trial recovers a fresh copy of it.
          const pristine = `${box}/snaps/pristine`
          yield* Snapshot.takeOf({
            dir: pristine,
            hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie),
            paths: ["/etc/kubernetes"]
          })
          const place = Effect.gen(function* () {
            yield* fs.makeDirectory(dir, { mode: 0o700 })
            for (const name of [ManifestName, DataName]) {
              yield* fs.copyFile(`${pristine}/${name}`, `${dir}/${name}`)
            }
          }).pipe(Effect.orDie)
          const cache = `${box}/compile-cache`
          const [first, second] = yield* Effect.all([spawnChild(cache), spawnChild(cache)], { concurrency: 2 })
          if (first === undefined || second === undefined) return yield* Effect.die(new Error("no children"))
          const trials = Gate.loops(30)
          let waited = 0
          for (let i = 0; i < trials; i++) {
            yield* place
            yield* upgrade(root)
            const both = yield* Effect.all(
              [first, second].map((child) =>
                Effect.andThen(child.send(cmd("recover", dir, root)), child.expect("recovered "))
              ),
              { concurrency: 2 }
            )
            const answers = [...both].sort()
            assert.deepStrictEqual(answers, ["recovered false", "recovered true"], `trial ${i}`)
            waited++
            assert.deepStrictEqual(yield* SnapshotTrees.treeOf(root, "/etc"), original, `trial ${i}`)
            const left = (yield* fs.readDirectory(`${box}/snaps`)).filter((n) => n !== "pristine")
            assert.deepStrictEqual(left, [], `trial ${i}: something left beside the snapshot`)
            const temps = Object.keys(yield* SnapshotTrees.treeOf(root, "/")).filter((k) =>
              k.includes(".hostnode-restore-")
            )
            assert.deepStrictEqual(temps, [], `trial ${i}: temporary files left in the tree`)
          }
          yield* say(`attack two concurrent recovers: ${trials} trials, each one restored and one waited (${waited})`)
          yield* first.kill
          yield* second.kill
        }).pipe(Effect.scoped),
      { timeout: 600_000 }
    )
  })
})
