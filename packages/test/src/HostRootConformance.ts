/**
 * The conformance suite of the host root and of the paths callers give: every
 * operation that works below a host root (`Unmount`, `Repave`, `SafeRemove`,
 * `Snapshot`) decodes its root and prefixes before it changes anything, and
 * then changes nothing outside the root. The inputs are an operator's mistakes
 * (a relative, mistyped or symlinked root, a file, an empty prefix, `/`, `..`
 * that climbs, a link out of the root); the whole sandbox is compared before
 * and after each run. The `FileSystem` is fenced to the sandbox and the
 * `Mounter` refuses targets outside it, so a wrong implementation fails the
 * test instead of touching the machine. Details: docs/design/simulated-host.md.
 *
 * @since 0.1.0
 */
import { assert, layer } from "@effect/vitest"
import {
  type Directory,
  HostPath,
  Mounter,
  type MountInfo,
  Repave,
  SafeRemove,
  Snapshot,
  Unmount
} from "@hostnode/core"
import { Lexical } from "@hostnode/core/Programs"
import { Effect, FileSystem, type Layer, Schema } from "effect"
import * as Fence from "./FencedFileSystem.ts"
import { FenceViolation } from "./internal/fenceViolation.ts"
import { peerTree } from "./internal/peerTree.ts"
import { nodeStarts } from "./internal/repave/fixtures.ts"
import { differences, isUnder, plant, snapshot } from "./internal/repave/trees.ts"
import { rootAt } from "./internal/rootAt.ts"
import { MountFixture } from "./MountFixture.ts"
import * as RefusingSystemd from "./RefusingSystemd.ts"

/**
 * The sandbox of one run: the node's root, what lies beside it, and where snapshots go.
 *
 * @since 0.2.0
 */
interface Sandbox {
  readonly sandbox: string
  readonly root: string
  readonly outside: string
  readonly snapshots: string
}

/**
 * Builds the sandbox described in the module comment. Links planted in the
 * node point at `outside/` by its real absolute path (what the kernel would
 * follow) and by relative climbs; none points at a system path.
 *
 * @since 0.2.0
 */
const buildSandbox = Effect.gen(function* () {
  const fx = yield* MountFixture
  const fs = yield* FileSystem.FileSystem
  const sandbox = yield* fs.realPath(yield* fx.sandbox).pipe(Effect.orDie)
  const root = `${sandbox}/root`
  const outside = `${sandbox}/outside`
  yield* plant(sandbox, {
    "root/etc/cni/net.d/10-bridge.conflist": "{}",
    "root/var/lib/cni/networks/cbr0/10.244.0.7": "c0ffee",
    "root/var/lib/kubelet/pods/p1/volumes/v/.keep": "",
    "root/var/lib/kubelet/pods/p1/etc-hosts": "hosts",
    "root/var/lib/kubelet/pki/kubelet-client-2026-01-01.pem": "cert",
    "root/var/lib/kubelet/kubeconfig": "kubeconfig",
    "root/var/lib/kubelet/bootstrap-kubeconfig": "bootstrap",
    "root/etc/kubernetes/kubelet.conf": "conf",
    "root/evil": { link: outside },
    "root/up": { link: "../outside" },
    "root/var/lib/kubelet/pods/p2": { link: `${outside}/pod` },
    "outside/secret": "must survive",
    "outside/pod/data": "not the node's",
    "outside/mnt/.keep": "",
    "outside/etc/cni/net.d/99-other.conf": "not ours",
    rootlink: { link: root },
    afile: "a file, not a directory",
    "snapshots/.keep": ""
  })
  yield* fx.tmpfs(`${root}/var/lib/kubelet/pods/p1/volumes/v`)
  yield* fs.writeFileString(`${root}/var/lib/kubelet/pods/p1/volumes/v/token`, "secret").pipe(Effect.orDie)
  yield* fx.tmpfs(`${outside}/mnt`)
  yield* fs.writeFileString(`${outside}/mnt/data`, "a mount beside the root").pipe(Effect.orDie)
  return { sandbox, root, outside, snapshots: `${sandbox}/snapshots` } satisfies Sandbox
})

/**
 * Root candidates, relative to the sandbox when they start with `@`: good, relative, odd, linked, missing, a file.
 *
 * @since 0.2.0
 */
const RootCandidates = [
  "@/root",
  "@/root/",
  "@//root//",
  "@/root/../root",
  "@/rootlink",
  "@/root/evil",
  "@/nope",
  "@/afile",
  "@/afile/x",
  "root",
  ".",
  "..",
  "root/../root"
] as const

/**
 * Prefix candidates: empty, `/`, relative, climbing, linked out of the root, and real targets.
 *
 * @since 0.2.0
 */
const PrefixCandidates = [
  "",
  "/",
  "//",
  "relative",
  "/var/..",
  "relative/../..",
  "../outside",
  "/../outside",
  "/evil",
  "/evil/x",
  "/up",
  "/var/lib/kubelet",
  "/var/lib/kubelet/",
  "/var/lib/kubelet/pods/p1",
  "/var/lib/kubelet/pods/p2",
  "/etc/cni",
  "/nope"
] as const

/**
 * The operations under test, each a function of the root as given and the prefixes.
 *
 * @since 0.2.0
 */
const Operations = [
  "unmountBelow",
  "unmountStrictlyBelow",
  "teardownKubeletDir",
  "teardownKubeletDir(prefixes)",
  "resetCniState",
  "resetKubeletIdentity",
  "SafeRemove.remove",
  "SafeRemove.empty",
  "Snapshot.take+restore"
] as const

/**
 * One of {@link Operations}.
 *
 * @since 0.2.0
 */
type Operation = (typeof Operations)[number]

const rootOf = (s: Sandbox, candidate: string): string =>
  candidate.startsWith("@") ? s.sandbox + candidate.slice(1) : candidate

/**
 * Runs `operation` below `hostRoot` with `prefixes`. Its typed failure is
 * returned, not raised: the property looks at what it was.
 *
 * @since 0.2.0
 */
const runOperation = (
  s: Sandbox,
  operation: Operation,
  hostRoot: string,
  prefixes: ReadonlyArray<string>,
  index: number
) => {
  // The root as a caller without types passes it (JavaScript, a decoded file): a raw string, which the
  // operations decode themselves. Typed callers can only pass a decoded `HostPath.HostRoot`.
  const options = { hostRoot: hostRoot as unknown as HostPath.HostRoot }
  const program: Effect.Effect<
    unknown,
    { readonly _tag: string },
    FileSystem.FileSystem | Mounter.Mounter | Directory.Directories
  > = (() => {
    switch (operation) {
      case "unmountBelow":
        return Unmount.unmountBelow(prefixes, options)
      case "unmountStrictlyBelow":
        return Unmount.unmountStrictlyBelow(prefixes, options)
      case "teardownKubeletDir":
        return Repave.teardownKubeletDir(options)
      case "teardownKubeletDir(prefixes)":
        return Repave.teardownKubeletDir({ ...options, prefixes })
      case "resetCniState":
        return Repave.resetCniState(options)
      case "resetKubeletIdentity":
        return Effect.flatMap(nodeStarts.BootstrapToken, (ns) => Repave.resetKubeletIdentity(ns, options))
      case "SafeRemove.remove":
        return SafeRemove.remove(prefixes, options)
      case "SafeRemove.empty":
        return SafeRemove.empty(prefixes[0] ?? "", options)
      case "Snapshot.take+restore":
        return Effect.gen(function* () {
          const snap = yield* Snapshot.takeOf({
            dir: `${s.snapshots}/s${index}`,
            hostRoot: options.hostRoot,
            paths: prefixes
          })
          yield* snap.restore.pipe(Effect.provide(RefusingSystemd.layer("a restore below a test root reloads nothing")))
        })
    }
  })()
  return Effect.result(program)
}

/**
 * A `Mounter` that dies before it unmounts anything outside `allowed`: the
 * mount-side fence, as `FencedFileSystem` is for files.
 *
 * @since 0.2.0
 */
const fencedMounter = (allowed: string) =>
  Effect.map(Effect.service(Mounter.Mounter), (inner) =>
    Mounter.Mounter.of({
      unmount: (root, targets, options) =>
        targets.every((t) => Lexical.isWithin(allowed, Lexical.clean(t.path)))
          ? inner.unmount(root, targets, options)
          : Effect.die(new FenceViolation(`unmount outside ${allowed}: ${targets.map((t) => t.path).join(", ")}`))
    })
  )

/**
 * The errors that refuse the caller's input; after one, nothing at all may have changed.
 *
 * @since 0.2.0
 */
const isInputError = (e: { readonly _tag: string; readonly reason?: unknown }): boolean =>
  (e._tag === "HostPathError" &&
    ["InvalidPath", "NotAbsolute", "NotFound", "NotADirectory", "IsHostRoot", "OutsideTable"].includes(
      String((e.reason as { readonly _tag?: unknown } | undefined)?._tag)
    )) ||
  (e._tag === "SnapshotError" &&
    ["InvalidPath", "PathOutsideRoot"].includes(String((e.reason as { readonly _tag?: unknown } | undefined)?._tag)))

const mountsIn = (table: ReadonlyArray<MountInfo.MountEntry>, dir: string) =>
  table.filter((e) => Lexical.isWithin(dir, Lexical.clean(e.mountPoint)))

/**
 * Registers the suite under `name`. `hostLayer` provides the `FileSystem`,
 * the `Mounter` under test and a `MountFixture` in the same mount namespace.
 *
 * @category conformance
 * @since 0.2.0
 */
export const suite = (
  name: string,
  hostLayer: Layer.Layer<Mounter.Mounter | MountFixture | FileSystem.FileSystem | Directory.Directories>,
  options?: { readonly runs?: number | undefined }
): void =>
  layer(hostLayer)(`host root and prefixes: ${name}`, (it) => {
    const check = (operation: Operation, rootCandidate: string, prefixes: ReadonlyArray<string>, index: number) =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const fs = yield* FileSystem.FileSystem
        const s = yield* buildSandbox
        const hostRoot = rootOf(s, rootCandidate)
        // The root the operation should end up working below, if it is one.
        const canonical = hostRoot.startsWith("/")
          ? yield* fs.realPath(hostRoot).pipe(
              Effect.flatMap((p) => Effect.map(fs.stat(p), (i) => (i.type === "Directory" ? p : undefined))),
              Effect.orElseSucceed(() => undefined)
            )
          : undefined
        const treeBefore = yield* snapshot(s.sandbox)
        const mountsBefore = mountsIn(yield* fx.table, s.sandbox)
        const mounter = yield* fencedMounter(s.sandbox)
        const result = yield* runOperation(s, operation, hostRoot, prefixes, index).pipe(
          Effect.provideService(Mounter.Mounter, mounter),
          Fence.within([s.sandbox])
        )
        const treeAfter = yield* snapshot(s.sandbox)
        const mountsAfter = mountsIn(yield* fx.table, s.sandbox)
        const what = `${operation} below ${JSON.stringify(hostRoot)} of ${JSON.stringify(prefixes)}`
        if (result._tag === "Failure" && isInputError(result.failure)) {
          assert.deepStrictEqual(differences(treeBefore, treeAfter), [], `${what}: refused, yet changed`)
          assert.deepStrictEqual(
            mountsAfter.map((e) => e.id),
            mountsBefore.map((e) => e.id),
            `${what}: refused, yet unmounted`
          )
          return result.failure._tag
        }
        // It ran: then the root was a real directory, and only it (and the snapshot) changed.
        assert.isDefined(canonical, `${what}: ran below a root that is not a directory (${JSON.stringify(result)})`)
        const rel = (p: string) => (p === s.sandbox ? "" : p.slice(s.sandbox.length + 1))
        const inside = (k: string) => isUnder(rel(canonical ?? "/nowhere"), k) || isUnder("snapshots", k)
        assert.deepStrictEqual(differences(treeBefore, treeAfter, inside), [], `${what}: changed outside the root`)
        const outsideIds = (t: ReadonlyArray<MountInfo.MountEntry>) =>
          t.filter((e) => !Lexical.isWithin(canonical ?? "/nowhere", Lexical.clean(e.mountPoint))).map((e) => e.id)
        assert.deepStrictEqual(outsideIds(mountsAfter), outsideIds(mountsBefore), `${what}: unmounted outside the root`)
        return result._tag
      }).pipe(Effect.scoped)

    it.effect("a relative, missing or non-directory root is refused by every operation before anything changes", () =>
      Effect.gen(function* () {
        let i = 0
        for (const operation of Operations) {
          for (const root of ["root", ".", "..", "@/nope", "@/afile", "@/afile/x"]) {
            const tag = yield* check(operation, root, ["/var/lib/kubelet"], i++)
            assert.strictEqual(tag, "HostPathError", `${operation} below ${root}`)
          }
        }
      })
    )

    it.effect("empty, relative, `/` and climbing prefixes are refused before anything changes", () =>
      Effect.gen(function* () {
        let i = 0
        const prefixOps: ReadonlyArray<Operation> = [
          "unmountBelow",
          "unmountStrictlyBelow",
          "teardownKubeletDir(prefixes)",
          "SafeRemove.remove",
          "SafeRemove.empty",
          "Snapshot.take+restore"
        ]
        for (const operation of prefixOps) {
          for (const prefix of ["", "/", "//", "relative", "/var/..", "relative/../..", "../outside"]) {
            const tag = yield* check(operation, "@/root", [prefix], i++)
            assert.include(["HostPathError", "SnapshotError"], tag, `${operation} of ${JSON.stringify(prefix)}`)
          }
        }
      })
    )

    it.effect("a root given through a symlink works below its target; a prefix that is a link stays inside", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const fs = yield* FileSystem.FileSystem
        const s = yield* buildSandbox
        const report = yield* Unmount.unmountBelow(["/var/lib/kubelet/pods/p1", "/evil"], {
          hostRoot: yield* rootAt(`${s.sandbox}/rootlink`)
        }).pipe(Fence.within([s.sandbox]))
        assert.deepStrictEqual(
          report.prefixes.map((p) => [p.given, p.path, p.full]),
          [
            ["/var/lib/kubelet/pods/p1", "/var/lib/kubelet/pods/p1", `${s.root}/var/lib/kubelet/pods/p1`],
            // The link names `outside/` by its real path; contained, that is below the root, where
            // nothing of that path exists: the prefix names nothing else, and is matched as written.
            ["/evil", "/evil", `${s.root}/evil`]
          ]
        )
        assert.deepStrictEqual(
          report.unmounted.map((m) => m.mountPoint),
          [`${s.root}/var/lib/kubelet/pods/p1/volumes/v`]
        )
        assert.strictEqual(mountsIn(yield* fx.table, s.outside).length, 1)
        assert.strictEqual(yield* fs.readFileString(`${s.outside}/mnt/data`), "a mount beside the root")
      }).pipe(Effect.scoped)
    )

    it.effect("allowRoot lets `/` mean every mount below the root, and nothing beside it", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const s = yield* buildSandbox
        const refused = yield* Effect.flip(Unmount.unmountBelow(["/"], { hostRoot: yield* rootAt(s.root) }))
        assert.strictEqual(refused._tag === "HostPathError" && refused.reason._tag, "IsHostRoot")
        const report = yield* Unmount.unmountBelow(["/"], { hostRoot: yield* rootAt(s.root), allowRoot: true })
        assert.deepStrictEqual(report.prefixes[0]?.path, "/")
        assert.deepStrictEqual(mountsIn(yield* fx.table, s.root), [])
        assert.strictEqual(mountsIn(yield* fx.table, s.outside).length, 1)
      }).pipe(Effect.scoped)
    )

    it.effect(
      "HostPath.resolve and decodeRoot: the peers' vectors (filepath-securejoin's SecureJoin), the same on every layer",
      () =>
        Effect.gen(function* () {
          const fx = yield* MountFixture
          const fs = yield* FileSystem.FileSystem
          const sandbox = yield* fs.realPath(yield* fx.sandbox).pipe(Effect.orDie)
          const outside = `${sandbox}/outside`
          const vroot = `${sandbox}/vroot`
          yield* plant(vroot, {
            ...peerTree(outside),
            notdir: "I am not a directory",
            "subdir/notdir_link": { link: "/../../../notdir/somechild" }
          })
          yield* plant(sandbox, {
            "outside/secret": "must survive",
            vlink: { link: "vroot" },
            looproot: { link: "looproot" },
            dangroot: { link: "nowhere" }
          })
          const root = yield* HostPath.decodeRoot(vroot)
          assert.strictEqual(root.path, vroot)
          const at = (path: string, options?: { readonly followFinal?: boolean }) =>
            HostPath.resolve(root, path, options).pipe(
              Effect.map((full) => {
                const rel = Lexical.relative(root.path, full)
                assert.isDefined(rel, `${JSON.stringify(path)} resolved outside the root: ${full}`)
                return rel ?? full
              }),
              Effect.catchTag("HostPathError", (e) =>
                Effect.succeed(
                  e.reason._tag === "SymlinkLoop" || e.reason._tag === "TooManyLinks" ? "!Loop" : `!${e.reason._tag}`
                )
              )
            )
          const last = { followFinal: false }
          const vectors: ReadonlyArray<readonly [string, { readonly followFinal?: boolean } | undefined, string]> = [
            ["a", undefined, "/a"],
            ["b///././c////.//d/./././///e////.//./f//././././", undefined, "/b/c/d/e/f"],
            ["also/a/../path/././/with/some/./.././junk", undefined, "/also/path/with/junk"],
            [
              "yetanother/../path/././/with/some/./.././junk../../../../../../../../../../../../etc/passwd",
              undefined,
              "/etc/passwd"
            ],
            ["/../../../../../../../../../../../../../../../../etc/passwd", undefined, "/etc/passwd"],
            ["../../../../../../../../../../../../../../../../", undefined, "/"],
            ["./../../.././././../../../../../../../../../../../../../../../../etc passwd", undefined, "/etc passwd"],
            ["b-file", undefined, "/b/c/file"],
            ["b-file", last, "/b-file"],
            // A trailing slash follows a link in the last component, as the kernel does.
            ["b-file/", last, "/b/c/file"],
            ["link1/target_abs/", last, "/target"],
            ["a/", last, "/a"],
            // Nothing below a file or a missing name exists: the rest is joined, `..` still climbs back.
            ["b/c/file/x", undefined, "/b/c/file/x"],
            ["b/c/file/../x", undefined, "/b/c/x"],
            ["notdir/child", undefined, "/notdir/child"],
            ["subdir/notdir_link", undefined, "/notdir/somechild"],
            // Non-lexical.
            ["subdir/cousin_rel/test", undefined, "/cousinparent/cousin/test"],
            ["subdir/cousin_abs/test", undefined, "/cousinparent/cousin/test"],
            ["subdir/cousin_deep/test", undefined, "/cousinparent/cousin/test"],
            ["subdir/../test", undefined, "/test"],
            ["subdir/cousin_rel/../test", undefined, "/cousinparent/test"],
            ["subdir/cousin_abs/../test", undefined, "/cousinparent/test"],
            ["subdir/cousin_deep/../test", undefined, "/cousinparent/test"],
            ["link1/target_abs/../x", undefined, "/x"],
            ["link3/target_rel/foo", undefined, "/target/foo"],
            ["link2/link1_abs/../target", undefined, "/target"],
            // Dangling links.
            ["a-fake1", undefined, "/a/fake"],
            ["a-fake1", last, "/a-fake1"],
            ["a-fake1/foo", undefined, "/a/fake/foo"],
            ["a-fake1/../bar", undefined, "/a/bar"],
            ["a-fake2", undefined, "/a/fake/foo"],
            ["a-fake3", undefined, "/b"],
            ["dangling/a", undefined, "/dangling/h/i/j/nonexistent"],
            ["dangling-file/a", undefined, "/dangling-file/h/i/j/file/foo"],
            ["link3/deep_dangling1", undefined, "/target/nonexist"],
            // Loops: a typed error, never a hang.
            ["loop/link", undefined, "!Loop"],
            ["loop/link", last, "/loop/link"],
            ["loop/link/x", last, "!Loop"],
            ["loop/basic-loop1", undefined, "!Loop"],
            ["loop/basic-loop2/x", undefined, "!Loop"],
            ["loop/basic-loop3", undefined, "!Loop"],
            ["self", undefined, "!Loop"],
            ["self/..", undefined, "!Loop"],
            ["/../../../../../../../../../../../../../../../../self/..", undefined, "!Loop"],
            ["/self/././..", undefined, "!Loop"],
            // Exactly 40 links, and one too many.
            ["chain/l0", undefined, "/target"],
            ["chain/l0/x", undefined, "/target/x"],
            ["chain/m0", undefined, "!Loop"],
            ["chain/m0", last, "/chain/m0"],
            // Climbing out, lexically and through links.
            ["../../../../a", undefined, "/a"],
            ["up/a", undefined, "/a"],
            ["up", undefined, "/"],
            ["b/c/d/out/secret", undefined, "/outside/secret"],
            ["rel-out/secret", undefined, "/outside/secret"],
            ["abs-out/secret", undefined, `${outside}/secret`],
            ["abs-out-file", undefined, `${outside}/secret`],
            // `/proc/self/root` and `/proc/self/cwd` stand-ins.
            ["proc/self/root/a", undefined, "/a"],
            ["proc/self/root", undefined, "/"],
            ["proc/self/root/../../../x", undefined, "/x"],
            ["proc/self/cwd/x", undefined, "/a/x"],
            // NAME_MAX and PATH_MAX in bytes, NUL: refused before anything is looked at.
            [`/${"x".repeat(255)}`, undefined, `/${"x".repeat(255)}`],
            [`/${"x".repeat(256)}`, undefined, "!InvalidPath"],
            [`/a/${"é".repeat(128)}`, undefined, "!InvalidPath"],
            [`/a/${"é".repeat(127)}`, undefined, `/a/${"é".repeat(127)}`],
            [`/${"./".repeat(2046)}zz`, undefined, "/zz"],
            [`/${"./".repeat(2046)}zzz`, undefined, "!InvalidPath"],
            ["/a\u0000b", undefined, "!InvalidPath"]
          ]
          const got: Array<string> = []
          for (const [path, o] of vectors) got.push(yield* at(path, o))
          assert.deepStrictEqual(
            vectors.map(([path, o, _], i) => `${JSON.stringify(path)} ${JSON.stringify(o ?? {})} -> ${got[i]}`),
            vectors.map(([path, o, want]) => `${JSON.stringify(path)} ${JSON.stringify(o ?? {})} -> ${want}`)
          )
          // Roots: through a link, a loop, a dangling link, a file.
          const rootReason = (given: string) =>
            HostPath.decodeRoot(given).pipe(
              Effect.map((r) => r.path),
              Effect.catchTag("HostPathError", (e) => Effect.succeed(`!${e.reason._tag}`))
            )
          assert.deepStrictEqual(
            [
              yield* rootReason(`${sandbox}/vlink`),
              yield* rootReason(`${sandbox}/vlink/`),
              yield* rootReason(`${sandbox}/vlink/link1/target_rel`),
              yield* rootReason(`${sandbox}/looproot`),
              yield* rootReason(`${sandbox}/dangroot`),
              yield* rootReason(`${vroot}/b/c/file`),
              yield* rootReason(`${vroot}/b-file`),
              yield* rootReason(`${vroot}/b/c/file/x`)
            ],
            [
              vroot,
              vroot,
              `${vroot}/target`,
              "!SymlinkLoop",
              "!NotFound",
              "!NotADirectory",
              "!NotADirectory",
              "!NotFound"
            ]
          )
          // Unclean roots (filepath-securejoin's TestUncleanRoot): `.` and repeated or trailing slashes are cleaned, a
          // relative root is refused, and so is a root with a `..` component, which names a place nobody wrote.
          const uc = `${sandbox}/unclean`
          yield* fs.makeDirectory(`${uc}/foo/bar`, { recursive: true }).pipe(Effect.orDie)
          const unclean: ReadonlyArray<readonly [string, string]> = [
            ["foo/..", "!NotAbsolute"],
            ["../foo", "!NotAbsolute"],
            ["foo/../foo/../a", "!NotAbsolute"],
            [`${uc}/foo/bar/`, `${uc}/foo/bar`],
            [`${uc}/foo/bar///`, `${uc}/foo/bar`],
            [`${uc}/foo///bar`, `${uc}/foo/bar`],
            [`${uc}/foo/./bar`, `${uc}/foo/bar`],
            [`${uc}/foo/./bar/./.`, `${uc}/foo/bar`],
            [`${uc}/foo///./bar/.///.///`, `${uc}/foo/bar`],
            [`${uc}/foo///./bar/..///.///`, "!InvalidPath"],
            [`${uc}/foo/bar/../bar`, "!InvalidPath"]
          ]
          const uncleanGot: Array<string> = []
          for (const [given] of unclean) uncleanGot.push(yield* rootReason(given))
          assert.deepStrictEqual(
            unclean.map(([given], i) => `${given} -> ${uncleanGot[i]}`),
            unclean.map(([given, want]) => `${given} -> ${want}`)
          )
          // A raw root given to resolve without types (JavaScript): decoded by the same rules, and an empty one
          // refused, never joined to the path (which would name this process's /etc/hostname).
          const raw = (given: string) =>
            HostPath.resolve(given as unknown as HostPath.HostRoot, "/etc/hostname").pipe(
              Effect.catchTag("HostPathError", (e) => Effect.succeed(`!${e.reason._tag}`))
            )
          assert.deepStrictEqual(
            [yield* raw("foo/.."), yield* raw(""), yield* raw("../tmp"), yield* raw(`${uc}/foo/./bar/`)],
            ["!NotAbsolute", "!InvalidPath", "!NotAbsolute", `${uc}/foo/bar/etc/hostname`]
          )
          const rawPath = yield* Effect.flip(HostPath.decodePath("" as unknown as HostPath.HostRoot, "/etc/hostname"))
          assert.strictEqual(rawPath.reason._tag, "InvalidPath")
          // A path that resolves to the root itself, through a climbing link or the `/proc/self/root` stand-in.
          for (const p of ["/up", "/proc/self/root", "/proc/self/root/..", "/a/.."]) {
            const e = yield* Effect.flip(HostPath.decodePath(root, p))
            assert.strictEqual(e.reason._tag, "IsHostRoot", p)
          }
          const viaLink = yield* HostPath.decodeRoot(`${sandbox}/vlink`)
          assert.strictEqual((yield* HostPath.decodePath(viaLink, "/rel-out/secret")).full, `${vroot}/outside/secret`)
          assert.strictEqual(yield* fs.readFileString(`${outside}/secret`), "must survive")
        }).pipe(Effect.scoped)
    )

    it.effect.prop(
      "for any root and prefixes, each operation refuses before changing anything, or changes only the root",
      {
        operation: Schema.Literals(Operations),
        root: Schema.Literals(RootCandidates),
        prefixes: Schema.Array(Schema.Literals(PrefixCandidates)).check(Schema.isMinLength(1), Schema.isMaxLength(3))
      },
      ({ operation, root, prefixes }) => Effect.asVoid(check(operation, root, prefixes, 0)),
      { timeout: 600_000, arbitrary: { runs: options?.runs ?? 100 } }
    )
  })
