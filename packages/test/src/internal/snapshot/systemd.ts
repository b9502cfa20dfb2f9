/**
 * The Snapshot conformance suite's systemd tests: a restore on the real
 * root ends with `daemon-reload` (on a simulated host only), and below any
 * other root there is none.
 *
 * Internal to `SnapshotConformance`, whose `suite` registers it.
 *
 * @since 0.3.0
 */
import { assert, it } from "@effect/vitest"
import { Snapshot, Systemd } from "@hostnode/core"
import { Effect, FileSystem, Ref } from "effect"
import { rootAt } from "../rootAt.ts"
import { everyKind, fixed, recordingSystemd, type Suite, takenAndMutated } from "./fixtures.ts"
import { assertRolledBack, build, mutate, SnapshotPaths, treeOf } from "./trees.ts"

/** Registers this part's tests. */
export const register = ({ onHost, realRootIsSafe }: Suite): void => {
  if (realRootIsSafe) {
    for (const realRoot of ["/", ""]) {
      it.effect(`on the real root (${JSON.stringify(realRoot)}) restore and recover end with daemon-reload`, () =>
        Effect.gen(function* () {
          const { systemd, calls, failing } = yield* recordingSystemd
          const fs = yield* FileSystem.FileSystem
          yield* build("", fixed)
          const original = yield* treeOf("/", "/cfg")
          const dir = "/var/lib/hostnode/snapshots/upgrade"
          const snapshot = yield* Snapshot.takeOf({ dir, hostRoot: yield* rootAt(realRoot), paths: SnapshotPaths })
          yield* mutate("", everyKind)
          const mutated = yield* treeOf("/", "/cfg")
          yield* Ref.set(failing, true)
          const e = yield* Effect.flip(snapshot.restore.pipe(Effect.provideService(Systemd.Systemd, systemd)))
          assert.strictEqual(e._tag, "SystemdError")
          assert.isFalse(yield* snapshot.restored)
          yield* assertRolledBack("", original, mutated)
          assert.isTrue(yield* fs.exists(dir))
          yield* Ref.set(failing, false)
          yield* snapshot.restore.pipe(Effect.provideService(Systemd.Systemd, systemd))
          assert.deepStrictEqual(yield* Ref.get(calls), ["daemon-reload"])
          assert.isTrue(yield* snapshot.restored)
          assert.isFalse(yield* fs.exists(dir), "a restore that succeeded consumed the snapshot")
          yield* Snapshot.takeOf({ dir, hostRoot: yield* rootAt(realRoot), paths: SnapshotPaths })
          yield* mutate("", everyKind)
          assert.isTrue(
            yield* Snapshot.recover({ dir, hostRoot: yield* rootAt(realRoot) }).pipe(
              Effect.provideService(Systemd.Systemd, systemd)
            )
          )
          assert.deepStrictEqual(yield* Ref.get(calls), ["daemon-reload", "daemon-reload"])
          yield* assertRolledBack("", original, mutated)
          assert.isFalse(yield* fs.exists(dir))
        }).pipe(onHost)
      )
    }
  }

  it.effect("below any other root there is no daemon-reload", () =>
    Effect.gen(function* () {
      const { systemd, calls } = yield* recordingSystemd
      const t = yield* takenAndMutated
      yield* t.snapshot.restore.pipe(Effect.provideService(Systemd.Systemd, systemd))
      yield* Snapshot.takeOf({ dir: t.dir, hostRoot: yield* rootAt(t.root), paths: SnapshotPaths })
      yield* mutate(t.root, everyKind)
      assert.isTrue(
        yield* Snapshot.recover({ dir: t.dir, hostRoot: yield* rootAt(t.root) }).pipe(
          Effect.provideService(Systemd.Systemd, systemd)
        )
      )
      yield* assertRolledBack(t.root, t.original, t.mutated)
      assert.deepStrictEqual(yield* Ref.get(calls), [])
    }).pipe(onHost)
  )
}
