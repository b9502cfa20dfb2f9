/**
 * The Snapshot conformance suite's tests of hostile names, files and
 * processes: names that are not UTF-8, the lock another process holds,
 * snapshot files that are not what a take makes, a huge manifest, and a
 * snapshot directory overlapping a recorded path.
 *
 * Internal to `SnapshotConformance`, whose `suite` registers it.
 *
 * @since 0.3.0
 */
import { assert, it } from "@effect/vitest"
import { Directory, FileName, Snapshot } from "@hostnode/core"
import { Effect, Fiber, FileSystem, type PlatformError } from "effect"
import { rootAt } from "../rootAt.ts"
import { editManifestAndData, fixed, leftIn, type Suite, sandbox, takenAndMutated } from "./fixtures.ts"
import * as Format from "./format.ts"
import { assertRolledBack, build, SnapshotPaths, treeOf } from "./trees.ts"

/** Registers this part's tests. */
export const register = ({ onHost }: Suite): void => {
  // -- names as bytes, the lock, hostile files, overlap --------------------

  it.effect("names that are not UTF-8 are recorded and restored exactly, as are link targets", () =>
    Effect.gen(function* () {
      const dirs = yield* Directory.Directories
      const s = yield* sandbox
      yield* build(s.root, fixed)
      const h = yield* dirs.openRoot(`${s.root}/cfg/a`)
      const cafe = new Uint8Array([0x63, 0x61, 0x66, 0xe9])
      const odd = new Uint8Array([0xff, 0x2e, 0x64])
      const target = new Uint8Array([0x80, 0x2f, 0x61])
      const write = (dir: Directory.Handle, name: Uint8Array, text: string) =>
        Effect.scoped(
          Effect.flatMap(dirs.openFile(dir, name, { mode: "create", permissions: 0o640 }), (f) =>
            f.write(FileName.encode(text), 0)
          )
        )
      yield* write(h, cafe, "latin-1 name")
      yield* dirs.makeDirectory(h, odd, 0o750)
      const oddDir = yield* dirs.openDirectory(h, odd)
      yield* write(oddDir, cafe, "below an odd directory")
      yield* dirs.symlink(h, new Uint8Array([0x6c, 0xfe]), target)
      const listing = (dir: Directory.Handle) =>
        Effect.map(dirs.list(dir), (es) => es.map((e) => FileName.decode(e.name)).sort())
      const before = { top: yield* listing(h), odd: yield* listing(oddDir) }
      const snapshot = yield* Snapshot.takeOf({ dir: s.dir, hostRoot: yield* rootAt(s.root), paths: SnapshotPaths })
      yield* dirs.unlink(h, cafe)
      yield* dirs.unlink(oddDir, cafe)
      yield* write(oddDir, cafe, "changed")
      yield* write(h, new Uint8Array([0xfe]), "created since: removed")
      yield* snapshot.restore
      assert.deepStrictEqual({ top: yield* listing(h), odd: yield* listing(oddDir) }, before)
      const read = (dir: Directory.Handle, name: Uint8Array) =>
        Effect.scoped(
          Effect.gen(function* () {
            const f = yield* dirs.openFile(dir, name, { mode: "read" })
            const buf = new Uint8Array(64)
            return { text: FileName.decode(buf.subarray(0, yield* f.read(buf, 0))), mode: (yield* f.stat).mode }
          })
        )
      assert.deepStrictEqual(yield* read(h, cafe), { text: "latin-1 name", mode: 0o640 })
      assert.deepStrictEqual(yield* read(oddDir, cafe), { text: "below an odd directory", mode: 0o640 })
      assert.deepStrictEqual(yield* dirs.readLink(h, new Uint8Array([0x6c, 0xfe])), target)
      // A FileSystem (Node's, and the simulated one) cannot name these to remove them: removed by handle.
      yield* dirs.unlink(oddDir, cafe)
      yield* dirs.unlink(h, odd, { directory: true })
      yield* dirs.unlink(h, cafe)
      yield* dirs.unlink(h, new Uint8Array([0x6c, 0xfe]))
    }).pipe(onHost)
  )

  /** Holds the snapshot's lock (its parent directory's `flock`) as another process would, for the rest of the scope. */
  const holdLock = (s: { readonly box: string }) =>
    Effect.gen(function* () {
      const dirs = yield* Directory.Directories
      const parent = yield* dirs.openRoot(`${s.box}/snaps`)
      assert.isTrue(yield* dirs.lock(parent))
    })

  it.live("a second process waits for the lock, and after the timeout fails Busy naming the holder", () =>
    Effect.gen(function* () {
      const dirs = yield* Directory.Directories
      const t = yield* takenAndMutated
      const holder = yield* Effect.forkChild(Effect.scoped(Effect.andThen(holdLock(t), Effect.sleep("300 millis"))))
      yield* Effect.sleep("20 millis")
      const busy = yield* Effect.flip(
        Snapshot.recover({ dir: t.dir, hostRoot: yield* rootAt(t.root), lockTimeout: "50 millis" })
      )
      assert.strictEqual(busy._tag === "SnapshotError" ? busy.reason._tag : busy._tag, "Busy")
      assert.strictEqual(
        busy._tag === "SnapshotError" && busy.reason._tag === "Busy" ? busy.reason.pid : -1,
        (yield* dirs.credentials).pid
      )
      assert.deepStrictEqual(yield* treeOf(t.root, "/cfg"), t.mutated)
      // Waited for, within the timeout, it runs once the holder is done.
      assert.isTrue(yield* Snapshot.recover({ dir: t.dir, hostRoot: yield* rootAt(t.root), lockTimeout: "10 seconds" }))
      yield* Fiber.join(holder)
      yield* assertRolledBack(t.root, t.original, t.mutated)
      const take = yield* Effect.flip(
        Effect.scoped(
          Effect.andThen(
            holdLock(t),
            Snapshot.takeOf({ dir: t.dir, hostRoot: yield* rootAt(t.root), paths: SnapshotPaths, lockTimeout: 0 })
          )
        )
      )
      assert.strictEqual(take._tag === "SnapshotError" ? take.reason._tag : take._tag, "Busy")
      assert.deepStrictEqual(yield* leftIn(t.box), [])
    }).pipe(onHost)
  )

  const unsafeCases: ReadonlyArray<{
    readonly name: string
    readonly tamper: (dir: string) => Effect.Effect<void, PlatformError.PlatformError, FileSystem.FileSystem>
  }> = [
    {
      name: "the manifest a link to a copy of itself",
      tamper: (dir) =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          yield* fs.rename(`${dir}/${Format.ManifestName}`, `${dir}/../m.json`)
          yield* fs.symlink("../m.json", `${dir}/${Format.ManifestName}`)
        })
    },
    {
      name: "the manifest writable by its group",
      tamper: (dir) =>
        Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) => fs.chmod(`${dir}/${Format.ManifestName}`, 0o660))
    },
    {
      name: "the data owned by another user",
      tamper: (dir) =>
        Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) => fs.chown(`${dir}/${Format.DataName}`, 1000, 1000))
    },
    {
      name: "the snapshot directory writable by others",
      tamper: (dir) => Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) => fs.chmod(dir, 0o777))
    },
    {
      name: "the data a directory",
      tamper: (dir) =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          yield* fs.remove(`${dir}/${Format.DataName}`)
          yield* fs.makeDirectory(`${dir}/${Format.DataName}`, { mode: 0o700 })
        })
    }
  ]

  for (const c of unsafeCases) {
    it.effect(`hostile snapshot files: ${c.name} is Unsafe and nothing is written`, () =>
      Effect.gen(function* () {
        const t = yield* takenAndMutated
        yield* c.tamper(t.dir)
        const snapshotBytes = yield* treeOf(t.box, "/snaps")
        const e = yield* Effect.flip(Snapshot.recover({ dir: t.dir, hostRoot: yield* rootAt(t.root) }))
        assert.strictEqual(e._tag === "SnapshotError" ? e.reason._tag : e._tag, "Unsafe", e.message)
        assert.deepStrictEqual(yield* treeOf(t.root, "/cfg"), t.mutated)
        assert.deepStrictEqual(yield* treeOf(t.box, "/snaps"), snapshotBytes)
      }).pipe(onHost)
    )
  }

  it.effect(
    "a manifest of 40,000 paths is checked in time (O(n log n)); one listing a path below another is refused as fast",
    () =>
      Effect.gen(function* () {
        const t = yield* takenAndMutated
        const many = Array.from({ length: 40_000 }, (_, i) => `/cfg/n${i % 200}/p${i}`)
        yield* editManifestAndData(t.dir, (m) => {
          m.paths.push(...many)
          m.entries.push(...many.map((path) => ({ type: "Absent" as const, path })))
        })
        const opened = yield* Snapshot.open({ dir: t.dir, hostRoot: yield* rootAt(t.root) })
        assert.strictEqual(opened.paths.length, SnapshotPaths.length + 40_000)
        yield* editManifestAndData(t.dir, (m) => {
          m.paths.push("/cfg/n1/p1/below")
          m.entries.push({ type: "Absent", path: "/cfg/n1/p1/below" })
        })
        const e = yield* Effect.flip(Snapshot.recover({ dir: t.dir, hostRoot: yield* rootAt(t.root) }))
        assert.strictEqual(e._tag === "SnapshotError" ? e.reason._tag : e._tag, "InvalidManifest")
        assert.include(e.message, "below another listed path")
        assert.deepStrictEqual(yield* treeOf(t.root, "/cfg"), t.mutated)
      }).pipe(onHost),
    // A bound on a hang, not a speed measurement: the pairwise check this replaces took minutes.
    60_000
  )

  it.effect("a snapshot directory reached through a link into a recorded path is refused, by take and recover", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const t = yield* takenAndMutated
      yield* fs.symlink(`${t.root}/cfg/a`, `${t.box}/into-recorded`)
      const before = yield* treeOf(t.root, "/")
      const taken = yield* Effect.flip(
        Snapshot.takeOf({ dir: `${t.box}/into-recorded/s`, hostRoot: yield* rootAt(t.root), paths: SnapshotPaths })
      )
      assert.strictEqual(taken._tag === "SnapshotError" ? taken.reason._tag : taken._tag, "InvalidPath", taken.message)
      assert.deepStrictEqual(
        Object.keys(yield* treeOf(t.root, "/")).filter((k) => k.includes(".tmp-")),
        [],
        "no staging directory left in the recorded path"
      )
      // The snapshot moved into the recorded directory, reached through the link.
      yield* fs.rename(t.dir, `${t.root}/cfg/a/s`)
      const withSnapshot = yield* treeOf(t.root, "/")
      const e = yield* Effect.flip(
        Snapshot.recover({ dir: `${t.box}/into-recorded/s`, hostRoot: yield* rootAt(t.root) })
      )
      assert.strictEqual(e._tag === "SnapshotError" ? e.reason._tag : e._tag, "InvalidPath", e.message)
      assert.deepStrictEqual(yield* treeOf(t.root, "/"), withSnapshot)
      assert.notDeepEqual(withSnapshot, before)
    }).pipe(onHost)
  )

  it.effect("a recorded path that now leads into the snapshot directory is refused before anything is written", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const s = yield* sandbox
      yield* build(s.root, fixed)
      yield* fs.makeDirectory(`${s.root}/var`)
      const dir = `${s.root}/var/snap`
      yield* Snapshot.takeOf({ dir, hostRoot: yield* rootAt(s.root), paths: SnapshotPaths })
      // /cfg becomes a link to the snapshot (resolved below the root): /cfg/a would be written into it.
      yield* fs.rename(`${s.root}/cfg`, `${s.root}/cfg-moved`)
      yield* fs.symlink("/var/snap", `${s.root}/cfg`)
      const before = yield* treeOf(s.root, "/")
      const e = yield* Effect.flip(Snapshot.recover({ dir, hostRoot: yield* rootAt(s.root) }))
      assert.strictEqual(e._tag === "SnapshotError" ? e.reason._tag : e._tag, "InvalidPath", e.message)
      assert.include(e.message, "inside the snapshot directory")
      assert.deepStrictEqual(yield* treeOf(s.root, "/"), before)
    }).pipe(onHost)
  )
}
