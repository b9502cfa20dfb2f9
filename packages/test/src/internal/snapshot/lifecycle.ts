/**
 * The Snapshot conformance suite's lifecycle tests: discard, recover, the
 * recorded host root, takes that never committed, the scoped resource and
 * `guarded` (a rollback that fails too), and a failed restore run again.
 *
 * Internal to `SnapshotConformance`, whose `suite` registers it.
 *
 * @since 0.3.0
 */
import { assert, it } from "@effect/vitest"
import { Directory, Snapshot } from "@hostnode/core"
import { Cause, Deferred, Effect, Exit, Fiber, FileSystem, Layer, Logger, Ref } from "effect"
import { rootAt } from "../rootAt.ts"
import { everyKind, failingRenames, fixed, leftIn, type Suite, sandbox, takenAndMutated } from "./fixtures.ts"
import * as Format from "./format.ts"
import { assertRolledBack, build, inSnapshot, mutate, type Node, pick, SnapshotPaths, treeOf } from "./trees.ts"

/** Registers this part's tests. */
export const register = ({ onHost }: Suite): void => {
  // -- discard, recover and the scoped resource -----------------------------

  it.effect("discard removes the saved copy; restoring it afterwards is Missing; discarding twice is fine", () =>
    onHost(
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const t = yield* takenAndMutated
        yield* t.snapshot.discard
        yield* t.snapshot.discard
        // Nothing beside it: the lock is the directory's own flock, no file.
        assert.deepStrictEqual(yield* fs.readDirectory(`${t.box}/snaps`), [])
        // The module's discard, of a snapshot that is not there, is success too.
        assert.isFalse(yield* Snapshot.discard({ dir: t.dir }))
        const e = yield* Effect.flip(t.snapshot.restore)
        assert.strictEqual(e._tag === "SnapshotError" ? e.reason._tag : e._tag, "Missing")
        assert.deepStrictEqual(yield* treeOf(t.root, "/cfg"), t.mutated)
      })
    )
  )

  it.effect(
    "discard and take refuse what is not a snapshot (a file, a directory of other things) and change nothing",
    () =>
      onHost(
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const s = yield* sandbox
          // `--dir /etc` typed for `--dir /etc/snap`: a directory of the operator's files.
          const notOne = `${s.box}/snaps/s`
          yield* fs.makeDirectory(`${notOne}/kubernetes`, { recursive: true })
          yield* fs.writeFileString(`${notOne}/kubernetes/admin.conf`, "keep me")
          yield* fs.writeFileString(`${notOne}/${Format.ManifestName}`, "{}")
          const before = yield* treeOf(s.box, "/snaps/s")
          const e = yield* Effect.flip(Snapshot.discard({ dir: notOne }))
          assert.strictEqual(e._tag === "SnapshotError" && e.reason._tag, "NotASnapshot")
          assert.include(e.message, "kubernetes")
          assert.deepStrictEqual(yield* treeOf(s.box, "/snaps/s"), before)
          // A take into it is told the same, not that a snapshot is there, and writes nothing.
          const t = yield* Effect.flip(
            Snapshot.takeOf({ dir: notOne, hostRoot: yield* rootAt(s.root), paths: SnapshotPaths })
          )
          assert.strictEqual(t._tag === "SnapshotError" && t.reason._tag, "NotASnapshot")
          assert.deepStrictEqual(yield* treeOf(s.box, "/snaps/s"), before)
          // A file at the snapshot's name.
          yield* fs.remove(notOne, { recursive: true })
          yield* fs.writeFileString(notOne, "a file")
          const f = yield* Effect.flip(Snapshot.discard({ dir: notOne }))
          assert.strictEqual(f._tag === "SnapshotError" && f.reason._tag, "NotASnapshot")
          assert.strictEqual(yield* fs.readFileString(notOne), "a file")
          // A damaged snapshot (its data alone) is still one: discarded.
          yield* fs.remove(notOne)
          yield* fs.makeDirectory(notOne, { mode: 0o700 })
          yield* fs.writeFileString(`${notOne}/${Format.DataName}`, "partial")
          assert.isTrue(yield* Snapshot.discard({ dir: notOne }))
          assert.isFalse(yield* fs.exists(notOne))
        })
      )
  )

  it.effect("recover restores a snapshot an earlier process left, then removes it; with none it does nothing", () =>
    onHost(
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const t = yield* takenAndMutated
        // What a take killed before its commit leaves: a temporary sibling.
        yield* fs.makeDirectory(`${t.box}/snaps/s.tmp-abc123`)
        yield* fs.writeFileString(`${t.box}/snaps/s.tmp-abc123/data`, "partial")
        assert.isTrue(yield* Snapshot.recover({ dir: t.dir, hostRoot: yield* rootAt(t.root) }))
        yield* assertRolledBack(t.root, t.original, t.mutated)
        assert.deepStrictEqual(yield* leftIn(t.box), [])
        const after = yield* treeOf(t.root, "/")
        assert.isFalse(yield* Snapshot.recover({ dir: t.dir, hostRoot: yield* rootAt(t.root) }))
        assert.deepStrictEqual(yield* treeOf(t.root, "/"), after)
      })
    )
  )

  it.effect("a snapshot records its canonical host root; restoring it below another root is refused", () =>
    onHost(
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const t = yield* takenAndMutated
        const canonical = yield* fs.realPath(t.root)
        const manifest = (JSON.parse as (text: string) => Format.Manifest)(
          yield* fs.readFileString(`${t.dir}/${Format.ManifestName}`)
        )
        assert.strictEqual(manifest.hostRoot, canonical)
        // Another tree (the operator mistyped --host-root): nothing is written there, the snapshot stays.
        const other = `${t.box}/other`
        yield* fs.makeDirectory(`${other}/cfg/a`, { recursive: true })
        yield* fs.writeFileString(`${other}/cfg/c`, "another node's file")
        const otherBefore = yield* treeOf(other, "/")
        for (const attempt of [
          Effect.flatMap(Snapshot.open({ dir: t.dir, hostRoot: yield* rootAt(other) }), (h) => h.restore),
          Snapshot.recover({ dir: t.dir, hostRoot: yield* rootAt(other) })
        ]) {
          const e = yield* Effect.flip(attempt)
          assert.strictEqual(e._tag === "SnapshotError" && e.reason._tag, "HostRootMismatch")
          assert.include(e.message, canonical)
          assert.include(e.message, yield* fs.realPath(other))
        }
        assert.deepStrictEqual(yield* treeOf(other, "/"), otherBefore)
        assert.deepStrictEqual(yield* treeOf(t.root, "/cfg"), t.mutated)
        assert.isTrue(yield* fs.exists(`${t.dir}/${Format.ManifestName}`))
        // The same tree under another name (a link to it) is the same canonical root.
        yield* fs.symlink(t.root, `${t.box}/rootlink`)
        assert.isTrue(yield* Snapshot.recover({ dir: t.dir, hostRoot: yield* rootAt(`${t.box}/rootlink`) }))
        yield* assertRolledBack(t.root, t.original, t.mutated)
      })
    )
  )

  it.effect("allowHostRootMismatch restores below another root on purpose", () =>
    onHost(
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const t = yield* takenAndMutated
        const copy = `${t.box}/copy`
        yield* fs.makeDirectory(copy)
        assert.isTrue(
          yield* Snapshot.recover({ dir: t.dir, hostRoot: yield* rootAt(copy), allowHostRootMismatch: true })
        )
        assert.deepStrictEqual(pick(yield* treeOf(copy, "/cfg"), inSnapshot), pick(t.original, inSnapshot))
      })
    )
  )

  it.effect("a take in which every listed path is absent says so", () =>
    onHost(
      Effect.gen(function* () {
        const s = yield* sandbox
        const empty = yield* Snapshot.takeOf({ dir: s.dir, hostRoot: yield* rootAt(s.root), paths: SnapshotPaths })
        assert.deepStrictEqual(empty.absent, SnapshotPaths)
        yield* empty.discard
        yield* build(s.root, fixed)
        const taken = yield* Snapshot.takeOf({
          dir: s.dir,
          hostRoot: yield* rootAt(s.root),
          paths: [...SnapshotPaths, "/cfg/none"]
        })
        assert.deepStrictEqual(taken.absent, ["/cfg/none"])
        const opened = yield* Snapshot.open({ dir: s.dir, hostRoot: yield* rootAt(s.root) })
        assert.deepStrictEqual(opened.absent, ["/cfg/none"])
      })
    )
  )

  it.effect("a take that never committed leaves the originals and is cleaned up by recover", () =>
    onHost(
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const s = yield* sandbox
        yield* build(s.root, fixed)
        const before = yield* treeOf(s.root, "/")
        yield* fs.makeDirectory(`${s.box}/snaps/s.tmp-XYZ`)
        yield* fs.writeFileString(`${s.box}/snaps/s.tmp-XYZ/manifest.json`, '{"format":')
        yield* fs.makeDirectory(`${s.box}/snaps/s.discarding`)
        assert.isFalse(yield* Snapshot.recover({ dir: s.dir, hostRoot: yield* rootAt(s.root) }))
        assert.deepStrictEqual(yield* leftIn(s.box), [])
        assert.deepStrictEqual(yield* treeOf(s.root, "/"), before)
      })
    )
  )

  it.effect("scoped: success discards and keeps the new configuration", () =>
    onHost(
      Effect.gen(function* () {
        const s = yield* sandbox
        yield* build(s.root, fixed)
        yield* Effect.scoped(
          Effect.gen(function* () {
            const snapshot = yield* Snapshot.scoped({
              dir: s.dir,
              hostRoot: yield* rootAt(s.root),
              paths: SnapshotPaths
            })
            assert.strictEqual(snapshot.dir, s.dir)
            yield* mutate(s.root, everyKind)
          })
        )
        const mutated = yield* treeOf(s.root, "/cfg")
        assert.strictEqual(mutated["/cfg/b"]?.type, "Directory")
        assert.deepStrictEqual(yield* leftIn(s.box), [])
      })
    )
  )

  it.effect("scoped: a failure restores, then discards", () =>
    onHost(
      Effect.gen(function* () {
        const s = yield* sandbox
        yield* build(s.root, fixed)
        const original = yield* treeOf(s.root, "/cfg")
        let mutated: Record<string, Node> = {}
        const exit = yield* Effect.exit(
          Effect.scoped(
            Effect.gen(function* () {
              yield* Snapshot.scoped({ dir: s.dir, hostRoot: yield* rootAt(s.root), paths: SnapshotPaths })
              yield* mutate(s.root, everyKind)
              mutated = yield* treeOf(s.root, "/cfg")
              return yield* Effect.fail("upgrade failed" as const)
            })
          )
        )
        assert.deepStrictEqual(exit, Exit.fail("upgrade failed" as const))
        yield* assertRolledBack(s.root, original, mutated)
        assert.deepStrictEqual(yield* leftIn(s.box), [])
      })
    )
  )

  it.effect("scoped: an interruption mid-scope restores, then discards", () =>
    onHost(
      Effect.gen(function* () {
        const s = yield* sandbox
        yield* build(s.root, fixed)
        const original = yield* treeOf(s.root, "/cfg")
        const ready = yield* Deferred.make<void>()
        const fiber = yield* Effect.forkChild(
          Effect.scoped(
            Effect.gen(function* () {
              yield* Snapshot.scoped({ dir: s.dir, hostRoot: yield* rootAt(s.root), paths: SnapshotPaths })
              yield* mutate(s.root, everyKind)
              yield* Deferred.succeed(ready, undefined)
              return yield* Effect.never
            })
          )
        )
        yield* Deferred.await(ready)
        const mutated = yield* treeOf(s.root, "/cfg")
        const exit = yield* Fiber.interrupt(fiber).pipe(Effect.andThen(Fiber.await(fiber)))
        assert.isTrue(Exit.hasInterrupts(exit))
        yield* assertRolledBack(s.root, original, mutated)
        assert.deepStrictEqual(yield* leftIn(s.box), [])
      })
    )
  )

  /** An upgrade that mutates the fixed tree, then fails, with every rename failing from then on. */
  const failingUpgrade = Effect.gen(function* () {
    const dirs = yield* Directory.Directories
    const failing = yield* Ref.make(false)
    const logs: Array<unknown> = []
    const capture = Logger.layer([Logger.map(Logger.formatStructured, (entry) => void logs.push(entry))])
    const s = yield* sandbox
    yield* build(s.root, fixed)
    const original = yield* treeOf(s.root, "/cfg")
    const state = { mutated: {} as Record<string, Node> }
    const upgrade = Effect.gen(function* () {
      yield* mutate(s.root, everyKind)
      state.mutated = yield* treeOf(s.root, "/cfg")
      yield* Ref.set(failing, true)
      return yield* Effect.fail("upgrade failed" as const)
    })
    const failingDirs = Layer.succeed(Directory.Directories, failingRenames(dirs, failing))
    return { s, original, state, upgrade, failingDirs, capture, logs }
  })

  /** After a failed rollback: half restored, the snapshot kept, and recover finishes the job. */
  const assertKeptForRecover = (t: Effect.Success<typeof failingUpgrade>) =>
    Effect.gen(function* () {
      const logged = JSON.stringify(t.logs)
      assert.include(logged, "rolling back the configuration failed")
      assert.include(logged, t.s.dir)
      assert.include(logged, "injected failure")
      const half = yield* treeOf(t.s.root, "/cfg")
      assert.notDeepEqual(pick(half, inSnapshot), pick(t.original, inSnapshot))
      assert.deepStrictEqual(yield* leftIn(t.s.box), ["s"])
      // Later (a new process, or the next attempt) recover finishes the job.
      assert.isTrue(yield* Snapshot.recover({ dir: t.s.dir, hostRoot: yield* rootAt(t.s.root) }))
      yield* assertRolledBack(t.s.root, t.original, t.state.mutated)
      assert.deepStrictEqual(yield* leftIn(t.s.box), [])
    })

  it.effect("scoped: a rollback that fails makes the scope fail with the upgrade's error and RollbackFailed", () =>
    Effect.gen(function* () {
      const t = yield* failingUpgrade
      const exit = yield* Effect.exit(
        Effect.scoped(
          Effect.andThen(
            Snapshot.scoped({ dir: t.s.dir, hostRoot: yield* rootAt(t.s.root), paths: SnapshotPaths }),
            t.upgrade
          )
        ).pipe(Effect.provide(t.failingDirs), Effect.provide(t.capture))
      )
      assert.isTrue(Exit.isFailure(exit))
      if (!Exit.isFailure(exit)) return
      const failures = exit.cause.reasons.filter(Cause.isFailReason).map((r) => r.error)
      assert.strictEqual(failures[0], "upgrade failed")
      const failed = failures[1]
      assert.instanceOf(failed, Snapshot.SnapshotError)
      if (!(failed instanceof Snapshot.SnapshotError)) return
      assert.strictEqual(failed.reason._tag, "RollbackFailed")
      if (failed.reason._tag !== "RollbackFailed") return
      const rollback = failed.reason
      assert.strictEqual(rollback.rollback._tag, "SnapshotError")
      assert.strictEqual(
        rollback.rollback._tag === "SnapshotError" && rollback.rollback.reason._tag === "Io"
          ? rollback.rollback.reason.errno
          : "",
        "EACCES"
      )
      assert.deepStrictEqual(
        rollback.upgrade.reasons.filter(Cause.isFailReason).map((r) => r.error),
        ["upgrade failed"]
      )
      assert.include(Cause.pretty(exit.cause), "RollbackFailed")
      yield* assertKeptForRecover(t)
    }).pipe(onHost)
  )

  it.effect(
    "guarded: a rollback that fails is the one failure, a RollbackFailed SnapshotError, carrying the upgrade's cause",
    () =>
      Effect.gen(function* () {
        const t = yield* failingUpgrade
        const e = yield* Effect.flip(
          Snapshot.guarded(t.upgrade, { dir: t.s.dir, hostRoot: yield* rootAt(t.s.root), paths: SnapshotPaths }).pipe(
            Effect.provide(t.failingDirs),
            Effect.provide(t.capture)
          )
        )
        assert.instanceOf(e, Snapshot.SnapshotError)
        if (!(e instanceof Snapshot.SnapshotError)) return
        assert.strictEqual(e.reason._tag, "RollbackFailed")
        if (e.reason._tag !== "RollbackFailed") return
        assert.deepStrictEqual(
          e.reason.upgrade.reasons.filter(Cause.isFailReason).map((r) => r.error),
          ["upgrade failed"]
        )
        assert.include(e.message, t.s.dir)
        yield* assertKeptForRecover(t)
      }).pipe(onHost)
  )

  it.effect("guarded: success discards; a failure restores and the upgrade's error is the failure", () =>
    Effect.gen(function* () {
      const s = yield* sandbox
      yield* build(s.root, fixed)
      const original = yield* treeOf(s.root, "/cfg")
      const value = yield* Snapshot.guarded(Effect.succeed(42), {
        dir: s.dir,
        hostRoot: yield* rootAt(s.root),
        paths: SnapshotPaths
      })
      assert.strictEqual(value, 42)
      assert.deepStrictEqual(yield* leftIn(s.box), [])
      const state = { mutated: {} as Record<string, Node> }
      const e = yield* Effect.flip(
        Snapshot.guarded(
          Effect.gen(function* () {
            yield* mutate(s.root, everyKind)
            state.mutated = yield* treeOf(s.root, "/cfg")
            return yield* Effect.fail("upgrade failed" as const)
          }),
          { dir: s.dir, hostRoot: yield* rootAt(s.root), paths: SnapshotPaths }
        )
      )
      assert.strictEqual(e, "upgrade failed")
      yield* assertRolledBack(s.root, original, state.mutated)
      assert.deepStrictEqual(yield* leftIn(s.box), [])
    }).pipe(onHost)
  )

  it.effect("a failed restore keeps the snapshot and can be run again; the error names the errno", () =>
    Effect.gen(function* () {
      const dirs = yield* Directory.Directories
      const failing = yield* Ref.make(false)
      const t = yield* takenAndMutated
      const again = yield* Snapshot.open({ dir: t.dir, hostRoot: yield* rootAt(t.root) }).pipe(
        Effect.provideService(Directory.Directories, failingRenames(dirs, failing))
      )
      yield* Ref.set(failing, true)
      const e = yield* Effect.flip(again.restore)
      assert.strictEqual(e._tag === "SnapshotError" ? e.reason._tag : e._tag, "Io")
      assert.strictEqual(e._tag === "SnapshotError" && e.reason._tag === "Io" ? e.reason.errno : "", "EACCES")
      assert.include(e.message, "injected failure")
      assert.isFalse(yield* again.restored)
      assert.deepStrictEqual(yield* leftIn(t.box), ["s"])
      yield* Ref.set(failing, false)
      yield* again.restore
      assert.isTrue(yield* again.restored)
      yield* assertRolledBack(t.root, t.original, t.mutated)
    }).pipe(onHost)
  )
}
