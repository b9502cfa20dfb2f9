/**
 * FileSystem conformance, changing the tree: `makeDirectory`, `remove`,
 * `rename`, hard links, `symlink` and `readLink`, `realPath`, and the
 * attributes `chmod`, `chown`, `truncate` and `utimes`.
 *
 * Boundary: one call at a time on names and attributes; copying is
 * `copies.ts`.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { expectError, kind, perm, some, sorted, type Test } from "./harness.ts"

/** Changing the tree: directories, removal, rename, links, `realPath` and attributes. */
export const tree = (test: Test): void => {
  test("makeDirectory: errors and recursive", (fs, r) =>
    Effect.gen(function* () {
      yield* fs.makeDirectory(`${r}/d/`)
      yield* expectError(fs.makeDirectory(`${r}/d`), {
        tag: "AlreadyExists",
        code: "EEXIST",
        method: "makeDirectory",
        syscall: "mkdir"
      })
      yield* expectError(fs.makeDirectory(`${r}/x/y`), { tag: "NotFound", code: "ENOENT", syscall: "mkdir" })
      yield* fs.makeDirectory(`${r}/x/y/z`, { recursive: true })
      yield* fs.makeDirectory(`${r}/x/y/z`, { recursive: true })
      assert.strictEqual((yield* fs.stat(`${r}/x/y`)).type, "Directory")
      yield* fs.writeFileString(`${r}/f`, "x")
      yield* expectError(fs.makeDirectory(`${r}/f`), { tag: "AlreadyExists", code: "EEXIST" })
      yield* expectError(fs.makeDirectory(`${r}/f`, { recursive: true }), { tag: "AlreadyExists", code: "EEXIST" })
      yield* expectError(fs.makeDirectory(`${r}/f/g`, { recursive: true }), { tag: "BadResource", code: "ENOTDIR" })
      yield* expectError(fs.makeDirectory(`${r}/f/g`), { tag: "BadResource", code: "ENOTDIR" })
      // a symlink, even a dangling one, occupies the name
      yield* fs.symlink("missing", `${r}/dangling`)
      yield* expectError(fs.makeDirectory(`${r}/dangling`), { tag: "AlreadyExists", code: "EEXIST" })
      yield* fs.symlink("d", `${r}/ld`)
      yield* expectError(fs.makeDirectory(`${r}/ld`), { tag: "AlreadyExists", code: "EEXIST" })
      yield* fs.makeDirectory(`${r}/ld`, { recursive: true })
      yield* fs.makeDirectory(`${r}/ld/sub`, { recursive: true })
      assert.strictEqual((yield* fs.stat(`${r}/d/sub`)).type, "Directory")
      const parent = yield* fs.stat(`${r}/x`)
      assert.strictEqual(Number(some(parent.nlink)), 3)
    }))

  test("remove: files, directories, force, recursive, symlinks", (fs, r) =>
    Effect.gen(function* () {
      yield* fs.writeFileString(`${r}/f`, "x")
      yield* fs.remove(`${r}/f`)
      assert.isFalse(yield* fs.exists(`${r}/f`))
      yield* expectError(fs.remove(`${r}/f`), { tag: "NotFound", code: "ENOENT", method: "remove", syscall: "lstat" })
      yield* fs.remove(`${r}/f`, { force: true })
      yield* fs.makeDirectory(`${r}/d/e/f`, { recursive: true })
      yield* fs.writeFileString(`${r}/d/e/f/file`, "x")
      yield* fs.symlink("../..", `${r}/d/e/up`)
      // Node's fs.rm refuses a directory without `recursive` with its own ERR_FS_EISDIR
      yield* expectError(fs.remove(`${r}/d`), { tag: "Unknown", code: "ERR_FS_EISDIR", syscall: "rm" })
      yield* fs.remove(`${r}/d`, { recursive: true })
      assert.isFalse(yield* fs.exists(`${r}/d`))
      // removing a symlink removes the link, never the target
      yield* fs.makeDirectory(`${r}/keep`)
      yield* fs.writeFileString(`${r}/keep/file`, "x")
      yield* fs.symlink("keep", `${r}/lk`)
      yield* fs.symlink("keep/file", `${r}/lf`)
      yield* fs.remove(`${r}/lk`)
      yield* fs.remove(`${r}/lf`, { recursive: true })
      assert.deepStrictEqual(sorted(yield* fs.readDirectory(r)), ["keep"])
      assert.strictEqual(yield* fs.readFileString(`${r}/keep/file`), "x")
      yield* expectError(fs.remove(`${r}/keep/file/x`), { tag: "BadResource", code: "ENOTDIR" })
      yield* expectError(fs.remove(`${r}/keep/file/x`, { force: true }), { tag: "BadResource", code: "ENOTDIR" })
    }))

  test("rename: atomic replace, directories, and its errors", (fs, r) =>
    Effect.gen(function* () {
      yield* fs.writeFileString(`${r}/a`, "new")
      yield* fs.writeFileString(`${r}/b`, "old")
      const ino = (yield* fs.stat(`${r}/a`)).ino
      yield* fs.rename(`${r}/a`, `${r}/b`)
      assert.strictEqual(yield* fs.readFileString(`${r}/b`), "new")
      assert.deepStrictEqual((yield* fs.stat(`${r}/b`)).ino, ino)
      assert.isFalse(yield* fs.exists(`${r}/a`))
      yield* expectError(fs.rename(`${r}/a`, `${r}/c`), {
        tag: "NotFound",
        code: "ENOENT",
        method: "rename",
        syscall: "rename"
      })
      yield* fs.makeDirectory(`${r}/d/sub`, { recursive: true })
      yield* expectError(fs.rename(`${r}/d`, `${r}/d/sub/inside`), { tag: "Unknown", code: "EINVAL" })
      yield* expectError(fs.rename(`${r}/d/sub`, `${r}/d`), { tag: "Unknown", code: "ENOTEMPTY" })
      yield* fs.makeDirectory(`${r}/full`)
      yield* fs.writeFileString(`${r}/full/x`, "x")
      yield* expectError(fs.rename(`${r}/d`, `${r}/full`), { tag: "Unknown", code: "ENOTEMPTY" })
      yield* expectError(fs.rename(`${r}/b`, `${r}/d`), { tag: "BadResource", code: "EISDIR" })
      yield* expectError(fs.rename(`${r}/d`, `${r}/b`), { tag: "BadResource", code: "ENOTDIR" })
      yield* expectError(fs.rename(`${r}/b`, `${r}/nodir/b`), { tag: "NotFound", code: "ENOENT" })
      yield* expectError(fs.rename(`${r}/b/`, `${r}/c`), { tag: "BadResource", code: "ENOTDIR" })
      yield* fs.makeDirectory(`${r}/empty`)
      yield* fs.rename(`${r}/d`, `${r}/empty`)
      assert.deepStrictEqual(yield* fs.readDirectory(`${r}/empty`), ["sub"])
      yield* fs.rename(`${r}/empty`, `${r}/moved/`)
      assert.deepStrictEqual(yield* fs.readDirectory(`${r}/moved`), ["sub"])
      // renaming a name onto another link of the same inode does nothing
      yield* fs.link(`${r}/b`, `${r}/b2`)
      yield* fs.rename(`${r}/b`, `${r}/b2`)
      assert.isTrue(yield* fs.exists(`${r}/b`))
      assert.isTrue(yield* fs.exists(`${r}/b2`))
      // a symlink is renamed, not its target
      yield* fs.symlink("b", `${r}/lb`)
      yield* fs.rename(`${r}/lb`, `${r}/lb2`)
      assert.strictEqual(yield* fs.readLink(`${r}/lb2`), "b")
    }))

  test("hard links share the inode and count links", (fs, r) =>
    Effect.gen(function* () {
      yield* fs.writeFileString(`${r}/a`, "x")
      yield* fs.link(`${r}/a`, `${r}/b`)
      const a = yield* fs.stat(`${r}/a`)
      const b = yield* fs.stat(`${r}/b`)
      assert.deepStrictEqual(a.ino, b.ino)
      assert.strictEqual(Number(some(a.nlink)), 2)
      yield* fs.writeFileString(`${r}/b`, "changed")
      assert.strictEqual(yield* fs.readFileString(`${r}/a`), "changed")
      yield* fs.remove(`${r}/a`)
      assert.strictEqual(Number(some((yield* fs.stat(`${r}/b`)).nlink)), 1)
      yield* fs.makeDirectory(`${r}/d`)
      yield* expectError(fs.link(`${r}/d`, `${r}/d2`), {
        tag: "PermissionDenied",
        code: "EPERM",
        method: "link",
        syscall: "link"
      })
      yield* expectError(fs.link(`${r}/b`, `${r}/d`), { tag: "AlreadyExists", code: "EEXIST" })
      yield* expectError(fs.link(`${r}/nope`, `${r}/c`), { tag: "NotFound", code: "ENOENT" })
      // link(2) does not follow a symlink: it links the symlink itself
      yield* fs.symlink("b", `${r}/l`)
      yield* fs.link(`${r}/l`, `${r}/l2`)
      assert.strictEqual((yield* fs.lstat(`${r}/l2`)).type, "SymbolicLink")
      assert.strictEqual(Number(some((yield* fs.lstat(`${r}/l`)).nlink)), 2)
      // directories count their subdirectories
      yield* fs.makeDirectory(`${r}/d/x`)
      yield* fs.makeDirectory(`${r}/d/y`)
      assert.strictEqual(Number(some((yield* fs.stat(`${r}/d`)).nlink)), 4)
    }))

  test("symlink and readLink keep the target verbatim", (fs, r) =>
    Effect.gen(function* () {
      yield* fs.symlink("../some/where/", `${r}/l`)
      assert.strictEqual(yield* fs.readLink(`${r}/l`), "../some/where/")
      yield* expectError(fs.symlink("x", `${r}/l`), {
        tag: "AlreadyExists",
        code: "EEXIST",
        method: "symlink",
        syscall: "symlink"
      })
      yield* expectError(fs.symlink("x", `${r}/nodir/l`), { tag: "NotFound", code: "ENOENT" })
      yield* fs.writeFileString(`${r}/f`, "x")
      yield* expectError(fs.readLink(`${r}/f`), {
        tag: "Unknown",
        code: "EINVAL",
        method: "readLink",
        syscall: "readlink"
      })
      yield* expectError(fs.readLink(`${r}/nope`), { tag: "NotFound", code: "ENOENT" })
    }))

  test("realPath resolves links, '.' and '..'", (fs, r) =>
    Effect.gen(function* () {
      const real = yield* fs.realPath(r)
      yield* fs.makeDirectory(`${r}/a/b`, { recursive: true })
      yield* fs.symlink("a/b", `${r}/lb`)
      yield* fs.symlink(`${r}/a`, `${r}/la`)
      yield* fs.writeFileString(`${r}/a/b/f`, "x")
      assert.strictEqual(yield* fs.realPath(`${r}/lb/f`), `${real}/a/b/f`)
      assert.strictEqual(yield* fs.realPath(`${r}/la/./b/../b`), `${real}/a/b`)
      assert.strictEqual(yield* fs.realPath(`${r}/lb/`), `${real}/a/b`)
      yield* expectError(fs.realPath(`${r}/nope/x`), { tag: "NotFound", code: "ENOENT", method: "realPath" })
      yield* fs.symlink("missing", `${r}/dangling`)
      yield* expectError(fs.realPath(`${r}/dangling`), { tag: "NotFound", code: "ENOENT" })
    }))

  test("chmod and chown follow symlinks; chown clears setuid", (fs, r) =>
    Effect.gen(function* () {
      yield* fs.writeFileString(`${r}/f`, "x")
      yield* fs.symlink("f", `${r}/l`)
      yield* fs.chmod(`${r}/l`, 0o4711)
      assert.strictEqual(perm(yield* fs.stat(`${r}/f`)), 0o4711)
      assert.strictEqual(perm(yield* fs.lstat(`${r}/l`)), 0o777)
      assert.strictEqual(kind(yield* fs.stat(`${r}/f`)), 0o100000)
      yield* fs.chown(`${r}/l`, 1000, 2000)
      const s = yield* fs.stat(`${r}/f`)
      assert.strictEqual(some(s.uid), 1000)
      assert.strictEqual(some(s.gid), 2000)
      assert.strictEqual(perm(s), 0o711)
      assert.strictEqual(some((yield* fs.lstat(`${r}/l`)).uid), 0)
      yield* fs.chmod(`${r}/f`, 0o2755)
      yield* fs.chown(`${r}/f`, -1, -1)
      assert.strictEqual(perm(yield* fs.stat(`${r}/f`)), 0o755)
      yield* fs.makeDirectory(`${r}/d`)
      yield* fs.chmod(`${r}/d`, 0o3777)
      yield* fs.chown(`${r}/d`, 7, 8)
      assert.strictEqual(perm(yield* fs.stat(`${r}/d`)), 0o3777)
      yield* expectError(fs.chmod(`${r}/nope`, 0o600), {
        tag: "NotFound",
        code: "ENOENT",
        method: "chmod",
        syscall: "chmod"
      })
      yield* expectError(fs.chown(`${r}/nope`, 0, 0), {
        tag: "NotFound",
        code: "ENOENT",
        method: "chown",
        syscall: "chown"
      })
      yield* expectError(fs.chmod(`${r}/f`, -1), { tag: "BadArgument", method: "chmod" })
    }))

  test("truncate", (fs, r) =>
    Effect.gen(function* () {
      yield* fs.writeFileString(`${r}/f`, "hello")
      yield* fs.truncate(`${r}/f`, 2)
      assert.strictEqual(yield* fs.readFileString(`${r}/f`), "he")
      yield* fs.truncate(`${r}/f`, 4)
      assert.deepStrictEqual([...(yield* fs.readFile(`${r}/f`))], [104, 101, 0, 0])
      yield* fs.truncate(`${r}/f`)
      assert.strictEqual(Number((yield* fs.stat(`${r}/f`)).size), 0)
      yield* fs.symlink("f", `${r}/l`)
      yield* fs.writeFileString(`${r}/f`, "abc")
      yield* fs.truncate(`${r}/l`, 1)
      assert.strictEqual(yield* fs.readFileString(`${r}/f`), "a")
      yield* expectError(fs.truncate(`${r}/nope`), { tag: "NotFound", code: "ENOENT", syscall: "open" })
      yield* expectError(fs.truncate(r), { tag: "BadResource", code: "EISDIR", syscall: "open" })
    }))

  test("utimes sets atime and mtime (numbers are seconds)", (fs, r) =>
    Effect.gen(function* () {
      yield* fs.writeFileString(`${r}/f`, "x")
      yield* fs.utimes(`${r}/f`, new Date("2001-02-03T04:05:06.000Z"), 1_000_000_000)
      const s = yield* fs.stat(`${r}/f`)
      assert.strictEqual(some(s.atime).toISOString(), "2001-02-03T04:05:06.000Z")
      assert.strictEqual(some(s.mtime).getTime(), 1_000_000_000_000)
      yield* expectError(fs.utimes(`${r}/nope`, 0, 0), {
        tag: "NotFound",
        code: "ENOENT",
        method: "utime",
        syscall: "utime"
      })
    }))
}
