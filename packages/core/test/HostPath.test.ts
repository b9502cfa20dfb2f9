import { NodeServices } from "@effect/platform-node"
import { assert, describe, it, layer } from "@effect/vitest"
import { HostPath } from "@hostnode/core"
import * as Layers from "@hostnode/core/Layers"
import { Lexical } from "@hostnode/core/Programs"
import { MemoryHost } from "@hostnode/test"
import { Effect, FileSystem, type Layer, Schema } from "effect"

describe("HostPath (lexical)", () => {
  it("joins below the root and cleans `..` against the host path", () => {
    assert.strictEqual(Lexical.join("/r", "/etc/cni/net.d"), "/r/etc/cni/net.d")
    assert.strictEqual(Lexical.join("/r/", "etc//cni/./net.d/"), "/r/etc/cni/net.d")
    assert.strictEqual(Lexical.join("/r", "/../../etc"), "/r/etc")
    assert.strictEqual(Lexical.join("/r", "/a/../../.."), "/r")
    assert.strictEqual(Lexical.join("", "/etc/x"), "/etc/x")
    assert.strictEqual(Lexical.join("/", "../etc"), "/etc")
  })
  it("clean is Go's path.Clean for rooted paths", () => {
    assert.strictEqual(Lexical.clean(""), "/")
    assert.strictEqual(Lexical.clean("/a/b/../c/."), "/a/c")
    assert.strictEqual(Lexical.clean("/var/lib/kubelet/"), "/var/lib/kubelet")
  })
  // A reference clean without the fast path, to check the fast path against.
  const referenceClean = (p: string) => {
    const out: Array<string> = []
    for (const c of p.split("/")) {
      if (c === "" || c === ".") continue
      if (c === "..") out.pop()
      else out.push(c)
    }
    return `/${out.join("/")}`
  }
  it.prop(
    "clean agrees with a reference implementation and is idempotent",
    [Schema.Array(Schema.Literals(["/", "a", ".", "..", "//", ".a", "..b", "a."]))],
    ([parts]) => {
      const p = parts.join("")
      assert.strictEqual(Lexical.clean(p), referenceClean(p), JSON.stringify(p))
      assert.strictEqual(Lexical.clean(Lexical.clean(p)), Lexical.clean(p))
    },
    { arbitrary: { runs: 1000 } }
  )

  it("relative and isWithin respect path boundaries", () => {
    assert.strictEqual(Lexical.relative("/r", "/r/a"), "/a")
    assert.strictEqual(Lexical.relative("/r", "/r"), "/")
    assert.isUndefined(Lexical.relative("/r", "/r2/a"))
    assert.isTrue(Lexical.isWithin("/", "/anything"))
    assert.isFalse(Lexical.isWithin("/var/lib/kubelet", "/var/lib/kubelet2"))
  })
  it("isRealRoot", () => {
    assert.isTrue(Lexical.isRealRoot(""))
    assert.isTrue(Lexical.isRealRoot("/"))
    assert.isTrue(Lexical.isRealRoot("//"))
    assert.isFalse(Lexical.isRealRoot("/tmp/x"))
  })
})

// A layout used by the examples and the property: below a temporary directory,
// `root/` is the host root and `outside/` holds a secret no resolution may reach.
const makeLayout = (links: Readonly<Record<string, string>>) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const tmp = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-hostpath-" })
    const root = `${tmp}/root`
    yield* fs.makeDirectory(`${root}/a/b`, { recursive: true })
    yield* fs.makeDirectory(`${root}/c`, { recursive: true })
    yield* fs.writeFileString(`${root}/f`, "file")
    yield* fs.makeDirectory(`${tmp}/outside`, { recursive: true })
    yield* fs.writeFileString(`${tmp}/outside/secret`, "secret")
    for (const [at, target] of Object.entries(links)) yield* fs.symlink(target, `${root}/${at}`)
    return { tmp, root }
  })

const examples = (name: string, fsLayer: Layer.Layer<FileSystem.FileSystem>) =>
  layer(fsLayer)(`HostPath.resolve on ${name}`, (it) => {
    it.effect("an absolute link target is taken relative to the root", () =>
      Effect.gen(function* () {
        const { root } = yield* makeLayout({ "a/up": "/c", "a/b/etc": "/" })
        assert.strictEqual(yield* HostPath.resolve(yield* HostPath.decodeRoot(root), "/a/up/x"), `${root}/c/x`)
        assert.strictEqual(yield* HostPath.resolve(yield* HostPath.decodeRoot(root), "/a/b/etc/../../f"), `${root}/f`)
      })
    )
    it.effect("relative targets and `..` never climb above the root", () =>
      Effect.gen(function* () {
        const { root } = yield* makeLayout({ "a/out": "../../../outside/secret", l: "../../../../.." })
        assert.strictEqual(
          yield* HostPath.resolve(yield* HostPath.decodeRoot(root), "/a/out"),
          `${root}/outside/secret`
        )
        assert.strictEqual(yield* HostPath.resolve(yield* HostPath.decodeRoot(root), "/l/a"), `${root}/a`)
        assert.strictEqual(yield* HostPath.resolve(yield* HostPath.decodeRoot(root), "../../.."), root)
      })
    )
    it.effect("a missing component then `..` still resolves what exists", () =>
      Effect.gen(function* () {
        const { root } = yield* makeLayout({ "a/evil": "/c" })
        assert.strictEqual(yield* HostPath.resolve(yield* HostPath.decodeRoot(root), "/a/missing/../evil"), `${root}/c`)
        assert.strictEqual(yield* HostPath.resolve(yield* HostPath.decodeRoot(root), "/f/x"), `${root}/f/x`)
      })
    )
    it.effect("followFinal: false keeps a final link unresolved but resolves its parents", () =>
      Effect.gen(function* () {
        const { root } = yield* makeLayout({ "a/link": "/c", "a/b/up": "/a" })
        assert.strictEqual(
          yield* HostPath.resolve(yield* HostPath.decodeRoot(root), "/a/b/up/link", { followFinal: false }),
          `${root}/a/link`
        )
        assert.strictEqual(yield* HostPath.resolve(yield* HostPath.decodeRoot(root), "/a/b/up/link"), `${root}/c`)
      })
    )
    it.effect("a loop is a HostPathError naming the root and the path", () =>
      Effect.gen(function* () {
        const { root } = yield* makeLayout({ x: "y", y: "x", self: "self" })
        const e = yield* Effect.flip(HostPath.resolve(yield* HostPath.decodeRoot(root), "/x/z"))
        assert.strictEqual(e._tag, "HostPathError")
        assert.strictEqual(e.reason._tag, "SymlinkLoop")
        assert.strictEqual(e.root, root)
        assert.strictEqual(e.path, "/x/z")
        assert.include(e.message, root)
        const s = yield* Effect.flip(HostPath.resolve(yield* HostPath.decodeRoot(root), "/self"))
        assert.strictEqual(s.reason._tag, "SymlinkLoop")
      })
    )
    it.effect("a chain longer than 40 links is TooManyLinks", () =>
      Effect.gen(function* () {
        const links: Record<string, string> = {}
        for (let i = 0; i < 45; i++) links[`l${i}`] = `l${i + 1}`
        const { root } = yield* makeLayout(links)
        const e = yield* Effect.flip(HostPath.resolve(yield* HostPath.decodeRoot(root), "/l0"))
        assert.strictEqual(e.reason._tag, "TooManyLinks")
        // 40 links are fine
        assert.strictEqual(yield* HostPath.resolve(yield* HostPath.decodeRoot(root), "/l5"), `${root}/l45`)
      })
    )
    it.effect("the root is a decoded HostRoot: a raw, relative or unclean root never reaches the walk", () =>
      Effect.gen(function* () {
        const { root } = yield* makeLayout({})
        // @ts-expect-error a string is not a HostRoot: only decodeRoot makes one
        assert.isTrue(Effect.isEffect(HostPath.resolve(root, "/c")))
        for (const raw of ["foo/..", "../tmp", "a"]) {
          const e = yield* Effect.flip(HostPath.decodeRoot(raw))
          assert.strictEqual(e.reason._tag, "NotAbsolute", raw)
        }
        // Unclean: `.` and slashes are cleaned, a `..` is refused (it names a place nobody wrote).
        assert.strictEqual(yield* HostPath.resolve(yield* HostPath.decodeRoot(`${root}/.//`), "/c"), `${root}/c`)
        assert.strictEqual((yield* Effect.flip(HostPath.decodeRoot(`${root}/a/..`))).reason._tag, "InvalidPath")
        // Passed anyway, without types: decoded by the same rules, an empty root refused, never used raw.
        const untyped = (given: string) => HostPath.resolve(given as unknown as HostPath.HostRoot, "/c")
        for (const [raw, reason] of [
          ["foo/..", "NotAbsolute"],
          ["", "InvalidPath"],
          [`${root}/a/..`, "InvalidPath"]
        ]) {
          assert.strictEqual((yield* Effect.flip(untyped(raw ?? ""))).reason._tag, reason, raw)
        }
        assert.strictEqual(yield* untyped(root), `${root}/c`)
      })
    )
    it.effect("a NUL byte is InvalidPath", () =>
      Effect.gen(function* () {
        const { root } = yield* makeLayout({})
        const e = yield* Effect.flip(HostPath.resolve(yield* HostPath.decodeRoot(root), "/a\0b"))
        assert.strictEqual(e.reason._tag, "InvalidPath")
      })
    )
  })

// The property: for random symlink layouts (absolute, relative, loops, links to
// links) and random paths full of `..`, the result is inside the root, or the
// resolution is refused with a HostPathError. When the result exists, the real
// file system agrees that it lies inside the root (no link was left unresolved).
const Component = Schema.Literals(["a", "b", "c", "f", "l1", "l2", "l3", "..", ".", "missing"])
const Target = Schema.Literals([
  "/",
  "/a",
  "/a/b",
  "/l2",
  "/missing/../a",
  "..",
  "../..",
  "../../..",
  "../../../outside",
  "../../../outside/secret",
  "/../../outside",
  "a",
  "b/../..",
  "l1",
  "l2",
  "l3",
  ".",
  "f",
  "c/../../.."
])
const Layout = Schema.Struct({ l1: Target, l2: Target, l3: Target })
const PathArb = Schema.Array(Component).check(Schema.isMaxLength(8))

export const hostPathProperty = (name: string, fsLayer: Layer.Layer<FileSystem.FileSystem>) =>
  layer(fsLayer)(`HostPath.resolve property on ${name}`, (it) => {
    it.effect.prop(
      "every resolution stays inside the root or is refused",
      { layout: Layout, path: PathArb, followFinal: Schema.Boolean },
      ({ layout, path, followFinal }) =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const { root } = yield* makeLayout({ l1: layout.l1, "a/l2": layout.l2, "a/b/l3": layout.l3 })
          const result = yield* Effect.result(
            HostPath.resolve(yield* HostPath.decodeRoot(root), path.join("/"), { followFinal })
          )
          if (result._tag === "Failure") {
            assert.oneOf(result.failure.reason._tag, ["SymlinkLoop", "TooManyLinks"])
            return
          }
          const resolved = result.success
          assert.isTrue(Lexical.isWithin(root, resolved), `${resolved} escapes ${root}`)
          const checked = followFinal || resolved === root ? resolved : resolved.slice(0, resolved.lastIndexOf("/"))
          const exists = yield* fs.exists(checked).pipe(Effect.orElseSucceed(() => false))
          if (exists) {
            const real = yield* fs.realPath(checked)
            assert.isTrue(Lexical.isWithin(root, real), `${checked} is really ${real}, outside ${root}`)
            if (followFinal) assert.strictEqual(real, resolved)
          }
        }).pipe(Effect.scoped),
      { arbitrary: { runs: 300 } }
    )
  })

// The host root and the paths callers give: decoded once, before anything is done.
const decoding = (name: string, fsLayer: Layer.Layer<FileSystem.FileSystem>) =>
  layer(fsLayer)(`HostPath.decodeRoot and decodePath on ${name}`, (it) => {
    it.effect("a relative, missing, non-directory or NUL root is refused, naming the value", () =>
      Effect.gen(function* () {
        const { tmp } = yield* makeLayout({})
        const cases: ReadonlyArray<readonly [string, HostPath.HostPathError["reason"]["_tag"]]> = [
          [".", "NotAbsolute"],
          ["..", "NotAbsolute"],
          ["host", "NotAbsolute"],
          ["root/../root", "NotAbsolute"],
          [`${tmp}/nope`, "NotFound"],
          [`${tmp}/root/f/x`, "NotFound"],
          [`${tmp}/root/f`, "NotADirectory"],
          [`${tmp}/ro\0ot`, "InvalidPath"]
        ]
        for (const [given, reason] of cases) {
          const e = yield* Effect.flip(HostPath.decodeRoot(given))
          assert.strictEqual(e._tag, "HostPathError")
          assert.strictEqual(e.reason._tag, reason, given)
          assert.strictEqual(e.root, given)
          assert.include(e.message, JSON.stringify(given))
        }
      }).pipe(Effect.scoped)
    )
    it.effect("catchReason reaches each reason", () =>
      Effect.gen(function* () {
        const { root } = yield* makeLayout({ self: "self" })
        // A refused root has no path; a refused path below it names the path.
        const relative = yield* HostPath.decodeRoot("relative").pipe(
          Effect.as("decoded"),
          Effect.catchReason("HostPathError", "NotAbsolute", (reason, error) =>
            Effect.succeed(`${reason.detail} (${error.path ?? "the root itself"})`)
          )
        )
        assert.strictEqual(relative, "the host root is not an absolute path (the root itself)")
        const loop = yield* HostPath.resolve(yield* HostPath.decodeRoot(root), "/self").pipe(
          Effect.catchReason("HostPathError", "SymlinkLoop", (reason, error) =>
            Effect.succeed(`${error.path}: ${reason.detail}`)
          )
        )
        assert.strictEqual(loop, `/self: ${root}/self leads back to itself`)
        const r = yield* HostPath.decodeRoot(root)
        const refused = HostPath.decodePath(r, "relative")
        // @ts-expect-error "Relative" is not a reason of HostPathError
        refused.pipe(Effect.catchReason("HostPathError", "Relative", () => Effect.void))
        const reason = yield* Effect.flip(refused).pipe(Effect.map((e) => e.reason))
        assert.strictEqual(reason._tag, "NotAbsolute")
        assert.strictEqual(reason.message, "NotAbsolute: the path is not an absolute path")
      }).pipe(Effect.scoped)
    )
    it.effect("a root is made canonical once: slashes, `.` and links in its own path resolved, `..` refused", () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const { tmp, root } = yield* makeLayout({})
        const canonical = yield* fs.realPath(root)
        yield* fs.symlink(root, `${tmp}/rootlink`)
        yield* fs.symlink("root/a", `${tmp}/alink`)
        // A `..` names a place the caller did not write (`root/a/..` is `root` only lexically): refused, as
        // filepath-securejoin refuses an unsafe root.
        const climbing = yield* Effect.flip(HostPath.decodeRoot(`${root}/a/..`))
        assert.strictEqual(climbing.reason._tag, "InvalidPath")
        assert.strictEqual(climbing.root, `${root}/a/..`)
        for (const given of [root, `${root}/`, `${tmp}//root//`, `${root}/./.`, `${tmp}/rootlink`]) {
          const r = yield* HostPath.decodeRoot(given)
          assert.strictEqual(r.path, canonical, given)
          assert.strictEqual(r.given, given)
          assert.strictEqual(r.mountInfo, "/proc/self/mountinfo")
          assert.strictEqual(r.tableRoot, "/")
          assert.isFalse(r.isReal)
        }
        assert.strictEqual((yield* HostPath.decodeRoot(`${tmp}/alink`)).path, `${canonical}/a`)
        for (const given of ["", "/", "//"]) {
          const r = yield* HostPath.decodeRoot(given)
          assert.strictEqual(r.path, "/")
          assert.isTrue(r.isReal)
        }
        // mountInfo "" is the default table, as the Go contract says.
        assert.strictEqual(
          (yield* HostPath.decodeRoot({ path: root, mountInfo: "" })).mountInfo,
          "/proc/self/mountinfo"
        )
        assert.strictEqual(
          (yield* Layers.rootOf({ hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie), mountInfo: "" }))
            .mountInfo,
          "/proc/self/mountinfo"
        )
      }).pipe(Effect.scoped)
    )
    it.effect("the real host is the NodeRoot in context where a composition sets one; any other root is as given", () =>
      Effect.gen(function* () {
        const { root } = yield* makeLayout({})
        const node = { path: root, tableRoot: root, mountInfo: `${root}/mi` }
        const inNode = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provideService(effect, Layers.NodeRoot, node)
        for (const hostRoot of [undefined, "", "/"]) {
          // As a caller without types passes it: a raw string is decoded the same way.
          const r = yield* inNode(
            Layers.rootOf(hostRoot === undefined ? undefined : { hostRoot: hostRoot as unknown as HostPath.HostRoot })
          )
          // And decodeRoot itself names the node's root for the real host.
          if (hostRoot !== undefined) assert.strictEqual((yield* inNode(HostPath.decodeRoot(hostRoot))).path, root)
          assert.strictEqual(r.path, root, String(hostRoot))
          assert.strictEqual(r.tableRoot, root)
          assert.strictEqual(r.mountInfo, `${root}/mi`)
          // the node's real root: a restore reloads the systemd in context (the node's)
          assert.isTrue(r.isReal)
        }
        // an explicit table replaces the node's; an explicit root is not the node's
        assert.strictEqual((yield* inNode(Layers.rootOf({ mountInfo: "/x/mi" }))).mountInfo, "/x/mi")
        const other = yield* inNode(
          Layers.rootOf({ hostRoot: yield* HostPath.decodeRoot(`${root}/a`).pipe(Effect.orDie) })
        )
        assert.strictEqual(other.tableRoot, "/")
        assert.isFalse(other.isReal)
        // without one, the real host is this process's `/`
        const own = yield* Layers.rootOf()
        assert.strictEqual(own.path, "/")
        assert.strictEqual(own.mountInfo, "/proc/self/mountinfo")
        assert.isTrue(own.isReal)
        // ... and that `/`, decoded outside the composition, is refused inside it: it is the agent's host, not
        // the node's (a program that decoded "" once and ran its operations in a container's composition).
        const misplaced = yield* Effect.flip(inNode(Layers.rootOf({ hostRoot: own })))
        assert.strictEqual(misplaced.reason._tag, "OutsideTable")
        const misplacedResolve = yield* Effect.flip(inNode(HostPath.resolve(own, "/etc/hostname")))
        assert.strictEqual(misplacedResolve.reason._tag, "OutsideTable")
      }).pipe(Effect.scoped)
    )
    it.effect("a root in another mount namespace is resolved below its table's root, never with realpath", () =>
      Effect.gen(function* () {
        const { root } = yield* makeLayout({ "a/up": "/c" })
        // `tableRoot` stands for `/proc/<pid>/root`: the root's own links resolve below it.
        const r = yield* HostPath.decodeRoot({ path: `${root}/a/up`, tableRoot: root, mountInfo: `${root}/mi` })
        assert.strictEqual(r.path, `${root}/c`)
        assert.strictEqual(r.tableRoot, root)
        assert.strictEqual(r.mountInfo, `${root}/mi`)
        assert.strictEqual(Lexical.relative(r.tableRoot, `${root}/c/x`), "/c/x")
        assert.strictEqual(Lexical.join(r.tableRoot, "/c/x"), `${root}/c/x`)
        const outside = yield* Effect.flip(HostPath.decodeRoot({ path: "/etc", tableRoot: root }))
        assert.strictEqual(outside.reason._tag, "OutsideTable")
      }).pipe(Effect.scoped)
    )
    it.effect(
      "prefixes: empty, NUL, relative, `/` and the root itself are refused; links resolve inside the root",
      () =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const { tmp, root } = yield* makeLayout({
            "a/kubelet": "/c",
            "a/top": "/",
            "a/out": `${"../".repeat(8)}outside`
          })
          const r = yield* HostPath.decodeRoot(root)
          const refused: ReadonlyArray<readonly [string, HostPath.HostPathError["reason"]["_tag"]]> = [
            ["", "InvalidPath"],
            ["/a\0b", "InvalidPath"],
            ["relative", "NotAbsolute"],
            ["relative/../..", "NotAbsolute"],
            ["../outside", "NotAbsolute"],
            ["/", "IsHostRoot"],
            ["//", "IsHostRoot"],
            ["/var/..", "IsHostRoot"],
            ["/a/top", "IsHostRoot"]
          ]
          for (const [given, reason] of refused) {
            const e = yield* Effect.flip(HostPath.decodePath(r, given, { what: "prefix" }))
            assert.strictEqual(e.reason._tag, reason, JSON.stringify(given))
            assert.strictEqual(e.path, given)
            assert.include(e.message, "prefix")
          }
          // allowRoot lets `/` (and a link to it) mean the whole host root.
          assert.strictEqual((yield* HostPath.decodePath(r, "/", { allowRoot: true })).full, r.path)
          assert.strictEqual((yield* HostPath.decodePath(r, "/a/top", { allowRoot: true })).path, "/")
          // A symlinked prefix is matched by its target, inside the root; the result says so.
          const k = yield* HostPath.decodePath(r, "/a/kubelet/")
          assert.deepStrictEqual(k, { given: "/a/kubelet/", path: "/c", full: `${r.path}/c`, table: `${r.path}/c` })
          // `..` and a relative link that climbs stay inside the root.
          assert.strictEqual((yield* HostPath.decodePath(r, "/../outside")).full, `${r.path}/outside`)
          assert.strictEqual((yield* HostPath.decodePath(r, "/a/out")).full, `${r.path}/outside`)
          // followFinal false keeps the link itself.
          assert.strictEqual((yield* HostPath.decodePath(r, "/a/kubelet", { followFinal: false })).path, "/a/kubelet")
          assert.isTrue(yield* fs.exists(`${tmp}/outside/secret`))
        }).pipe(Effect.scoped)
    )
  })

decoding("NodeFileSystem", NodeServices.layer)
decoding("MemoryHost", MemoryHost.layer())
examples("NodeFileSystem", NodeServices.layer)
hostPathProperty("NodeFileSystem", NodeServices.layer)
examples("MemoryHost", MemoryHost.layer())
hostPathProperty("MemoryHost", MemoryHost.layer())

layer(NodeServices.layer)("HostPath.decodeRoot on /proc/<pid>/root", (it) => {
  it.effect("is taken as another mount namespace's root: its own table, resolved below it", () =>
    Effect.gen(function* () {
      // This process's own /proc/<pid>/root stands for a container's: realpath would say `/`.
      const proc = `/proc/${process.pid}/root`
      const r = yield* HostPath.decodeRoot(`${proc}/tmp/`)
      assert.strictEqual(r.path, `${proc}/tmp`)
      assert.strictEqual(r.tableRoot, proc)
      assert.strictEqual(r.mountInfo, `/proc/${process.pid}/mountinfo`)
      assert.isFalse(r.isReal)
      assert.strictEqual(Lexical.relative(r.tableRoot, `${proc}/tmp/x`), "/tmp/x")
    })
  )
})
