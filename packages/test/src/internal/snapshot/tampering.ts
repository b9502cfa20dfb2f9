/**
 * The Snapshot conformance suite's tampering tests: a snapshot whose
 * manifest or data was changed fails with the reason that names the change,
 * and nothing is written.
 *
 * Internal to `SnapshotConformance`, whose `suite` registers it.
 *
 * @since 0.3.0
 */
import { assert, it } from "@effect/vitest"
import { Snapshot } from "@hostnode/core"
import { Effect, FileSystem, type PlatformError } from "effect"
import { rootAt } from "../rootAt.ts"
import { editManifestAndData, fixed, type Suite, sandbox, takenAndMutated } from "./fixtures.ts"
import * as Format from "./format.ts"
import { build, SnapshotPaths, treeOf } from "./trees.ts"

/** Registers this part's tests. */
export const register = ({ onHost }: Suite): void => {
  // -- tampering -----------------------------------------------------------

  const tamperCases: ReadonlyArray<{
    readonly name: string
    readonly reason: Snapshot.SnapshotError["reason"]["_tag"]
    readonly names?: string
    readonly tamper: (dir: string) => Effect.Effect<void, PlatformError.PlatformError, FileSystem.FileSystem>
  }> = [
    {
      name: "a byte of a file changed",
      reason: "Corrupt",
      names: "/cfg/a/b",
      tamper: (dir) =>
        editManifestAndData(dir, (m, data) => {
          const e = m.entries.find((x) => x.path === "/cfg/a/b") as { offset: number }
          data[e.offset] = (data[e.offset] ?? 0) ^ 1
        })
    },
    {
      name: "the data file truncated",
      reason: "Corrupt",
      tamper: (dir) => Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) => fs.truncate(`${dir}/data`, 3))
    },
    {
      name: "a recorded hash replaced",
      reason: "Corrupt",
      names: "/cfg/c",
      tamper: (dir) =>
        editManifestAndData(dir, (m) => {
          const e = m.entries.find((x) => x.path === "/cfg/c") as { sha256: string }
          e.sha256 = "0".repeat(64)
        })
    },
    {
      name: "a file's range beyond the data file",
      reason: "Corrupt",
      names: "/cfg/c",
      tamper: (dir) =>
        editManifestAndData(dir, (m) => {
          const e = m.entries.find((x) => x.path === "/cfg/c") as { offset: number }
          e.offset = 1_000_000
        })
    },
    {
      name: "the manifest truncated",
      reason: "InvalidManifest",
      tamper: (dir) =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const text = yield* fs.readFileString(`${dir}/${Format.ManifestName}`)
          yield* fs.writeFileString(`${dir}/${Format.ManifestName}`, text.slice(0, Math.floor(text.length / 2)))
        })
    },
    {
      name: "the manifest emptied",
      reason: "InvalidManifest",
      tamper: (dir) =>
        Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) => fs.writeFileString(`${dir}/manifest.json`, ""))
    },
    {
      name: "the manifest removed",
      reason: "InvalidManifest",
      tamper: (dir) => Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) => fs.remove(`${dir}/manifest.json`))
    },
    {
      name: "a mode that is not a number",
      reason: "InvalidManifest",
      tamper: (dir) =>
        editManifestAndData(dir, (m) => {
          ;(m.entries[1] as { mode: unknown }).mode = "rwxr-xr-x"
        })
    },
    {
      name: "an entry that belongs to no recorded directory",
      reason: "InvalidManifest",
      names: "/cfg/d/x",
      tamper: (dir) =>
        editManifestAndData(dir, (m) => {
          m.entries.push({ type: "SymbolicLink", path: "/cfg/d/x", target: "y" })
        })
    },
    {
      name: "an entry path climbing out with ..",
      reason: "PathOutsideRoot",
      names: "/cfg/a/../../../outside/victim",
      tamper: (dir) =>
        editManifestAndData(dir, (m) => {
          const e = m.entries.find((x) => x.path === "/cfg/a/b") as { path: string }
          e.path = "/cfg/a/../../../outside/victim"
        })
    },
    {
      name: "a listed path that is relative",
      reason: "PathOutsideRoot",
      names: "../outside",
      tamper: (dir) =>
        editManifestAndData(dir, (m) => {
          m.paths[2] = "../outside"
          const e = m.entries.find((x) => x.path === "/cfg/c") as { path: string }
          e.path = "../outside"
        })
    },
    {
      name: "a format version from the future",
      reason: "UnsupportedVersion",
      tamper: (dir) =>
        editManifestAndData(dir, (m) => {
          ;(m as { version: number }).version = 3
        })
    }
  ]

  // The data is checked alongside the restore's first reads: whatever its first change would be, a corrupt
  // snapshot makes none.
  const firstChanges: ReadonlyArray<{
    readonly name: string
    readonly change: (root: string) => Effect.Effect<void, PlatformError.PlatformError, FileSystem.FileSystem>
  }> = [
    {
      name: "a file written (only a file's bytes differ)",
      change: (root) =>
        Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) => fs.writeFileString(`${root}/cfg/a/a`, "edited"))
    },
    {
      name: "a recorded directory made (it was removed)",
      change: (root) =>
        Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) => fs.remove(`${root}/cfg/a/c`, { recursive: true }))
    },
    {
      name: "the listed paths' missing parent made",
      change: (root) =>
        Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) => fs.remove(`${root}/cfg`, { recursive: true }))
    }
  ]
  for (const c of firstChanges) {
    it.effect(
      `tampering: a byte of a file changed, the restore's first change ${c.name}: Corrupt, nothing written`,
      () =>
        onHost(
          Effect.gen(function* () {
            const s = yield* sandbox
            yield* build(s.root, fixed)
            const snapshot = yield* Snapshot.takeOf({
              dir: s.dir,
              hostRoot: yield* rootAt(s.root),
              paths: SnapshotPaths
            })
            yield* c.change(s.root)
            yield* editManifestAndData(s.dir, (m, data) => {
              const e = m.entries.find((x) => x.path === "/cfg/a/b") as { offset: number }
              data[e.offset] = (data[e.offset] ?? 0) ^ 1
            })
            const hostBefore = yield* treeOf(s.root, "/")
            const e = yield* Effect.flip(snapshot.restore)
            assert.strictEqual(e._tag === "SnapshotError" ? e.reason._tag : e._tag, "Corrupt", e.message)
            assert.deepStrictEqual(yield* treeOf(s.root, "/"), hostBefore)
          })
        )
    )
  }

  for (const c of tamperCases) {
    it.effect(`tampering: ${c.name} is ${c.reason} and nothing is written`, () =>
      onHost(
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const t = yield* takenAndMutated
          yield* c.tamper(t.dir)
          const snapshotBytes = yield* treeOf(t.box, "/snaps")
          const hostBefore = yield* treeOf(t.root, "/")
          const e = yield* Effect.flip(t.snapshot.restore)
          assert.strictEqual(e._tag, "SnapshotError")
          if (e._tag !== "SnapshotError") return
          assert.strictEqual(e.reason._tag, c.reason, e.message)
          assert.strictEqual(e.dir, t.dir)
          if (c.names !== undefined) assert.strictEqual("path" in e.reason ? e.reason.path : undefined, c.names)
          assert.deepStrictEqual(yield* treeOf(t.root, "/"), hostBefore)
          assert.deepStrictEqual(yield* treeOf(t.root, "/cfg"), t.mutated)
          assert.isFalse(yield* t.snapshot.restored)
          // recover says the same and keeps the snapshot as it is.
          const r = yield* Effect.flip(Snapshot.recover({ dir: t.dir, hostRoot: yield* rootAt(t.root) }))
          assert.strictEqual(r._tag === "SnapshotError" ? r.reason._tag : r._tag, c.reason)
          assert.deepStrictEqual(yield* treeOf(t.root, "/"), hostBefore)
          assert.deepStrictEqual(yield* treeOf(t.box, "/snaps"), snapshotBytes)
          assert.deepStrictEqual(yield* fs.readDirectory(`${t.box}/outside`), ["victim"])
        })
      )
    )
  }
}
