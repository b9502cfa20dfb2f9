/**
 * The conformance suite for `FileSystem` implementations: what
 * `@effect/platform-node`'s NodeFileSystem does on Linux for a root process
 * with umask 022, as @effect/vitest tests. The real file system passes it by
 * definition (it is run against it in this package); `MemoryHost` passes it;
 * a user's own file system (a wrapper that chroots, one that records, a
 * fake) can run the very same tests to show it can stand in for the real one.
 *
 * Boundary: everything happens inside one fresh root directory per test, so
 * running the suite against the real file system touches nothing else.
 * Directory sizes, device and inode numbers and times other than those set by
 * `utimes` are file-system specific and not asserted.
 *
 * @since 0.1.0
 */
import { assert, layer } from "@effect/vitest"
import { Effect, FileSystem, type Layer, Option, type PlatformError, Stream } from "effect"
import type * as Scope from "effect/Scope"

/**
 * How the suite gets its per-test root directory.
 *
 * @since 0.1.0
 */
export interface Options {
  /**
   * A fresh, empty directory inside the file system under test, removed when
   * the test's scope closes. Default: `fs.makeTempDirectoryScoped()`.
   */
  readonly root?: Effect.Effect<string, PlatformError.PlatformError, FileSystem.FileSystem | Scope.Scope> | undefined
}

/**
 * What a failed call must look like: `reason._tag` and the errno `code` of the cause, optionally more.
 *
 * @since 0.1.0
 */
export interface ExpectedError {
  readonly tag: string
  readonly code?: string | undefined
  readonly method?: string | undefined
  readonly syscall?: string | undefined
}

const causeCode = (e: PlatformError.PlatformError): unknown => {
  const cause = e.reason.cause
  return typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined
}

/**
 * Runs `effect`, which must fail with a `PlatformError` matching `expected`,
 * and returns the error for further checks. Exported for users' own tests.
 *
 * @since 0.1.0
 */
export const expectError = <A, R>(
  effect: Effect.Effect<A, PlatformError.PlatformError, R>,
  expected: ExpectedError
): Effect.Effect<PlatformError.PlatformError, never, R> =>
  Effect.gen(function* () {
    const result = yield* Effect.result(effect)
    if (result._tag === "Success") {
      return assert.fail(`expected ${expected.tag}/${expected.code ?? "?"} but it succeeded`)
    }
    const e = result.failure
    const where = `${e.reason.method}(${"pathOrDescriptor" in e.reason ? String(e.reason.pathOrDescriptor) : ""})`
    assert.strictEqual(e.reason._tag, expected.tag, `reason._tag of ${where}: ${e.message}`)
    assert.strictEqual(e.reason.module, "FileSystem")
    if (expected.code !== undefined) assert.strictEqual(causeCode(e), expected.code, `errno code of ${where}`)
    if (expected.method !== undefined) assert.strictEqual(e.reason.method, expected.method)
    if (expected.syscall !== undefined && e.reason._tag !== "BadArgument") {
      assert.strictEqual(e.reason.syscall, expected.syscall, `syscall of ${where}`)
    }
    return e
  })

const bytes = (s: string) => new TextEncoder().encode(s)
const text = (b: Uint8Array) => new TextDecoder().decode(b)
const sorted = (xs: ReadonlyArray<string>) => [...xs].sort()
const perm = (info: FileSystem.File.Info) => info.mode & 0o7777
const kind = (info: FileSystem.File.Info) => info.mode & 0o170000
const some = <A>(o: Option.Option<A>): A => Option.getOrThrow(o)

/**
 * Registers the suite under `name` against the `FileSystem` that `fsLayer`
 * provides. The layer is built once for the whole suite; every test works in
 * its own fresh root (see `Options.root`).
 *
 * @since 0.1.0
 */
export const suite = <E>(name: string, fsLayer: Layer.Layer<FileSystem.FileSystem, E>, options: Options = {}): void =>
  layer(fsLayer)(`FileSystem conformance: ${name}`, (it) => {
    const root: Effect.Effect<string, PlatformError.PlatformError, FileSystem.FileSystem | Scope.Scope> =
      options.root ??
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        return yield* fs.makeTempDirectoryScoped()
      })

    /** Runs a test body with the file system and a fresh root. */
    const test = (
      title: string,
      body: (fs: FileSystem.FileSystem, root: string) => Effect.Effect<void, PlatformError.PlatformError, Scope.Scope>
    ) =>
      it.effect(title, () =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const r = yield* root
          yield* body(fs, r)
        })
      )

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

    test("open: flags, modes and errors", (fs, r) =>
      Effect.gen(function* () {
        yield* fs.writeFileString(`${r}/f`, "abc")
        yield* fs.makeDirectory(`${r}/d`)
        yield* fs.symlink("f", `${r}/l`)
        yield* Effect.scoped(fs.open(`${r}/f`))
        yield* Effect.scoped(fs.open(`${r}/new`, { flag: "w", mode: 0o600 }))
        assert.strictEqual(perm(yield* fs.stat(`${r}/new`)), 0o600)
        yield* Effect.scoped(fs.open(`${r}/f`, { flag: "w" }))
        assert.strictEqual(Number((yield* fs.stat(`${r}/f`)).size), 0)
        yield* expectError(Effect.scoped(fs.open(`${r}/f`, { flag: "wx" })), {
          tag: "AlreadyExists",
          code: "EEXIST",
          method: "open",
          syscall: "open"
        })
        yield* expectError(Effect.scoped(fs.open(`${r}/f`, { flag: "ax+" })), { tag: "AlreadyExists", code: "EEXIST" })
        yield* expectError(Effect.scoped(fs.open(`${r}/nope`)), { tag: "NotFound", code: "ENOENT" })
        yield* expectError(Effect.scoped(fs.open(`${r}/nope`, { flag: "r+" })), { tag: "NotFound", code: "ENOENT" })
        yield* expectError(Effect.scoped(fs.open(`${r}/d`, { flag: "r+" })), { tag: "BadResource", code: "EISDIR" })
        yield* expectError(Effect.scoped(fs.open(`${r}/d`, { flag: "a" })), { tag: "BadResource", code: "EISDIR" })
        yield* expectError(Effect.scoped(fs.open(`${r}/d`, { flag: "wx" })), { tag: "AlreadyExists", code: "EEXIST" })
        yield* expectError(Effect.scoped(fs.open(`${r}/l`, { noFollow: true })), { tag: "BadResource", code: "ELOOP" })
        yield* Effect.scoped(fs.open(`${r}/l`))
        // a directory can be opened for reading, but not read
        yield* expectError(Effect.scoped(Effect.flatMap(fs.open(`${r}/d`), (file) => file.readAlloc(10))), {
          tag: "BadResource",
          code: "EISDIR",
          method: "readAlloc",
          syscall: "read"
        })
        const dirInfo = yield* Effect.scoped(Effect.flatMap(fs.open(`${r}/d`), (file) => file.stat))
        assert.strictEqual(dirInfo.type, "Directory")
      }))

    test("File: cursor, positional reads, append, truncate", (fs, r) =>
      Effect.scoped(
        Effect.gen(function* () {
          const file = yield* fs.open(`${r}/f`, { flag: "w+" })
          assert.strictEqual(yield* file.write(bytes("hello")), 5)
          yield* file.writeAll(bytes(" world"))
          assert.strictEqual(yield* file.seek(0n, "start"), 0n)
          const buf = new Uint8Array(5)
          assert.strictEqual(yield* file.read(buf), 5)
          assert.strictEqual(text(buf), "hello")
          // positional reads leave the cursor where it is
          assert.strictEqual(text(some(yield* file.readAlloc(5, { position: 6n }))), "world")
          assert.strictEqual(text(some(yield* file.readAlloc(1))), " ")
          assert.strictEqual(yield* file.seek(2n, "current"), 8n)
          assert.strictEqual(text(some(yield* file.readAlloc(100))), "rld")
          assert.isTrue(Option.isNone(yield* file.readAlloc(10)))
          assert.strictEqual(yield* file.read(new Uint8Array(4)), 0)
          assert.strictEqual(Number((yield* file.stat).size), 11)
          // writing past the end leaves a hole of zeros
          yield* file.seek(13n, "start")
          yield* file.writeAll(bytes("!"))
          assert.deepStrictEqual([...(yield* fs.readFile(`${r}/f`))].slice(10), [100, 0, 0, 33])
          // truncate clamps the cursor
          yield* file.truncate(3)
          assert.strictEqual(yield* file.write(bytes("X")), 1)
          assert.strictEqual(yield* fs.readFileString(`${r}/f`), "helX")
          yield* file.sync
          yield* expectError(file.seek(-1n, "start"), { tag: "BadArgument", method: "seek" })
          yield* expectError(file.read(new Uint8Array(1), { position: -1n }), { tag: "BadArgument", method: "read" })
          const appender = yield* fs.open(`${r}/f`, { flag: "a+" })
          yield* appender.writeAll(bytes("12"))
          yield* appender.writeAll(bytes("3"))
          // appends go to the end and do not move the cursor, which still reads from 0
          assert.strictEqual(text(some(yield* appender.readAlloc(100))), "helX123")
          const reader = yield* fs.open(`${r}/f`)
          yield* expectError(reader.write(bytes("x")), {
            tag: "Unknown",
            code: "EBADF",
            method: "write",
            syscall: "write"
          })
          yield* expectError(reader.truncate(0), { tag: "Unknown", code: "EINVAL", method: "truncate" })
          const writer = yield* fs.open(`${r}/f`, { flag: "a" })
          yield* expectError(writer.readAlloc(1), { tag: "Unknown", code: "EBADF", method: "readAlloc" })
        })
      ))

    test("an open file outlives its name", (fs, r) =>
      Effect.scoped(
        Effect.gen(function* () {
          yield* fs.writeFileString(`${r}/f`, "still here")
          const file = yield* fs.open(`${r}/f`, { flag: "r+" })
          yield* fs.remove(`${r}/f`)
          assert.strictEqual(text(some(yield* file.readAlloc(100))), "still here")
          assert.strictEqual(Number(some((yield* file.stat).nlink)), 0)
          yield* file.writeAll(bytes("!"))
          assert.isFalse(yield* fs.exists(`${r}/f`))
        })
      ))

    test("stream and sink", (fs, r) =>
      Effect.gen(function* () {
        yield* Stream.make(bytes("abc"), bytes("def"), bytes("ghi")).pipe(Stream.run(fs.sink(`${r}/s`)))
        assert.strictEqual(yield* fs.readFileString(`${r}/s`), "abcdefghi")
        const chunks = yield* Stream.runCollect(fs.stream(`${r}/s`, { chunkSize: 4 }))
        assert.deepStrictEqual([...chunks].map(text), ["abcd", "efgh", "i"])
        const part = yield* Stream.runCollect(fs.stream(`${r}/s`, { offset: 2, bytesToRead: 5, chunkSize: 2 }))
        assert.strictEqual([...part].map(text).join(""), "cdefg")
        yield* Stream.make(bytes("++")).pipe(Stream.run(fs.sink(`${r}/s`, { flag: "a" })))
        assert.strictEqual(yield* fs.readFileString(`${r}/s`), "abcdefghi++")
        yield* expectError(Stream.runDrain(fs.stream(`${r}/nope`)), { tag: "NotFound", code: "ENOENT", method: "open" })
      }))
  })
