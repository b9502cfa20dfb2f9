/**
 * The Snapshot conformance suite's restore tests: a restore gives back
 * exactly the tree taken (a property over random trees and mutations), the
 * snapshot's layout on disk, absent paths, missing parents, exclusions,
 * links planted at or above recorded paths, and the paths a take refuses.
 *
 * Internal to `SnapshotConformance`, whose `suite` registers it.
 *
 * @since 0.3.0
 */
import { assert, it } from "@effect/vitest"
import { Snapshot } from "@hostnode/core"
import { Effect, FileSystem, Option } from "effect"
import { rootAt } from "../rootAt.ts"
import { fixed, leftIn, type Suite, sandbox } from "./fixtures.ts"
import * as Format from "./format.ts"
import { atOrBelow, build, inSnapshot, Mutations, mutate, pick, SnapshotPaths, Trees, treeOf } from "./trees.ts"

/** Registers this part's tests. */
export const register = ({ runs, onHost }: Suite): void => {
  it.effect.prop(
    "restore gives back exactly the tree that was taken; paths outside keep their mutated state",
    [Trees(), Mutations()],
    ([specs, mutations]) =>
      onHost(
        Effect.gen(function* () {
          const s = yield* sandbox
          yield* build(s.root, specs)
          const before = yield* treeOf(s.root, "/cfg")
          const snapshot = yield* Snapshot.takeOf({ dir: s.dir, hostRoot: yield* rootAt(s.root), paths: SnapshotPaths })
          yield* mutate(s.root, mutations)
          const mutated = yield* treeOf(s.root, "/cfg")
          assert.isFalse(yield* snapshot.restored)
          yield* snapshot.restore
          const after = yield* treeOf(s.root, "/cfg")
          assert.deepStrictEqual(pick(after, inSnapshot), pick(before, inSnapshot))
          assert.deepStrictEqual(
            pick(after, (k) => !inSnapshot(k)),
            pick(mutated, (k) => !inSnapshot(k))
          )
          assert.isTrue(yield* snapshot.restored)
          // A restore consumes the snapshot: nothing is left to put back over newer configuration.
          assert.deepStrictEqual(yield* leftIn(s.box), [])
          const again = yield* Effect.flip(snapshot.restore)
          assert.strictEqual(again._tag === "SnapshotError" ? again.reason._tag : again._tag, "Missing")
          assert.isTrue(yield* snapshot.restored)
          yield* snapshot.discard
          assert.isFalse(yield* Snapshot.recover({ dir: s.dir, hostRoot: yield* rootAt(s.root) }))
          assert.deepStrictEqual(yield* treeOf(s.root, "/cfg"), after)
        })
      ),
    { timeout: 300_000, arbitrary: { runs } }
  )

  it.effect("a snapshot is a manifest and a data file, private, with nothing left beside it", () =>
    onHost(
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const s = yield* sandbox
        yield* build(s.root, fixed)
        yield* Snapshot.takeOf({ dir: s.dir, hostRoot: yield* rootAt(s.root), paths: SnapshotPaths })
        assert.deepStrictEqual((yield* fs.readDirectory(`${s.box}/snaps`)).sort(), ["s"])
        assert.deepStrictEqual((yield* fs.readDirectory(s.dir)).sort(), [Format.DataName, Format.ManifestName])
        for (const f of [Format.DataName, Format.ManifestName]) {
          assert.strictEqual((yield* fs.stat(`${s.dir}/${f}`)).mode & 0o777, 0o600, f)
        }
        assert.strictEqual((yield* fs.stat(s.dir)).mode & 0o777, 0o700)
        const manifest = (JSON.parse as (text: string) => Format.Manifest)(
          yield* fs.readFileString(`${s.dir}/${Format.ManifestName}`)
        )
        assert.strictEqual(manifest.version, Format.FormatVersion)
        assert.deepStrictEqual(
          manifest.entries.map((e) => [e.path, e.type]),
          [
            ["/cfg/a", "Directory"],
            ["/cfg/a/a", "File"],
            ["/cfg/a/b", "File"],
            ["/cfg/a/c", "Directory"],
            ["/cfg/a/c/a", "Directory"],
            ["/cfg/b", "SymbolicLink"],
            ["/cfg/c", "File"]
          ]
        )
        const b = manifest.entries.find((e) => e.path === "/cfg/a/b")
        assert.deepInclude(b, { mode: 0o4755, uid: 1000, gid: 1000, size: 6 })
        const info = yield* fs.lstat(`${s.root}/cfg/a/b`)
        assert.strictEqual(
          b?.type === "File" && b.mtimeNs !== undefined ? BigInt(b.mtimeNs) / 1_000_000n : -1n,
          BigInt(Option.getOrThrow(info.mtime).getTime()),
          "the modification time is recorded (to the nanosecond; compared here to the millisecond)"
        )
        assert.strictEqual(
          b?.type === "File" ? b.sha256 : "",
          // sha256("hello\n")
          "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
        )
      })
    )
  )

  it.effect("a listed path that does not exist is recorded absent, and what is created there later is removed", () =>
    onHost(
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const s = yield* sandbox
        yield* build(s.root, fixed)
        const snapshot = yield* Snapshot.takeOf({
          dir: s.dir,
          hostRoot: yield* rootAt(s.root),
          paths: ["/cfg/a", "/cfg/none/deeper", "/cfg/a/b"]
        })
        assert.deepStrictEqual(snapshot.paths, ["/cfg/a", "/cfg/none/deeper"])
        yield* fs.makeDirectory(`${s.root}/cfg/none/deeper/x`, { recursive: true })
        yield* snapshot.restore
        // The created parent is outside the recorded path and stays.
        assert.deepStrictEqual(Object.keys(yield* treeOf(s.root, "/cfg/none")), ["/cfg/none"])
      })
    )
  )

  it.effect("a listed path below a missing parent is restored with its parents", () =>
    onHost(
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const s = yield* sandbox
        yield* build(s.root, fixed)
        const before = yield* treeOf(s.root, "/cfg/a")
        const snapshot = yield* Snapshot.takeOf({
          dir: s.dir,
          hostRoot: yield* rootAt(s.root),
          paths: ["/cfg/a/c/a", "/cfg/a/a"]
        })
        yield* fs.remove(`${s.root}/cfg/a`, { recursive: true })
        yield* snapshot.restore
        const after = yield* treeOf(s.root, "/cfg/a")
        assert.deepStrictEqual(after["/cfg/a/c/a"], before["/cfg/a/c/a"])
        assert.deepStrictEqual(after["/cfg/a/a"], before["/cfg/a/a"])
        assert.deepStrictEqual(Object.keys(after).sort(), ["/cfg/a", "/cfg/a/a", "/cfg/a/c", "/cfg/a/c/a"])
      })
    )
  )

  it.effect("a file rewritten in place with its size, mode, owner and modification time kept is restored", () =>
    onHost(
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const s = yield* sandbox
        yield* build(s.root, fixed)
        const file = `${s.root}/cfg/a/a`
        // A whole second, so the time set again after the edit is the recorded one to the nanosecond.
        const when = new Date(1_700_000_000_000)
        yield* fs.utimes(file, when, when)
        const snapshot = yield* Snapshot.takeOf({ dir: s.dir, hostRoot: yield* rootAt(s.root), paths: ["/cfg/a"] })
        // Same length, other bytes, the time put back: only the content tells it changed.
        yield* fs.writeFileString(file, "version = 3\n")
        yield* fs.utimes(file, when, when)
        assert.strictEqual(Option.getOrThrow((yield* fs.stat(file)).mtime).getTime(), when.getTime())
        yield* snapshot.restore
        assert.strictEqual(yield* fs.readFileString(file), "version = 2\n")
      })
    )
  )

  it.effect("excluded paths are not copied, and a restore leaves them as they are", () =>
    onHost(
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const s = yield* sandbox
        yield* build(s.root, fixed)
        yield* fs.makeDirectory(`${s.root}/cfg/a/pki`)
        yield* fs.writeFileString(`${s.root}/cfg/a/pki/ca.key`, "PRIVATE KEY")
        const before = yield* treeOf(s.root, "/cfg/a")
        const snapshot = yield* Snapshot.takeOf({
          dir: s.dir,
          hostRoot: yield* rootAt(s.root),
          paths: ["/cfg/a"],
          exclude: ["/cfg/a/pki"]
        })
        const data = yield* fs.readFileString(`${s.dir}/${Format.DataName}`)
        assert.notInclude(data, "PRIVATE KEY")
        // Rotated during the upgrade, and something new beside it.
        yield* fs.writeFileString(`${s.root}/cfg/a/pki/ca.key`, "ROTATED KEY")
        yield* fs.writeFileString(`${s.root}/cfg/a/pki/new.crt`, "NEW")
        yield* fs.writeFileString(`${s.root}/cfg/a/a`, "changed")
        yield* snapshot.restore
        const after = yield* treeOf(s.root, "/cfg/a")
        assert.deepStrictEqual(
          pick(after, (k) => !atOrBelow("/cfg/a/pki", k)),
          pick(before, (k) => !atOrBelow("/cfg/a/pki", k))
        )
        assert.strictEqual(yield* fs.readFileString(`${s.root}/cfg/a/pki/ca.key`), "ROTATED KEY")
        assert.strictEqual(yield* fs.readFileString(`${s.root}/cfg/a/pki/new.crt`), "NEW")
        // Even when the whole directory must go, the excluded path stays.
        yield* fs.remove(s.dir, { recursive: true, force: true })
        yield* fs.remove(`${s.root}/cfg/a/pki`, { recursive: true })
        const empty = yield* Snapshot.takeOf({
          dir: s.dir,
          hostRoot: yield* rootAt(s.root),
          paths: ["/cfg/x"],
          exclude: ["/cfg/x/pki"]
        })
        yield* fs.makeDirectory(`${s.root}/cfg/x/pki`, { recursive: true })
        yield* fs.writeFileString(`${s.root}/cfg/x/pki/k`, "K")
        yield* fs.writeFileString(`${s.root}/cfg/x/other`, "O")
        yield* empty.restore
        assert.deepStrictEqual(Object.keys(yield* treeOf(s.root, "/cfg/x")).sort(), [
          "/cfg/x",
          "/cfg/x/pki",
          "/cfg/x/pki/k"
        ])
      })
    )
  )

  it.effect("links planted at or above recorded paths are replaced, never followed out of the root", () =>
    onHost(
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const s = yield* sandbox
        yield* build(s.root, fixed)
        const original = yield* treeOf(s.root, "/cfg")
        const outsideBefore = yield* treeOf(s.box, "/outside")
        const snapshot = yield* Snapshot.takeOf({ dir: s.dir, hostRoot: yield* rootAt(s.root), paths: SnapshotPaths })
        // A restore consumes its snapshot: a second one for the second attack.
        const second = yield* Snapshot.takeOf({
          dir: `${s.dir}2`,
          hostRoot: yield* rootAt(s.root),
          paths: SnapshotPaths
        })
        // A recorded file replaced by a link to a file outside the root.
        yield* fs.remove(`${s.root}/cfg/c`)
        yield* fs.symlink(`${s.outside}/victim`, `${s.root}/cfg/c`)
        // A recorded directory replaced by a link to a directory outside.
        yield* fs.remove(`${s.root}/cfg/a`, { recursive: true })
        yield* fs.symlink(s.outside, `${s.root}/cfg/a`)
        yield* snapshot.restore
        assert.deepStrictEqual(yield* treeOf(s.box, "/outside"), outsideBefore)
        assert.deepStrictEqual(yield* treeOf(s.root, "/cfg"), original)
        // The parent of the listed paths made a link outside: resolved as
        // though the root were "/", so the restore stays inside the root.
        yield* fs.rename(`${s.root}/cfg`, `${s.root}/cfg-moved`)
        yield* fs.symlink(s.outside, `${s.root}/cfg`)
        yield* second.restore
        assert.deepStrictEqual(yield* treeOf(s.box, "/outside"), outsideBefore)
        const inRoot = yield* treeOf(s.root, `${s.outside}`)
        assert.deepStrictEqual(inRoot[`${s.outside}/c`], original["/cfg/c"])
      })
    )
  )

  it.effect("take refuses a relative path, a snapshot inside a recorded path, and an existing snapshot", () =>
    onHost(
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const s = yield* sandbox
        yield* build(s.root, fixed)
        const relative = yield* Effect.flip(
          Snapshot.takeOf({ dir: s.dir, hostRoot: yield* rootAt(s.root), paths: ["cfg/a"] })
        )
        assert.strictEqual(relative._tag === "SnapshotError" ? relative.reason._tag : relative._tag, "InvalidPath")
        const inside = yield* Effect.flip(
          Snapshot.takeOf({ dir: `${s.root}/cfg/a/snap`, hostRoot: yield* rootAt(s.root), paths: SnapshotPaths })
        )
        assert.strictEqual(inside._tag === "SnapshotError" ? inside.reason._tag : inside._tag, "InvalidPath")
        assert.include(inside.message, "/cfg/a")
        yield* Snapshot.takeOf({ dir: s.dir, hostRoot: yield* rootAt(s.root), paths: SnapshotPaths })
        const manifest = yield* fs.readFileString(`${s.dir}/${Format.ManifestName}`)
        const again = yield* Effect.flip(
          Snapshot.takeOf({ dir: s.dir, hostRoot: yield* rootAt(s.root), paths: ["/cfg/d"] })
        )
        assert.strictEqual(again._tag === "SnapshotError" ? again.reason._tag : again._tag, "Exists")
        assert.strictEqual(yield* fs.readFileString(`${s.dir}/${Format.ManifestName}`), manifest)
        assert.deepStrictEqual(yield* leftIn(s.box), ["s"])
      })
    )
  )
}
