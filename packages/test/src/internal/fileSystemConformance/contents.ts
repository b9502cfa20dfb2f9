/**
 * FileSystem conformance, contents and listings: `readFile` and `writeFile`
 * with their open flags, writing through a dangling symlink, and
 * `readDirectory` / `readDirectoryEntries` (recursive listings follow
 * symlinked directories as Node's do).
 *
 * Boundary: whole-file reads and writes by path; open files are `handles.ts`.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { bytes, expectError, sorted, type Test, text } from "./harness.ts"

/** Contents and listings: `readFile`/`writeFile` and their flags, `readDirectory`/`readDirectoryEntries`. */
export const contents = (test: Test): void => {
  test("readFile / writeFile and their flags", (fs, r) =>
    Effect.gen(function* () {
      const f = `${r}/f`
      yield* fs.writeFile(f, bytes("hello"))
      assert.strictEqual(text(yield* fs.readFile(f)), "hello")
      yield* fs.writeFileString(f, " world", { flag: "a" })
      assert.strictEqual(yield* fs.readFileString(f), "hello world")
      yield* fs.writeFileString(f, "J", { flag: "r+" })
      assert.strictEqual(yield* fs.readFileString(f), "Jello world")
      yield* fs.writeFileString(f, "new")
      assert.strictEqual(yield* fs.readFileString(f), "new")
      yield* expectError(fs.writeFileString(f, "x", { flag: "wx" }), {
        tag: "AlreadyExists",
        code: "EEXIST",
        method: "writeFile",
        syscall: "open"
      })
      yield* fs.writeFileString(`${r}/g`, "x", { flag: "wx" })
      yield* expectError(fs.writeFileString(`${r}/h`, "x", { flag: "r+" }), { tag: "NotFound", code: "ENOENT" })
      yield* expectError(fs.writeFileString(f, "x", { flag: "r" }), {
        tag: "Unknown",
        code: "EBADF",
        syscall: "write"
      })
      yield* expectError(fs.readFile(`${r}/nope`), {
        tag: "NotFound",
        code: "ENOENT",
        method: "readFile",
        syscall: "open"
      })
      yield* expectError(fs.readFileString(`${r}/nope`), { tag: "NotFound", code: "ENOENT", method: "readFile" })
      yield* expectError(fs.readFile(r), { tag: "BadResource", code: "EISDIR", method: "readFile", syscall: "read" })
      yield* expectError(fs.writeFileString(r, "x"), { tag: "BadResource", code: "EISDIR", syscall: "open" })
      yield* expectError(fs.writeFileString(`${r}/no/such`, "x"), { tag: "NotFound", code: "ENOENT" })
      yield* fs.writeFile(`${r}/empty`, new Uint8Array(0))
      assert.strictEqual((yield* fs.readFile(`${r}/empty`)).length, 0)
    }))

  test("writing through a dangling symlink creates its target", (fs, r) =>
    Effect.gen(function* () {
      yield* fs.symlink("target", `${r}/rel`)
      yield* fs.symlink(`${r}/abs-target`, `${r}/abs`)
      yield* fs.symlink("nodir/target", `${r}/deep`)
      yield* fs.writeFileString(`${r}/rel`, "a")
      yield* fs.writeFileString(`${r}/abs`, "b")
      assert.strictEqual(yield* fs.readFileString(`${r}/target`), "a")
      assert.strictEqual(yield* fs.readFileString(`${r}/abs-target`), "b")
      assert.strictEqual((yield* fs.lstat(`${r}/rel`)).type, "SymbolicLink")
      yield* expectError(fs.writeFileString(`${r}/deep`, "c"), { tag: "NotFound", code: "ENOENT" })
      // O_EXCL does not follow: the link itself exists
      yield* fs.remove(`${r}/target`)
      yield* expectError(fs.writeFileString(`${r}/rel`, "x", { flag: "wx" }), {
        tag: "AlreadyExists",
        code: "EEXIST"
      })
    }))

  test("readDirectory and readDirectoryEntries", (fs, r) =>
    Effect.gen(function* () {
      yield* fs.makeDirectory(`${r}/a/b`, { recursive: true })
      yield* fs.writeFileString(`${r}/a/b/c`, "x")
      yield* fs.writeFileString(`${r}/f`, "x")
      yield* fs.symlink("a", `${r}/la`)
      yield* fs.symlink("missing", `${r}/dangling`)
      assert.deepStrictEqual(sorted(yield* fs.readDirectory(r)), ["a", "dangling", "f", "la"])
      assert.deepStrictEqual(sorted(yield* fs.readDirectory(`${r}/a`)), ["b"])
      // recursive listing descends into symlinked directories too (Node's readdir follows them)
      assert.deepStrictEqual(sorted(yield* fs.readDirectory(r, { recursive: true })), [
        "a",
        "a/b",
        "a/b/c",
        "dangling",
        "f",
        "la",
        "la/b",
        "la/b/c"
      ])
      const entries = yield* fs.readDirectoryEntries(r)
      assert.deepStrictEqual(
        [...entries].sort((x, y) => (x.name < y.name ? -1 : 1)),
        [
          { name: "a", type: "Directory" },
          { name: "dangling", type: "SymbolicLink" },
          { name: "f", type: "File" },
          { name: "la", type: "SymbolicLink" }
        ]
      )
      assert.deepStrictEqual(sorted(yield* fs.readDirectory(`${r}/la`)), ["b"])
      assert.deepStrictEqual(yield* fs.readDirectory(`${r}/a/b/..`), ["b"])
      yield* expectError(fs.readDirectory(`${r}/f`), {
        tag: "BadResource",
        code: "ENOTDIR",
        method: "readDirectory",
        syscall: "scandir"
      })
      yield* expectError(fs.readDirectory(`${r}/nope`), { tag: "NotFound", code: "ENOENT", syscall: "scandir" })
      yield* expectError(fs.readDirectoryEntries(`${r}/nope`), {
        tag: "NotFound",
        code: "ENOENT",
        method: "readDirectoryEntries"
      })
      yield* expectError(fs.readDirectory(`${r}/dangling`), { tag: "NotFound", code: "ENOENT" })
    }))
}
