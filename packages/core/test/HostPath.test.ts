import { NodeServices } from "@effect/platform-node"
import { assert, describe, it, layer } from "@effect/vitest"
import { HostPath } from "@hostnode/core"
import { MemoryHost } from "@hostnode/test"
import { Effect, FileSystem, type Layer, Schema } from "effect"

describe("HostPath (lexical)", () => {
  it("joins below the root and cleans `..` against the host path", () => {
    assert.strictEqual(HostPath.join("/r", "/etc/cni/net.d"), "/r/etc/cni/net.d")
    assert.strictEqual(HostPath.join("/r/", "etc//cni/./net.d/"), "/r/etc/cni/net.d")
    assert.strictEqual(HostPath.join("/r", "/../../etc"), "/r/etc")
    assert.strictEqual(HostPath.join("/r", "/a/../../.."), "/r")
    assert.strictEqual(HostPath.join("", "/etc/x"), "/etc/x")
    assert.strictEqual(HostPath.join("/", "../etc"), "/etc")
  })
  it("clean is Go's path.Clean for rooted paths", () => {
    assert.strictEqual(HostPath.clean(""), "/")
    assert.strictEqual(HostPath.clean("/a/b/../c/."), "/a/c")
    assert.strictEqual(HostPath.clean("/var/lib/kubelet/"), "/var/lib/kubelet")
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
      assert.strictEqual(HostPath.clean(p), referenceClean(p), JSON.stringify(p))
      assert.strictEqual(HostPath.clean(HostPath.clean(p)), HostPath.clean(p))
    },
    { arbitrary: { runs: 1000 } }
  )

  it("relative and isWithin respect path boundaries", () => {
    assert.strictEqual(HostPath.relative("/r", "/r/a"), "/a")
    assert.strictEqual(HostPath.relative("/r", "/r"), "/")
    assert.isUndefined(HostPath.relative("/r", "/r2/a"))
    assert.isTrue(HostPath.isWithin("/", "/anything"))
    assert.isFalse(HostPath.isWithin("/var/lib/kubelet", "/var/lib/kubelet2"))
  })
  it("isRealRoot", () => {
    assert.isTrue(HostPath.isRealRoot(""))
    assert.isTrue(HostPath.isRealRoot("/"))
    assert.isTrue(HostPath.isRealRoot("//"))
    assert.isFalse(HostPath.isRealRoot("/tmp/x"))
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
        assert.strictEqual(yield* HostPath.resolve(root, "/a/up/x"), `${root}/c/x`)
        assert.strictEqual(yield* HostPath.resolve(root, "/a/b/etc/../../f"), `${root}/f`)
      })
    )
    it.effect("relative targets and `..` never climb above the root", () =>
      Effect.gen(function* () {
        const { root } = yield* makeLayout({ "a/out": "../../../outside/secret", l: "../../../../.." })
        assert.strictEqual(yield* HostPath.resolve(root, "/a/out"), `${root}/outside/secret`)
        assert.strictEqual(yield* HostPath.resolve(root, "/l/a"), `${root}/a`)
        assert.strictEqual(yield* HostPath.resolve(root, "../../.."), root)
      })
    )
    it.effect("a missing component then `..` still resolves what exists", () =>
      Effect.gen(function* () {
        const { root } = yield* makeLayout({ "a/evil": "/c" })
        assert.strictEqual(yield* HostPath.resolve(root, "/a/missing/../evil"), `${root}/c`)
        assert.strictEqual(yield* HostPath.resolve(root, "/f/x"), `${root}/f/x`)
      })
    )
    it.effect("followFinal: false keeps a final link unresolved but resolves its parents", () =>
      Effect.gen(function* () {
        const { root } = yield* makeLayout({ "a/link": "/c", "a/b/up": "/a" })
        assert.strictEqual(yield* HostPath.resolve(root, "/a/b/up/link", { followFinal: false }), `${root}/a/link`)
        assert.strictEqual(yield* HostPath.resolve(root, "/a/b/up/link"), `${root}/c`)
      })
    )
    it.effect("a loop is a HostPathError naming the root and the path", () =>
      Effect.gen(function* () {
        const { root } = yield* makeLayout({ x: "y", y: "x", self: "self" })
        const e = yield* Effect.flip(HostPath.resolve(root, "/x/z"))
        assert.strictEqual(e._tag, "HostPathError")
        assert.strictEqual(e.reason, "SymlinkLoop")
        assert.strictEqual(e.root, root)
        assert.strictEqual(e.path, "/x/z")
        assert.include(e.message, root)
        const s = yield* Effect.flip(HostPath.resolve(root, "/self"))
        assert.strictEqual(s.reason, "SymlinkLoop")
      })
    )
    it.effect("a chain longer than 40 links is TooManyLinks", () =>
      Effect.gen(function* () {
        const links: Record<string, string> = {}
        for (let i = 0; i < 45; i++) links[`l${i}`] = `l${i + 1}`
        const { root } = yield* makeLayout(links)
        const e = yield* Effect.flip(HostPath.resolve(root, "/l0"))
        assert.strictEqual(e.reason, "TooManyLinks")
        // 40 links are fine
        assert.strictEqual(yield* HostPath.resolve(root, "/l5"), `${root}/l45`)
      })
    )
    it.effect("a NUL byte is InvalidPath", () =>
      Effect.gen(function* () {
        const e = yield* Effect.flip(HostPath.resolve("/r", "/a\0b"))
        assert.strictEqual(e.reason, "InvalidPath")
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
          const result = yield* Effect.result(HostPath.resolve(root, path.join("/"), { followFinal }))
          if (result._tag === "Failure") {
            assert.oneOf(result.failure.reason, ["SymlinkLoop", "TooManyLinks"])
            return
          }
          const resolved = result.success
          assert.isTrue(HostPath.isWithin(root, resolved), `${resolved} escapes ${root}`)
          const checked = followFinal || resolved === root ? resolved : resolved.slice(0, resolved.lastIndexOf("/"))
          const exists = yield* fs.exists(checked).pipe(Effect.orElseSucceed(() => false))
          if (exists) {
            const real = yield* fs.realPath(checked)
            assert.isTrue(HostPath.isWithin(root, real), `${checked} is really ${real}, outside ${root}`)
            if (followFinal) assert.strictEqual(real, resolved)
          }
        }).pipe(Effect.scoped),
      { arbitrary: { runs: 300 } }
    )
  })

examples("NodeFileSystem", NodeServices.layer)
hostPathProperty("NodeFileSystem", NodeServices.layer)
examples("MemoryHost", MemoryHost.layer())
hostPathProperty("MemoryHost", MemoryHost.layer())
