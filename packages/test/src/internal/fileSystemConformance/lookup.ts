/**
 * FileSystem conformance, lookup and metadata: the modes and owners new
 * entries get (umask 022, setgid directories), `stat` and `lstat` through
 * symlinks (dangling, loops, the limit of 40), path forms (trailing slashes,
 * `.`, `..`) and `exists`.
 *
 * Boundary: reading what a path reaches; changing contents and names is in
 * `contents.ts` and `tree.ts`.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { expectError, perm, some, type Test } from "./harness.ts"

/** Lookup and metadata: modes of new entries, symlinks followed or not, path forms, `exists`. */
export const lookup = (test: Test): void => {
  test("new files are 0644, directories 0755, symlinks 0777, owned by root (umask 022)", (fs, r) =>
    Effect.gen(function* () {
      yield* fs.writeFileString(`${r}/f`, "x")
      yield* fs.makeDirectory(`${r}/d`)
      yield* fs.symlink("f", `${r}/l`)
      const f = yield* fs.stat(`${r}/f`)
      const d = yield* fs.stat(`${r}/d`)
      const l = yield* fs.lstat(`${r}/l`)
      assert.strictEqual(f.mode, 0o100644)
      assert.strictEqual(d.mode, 0o040755)
      assert.strictEqual(l.mode, 0o120777)
      assert.strictEqual(f.type, "File")
      assert.strictEqual(d.type, "Directory")
      assert.strictEqual(l.type, "SymbolicLink")
      assert.strictEqual(some(f.uid), 0)
      assert.strictEqual(some(f.gid), 0)
      assert.strictEqual(some(d.uid), 0)
    }))

  test("explicit modes pass through the umask; mkdir keeps only rwx and sticky", (fs, r) =>
    Effect.gen(function* () {
      yield* fs.writeFileString(`${r}/private`, "x", { mode: 0o600 })
      yield* fs.writeFileString(`${r}/open`, "x", { mode: 0o777 })
      yield* fs.writeFileString(`${r}/suid`, "x", { mode: 0o4755 })
      yield* fs.makeDirectory(`${r}/d700`, { mode: 0o700 })
      yield* fs.makeDirectory(`${r}/d7777`, { mode: 0o7777 })
      yield* fs.makeDirectory(`${r}/a/b/c`, { recursive: true, mode: 0o750 })
      assert.strictEqual(perm(yield* fs.stat(`${r}/private`)), 0o600)
      assert.strictEqual(perm(yield* fs.stat(`${r}/open`)), 0o755)
      assert.strictEqual(perm(yield* fs.stat(`${r}/suid`)), 0o4755)
      assert.strictEqual(perm(yield* fs.stat(`${r}/d700`)), 0o700)
      assert.strictEqual(perm(yield* fs.stat(`${r}/d7777`)), 0o1755)
      assert.strictEqual(perm(yield* fs.stat(`${r}/a`)), 0o750)
      assert.strictEqual(perm(yield* fs.stat(`${r}/a/b/c`)), 0o750)
      // an existing file keeps its mode when rewritten with another one
      yield* fs.writeFileString(`${r}/private`, "y", { mode: 0o666 })
      assert.strictEqual(perm(yield* fs.stat(`${r}/private`)), 0o600)
    }))

  test("a setgid directory passes its group and the setgid bit down", (fs, r) =>
    Effect.gen(function* () {
      yield* fs.makeDirectory(`${r}/g`)
      yield* fs.chown(`${r}/g`, 0, 1234)
      yield* fs.chmod(`${r}/g`, 0o2775)
      yield* fs.makeDirectory(`${r}/g/sub`)
      yield* fs.writeFileString(`${r}/g/file`, "x")
      const sub = yield* fs.stat(`${r}/g/sub`)
      const file = yield* fs.stat(`${r}/g/file`)
      assert.strictEqual(perm(sub), 0o2755)
      assert.strictEqual(some(sub.gid), 1234)
      assert.strictEqual(perm(file), 0o644)
      assert.strictEqual(some(file.gid), 1234)
    }))

  test("stat follows symlinks, lstat does not; dangling links and loops", (fs, r) =>
    Effect.gen(function* () {
      yield* fs.writeFileString(`${r}/target`, "12345")
      yield* fs.symlink("target", `${r}/rel`)
      yield* fs.symlink(`${r}/target`, `${r}/abs`)
      yield* fs.symlink("missing", `${r}/dangling`)
      yield* fs.symlink("loop2", `${r}/loop1`)
      yield* fs.symlink("loop1", `${r}/loop2`)
      for (const link of ["rel", "abs"]) {
        const s = yield* fs.stat(`${r}/${link}`)
        assert.strictEqual(s.type, "File")
        assert.strictEqual(Number(s.size), 5)
      }
      const l = yield* fs.lstat(`${r}/rel`)
      assert.strictEqual(l.type, "SymbolicLink")
      assert.strictEqual(Number(l.size), "target".length)
      assert.strictEqual(Number((yield* fs.lstat(`${r}/abs`)).size), `${r}/target`.length)
      yield* expectError(fs.stat(`${r}/dangling`), {
        tag: "NotFound",
        code: "ENOENT",
        method: "stat",
        syscall: "stat"
      })
      assert.strictEqual((yield* fs.lstat(`${r}/dangling`)).type, "SymbolicLink")
      yield* expectError(fs.stat(`${r}/loop1`), { tag: "BadResource", code: "ELOOP", syscall: "stat" })
      yield* expectError(fs.readFile(`${r}/loop1`), { tag: "BadResource", code: "ELOOP", syscall: "open" })
      assert.strictEqual((yield* fs.lstat(`${r}/loop1`)).type, "SymbolicLink")
      assert.isFalse(yield* fs.exists(`${r}/dangling`))
      assert.isTrue(yield* fs.exists(`${r}/rel`))
    }))

  test("at most 40 symlinks are followed in one lookup", (fs, r) =>
    Effect.gen(function* () {
      yield* fs.writeFileString(`${r}/end`, "x")
      yield* fs.symlink("end", `${r}/l0`)
      for (let i = 1; i <= 40; i++) yield* fs.symlink(`l${i - 1}`, `${r}/l${i}`)
      assert.strictEqual(yield* fs.readFileString(`${r}/l39`), "x")
      yield* expectError(fs.readFileString(`${r}/l40`), { tag: "BadResource", code: "ELOOP" })
    }))

  test("paths: trailing slashes, '.', '..', '..' at / stays at /", (fs, r) =>
    Effect.gen(function* () {
      yield* fs.writeFileString(`${r}/f`, "x")
      yield* fs.makeDirectory(`${r}/d`)
      yield* fs.symlink("d", `${r}/ld`)
      yield* fs.symlink("f", `${r}/lf`)
      assert.strictEqual((yield* fs.stat(`${r}/d/`)).type, "Directory")
      assert.strictEqual((yield* fs.lstat(`${r}/ld/`)).type, "Directory")
      assert.strictEqual((yield* fs.lstat(`${r}/ld`)).type, "SymbolicLink")
      yield* expectError(fs.stat(`${r}/f/`), { tag: "BadResource", code: "ENOTDIR" })
      yield* expectError(fs.stat(`${r}/lf/`), { tag: "BadResource", code: "ENOTDIR" })
      yield* expectError(fs.stat(`${r}/f/x`), { tag: "BadResource", code: "ENOTDIR" })
      yield* expectError(fs.stat(`${r}/missing/`), { tag: "NotFound", code: "ENOENT" })
      yield* expectError(fs.readFile(`${r}/f/`), { tag: "BadResource", code: "ENOTDIR", syscall: "open" })
      yield* expectError(fs.writeFileString(`${r}/new/`, "x"), { tag: "BadResource", code: "EISDIR" })
      yield* expectError(fs.writeFileString(`${r}/f/`, "x"), { tag: "BadResource", code: "EISDIR" })
      assert.strictEqual(yield* fs.readFileString(`${r}/d/../f`), "x")
      assert.strictEqual(yield* fs.readFileString(`${r}/./d/./../f`), "x")
      assert.strictEqual(yield* fs.readFileString(`/../../..${r}/f`), "x")
      // ".." is taken after following a link: ld/.. is the link's parent's parent of d, i.e. r
      assert.strictEqual(yield* fs.readFileString(`${r}/ld/../f`), "x")
      assert.isTrue(yield* fs.exists(`${r}//d//`))
    }))

  test("exists is false only for NotFound; other errors propagate", (fs, r) =>
    Effect.gen(function* () {
      yield* fs.writeFileString(`${r}/f`, "x")
      assert.isTrue(yield* fs.exists(`${r}/f`))
      assert.isFalse(yield* fs.exists(`${r}/nope`))
      yield* expectError(fs.exists(`${r}/f/x`), { tag: "BadResource", code: "ENOTDIR", method: "access" })
      yield* fs.access(`${r}/f`, { readable: true, writable: true })
    }))
}
