/**
 * FileSystem conformance, copies and temporary entries: `copyFile` (into the
 * same target inode, with mode and owner), Node's recursive `copy`, and
 * temporary directories and files, scoped or not.
 *
 * Boundary: the calls that create entries from others or from a template.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { expectError, perm, some, sorted, type Test } from "./harness.ts"

/** Copies and temporary entries: `copyFile`, recursive `copy`, temporary directories and files. */
export const copies = (test: Test): void => {
  test("copyFile copies content, mode and owner into the same target inode", (fs, r) =>
    Effect.gen(function* () {
      yield* fs.writeFileString(`${r}/src`, "data", { mode: 0o640 })
      yield* fs.copyFile(`${r}/src`, `${r}/dst`)
      assert.strictEqual(yield* fs.readFileString(`${r}/dst`), "data")
      assert.strictEqual(perm(yield* fs.stat(`${r}/dst`)), 0o640)
      yield* fs.writeFileString(`${r}/other`, "longer old content")
      yield* fs.chown(`${r}/other`, 5, 5)
      yield* fs.link(`${r}/other`, `${r}/other-link`)
      const before = yield* fs.stat(`${r}/other`)
      yield* fs.chown(`${r}/src`, 7, 8)
      yield* fs.copyFile(`${r}/src`, `${r}/other`)
      const o = yield* fs.stat(`${r}/other`)
      assert.strictEqual(yield* fs.readFileString(`${r}/other-link`), "data")
      assert.deepStrictEqual(o.ino, before.ino)
      assert.strictEqual(perm(o), 0o640)
      assert.strictEqual(some(o.uid), 7)
      assert.strictEqual(some(o.gid), 8)
      yield* fs.makeDirectory(`${r}/d`)
      yield* expectError(fs.copyFile(`${r}/d`, `${r}/x`), { tag: "BadResource", code: "EISDIR", syscall: "copyfile" })
      assert.isFalse(yield* fs.exists(`${r}/x`))
      yield* expectError(fs.copyFile(`${r}/src`, `${r}/d`), { tag: "BadResource", code: "EISDIR" })
      yield* expectError(fs.copyFile(`${r}/nope`, `${r}/x`), {
        tag: "NotFound",
        code: "ENOENT",
        method: "copyFile",
        syscall: "copyfile"
      })
      yield* fs.copyFile(`${r}/src`, `${r}/src`)
      assert.strictEqual(yield* fs.readFileString(`${r}/src`), "data")
    }))

  test("copy is recursive, keeps modes, makes links absolute, skips existing files", (fs, r) =>
    Effect.gen(function* () {
      yield* fs.makeDirectory(`${r}/src/sub`, { recursive: true })
      yield* fs.chmod(`${r}/src/sub`, 0o700)
      yield* fs.writeFileString(`${r}/src/sub/f`, "one", { mode: 0o600 })
      yield* fs.writeFileString(`${r}/src/g`, "two")
      yield* fs.symlink("sub/f", `${r}/src/rel`)
      yield* fs.symlink("/abs/target", `${r}/src/abs`)
      yield* fs.copy(`${r}/src`, `${r}/dst`)
      assert.deepStrictEqual(sorted(yield* fs.readDirectory(`${r}/dst`, { recursive: true })), [
        "abs",
        "g",
        "rel",
        "sub",
        "sub/f"
      ])
      assert.strictEqual(perm(yield* fs.stat(`${r}/dst/sub`)), 0o700)
      assert.strictEqual(perm(yield* fs.stat(`${r}/dst/sub/f`)), 0o600)
      assert.strictEqual(yield* fs.readLink(`${r}/dst/abs`), "/abs/target")
      // Node's cp makes a relative link target absolute, lexically, against the source's directory
      assert.strictEqual(yield* fs.readLink(`${r}/dst/rel`), `${r}/src/sub/f`)
      // Node's cp refuses to copy a symlink onto an equal one, even with overwrite
      yield* expectError(fs.copy(`${r}/src/abs`, `${r}/dst/abs`, { overwrite: true }), {
        tag: "Unknown",
        code: "ERR_FS_CP_EINVAL"
      })
      // existing files are skipped silently without overwrite (the copy merges into dst) ...
      yield* fs.remove(`${r}/src/abs`)
      yield* fs.remove(`${r}/src/rel`)
      yield* fs.writeFileString(`${r}/dst/g`, "changed")
      yield* fs.writeFileString(`${r}/src/h`, "three")
      yield* fs.copy(`${r}/src`, `${r}/dst`)
      assert.strictEqual(yield* fs.readFileString(`${r}/dst/g`), "changed")
      assert.strictEqual(yield* fs.readFileString(`${r}/dst/h`), "three")
      // ... and replaced with it
      yield* fs.copy(`${r}/src`, `${r}/dst`, { overwrite: true })
      assert.strictEqual(yield* fs.readFileString(`${r}/dst/g`), "two")
      // missing parents of the destination are created
      yield* fs.copy(`${r}/src/g`, `${r}/new/parents/g`)
      assert.strictEqual(yield* fs.readFileString(`${r}/new/parents/g`), "two")
      yield* expectError(fs.copy(`${r}/src`, `${r}/src/sub/inside`), {
        tag: "Unknown",
        code: "ERR_FS_CP_EINVAL",
        method: "copy",
        syscall: "cp"
      })
      yield* expectError(fs.copy(`${r}/src`, `${r}/src/g`), { tag: "Unknown", code: "ERR_FS_CP_DIR_TO_NON_DIR" })
      yield* expectError(fs.copy(`${r}/src/g`, `${r}/dst/sub`), { tag: "Unknown", code: "ERR_FS_CP_NON_DIR_TO_DIR" })
      yield* expectError(fs.copy(`${r}/src/g`, `${r}/src/g`), { tag: "Unknown", code: "ERR_FS_CP_EINVAL" })
      yield* expectError(fs.copy(`${r}/nope`, `${r}/x`), { tag: "NotFound", code: "ENOENT", syscall: "lstat" })
    }))

  test("temporary directories and files", (fs, r) =>
    Effect.gen(function* () {
      const dir = yield* fs.makeTempDirectory({ directory: r, prefix: "pre-" })
      assert.isTrue(dir.startsWith(`${r}/pre-`))
      assert.strictEqual(dir.length, `${r}/pre-`.length + 6)
      const s = yield* fs.stat(dir)
      assert.strictEqual(s.type, "Directory")
      assert.strictEqual(perm(s), 0o700)
      const file = yield* fs.makeTempFile({ directory: r, suffix: ".txt" })
      assert.isTrue(file.endsWith(".txt"))
      assert.strictEqual(Number((yield* fs.stat(file)).size), 0)
      const scopedDir = yield* Effect.scoped(
        Effect.gen(function* () {
          const d = yield* fs.makeTempDirectoryScoped({ directory: r })
          yield* fs.writeFileString(`${d}/inside`, "x")
          return d
        })
      )
      assert.isFalse(yield* fs.exists(scopedDir))
      const scopedFile = yield* Effect.scoped(fs.makeTempFileScoped({ directory: r }))
      assert.isFalse(yield* fs.exists(scopedFile))
      yield* expectError(fs.makeTempDirectory({ directory: `${r}/nope` }), {
        tag: "NotFound",
        code: "ENOENT",
        method: "makeTempDirectory",
        syscall: "mkdtemp"
      })
      // without `directory`, the system's temporary directory is used
      const def = yield* Effect.scoped(
        Effect.gen(function* () {
          const d = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-conformance-" })
          assert.strictEqual((yield* fs.stat(d)).type, "Directory")
          return d
        })
      )
      assert.isFalse(yield* fs.exists(def))
    }))
}
