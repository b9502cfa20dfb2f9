/**
 * The conformance suite of `Directory.Directories`: what the real layer does
 * on the kernel (in a private mount namespace, on a tmpfs sandbox, with real
 * tmpfs and bind mounts) and what the simulated host's must do the same way.
 * Names that are not UTF-8, links where directories were, mounts of the same
 * device, files created exclusively, the chroot semantics of resolution, and
 * a concurrent swapper (a real process on the real host, the adversary seam
 * on the simulated one) that never gets a resolution out of the root. The
 * resolution vectors follow the peers' suites (filepath-securejoin's
 * `OpenInRoot`, Go's `os.Root`, runc's): climbing `..`, absolute, relative,
 * chained, dangling and looping links, trailing slashes, NAME_MAX, PATH_MAX
 * and NUL; every layer must give the same answer for each.
 *
 * @since 0.2.0
 */
import { assert, layer } from "@effect/vitest"
import { Directory, FileName } from "@hostnode/core"
import * as Programs from "@hostnode/core/Programs"
import { Effect, FileSystem, type Layer, type Result, type Scope } from "effect"
import { peerTree } from "./internal/peerTree.ts"
import { plant } from "./internal/repave/trees.ts"
import { MountFixture } from "./MountFixture.ts"

const enc = (s: string) => FileName.encode(s)
/** `café` in Latin-1: not valid UTF-8. */
const latin1 = new Uint8Array([0x63, 0x61, 0x66, 0xe9])

/**
 * What a host can do for the suite beyond the services (each test that needs one says so).
 *
 * @category conformance
 * @since 0.2.0
 */
export interface Options<R = never> {
  /** Makes a FIFO at `path` (the real host: `mkfifo`); absent where the host has none. */
  readonly fifo?: ((path: string) => Effect.Effect<void, never, R>) | undefined
  /** How many descriptors this process has open (the real host: `/proc/self/fd`). */
  readonly openDescriptors?: Effect.Effect<number, never, R> | undefined
  /**
   * Swaps the directory `a` and the link `b` (both full paths) as fast as it
   * can until the scope closes: a real process, or the adversary seam.
   */
  readonly swapper?: ((a: string, b: string) => Effect.Effect<unknown, never, Scope.Scope | R>) | undefined
  /** How many resolutions the swapper test makes (default 2,000). */
  readonly swapRuns?: number | undefined
}

/** A canonical sandbox and a root handle on it. */
const setup = Effect.gen(function* () {
  const fx = yield* MountFixture
  const fs = yield* FileSystem.FileSystem
  const dirs = yield* Directory.Directories
  const box = yield* fs.realPath(yield* fx.sandbox).pipe(Effect.orDie)
  const root = yield* dirs.openRoot(box).pipe(Effect.orDie)
  return { fx, fs, dirs, box, root }
})

/** The reason of a failed effect, or "ok". */
const reasonOf = <A, R>(effect: Effect.Effect<A, Directory.DirectoryError, R>) =>
  Effect.map(Effect.result(effect), (r) => (r._tag === "Success" ? "ok" : r.failure.reason._tag))

/**
 * Registers the suite under `name`. `hostLayer` provides the `Directories`
 * under test, a `MountFixture` in the same mount namespace, and the
 * `FileSystem` that sees the same tree.
 *
 * @category conformance
 * @since 0.2.0
 */
export const suite = <R = never>(
  name: string,
  hostLayer: Layer.Layer<Directory.Directories | MountFixture | FileSystem.FileSystem | R>,
  options: Options<R> = {}
): void =>
  layer(hostLayer, { excludeTestServices: true })(`Directories conformance: ${name}`, (it) => {
    it.effect("names are bytes: one that is not UTF-8 is created, listed, stat'ed and removed exactly", () =>
      Effect.gen(function* () {
        const { fs, dirs, root } = yield* setup
        yield* dirs.makeDirectory(root, latin1, 0o755)
        const sub = yield* dirs.openDirectory(root, latin1)
        yield* Effect.scoped(dirs.openFile(sub, enc("inside"), { mode: "create", permissions: 0o644 }))
        const names = (yield* dirs.list(root)).map((e) => [...e.name])
        assert.deepStrictEqual(names, [[...latin1]])
        assert.strictEqual(sub.path.endsWith("/caf\udce9"), true)
        assert.strictEqual(FileName.display(sub.path).endsWith("/caf\\xe9"), true)
        // The FileSystem's strings cannot name it: Node decodes it as U+FFFD.
        const viaStrings = yield* fs.readDirectory(root.path)
        assert.deepStrictEqual(viaStrings, ["caf\ufffd"])
        assert.isFalse(yield* fs.exists(`${root.path}/caf\ufffd/inside`))
        assert.strictEqual((yield* dirs.stat(root, latin1)).type, "Directory")
        yield* dirs.unlink(sub, enc("inside"))
        yield* dirs.unlink(root, latin1, { directory: true })
        assert.deepStrictEqual(yield* dirs.list(root), [])
      }).pipe(Effect.scoped)
    )

    it.effect("stat does not follow a link, and says type, mode, owner, size, device and mount id", () =>
      Effect.gen(function* () {
        const { fx, fs, dirs, box, root } = yield* setup
        yield* fs.writeFileString(`${box}/f`, "12345")
        yield* fs.chmod(`${box}/f`, 0o640)
        yield* fs.chown(`${box}/f`, 1000, 1001)
        yield* fs.symlink("f", `${box}/l`)
        yield* fs.makeDirectory(`${box}/d`)
        const f = yield* dirs.stat(root, enc("f"))
        assert.deepInclude(f, { type: "File", mode: 0o640, uid: 1000, gid: 1001, size: 5 })
        assert.strictEqual((yield* dirs.stat(root, enc("l"))).type, "SymbolicLink")
        const self = yield* dirs.stat(root)
        assert.strictEqual(self.type, "Directory")
        assert.strictEqual(f.device, self.device)
        assert.strictEqual(f.mountId, self.mountId)
        assert.strictEqual(yield* reasonOf(dirs.stat(root, enc("nope"))), "NotFound")
        // A bind mount of a directory of the same device: same device, its own mount id.
        yield* fs.makeDirectory(`${box}/b`)
        yield* fx.bind(`${box}/d`, `${box}/b`)
        const bound = yield* dirs.stat(root, enc("b"))
        assert.strictEqual(bound.device, self.device)
        assert.notStrictEqual(bound.mountId, self.mountId)
      }).pipe(Effect.scoped)
    )

    it.effect("openDirectory never follows a link, and with sameMount refuses another mount, same device or not", () =>
      Effect.gen(function* () {
        const { fx, fs, dirs, box, root } = yield* setup
        yield* fs.makeDirectory(`${box}/d`)
        yield* fs.writeFileString(`${box}/d/x`, "x")
        yield* fs.symlink(`${box}/d`, `${box}/link`)
        yield* fs.writeFileString(`${box}/file`, "")
        yield* fs.makeDirectory(`${box}/t`)
        yield* fx.tmpfs(`${box}/t`)
        yield* fs.makeDirectory(`${box}/b`)
        yield* fx.bind(`${box}/d`, `${box}/b`)
        // O_DIRECTORY | O_NOFOLLOW: the kernel says ENOTDIR for a link.
        assert.strictEqual(yield* reasonOf(dirs.openDirectory(root, enc("link"))), "NotADirectory")
        assert.strictEqual(yield* reasonOf(dirs.openDirectory(root, enc("file"))), "NotADirectory")
        assert.strictEqual(yield* reasonOf(dirs.openDirectory(root, enc("nope"))), "NotFound")
        assert.strictEqual(yield* reasonOf(dirs.openDirectory(root, enc("d"), { sameMount: true })), "ok")
        assert.strictEqual(yield* reasonOf(dirs.openDirectory(root, enc("t"), { sameMount: true })), "OtherMount")
        assert.strictEqual(yield* reasonOf(dirs.openDirectory(root, enc("b"), { sameMount: true })), "OtherMount")
        // Without sameMount it enters the mount, and says so by the mount id.
        const t = yield* dirs.openDirectory(root, enc("t"))
        assert.notStrictEqual((yield* dirs.stat(t)).mountId, (yield* dirs.stat(root)).mountId)
        const b = yield* dirs.openDirectory(root, enc("b"))
        assert.deepStrictEqual(
          (yield* dirs.list(b)).map((e) => FileName.decode(e.name)),
          ["x"]
        )
      }).pipe(Effect.scoped)
    )

    it.effect("unlink removes a file, a link or an empty directory, and refuses what it must", () =>
      Effect.gen(function* () {
        const { fx, fs, dirs, box, root } = yield* setup
        yield* fs.writeFileString(`${box}/f`, "")
        yield* fs.symlink(`${box}/f`, `${box}/l`)
        yield* fs.makeDirectory(`${box}/d/e`, { recursive: true })
        yield* fs.makeDirectory(`${box}/m`)
        yield* fx.tmpfs(`${box}/m`)
        assert.strictEqual(yield* reasonOf(dirs.unlink(root, enc("d"))), "IsADirectory")
        assert.strictEqual(yield* reasonOf(dirs.unlink(root, enc("d"), { directory: true })), "NotEmpty")
        assert.strictEqual(yield* reasonOf(dirs.unlink(root, enc("f"), { directory: true })), "NotADirectory")
        assert.strictEqual(yield* reasonOf(dirs.unlink(root, enc("m"), { directory: true })), "Busy")
        assert.strictEqual(yield* reasonOf(dirs.unlink(root, enc("nope"))), "NotFound")
        yield* dirs.unlink(root, enc("l"))
        assert.isTrue(yield* fs.exists(`${box}/f`), "the link's target stays")
        yield* dirs.unlink(root, enc("f"))
        const d = yield* dirs.openDirectory(root, enc("d"))
        yield* dirs.unlink(d, enc("e"), { directory: true })
        yield* dirs.unlink(root, enc("d"), { directory: true })
        assert.deepStrictEqual((yield* dirs.list(root)).map((e) => FileName.decode(e.name)).sort(), ["m"])
      }).pipe(Effect.scoped)
    )

    it.effect("resolve: chroot semantics below the root, never out of it", () =>
      Effect.gen(function* () {
        const { fs, dirs, box, root } = yield* setup
        yield* fs.makeDirectory(`${box}/a/b`, { recursive: true })
        yield* fs.makeDirectory(`${box}/c`)
        yield* fs.writeFileString(`${box}/a/file`, "")
        yield* fs.symlink("/c", `${box}/a/abs`)
        yield* fs.symlink("../../../../../../..", `${box}/a/up`)
        yield* fs.symlink("x", `${box}/y`)
        yield* fs.symlink("y", `${box}/x`)
        const at = (path: string, o?: Parameters<Directory.Directories["resolve"]>[2]) =>
          Effect.map(dirs.resolve(root, path, o), (r) => (r.name === undefined ? `${r.path}/` : r.path))
        assert.strictEqual(yield* at("/a/abs/z"), "/c/z")
        assert.strictEqual(yield* at("/a/abs", { followFinal: true }), "/c")
        assert.strictEqual(yield* at("/a/abs"), "/a/abs")
        assert.strictEqual(yield* at("/a/up/a/b"), "/a/b")
        assert.strictEqual(yield* at("/../../a/b/.."), "/a/")
        assert.strictEqual(yield* at("/"), "//")
        assert.strictEqual(yield* at("/nope"), "/nope")
        assert.strictEqual(yield* reasonOf(dirs.resolve(root, "/nope/deeper")), "NotFound")
        assert.strictEqual(yield* reasonOf(dirs.resolve(root, "/a/file/x")), "NotADirectory")
        assert.strictEqual(yield* reasonOf(dirs.resolve(root, "/x/z")), "TooManyLinks")
        assert.strictEqual(yield* reasonOf(dirs.resolve(root, "/a/abs/z", { noSymlinks: true })), "SymbolicLink")
        assert.strictEqual(yield* at("/a/b/../b", { noSymlinks: true }), "/a/b")
        assert.strictEqual(yield* at("/a/b", { noSymlinks: true }), "/a/b")
        // The parent is a handle on the directory itself, not a name.
        const r = yield* dirs.resolve(root, "/a/abs/new")
        assert.strictEqual(r.parent.path, `${box}/c`)
        assert.deepStrictEqual([...(r.name ?? [])], [...enc("new")])
      }).pipe(Effect.scoped)
    )

    it.effect(
      "openRoot refuses a relative, empty or climbing root (InvalidName): never taken from the working directory",
      () =>
        Effect.gen(function* () {
          const { fs, dirs, box } = yield* setup
          yield* fs.makeDirectory(`${box}/a/b`, { recursive: true })
          const refused: Array<string> = []
          for (const path of ["", "a", "./a", "../a", `${box}/a/b/..`, `${box}/../x`, `${box}/a\u0000`]) {
            refused.push(yield* reasonOf(Effect.scoped(dirs.openRoot(path))))
          }
          assert.deepStrictEqual(refused, Array(7).fill("InvalidName"))
          assert.strictEqual(yield* reasonOf(Effect.scoped(dirs.openRoot(`${box}/a/./b/`))), "ok")
        }).pipe(Effect.scoped)
    )

    it.effect("a name that is not one component is refused by every call (InvalidName), never walked as a path", () =>
      Effect.gen(function* () {
        const { fs, dirs, box, root } = yield* setup
        yield* fs.makeDirectory(`${box}/a/b`, { recursive: true })
        yield* fs.writeFileString(`${box}/a/f`, "")
        const a = yield* dirs.openDirectory(root, enc("a"))
        const bad: ReadonlyArray<Uint8Array> = [
          enc(""),
          enc("."),
          enc(".."),
          enc("b/.."),
          enc("../a"),
          // The kernel would stop at the NUL and act on `f`.
          new Uint8Array([0x66, 0x00, 0x78]),
          enc("x".repeat(256))
        ]
        const reasons: Array<string> = []
        for (const name of bad) {
          reasons.push(
            yield* reasonOf(dirs.stat(a, name)),
            yield* reasonOf(dirs.openDirectory(a, name)),
            yield* reasonOf(dirs.openPath(a, name)),
            yield* reasonOf(dirs.readLink(a, name)),
            yield* reasonOf(dirs.unlink(a, name)),
            yield* reasonOf(dirs.unlink(a, name, { directory: true })),
            yield* reasonOf(dirs.makeDirectory(a, name, 0o755)),
            yield* reasonOf(dirs.symlink(a, name, enc("f"))),
            yield* reasonOf(dirs.rename(a, enc("f"), a, name)),
            yield* reasonOf(dirs.rename(a, name, a, enc("g"))),
            yield* reasonOf(dirs.chown(a, name, 1, 1)),
            yield* reasonOf(Effect.scoped(dirs.openFile(a, name, { mode: "read" }))),
            yield* reasonOf(Effect.scoped(dirs.openFile(a, name, { mode: "create", permissions: 0o600 })))
          )
          const all = yield* dirs.unlinkAll(a, [name])
          reasons.push(all[0]?.reason._tag ?? "ok")
        }
        assert.deepStrictEqual(
          reasons,
          reasons.map(() => "InvalidName")
        )
        // A link's target is a C string too.
        assert.strictEqual(yield* reasonOf(dirs.symlink(a, enc("l"), new Uint8Array([0x66, 0x00]))), "InvalidName")
        // Nothing changed.
        assert.deepStrictEqual((yield* fs.readDirectory(`${box}/a`)).sort(), ["b", "f"])
        assert.deepStrictEqual(yield* fs.readDirectory(`${box}/a/b`), [])
        assert.deepStrictEqual((yield* fs.readDirectory(box)).sort(), ["a"])
        // Nor did any owner: not of the directory, nor of the one above it.
        for (const st of [yield* dirs.stat(a, enc("f")), yield* dirs.stat(a), yield* dirs.stat(root)]) {
          assert.deepStrictEqual([st.uid, st.gid], [0, 0])
        }
      }).pipe(Effect.scoped)
    )

    it.effect("resolve: the peers' vectors (filepath-securejoin, os.Root, runc), the same on every layer", () =>
      Effect.gen(function* () {
        const { fs, dirs, box } = yield* setup
        const outside = `${box}/outside`
        yield* plant(`${box}/root`, peerTree(outside))
        yield* plant(box, { "outside/secret": "must survive", rootlink: { link: "root" } })
        const root = yield* dirs.openRoot(`${box}/root`)
        // A directory whose name is not UTF-8, with a file in it, and a link to it whose target is not UTF-8.
        yield* dirs.makeDirectory(root, latin1, 0o755)
        const sub = yield* dirs.openDirectory(root, latin1)
        yield* Effect.scoped(dirs.openFile(sub, enc("inside"), { mode: "create", permissions: 0o644 }))
        yield* dirs.symlink(root, enc("lat"), latin1)
        const rootId = Programs.identity(yield* dirs.stat(root))
        const cafe = FileName.decode(latin1)
        // Where a resolution ends (a trailing `/` when it is the directory itself, not a name in it), or why not.
        const at = (path: string, o?: Parameters<Directory.Directories["resolve"]>[2], base: Directory.Handle = root) =>
          Effect.gen(function* () {
            const r = yield* Effect.result(dirs.resolve(base, path, o))
            if (r._tag === "Failure") return `!${r.failure.reason._tag}`
            // Never out of the root: the directory it ended in is the root or below it, by `..` from the handle.
            const above = (yield* dirs.ancestors(r.success.parent)).map(Programs.identity)
            assert.include(above, rootId, `${JSON.stringify(path)} ended outside the root`)
            return r.success.name === undefined ? `${r.success.path}/` : r.success.path
          })
        const follow = { followFinal: true }
        const vectors: ReadonlyArray<
          readonly [string, Parameters<Directory.Directories["resolve"]>[2] | undefined, string]
        > = [
          // Complete paths, with repeated slashes, `.` and empty components.
          ["a", undefined, "/a"],
          ["/b/c/d/e/f", undefined, "/b/c/d/e/f"],
          ["b///././c////.//d/./././///e////.//./f//././././", undefined, "/b/c/d/e/f/"],
          ["//b//c//file", undefined, "/b/c/file"],
          ["", undefined, "//"],
          [".", undefined, "//"],
          ["b-file", follow, "/b/c/file"],
          ["b-file", undefined, "/b-file"],
          ["e/f", undefined, "/b/c/d/e/f"],
          // A trailing slash: the last component must be a directory, and a link there is followed.
          ["target/", undefined, "/target"],
          ["target//", undefined, "/target"],
          ["new/", undefined, "/new"],
          ["b/c/file/", undefined, "!NotADirectory"],
          ["b/c/file//", undefined, "!NotADirectory"],
          ["b/c/file/.", undefined, "!NotADirectory"],
          ["b/c/file/..", undefined, "!NotADirectory"],
          ["b/c/file/../foo/bar", undefined, "!NotADirectory"],
          ["b-file/", undefined, "!NotADirectory"],
          ["b-file/.", undefined, "!NotADirectory"],
          ["b-file/../foo", undefined, "!NotADirectory"],
          ["link1/target_abs/", undefined, "/target"],
          ["link1/target_abs", undefined, "/link1/target_abs"],
          // Non-lexical: `..` after a link climbs from where the link led.
          ["link1/target_abs", follow, "/target"],
          ["link1/target_rel", follow, "/target"],
          ["link1/target_rel/foo", undefined, "/target/foo"],
          ["link1/target_rel/../target/foo/bar/../baz", undefined, "!NotFound"],
          ["link2/link1_abs/target_abs/", undefined, "/target"],
          ["link2/link1_rel/target_rel//", undefined, "/target"],
          ["link2/link1_abs/../target", follow, "/target"],
          ["link2/link1_rel/../target/x", undefined, "/target/x"],
          ["link3/target_abs", follow, "/target"],
          ["link3/target_rel/foo", undefined, "/target/foo"],
          ["subdir/cousin_rel/test", undefined, "/cousinparent/cousin/test"],
          ["subdir/cousin_abs/test", undefined, "/cousinparent/cousin/test"],
          ["subdir/cousin_deep/test", undefined, "/cousinparent/cousin/test"],
          ["subdir/cousin_rel/../test", undefined, "/cousinparent/test"],
          ["subdir/cousin_deep/../test", undefined, "/cousinparent/test"],
          ["subdir/../test", undefined, "/test"],
          // Dangling links: the last component may be missing (something can be made there), nothing before it.
          ["a-fake1", undefined, "/a-fake1"],
          ["a-fake1", follow, "/a/fake"],
          ["c/a-fake1", follow, "!NotFound"],
          ["a-fake1/foo", undefined, "!NotFound"],
          ["a-fake1/../bar/baz", undefined, "!NotFound"],
          ["a-fake2", follow, "!NotFound"],
          ["a-fake3", follow, "!NotFound"],
          ["link3/deep_dangling1", follow, "/target/nonexist"],
          ["link3/deep_dangling1/..", undefined, "!NotFound"],
          ["dangling/a", follow, "/dangling/h/i/j/nonexistent"],
          ["dangling/b/c", follow, "/dangling/h/i/j/nonexistent"],
          ["dangling/e", follow, "/dangling/h/i/j/nonexistent"],
          ["dangling/a/x", undefined, "!NotFound"],
          ["dangling-file/a", follow, "!NotADirectory"],
          ["dangling-file/g", follow, "!NotADirectory"],
          ["dangling-file/d/e", follow, "!NotADirectory"],
          // Loops: at most 40 links, then a typed error, never a hang.
          ["loop/link", follow, "!TooManyLinks"],
          ["loop/link", undefined, "/loop/link"],
          ["loop/link/x", undefined, "!TooManyLinks"],
          ["loop/basic-loop1", follow, "!TooManyLinks"],
          ["loop/basic-loop2/", undefined, "!TooManyLinks"],
          ["loop/basic-loop3/x", undefined, "!TooManyLinks"],
          ["self", follow, "!TooManyLinks"],
          ["self/..", undefined, "!TooManyLinks"],
          ["/../../../../../../../../self/..", undefined, "!TooManyLinks"],
          ["/self/././..", undefined, "!TooManyLinks"],
          ["chain/l0", follow, "/target"],
          ["chain/l0/x", undefined, "/target/x"],
          ["chain/l0/", undefined, "/target"],
          ["chain/m0", follow, "!TooManyLinks"],
          ["chain/m0/x", undefined, "!TooManyLinks"],
          // Climbing: `..` clamps at the root, lexically and through links.
          ["../../../../a", undefined, "/a"],
          ["/../../b/../../a/..", undefined, "//"],
          ["up", follow, "//"],
          ["up/a", undefined, "/a"],
          ["up/../../up/../a/x", undefined, "/a/x"],
          ["b/c/d/out", follow, "/outside"],
          ["b/c/d/out/secret", undefined, "!NotFound"],
          ["rel-out", follow, "/outside"],
          ["rel-out/secret", undefined, "!NotFound"],
          // An absolute link to the sibling directory by its real path: resolved below the root, where it is not.
          ["abs-out", follow, "!NotFound"],
          ["abs-out/secret", undefined, "!NotFound"],
          ["abs-out-file", follow, "!NotFound"],
          // `/proc/self/root` and `/proc/self/cwd` stand-ins lead back to the root.
          ["proc/self/root/a", undefined, "/a"],
          ["proc/self/root", follow, "//"],
          ["proc/self/root/../../..", undefined, "//"],
          ["proc/self/cwd/x", undefined, "/a/x"],
          ["proc/self/cwd/../../../b/c", undefined, "/b/c"],
          // Names that are not UTF-8, in the path and in a link's target.
          [`/${cafe}/inside`, undefined, `/${cafe}/inside`],
          ["lat/inside", undefined, `/${cafe}/inside`],
          ["lat", follow, `/${cafe}`],
          ["lat/", undefined, `/${cafe}`],
          // NAME_MAX, PATH_MAX and NUL: typed errors before anything is looked at.
          [`/${"x".repeat(255)}`, undefined, `/${"x".repeat(255)}`],
          [`/a/${"x".repeat(255)}`, follow, `/a/${"x".repeat(255)}`],
          [`/${"x".repeat(256)}`, undefined, "!InvalidName"],
          [`/a/${"x".repeat(256)}`, undefined, "!InvalidName"],
          [`/${"x".repeat(256)}/../a`, undefined, "!InvalidName"],
          [`/${"./".repeat(2046)}zz`, undefined, "/zz"],
          [`/${"./".repeat(2046)}zzz`, undefined, "!InvalidName"],
          [`/a${"/.".repeat(3000)}/x`, undefined, "!InvalidName"],
          ["/a\u0000b", undefined, "!InvalidName"],
          ["/a/b\u0000/c", undefined, "!InvalidName"],
          // No links where none may be.
          ["e/f", { noSymlinks: true }, "!SymbolicLink"],
          ["up/a", { noSymlinks: true }, "!SymbolicLink"],
          ["../../b/c/../c/file", { noSymlinks: true }, "/b/c/file"]
        ]
        const got: Array<string> = []
        for (const [path, o] of vectors) got.push(yield* at(path, o))
        assert.deepStrictEqual(
          vectors.map(([path, o, _], i) => `${JSON.stringify(path)} ${JSON.stringify(o ?? {})} -> ${got[i]}`),
          vectors.map(([path, o, want]) => `${JSON.stringify(path)} ${JSON.stringify(o ?? {})} -> ${want}`)
        )
        // A root that is itself a link: resolution works below where it leads.
        const viaLink = yield* dirs.openRoot(`${box}/rootlink`)
        assert.strictEqual(Programs.identity(yield* dirs.stat(viaLink)), rootId)
        assert.strictEqual(yield* at("up/link1/target_rel/x", undefined, viaLink), "/target/x")
        assert.strictEqual(yield* at("rel-out", follow, viaLink), "/outside")
        // Making what is missing, through dangling links: always below the root.
        const make = { makeMissing: 0o755 }
        assert.strictEqual(yield* at("a-fake1/foo", make), "/a/fake/foo")
        assert.strictEqual(yield* at("rel-out/x/y", make), "/outside/x/y")
        assert.strictEqual(yield* at("abs-out/x", make), `${outside}/x`)
        assert.strictEqual(yield* at("dangling-file/g/x", make), "!NotADirectory")
        assert.strictEqual(yield* at("b/c/file/x/y", make), "!NotADirectory")
        assert.isTrue(yield* fs.exists(`${box}/root/a/fake`))
        assert.isTrue(yield* fs.exists(`${box}/root/outside/x`))
        assert.isTrue(yield* fs.exists(`${box}/root${outside}`))
        assert.deepStrictEqual((yield* fs.readDirectory(outside)).sort(), ["secret"])
        assert.strictEqual(yield* fs.readFileString(`${outside}/secret`), "must survive")
      }).pipe(Effect.scoped)
    )

    it.effect("files: created exclusively and never through a link, written and read on the open file", () =>
      Effect.gen(function* () {
        const { fs, dirs, box, root } = yield* setup
        yield* fs.writeFileString(`${box}/outside-target`, "not to be written")
        yield* fs.symlink(`${box}/outside-target`, `${box}/trap`)
        yield* fs.symlink(`${box}/missing`, `${box}/dangling`)
        assert.strictEqual(
          yield* reasonOf(dirs.openFile(root, enc("trap"), { mode: "create", permissions: 0o600 })),
          "Exists"
        )
        assert.strictEqual(
          yield* reasonOf(dirs.openFile(root, enc("dangling"), { mode: "create", permissions: 0o600 })),
          "Exists"
        )
        assert.isFalse(yield* fs.exists(`${box}/missing`), "nothing created through the dangling link")
        assert.strictEqual(yield* reasonOf(dirs.openFile(root, enc("trap"), { mode: "read" })), "SymbolicLink")
        assert.strictEqual(yield* reasonOf(dirs.openFile(root, enc("trap"), { mode: "write" })), "SymbolicLink")
        yield* Effect.scoped(
          Effect.gen(function* () {
            const f = yield* dirs.openFile(root, enc("new"), { mode: "create", permissions: 0o600 })
            yield* f.write(enc("hello world"), 0)
            yield* f.write(enc("HELLO"), 0)
            // chown first: it clears setuid and setgid, even for root (Linux since 2.2.13).
            yield* f.chown(1000, 1000)
            yield* f.chmod(0o4751)
            yield* f.setTimes(1_600_000_000_000_000_000n, 1_600_000_001_000_000_000n)
            yield* f.sync
            const st = yield* f.stat
            assert.deepInclude(st, { type: "File", size: 11, uid: 1000, gid: 1000 })
            assert.strictEqual(st.mtimeNs / 1_000_000_000n, 1_600_000_001n)
            yield* f.truncate(5)
          })
        )
        assert.strictEqual(yield* fs.readFileString(`${box}/new`), "HELLO")
        assert.strictEqual((yield* fs.stat(`${box}/new`)).mode & 0o7777, 0o4751)
        const read = yield* Effect.scoped(
          Effect.gen(function* () {
            const f = yield* dirs.openFile(root, enc("new"), { mode: "read" })
            const buf = new Uint8Array(16)
            const n = yield* f.read(buf, 1)
            return [n, FileName.decode(buf.subarray(0, n)), yield* f.read(buf, 5)] as const
          })
        )
        assert.deepStrictEqual(read, [4, "ELLO", 0])
        yield* fs.makeDirectory(`${box}/dir`)
        assert.strictEqual(yield* reasonOf(dirs.openFile(root, enc("dir"), { mode: "read" })), "WrongType")
        assert.strictEqual(yield* fs.readFileString(`${box}/outside-target`), "not to be written")
      }).pipe(Effect.scoped)
    )

    it.effect(
      "the batches do what their calls one by one do: statAll, readFiles, hashFiles, copyFiles, renameAll",
      () =>
        Effect.gen(function* () {
          const { fs, dirs, box, root } = yield* setup
          yield* fs.makeDirectory(`${box}/d`)
          yield* fs.writeFileString(`${box}/d/a`, "alpha")
          yield* fs.writeFileString(`${box}/d/b`, "bravo!")
          yield* fs.writeFileString(`${box}/d/big`, "x".repeat(100))
          yield* fs.symlink(`${box}/d/a`, `${box}/d/link`)
          yield* fs.makeDirectory(`${box}/d/sub`)
          const d = yield* dirs.openDirectory(root, enc("d"))
          // statAll: each name's stat (not followed) or its error, in order.
          const names = ["a", "missing", "link", "sub"].map(enc)
          const stats = yield* dirs.statAll(d, [...names, enc("x/y")])
          for (const [i, n] of names.entries()) {
            const one = yield* Effect.result(dirs.stat(d, n))
            const batch = stats[i]
            if (one._tag === "Success") assert.deepStrictEqual(batch, one.success)
            else assert.strictEqual((batch as Directory.DirectoryError).reason._tag, one.failure.reason._tag)
          }
          assert.strictEqual((stats[1] as Directory.DirectoryError).reason._tag, "NotFound")
          assert.strictEqual((stats[4] as Directory.DirectoryError).reason._tag, "InvalidName")
          // readFiles: whole files with the open file's stat; a link or a directory is the error openFile gives;
          // it stops before the file that would take it past the bytes asked for.
          const read = yield* dirs.readFiles(d, ["a", "link", "sub", "missing", "b", "big"].map(enc), 20)
          assert.strictEqual(read.length, 5)
          const ok = (k: number) => read[k] as Programs.ReadFile
          const err = (k: number) => (read[k] as Directory.DirectoryError).reason._tag
          assert.strictEqual(FileName.decode(ok(0).bytes), "alpha")
          assert.deepInclude(ok(0).stat, { type: "File", size: 5 })
          assert.deepStrictEqual([err(1), err(2), err(3)], ["SymbolicLink", "WrongType", "NotFound"])
          assert.strictEqual(FileName.decode(ok(4).bytes), "bravo!")
          assert.deepStrictEqual(yield* dirs.readFiles(d, [enc("big")], 99), [])
          // hashFiles, where the layer has it: what readFiles reads, hashed where it is read (SHA-256 of the bytes
          // above), the same errors in the same places, stopping where readFiles stops.
          if (dirs.hashFiles !== undefined) {
            const hashed = yield* dirs.hashFiles(d, ["a", "link", "sub", "missing", "b", "big", "a"].map(enc), 20)
            assert.strictEqual(hashed.length, 5)
            const h = (k: number) => hashed[k] as Programs.HashedFile
            assert.deepInclude(h(0), {
              size: 5,
              sha256: "8ed3f6ad685b959ead7022518e1af76cd816f8e8ec7ccdda1ed4018e8f2223f8"
            })
            assert.deepInclude(h(0).stat, { type: "File", size: 5 })
            assert.deepStrictEqual(
              [1, 2, 3].map((k) => (hashed[k] as Directory.DirectoryError).reason._tag),
              ["SymbolicLink", "WrongType", "NotFound"]
            )
            assert.deepInclude(h(4), {
              size: 6,
              sha256: "9b79d8af8bb7faa6c1f7f235d0ada0ac29a8edde346e181581ffc3c596eb62fb"
            })
            assert.deepStrictEqual(yield* dirs.hashFiles(d, [enc("big")], 99), [])
            assert.strictEqual(
              ((yield* dirs.hashFiles(d, [enc("a"), enc("x/y")], 99))[1] as Directory.DirectoryError).reason._tag,
              "InvalidName"
            )
          }
          // copyFiles: each made exclusively from the source's bytes, with its owner, mode and times; stops at the
          // first that fails (here a name that is there, a link), leaving the ones after it untried.
          yield* fs.writeFileString(`${box}/source`, "0123456789")
          const source = yield* dirs.openFile(root, enc("source"), { mode: "read" })
          const file = (name: string, offset: number, size: number) => ({
            dir: d,
            name: enc(name),
            permissions: 0o600,
            offset,
            size,
            mode: 0o640,
            uid: 1000,
            gid: 1001,
            times: { atimeNs: 1_600_000_000_000_000_000n, mtimeNs: 1_600_000_002_000_000_000n }
          })
          const copied = yield* dirs.copyFiles(source, [
            file("c1", 2, 3),
            file("c2", 0, 10),
            file("link", 0, 1),
            file("c3", 0, 1)
          ])
          assert.strictEqual(copied.done, 2)
          assert.strictEqual(copied.failure?.reason._tag, "Exists")
          assert.strictEqual(yield* fs.readFileString(`${box}/d/c1`), "234")
          assert.strictEqual(yield* fs.readFileString(`${box}/d/c2`), "0123456789")
          assert.isFalse(yield* fs.exists(`${box}/d/c3`))
          assert.strictEqual(yield* fs.readFileString(`${box}/d/a`), "alpha", "nothing written through the link")
          const c1 = yield* dirs.stat(d, enc("c1"))
          assert.deepInclude(c1, { mode: 0o640, uid: 1000, gid: 1001, size: 3 })
          assert.strictEqual(c1.mtimeNs / 1_000_000_000n, 1_600_000_002n)
          const short = yield* dirs.copyFiles(source, [file("c4", 8, 5)])
          assert.strictEqual(short.done, 0)
          assert.isDefined(short.failure, "a source that ends before the file's bytes fails it")
          // renameAll: in order, stops at the first that fails.
          const moved = yield* dirs.renameAll([
            { from: d, fromName: enc("c1"), to: root, toName: enc("r1") },
            { from: d, fromName: enc("missing"), to: d, toName: enc("r2") },
            { from: d, fromName: enc("c2"), to: d, toName: enc("r3") }
          ])
          assert.strictEqual(moved.done, 1)
          assert.strictEqual(moved.failure?.reason._tag, "NotFound")
          assert.strictEqual(yield* fs.readFileString(`${box}/r1`), "234")
          assert.isTrue(yield* fs.exists(`${box}/d/c2`))
          assert.deepStrictEqual(yield* dirs.renameAll([]), { done: 0 })
        }).pipe(Effect.scoped)
    )

    it.effect(
      "openDirectories does what openDirectory, list and statAll do one by one, for many directories at once",
      () =>
        Effect.gen(function* () {
          const { fx, fs, dirs, box, root } = yield* setup
          yield* fs.makeDirectory(`${box}/d/s1/deep`, { recursive: true })
          yield* fs.writeFileString(`${box}/d/s1/a`, "alpha")
          yield* fs.symlink(`${box}/d/s1/a`, `${box}/d/s1/link`)
          yield* fs.makeDirectory(`${box}/d/s2`)
          yield* fs.writeFileString(`${box}/d/file`, "")
          yield* fs.symlink(`${box}/d/s1`, `${box}/d/dirlink`)
          yield* fs.makeDirectory(`${box}/d/t`)
          yield* fx.tmpfs(`${box}/d/t`)
          yield* fs.writeFileString(`${box}/d/t/on-tmpfs`, "")
          const d = yield* dirs.openDirectory(root, enc("d"))
          const asked = [
            { name: enc("s1"), stat: ["a", "missing", "link", "deep", "x/y"].map(enc) },
            { name: enc("file"), stat: [enc("a")] },
            { name: enc("dirlink"), stat: [] },
            { name: enc("missing"), stat: [] },
            { name: enc("t"), stat: [enc("on-tmpfs")] },
            { name: enc("x/y"), stat: [] },
            { name: enc("s2"), stat: [enc("a")] }
          ]
          const listed = (es: ReadonlyArray<Programs.Entry>) =>
            es.map((e) => `${FileName.decode(e.name)} ${e.type}`).sort()
          // What is not an access time (a listing may change a directory's).
          const kept = (x: Directory.Stat | Directory.DirectoryError) =>
            x instanceof Directory.DirectoryError ? x.reason._tag : { ...x, atimeNs: 0n }
          for (const sameMount of [true, false]) {
            const opened = yield* dirs.openDirectories(d, asked, { sameMount })
            assert.strictEqual(opened.length, asked.length)
            for (const [i, a] of asked.entries()) {
              const batch = opened[i]
              const one = yield* Effect.result(dirs.openDirectory(d, a.name, { sameMount }))
              if (one._tag === "Failure") {
                assert.instanceOf(batch, Directory.DirectoryError, FileName.decode(a.name))
                assert.strictEqual(
                  (batch as Directory.DirectoryError).reason._tag,
                  one.failure.reason._tag,
                  FileName.decode(a.name)
                )
                continue
              }
              const o = batch as Programs.OpenedDirectory
              assert.deepStrictEqual(listed(o.entries), listed(yield* dirs.list(one.success)))
              assert.deepStrictEqual(o.stats.map(kept), (yield* dirs.statAll(one.success, a.stat)).map(kept))
              // The handle is that directory, and is one: it lists and stats as the one opened alone.
              assert.deepStrictEqual(kept(yield* dirs.stat(o.handle)), kept(yield* dirs.stat(one.success)))
              assert.deepStrictEqual(listed(yield* dirs.list(o.handle)), listed(o.entries))
            }
            const tag = (i: number) => (opened[i] as Directory.DirectoryError).reason._tag
            assert.deepStrictEqual(
              [tag(1), tag(2), tag(3), tag(5)],
              ["NotADirectory", "NotADirectory", "NotFound", "InvalidName"]
            )
            if (sameMount) assert.strictEqual(tag(4), "OtherMount")
            else assert.deepStrictEqual(listed((opened[4] as Programs.OpenedDirectory).entries), ["on-tmpfs File"])
            const s1 = opened[0] as Programs.OpenedDirectory
            assert.deepStrictEqual(listed(s1.entries), ["a File", "deep Directory", "link SymbolicLink"])
            assert.deepStrictEqual(
              s1.stats.map((x) => (x instanceof Directory.DirectoryError ? x.reason._tag : x.type)),
              ["File", "NotFound", "SymbolicLink", "Directory", "InvalidName"]
            )
            assert.strictEqual(
              ((opened[6] as Programs.OpenedDirectory).stats[0] as Directory.DirectoryError).reason._tag,
              "NotFound"
            )
          }
          assert.deepStrictEqual(yield* dirs.openDirectories(d, []), [])
        }).pipe(Effect.scoped)
    )

    it.effect(
      "ancestors: where a directory is now, nearest first, up to the process's root, across mounts, as openParent and stat say one by one",
      () =>
        Effect.gen(function* () {
          const { fx, fs, dirs, box, root } = yield* setup
          yield* fs.makeDirectory(`${box}/d/a/b`, { recursive: true })
          yield* fs.makeDirectory(`${box}/d/t`)
          yield* fx.tmpfs(`${box}/d/t`)
          yield* fs.makeDirectory(`${box}/d/t/sub`)
          const open = (...names: ReadonlyArray<string>) =>
            Effect.gen(function* () {
              let at = root
              for (const n of names) at = yield* dirs.openDirectory(at, enc(n))
              return at
            })
          const ids = (sts: ReadonlyArray<Directory.Stat>) => sts.map((st) => `${Programs.identity(st)}@${st.mountId}`)
          // The oracle: `..` and a stat at a time, until `..` is the directory itself (the process's root).
          const oneByOne = (dir: Directory.Handle) =>
            Effect.gen(function* () {
              const out = [yield* dirs.stat(dir)]
              let here = dir
              for (;;) {
                const up = yield* dirs.openParent(here)
                const st = yield* dirs.stat(up)
                if (ids([st])[0] === ids([out[out.length - 1] as Directory.Stat])[0]) return out
                out.push(st)
                here = up
              }
            })
          const top = ids([yield* dirs.stat(yield* dirs.openRoot("/"))])[0]
          const b = yield* open("d", "a", "b")
          const chain = yield* dirs.ancestors(b)
          assert.deepStrictEqual(ids(chain), ids(yield* oneByOne(b)))
          const [bId, aId, dId, boxId] = ids([
            yield* dirs.stat(b),
            yield* dirs.stat(yield* open("d", "a")),
            yield* dirs.stat(yield* open("d")),
            yield* dirs.stat(root)
          ])
          assert.deepStrictEqual(ids(chain).slice(0, 4), [bId, aId, dId, boxId])
          assert.strictEqual(ids(chain).at(-1), top)
          assert.strictEqual(new Set(ids(chain)).size, chain.length, "no directory twice")
          // Across the tmpfs: its root (another mount) and then the directory it is mounted on.
          const sub = yield* open("d", "t", "sub")
          const below = yield* dirs.ancestors(sub)
          assert.deepStrictEqual(ids(below), ids(yield* oneByOne(sub)))
          assert.notStrictEqual(below[1]?.mountId, below[2]?.mountId)
          assert.strictEqual(ids(below)[2], dId)
          // Moved after it was opened: where it is now, not the path that reached it.
          yield* fs.rename(`${box}/d/a`, `${box}/moved`)
          assert.deepStrictEqual(ids(yield* dirs.ancestors(b)).slice(0, 3), [bId, aId, boxId])
          // Removed after it was opened: the kernel still knows the parent it was removed from (`..` of a
          // removed directory), so the chain is the same as one by one.
          yield* fs.remove(`${box}/moved/b`, { recursive: true })
          const outcome = (r: Result.Result<ReadonlyArray<Directory.Stat>, Directory.DirectoryError>) =>
            r._tag === "Success" ? ids(r.success) : r.failure.reason._tag
          assert.deepStrictEqual(
            outcome(yield* Effect.result(dirs.ancestors(b))),
            outcome(yield* Effect.result(oneByOne(b)))
          )
        }).pipe(Effect.scoped)
    )

    if (options.fifo !== undefined) {
      const fifo = options.fifo
      it.effect("a FIFO at a name is refused (WrongType) without hanging the open", () =>
        Effect.gen(function* () {
          const { dirs, box, root } = yield* setup
          yield* fifo(`${box}/pipe`)
          assert.strictEqual(yield* reasonOf(dirs.openFile(root, enc("pipe"), { mode: "read" })), "WrongType")
          assert.strictEqual(yield* reasonOf(dirs.openFile(root, enc("pipe"), { mode: "write" })), "WrongType")
          assert.strictEqual((yield* dirs.stat(root, enc("pipe"))).type, "FIFO")
        }).pipe(Effect.scoped)
      )
    }

    it.effect("rename within and between handles, noReplace, and not across mounts; links and their owners", () =>
      Effect.gen(function* () {
        const { fx, fs, dirs, box, root } = yield* setup
        yield* fs.makeDirectory(`${box}/a`)
        yield* fs.makeDirectory(`${box}/b`)
        yield* fs.makeDirectory(`${box}/m`)
        yield* fx.tmpfs(`${box}/m`)
        yield* fs.writeFileString(`${box}/a/one`, "1")
        yield* fs.writeFileString(`${box}/a/two`, "2")
        const a = yield* dirs.openDirectory(root, enc("a"))
        const b = yield* dirs.openDirectory(root, enc("b"))
        const m = yield* dirs.openDirectory(root, enc("m"))
        assert.strictEqual(yield* reasonOf(dirs.rename(a, enc("one"), a, enc("two"), { noReplace: true })), "Exists")
        yield* dirs.rename(a, enc("one"), b, enc("moved"))
        yield* dirs.rename(a, enc("two"), a, enc("three"))
        assert.strictEqual(yield* reasonOf(dirs.rename(b, enc("moved"), m, enc("x"))), "CrossDevice")
        assert.strictEqual(yield* fs.readFileString(`${box}/b/moved`), "1")
        assert.strictEqual(yield* fs.readFileString(`${box}/a/three`), "2")
        yield* dirs.symlink(b, latin1, enc("/somewhere/caf\udce9"))
        assert.deepStrictEqual([...(yield* dirs.readLink(b, latin1))], [...enc("/somewhere/caf\udce9")])
        yield* dirs.chown(b, latin1, 1234, 5678)
        const link = yield* dirs.stat(b, latin1)
        assert.deepInclude(link, { type: "SymbolicLink", uid: 1234, gid: 5678 })
        yield* dirs.chmod(b, 0o700)
        yield* dirs.chown(b, undefined, 42, 43)
        assert.deepInclude(yield* dirs.stat(root, enc("b")), { mode: 0o700, uid: 42, gid: 43 })
        yield* dirs.makeDirectory(b, enc("made"), 0o750)
        assert.strictEqual(yield* reasonOf(dirs.makeDirectory(b, enc("made"), 0o750)), "Exists")
        yield* dirs.sync(b)
        yield* dirs.syncFileSystem(b)
      }).pipe(Effect.scoped)
    )

    if (options.openDescriptors !== undefined) {
      const count = options.openDescriptors
      it.effect("every handle and file closes with its scope", () =>
        Effect.gen(function* () {
          const { fs, dirs, box, root } = yield* setup
          yield* fs.makeDirectory(`${box}/d/e`, { recursive: true })
          const before = yield* count
          yield* Effect.scoped(
            Effect.gen(function* () {
              for (let i = 0; i < 50; i++) {
                const d = yield* dirs.openDirectory(root, enc("d"))
                yield* dirs.openPath(d, enc("e"))
                yield* dirs.resolve(root, "/d/e/x")
                yield* dirs.openFile(d, enc(`f${i}`), { mode: "create", permissions: 0o600 })
                yield* dirs.openDirectories(root, [
                  { name: enc("d"), stat: [enc("e")] },
                  { name: enc("nope"), stat: [] }
                ])
              }
              assert.isAtLeast(yield* count, before + 250)
            })
          )
          assert.strictEqual(yield* count, before)
        }).pipe(Effect.scoped)
      )
    }

    if (options.swapper !== undefined) {
      const swapper = options.swapper
      const runs = options.swapRuns ?? 2000
      it.effect(
        "resolutions while a directory and a link out of the root swap names never leave the root",
        () =>
          Effect.gen(function* () {
            const { fs, dirs, box } = yield* setup
            yield* fs.makeDirectory(`${box}/root/v/d`, { recursive: true })
            yield* fs.makeDirectory(`${box}/outside/secret`, { recursive: true })
            yield* fs.writeFileString(`${box}/root/v/d/ours`, "ours")
            yield* fs.writeFileString(`${box}/outside/secret/ours`, "not ours")
            yield* fs.symlink(`${box}/outside/secret`, `${box}/root/v/l`)
            const root = yield* dirs.openRoot(`${box}/root`)
            const inside = (yield* dirs.stat(root)).mountId
            const secret = yield* fs.stat(`${box}/outside/secret`)
            let outsideSeen = 0
            yield* Effect.scoped(
              Effect.gen(function* () {
                yield* swapper(`${box}/root/v/d`, `${box}/root/v/l`)
                for (let i = 0; i < runs; i++) {
                  const r = yield* Effect.result(
                    Effect.scoped(
                      Effect.gen(function* () {
                        const at = yield* dirs.resolve(root, i % 2 === 0 ? "/v/d/ours" : "/v/l/ours")
                        const st = yield* dirs.stat(at.parent)
                        return { st, path: at.path }
                      })
                    )
                  )
                  if (r._tag === "Failure") continue
                  // The directory a resolution ended in is never the one outside the root.
                  if (r.success.st.inode === BigInt(secret.ino._tag === "Some" ? secret.ino.value : -1)) outsideSeen++
                  assert.strictEqual(r.success.st.mountId, inside)
                  assert.isTrue(r.success.path.startsWith("/"), r.success.path)
                }
              })
            )
            assert.strictEqual(outsideSeen, 0)
            assert.strictEqual(yield* fs.readFileString(`${box}/outside/secret/ours`), "not ours")
          }).pipe(Effect.scoped),
        { timeout: 120_000 }
      )
    }
  })
