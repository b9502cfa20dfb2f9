/**
 * The restore under a concurrent writer on the simulated host, at every step:
 * a clean run counts the operations a restore makes, then each adversary
 * action (a recorded directory exchanged with a link out of the root, one
 * moved aside for such a link, a subdirectory exchanged, the outside
 * bind-mounted onto a recorded directory, the parent of the listed paths
 * renamed away) is played right before operation 1, 2, ..., N+1 of a fresh
 * run. Whatever the index, and whether the restore then succeeds or fails:
 * nothing outside the root changed, and the unrecorded sibling inside it
 * (wherever the adversary's renames left it) holds what it held.
 */
import { assert, describe, it } from "@effect/vitest"
import { HostPath, Snapshot, Systemd } from "@hostnode/core"
import { MemoryAdversary, MemoryHost } from "@hostnode/test"
import * as SnapshotFixtures from "@hostnode/test/internal/snapshot/fixtures"
import { Effect, FileSystem } from "effect"

const root = "/r"
const dir = "/snaps/s"
const paths = ["/cfg/a", "/cfg/b", "/cfg/c"]

const files: MemoryHost.Fixture = {
  "/outside/secret/a": "not ours",
  "/outside/secret/sub/b": "not ours",
  "/r/cfg/a/x.conf": "x = 1\n",
  "/r/cfg/a/sub/y.conf": "y = 1\n",
  "/r/cfg/a/sub/deeper/z.conf": "z = 1\n",
  "/r/cfg/a/keep.link": { symlink: "x.conf" },
  "/r/cfg/c": "c = 1\n",
  "/r/cfg/d/keep": "not recorded",
  // A link out of the root beside the recorded directory: what the adversary swaps in.
  "/r/cfg/zlink": { symlink: "/outside/secret" },
  "/snaps": { directory: true }
}

/** The upgrade's changes: edits, new files, a removal, a recorded path created, a link planted. */
const upgrade = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  yield* fs.writeFileString("/r/cfg/a/x.conf", "x = 2\n")
  yield* fs.writeFileString("/r/cfg/a/new.conf", "new\n")
  yield* fs.writeFileString("/r/cfg/a/sub/new.conf", "new\n")
  yield* fs.remove("/r/cfg/a/sub/y.conf")
  yield* fs.writeFileString("/r/cfg/b", "created since\n")
  yield* fs.writeFileString("/r/cfg/c", "c = 2\n")
  yield* fs.symlink("/outside/secret", "/r/cfg/a/sub/planted")
})

const actions: ReadonlyArray<readonly [string, MemoryAdversary.Action]> = [
  ["exchange /cfg/a and a link out", MemoryAdversary.exchange("/r/cfg/a", "/r/cfg/zlink")],
  ["exchange /cfg/a/sub and a link out", MemoryAdversary.exchange("/r/cfg/a/sub", "/r/cfg/zlink")],
  ["/cfg/a moved aside for a link out", MemoryAdversary.swapForLink("/r/cfg/a", "/r/cfg/aside", "/outside/secret")],
  ["the outside bound onto /cfg/a/sub", MemoryAdversary.bind("/outside/secret", "/r/cfg/a/sub")],
  ["/cfg renamed away", MemoryAdversary.rename("/r/cfg", "/r/cfg-moved")]
]

/** One run on a fresh host: take, upgrade, then restore with `act` before operation `at` (0: none). */
const runOnce = (at: number, act: MemoryAdversary.Action | undefined) =>
  Effect.gen(function* () {
    const host = yield* MemoryHost.MemoryHost
    const fs = yield* FileSystem.FileSystem
    const snapshot = yield* Snapshot.takeOf({
      dir,
      hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie),
      paths
    })
    yield* upgrade
    const outsideBefore = yield* host.dump("/outside")
    yield* host.clearOperations
    const installed = act === undefined ? undefined : yield* MemoryAdversary.at(at, act)
    const result = yield* Effect.result(snapshot.restore)
    yield* installed?.remove ?? Effect.void
    const ops = (yield* host.operations).length
    const acted = (yield* installed?.record ?? Effect.succeed(undefined))?.acted ?? []
    const sibling = yield* Effect.forEach(["/r/cfg/d/keep", "/r/cfg-moved/d/keep"], (p) =>
      Effect.map(Effect.result(fs.readFileString(p)), (r) => (r._tag === "Success" ? r.success : undefined))
    )
    return {
      ops,
      acted: acted.some((a) => a.outcome === "ok"),
      restored: result._tag === "Success",
      outsideChanged: JSON.stringify(outsideBefore) !== JSON.stringify(yield* host.dump("/outside")),
      sibling: sibling.filter((s) => s !== undefined)
    }
  }).pipe(
    Effect.provideService(Systemd.Systemd, SnapshotFixtures.noSystemd),
    Effect.provide(MemoryHost.layer({ files }))
  )

describe("restore with the adversary acting at every operation index", () => {
  it.effect("a clean run restores the recorded tree and changes nothing outside", () =>
    Effect.gen(function* () {
      const clean = yield* runOnce(0, undefined)
      assert.isTrue(clean.restored)
      assert.isFalse(clean.outsideChanged)
      assert.deepStrictEqual(clean.sibling, ["not recorded"])
      assert.isAbove(clean.ops, 20)
    })
  )

  for (const [name, act] of actions) {
    it.effect(name, () =>
      Effect.gen(function* () {
        const clean = yield* runOnce(0, undefined)
        let acted = 0
        for (let at = 1; at <= clean.ops + 1; at++) {
          const r = yield* runOnce(at, act)
          const where = `"${name}" before operation ${at} of ${clean.ops} (restore ${r.restored ? "succeeded" : "failed"})`
          if (r.acted) acted++
          assert.isFalse(r.outsideChanged, `${where}: the tree outside the root changed`)
          assert.deepStrictEqual(r.sibling, ["not recorded"], `${where}: the unrecorded sibling changed`)
        }
        // The adversary really got in: at most indexes its move succeeded.
        assert.isAbove(acted, clean.ops / 2)
      })
    )
  }
})
