/**
 * The conformance suites of the repave operations (`Repave.resetCniState`,
 * `Repave.resetKubeletIdentity`, `Repave.teardownKubeletDir`) and of
 * `SafeRemove` under them, on a temporary host root below a `MountFixture`
 * sandbox: the ways a removal could delete where it must not (through a bind
 * mount, through a symlink planted in the tree, through a mount the table
 * shows at another path), each with the whole tree hashed before and after.
 *
 * Every operation under test runs with the `FileSystem` fenced to the sandbox
 * (`FencedFileSystem`): a symlink to `/` planted in the tree cannot make a
 * wrong implementation delete the machine's own files.
 *
 * Three suites, by what the host must provide:
 * - {@link resets}: `FileSystem` and a `MountFixture` whose `sandbox` and
 *   `mountInfo` work (no mounts are made);
 * - {@link mounts}: also `Mounter` and real `tmpfs`/`bind` in the fixture;
 * - {@link properties}: the same, for random trees, mount layouts and
 *   refused unmounts.
 *
 * What a simulated host needs for `mounts` and `properties`: `lstat`/`stat`
 * whose `dev` differs per mounted file system (a tmpfs its own, a bind mount
 * its source's, with the same inode at both paths) and whose `ino` is stable;
 * path walks, `readDirectory` and `realPath` that cross mounts; Node's `rm`
 * semantics (EISDIR for a directory without `recursive`, EBUSY for a mount
 * point); a served table at `MountFixture.mountInfo` whose bind entries carry
 * the source's path within its file system as `root` and whose `major:minor`
 * is the same for all mounts of one file system (SafeRemove never compares it
 * with `stat`'s `dev`); a `Mounter` whose lazy unmount removes the top mount
 * of a path and takes the mounts below it along; and a `MountFixture` whose
 * `sandbox` is a fresh file system of its own, with `tmpfs` and `bind`.
 *
 * @since 0.1.0
 */
import { createHash } from "node:crypto"
import { assert, layer } from "@effect/vitest"
import { Directory, HostPath, type Mounter, MountInfo, NodeStart, Repave, SafeRemove, Unmount } from "@hostnode/core"
import { Effect, FileSystem, type Layer, Schema } from "effect"
import * as FaultyMounter from "./FaultyMounter.ts"
import * as Fence from "./FencedFileSystem.ts"
import { MountFixture } from "./MountFixture.ts"
import * as TreeWalk from "./TreeWalk.ts"

// ---------------------------------------------------------------------------
// Trees: planting, hashing, comparing
// ---------------------------------------------------------------------------

/**
 * What to plant at a path: file contents, a symlink, or an empty directory.
 *
 * @since 0.1.0
 */
export type Plant = string | { readonly link: string } | { readonly dir: true }

const parentOf = (path: string): string => path.slice(0, Math.max(1, path.lastIndexOf("/")))

/**
 * Plants `tree` (paths relative to `base`) below `base`, parents created as needed.
 *
 * @since 0.1.0
 */
export const plant = (base: string, tree: Readonly<Record<string, Plant>>) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    for (const [rel, what] of Object.entries(tree)) {
      const path = `${base}/${rel}`
      yield* fs.makeDirectory(parentOf(path), { recursive: true })
      if (typeof what === "string") yield* fs.writeFileString(path, what)
      else if ("link" in what) yield* fs.symlink(what.link, path)
      else yield* fs.makeDirectory(path, { recursive: true })
    }
  }).pipe(Effect.orDie)

/**
 * A tree as a flat record, relative path to a description: `d <mode>` for a
 * directory, `f <mode> <sha256>` for a file, `l <target>` for a symlink (`""`
 * is `dir` itself). Symlinks are not followed; mounts are crossed, as any
 * path walk crosses them, so a file reachable through a mount is in it.
 *
 * @since 0.1.0
 */
export const snapshot = (dir: string) =>
  Effect.map(TreeWalk.walk(dir), (visited) => {
    const out: Record<string, string> = {}
    for (const v of visited) {
      const rel = v.path === dir ? "" : v.path.slice(dir.length + 1)
      const mode = (v.info.mode & 0o7777).toString(8)
      out[rel] =
        v.type === "Directory"
          ? `d ${mode}`
          : v.type === "File"
            ? `f ${mode} ${createHash("sha256").update(v.bytes).digest("hex")}`
            : v.type === "SymbolicLink"
              ? `l ${v.target}`
              : v.info.type
    }
    return out
  }).pipe(Effect.orDie)

/**
 * True when `path` is `prefix` or below it (relative or absolute paths, on component boundaries).
 *
 * @since 0.1.0
 */
export const isUnder = (prefix: string, path: string): boolean =>
  prefix === "" || path === prefix || path.startsWith(`${prefix}/`)

/**
 * The keys on which two snapshots differ, except those `ignore` selects, as readable lines.
 *
 * @since 0.1.0
 */
export const differences = (
  before: Readonly<Record<string, string>>,
  after: Readonly<Record<string, string>>,
  ignore: (rel: string) => boolean = () => false
): Array<string> => {
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort()
  return keys
    .filter((k) => !ignore(k) && before[k] !== after[k])
    .map((k) => `${JSON.stringify(k)}: ${before[k] ?? "(absent)"} -> ${after[k] ?? "(absent)"}`)
}

const relativeTo = (base: string, full: string): string => (full === base ? "" : full.slice(base.length + 1))

const mountsBelow = (table: MountInfo.MountTable, dir: string) =>
  table.filter((e) => {
    const mp = HostPath.clean(e.mountPoint)
    return mp !== dir && Unmount.covers(dir, mp)
  })

// ---------------------------------------------------------------------------
// Shared fixtures
// ---------------------------------------------------------------------------

const nodeBase = { nodeName: "node-a", apiServer: "https://10.0.0.1:6443" }

/**
 * A node start with each auth mode.
 *
 * @since 0.1.0
 */
export const nodeStarts: Readonly<Record<NodeStart.AuthMode["_tag"], Effect.Effect<NodeStart.NodeStart>>> = {
  BootstrapToken: Effect.orDie(
    NodeStart.decode({ ...nodeBase, auth: { _tag: "BootstrapToken", token: "abcdef.0123456789abcdef" } })
  ),
  Kubeconfig: Effect.orDie(
    NodeStart.decode({ ...nodeBase, auth: { _tag: "Kubeconfig", path: "/etc/kubernetes/kubelet.conf" } })
  ),
  ExecCredential: Effect.orDie(
    NodeStart.decode({ ...nodeBase, auth: { _tag: "ExecCredential", command: "/usr/bin/cred" } })
  )
}

const kubeletPki = {
  "root/var/lib/kubelet/pki/kubelet-client-2024-01-01-00-00-00.pem": "client cert 1",
  "root/var/lib/kubelet/pki/kubelet-client-2024-06-01-00-00-00.pem": "client cert 2",
  "root/var/lib/kubelet/pki/kubelet-client-current.pem": {
    link: "/var/lib/kubelet/pki/kubelet-client-2024-06-01-00-00-00.pem"
  },
  "root/var/lib/kubelet/pki/kubelet-client.key.tmp": "pending key",
  "root/var/lib/kubelet/pki/kubelet.crt": "serving cert",
  "root/var/lib/kubelet/pki/kubelet.key": "serving key",
  "root/var/lib/kubelet/pki/kubelet-server-2024-01-01-00-00-00.pem": "rotated serving cert",
  "root/var/lib/kubelet/pki/kubelet-server-current.pem": {
    link: "/var/lib/kubelet/pki/kubelet-server-2024-01-01-00-00-00.pem"
  },
  "root/var/lib/kubelet/kubeconfig": "current kubeconfig",
  "root/var/lib/kubelet/bootstrap-kubeconfig": "bootstrap kubeconfig",
  "root/var/lib/kubelet/config.yaml": "kubelet config",
  "root/etc/kubernetes/pki/ca.crt": "cluster CA"
} satisfies Record<string, Plant>

/** The client credentials and kubeconfig of {@link kubeletPki}: exactly what the identity reset removes. */
const identityFiles = [
  "root/var/lib/kubelet/pki/kubelet-client-2024-01-01-00-00-00.pem",
  "root/var/lib/kubelet/pki/kubelet-client-2024-06-01-00-00-00.pem",
  "root/var/lib/kubelet/pki/kubelet-client-current.pem",
  "root/var/lib/kubelet/pki/kubelet-client.key.tmp",
  "root/var/lib/kubelet/kubeconfig"
]

const cniTree = {
  "root/etc/cni/net.d/10-calico.conflist": '{"cniVersion":"1.0.0","name":"k8s-pod-network"}',
  "root/etc/cni/net.d/99-loopback.conf": '{"type":"loopback"}',
  "root/etc/cni/net.d/multus.d/multus.kubeconfig": "multus",
  "root/var/lib/cni/networks/k8s-pod-network/10.244.1.7": "container-id\neth0",
  "root/var/lib/cni/networks/k8s-pod-network/last_reserved_ip.0": "10.244.1.7",
  "root/var/lib/cni/networks/k8s-pod-network/lock": "",
  "root/var/lib/cni/results/k8s-pod-network-abc-eth0": "{}",
  "root/opt/cni/bin/bridge": "binary"
} satisfies Record<string, Plant>

const sentinel = {
  "outside/sentinel": "must survive",
  "outside/kubelet-client-current.pem": "someone else's certificate",
  "outside/kubeconfig": "someone else's kubeconfig",
  "outside/10-evil.conf": "not ours",
  "outside/cni/networks/x/10.0.0.1": "not ours",
  "outside/pki/kubelet-client-current.pem": "not ours",
  "outside/pki/kubelet-client-2024-01-01-00-00-00.pem": "not ours",
  "outside/netd/10-evil.conf": "not ours",
  "outside/kubelet/pki/kubelet-client-current.pem": "not ours",
  "root/outside/file": "outside the targets, inside the root"
} satisfies Record<string, Plant>

/** A fresh sandbox, canonical, with `root/` as the host root and `outside/` beside it. */
const makeSandbox = Effect.gen(function* () {
  const fx = yield* MountFixture
  const fs = yield* FileSystem.FileSystem
  const sandbox = yield* fs.realPath(yield* fx.sandbox).pipe(Effect.orDie)
  return { sandbox, root: `${sandbox}/root`, outside: `${sandbox}/outside`, mountInfo: fx.mountInfo }
})

type Outcome =
  | { readonly _tag: "Report"; readonly report: SafeRemove.Report }
  | { readonly _tag: "ResetError"; readonly error: Repave.ResetError }

const outcome = <R>(
  effect: Effect.Effect<SafeRemove.Report, Repave.ResetError | HostPath.HostPathError | MountInfo.MountInfoError, R>
): Effect.Effect<Outcome, HostPath.HostPathError | MountInfo.MountInfoError, R> =>
  effect.pipe(
    Effect.map((report): Outcome => ({ _tag: "Report", report })),
    Effect.catchTag("ResetError", (error) => Effect.succeed<Outcome>({ _tag: "ResetError", error }))
  )

const keptOf = (o: Outcome): ReadonlyArray<SafeRemove.Kept> => (o._tag === "Report" ? o.report.kept : o.error.kept)
const removedOf = (o: Outcome): ReadonlyArray<string> => (o._tag === "Report" ? o.report.removed : o.error.removed)

// ---------------------------------------------------------------------------
// Resets on a tree without mounts
// ---------------------------------------------------------------------------

interface AttackCase {
  readonly name: string
  readonly operation: "resetCniState" | "resetKubeletIdentity"
  /** Planted (relative to the sandbox) after the base tree; `null` removes a base path first. */
  readonly tree: (sandbox: string) => Readonly<Record<string, Plant | null>>
  /** What must be gone afterwards (relative to the sandbox; everything below each goes too). */
  readonly gone: ReadonlyArray<string>
  /** What must have appeared (snapshot descriptions). */
  readonly added?: Readonly<Record<string, string>>
  /** The failure expected, by reason. */
  readonly fails?: SafeRemove.KeptReason
}

const netdEntries = [
  "root/etc/cni/net.d/10-calico.conflist",
  "root/etc/cni/net.d/99-loopback.conf",
  "root/etc/cni/net.d/multus.d"
]

const attacks: ReadonlyArray<AttackCase> = [
  {
    name: "/etc/cni/net.d/evil -> / (absolute) is removed as a link",
    operation: "resetCniState",
    tree: () => ({ "root/etc/cni/net.d/evil": { link: "/" } }),
    gone: [...netdEntries, "root/etc/cni/net.d/evil", "root/var/lib/cni"]
  },
  {
    name: "/etc/cni/net.d/evil -> ../../../outside (relative) is removed as a link",
    operation: "resetCniState",
    tree: () => ({
      "root/etc/cni/net.d/evil": { link: "../../../outside" },
      "root/etc/cni/net.d/evil-escape": { link: "../../../../outside" },
      "root/etc/cni/net.d/evil-file": { link: "../../../../outside/sentinel" }
    }),
    gone: [
      ...netdEntries,
      "root/etc/cni/net.d/evil",
      "root/etc/cni/net.d/evil-escape",
      "root/etc/cni/net.d/evil-file",
      "root/var/lib/cni"
    ]
  },
  {
    name: "/var/lib/cni itself a symlink to a directory outside: the link goes, the directory stays",
    operation: "resetCniState",
    tree: (sandbox) => ({ "root/var/lib/cni": null, "root/var/lib/cni!": { link: `${sandbox}/outside/cni` } }),
    gone: [...netdEntries, "root/var/lib/cni"]
  },
  {
    name: "/var/lib/cni/networks a symlink to / is removed as a link",
    operation: "resetCniState",
    tree: () => ({ "root/var/lib/cni/networks": null, "root/var/lib/cni/networks!": { link: "/" } }),
    gone: [...netdEntries, "root/var/lib/cni"]
  },
  {
    name: "/etc/cni/net.d itself a symlink outside: replaced by an empty directory, never followed",
    operation: "resetCniState",
    tree: (sandbox) => ({ "root/etc/cni/net.d": null, "root/etc/cni/net.d!": { link: `${sandbox}/outside/netd` } }),
    gone: ["root/etc/cni/net.d", "root/var/lib/cni"],
    added: { "root/etc/cni/net.d": "d 755" }
  },
  {
    name: "/etc/cni a file: the configuration directory cannot exist, so there is nothing to empty; the file stays",
    operation: "resetCniState",
    tree: () => ({ "root/etc/cni": null, "root/etc/cni!": "a file where the directory should be" }),
    gone: ["root/var/lib/cni"]
  },
  {
    name: "/var/lib/kubelet/pki a symlink outside: not followed, the reset fails with NotADirectory",
    operation: "resetKubeletIdentity",
    tree: (sandbox) => ({
      "root/var/lib/kubelet/pki": null,
      "root/var/lib/kubelet/pki!": { link: `${sandbox}/outside/pki` }
    }),
    gone: ["root/var/lib/kubelet/kubeconfig"],
    fails: "NotADirectory"
  },
  {
    name: "/var/lib/kubelet/pki a symlink to / (absolute): not followed",
    operation: "resetKubeletIdentity",
    tree: () => ({ "root/var/lib/kubelet/pki": null, "root/var/lib/kubelet/pki!": { link: "/" } }),
    gone: ["root/var/lib/kubelet/kubeconfig"],
    fails: "NotADirectory"
  },
  {
    name: "kubelet-client-current.pem pointing at a file outside: the link goes, the file stays",
    operation: "resetKubeletIdentity",
    tree: (sandbox) => ({
      "root/var/lib/kubelet/pki/kubelet-client-current.pem": null,
      "root/var/lib/kubelet/pki/kubelet-client-current.pem!": { link: `${sandbox}/outside/kubelet-client-current.pem` }
    }),
    gone: identityFiles
  },
  {
    name: "/var/lib/kubelet/kubeconfig a symlink to a file outside: the link goes, the file stays",
    operation: "resetKubeletIdentity",
    tree: () => ({
      "root/var/lib/kubelet/kubeconfig": null,
      "root/var/lib/kubelet/kubeconfig!": { link: "../../../../outside/kubeconfig" }
    }),
    gone: identityFiles
  },
  {
    name: "/var/lib/kubelet a symlink climbing out of the root is resolved inside it",
    operation: "resetKubeletIdentity",
    tree: () => ({
      "root/var/lib/kubelet": null,
      // The kernel would follow this to <sandbox>/outside/kubelet; contained, it is <root>/outside/kubelet.
      "root/var/lib/kubelet!": { link: "../../../outside/kubelet" }
    }),
    gone: []
  },
  {
    name: "/var/lib/kubelet -> /data/kubelet (absolute) is taken relative to the host root",
    operation: "resetKubeletIdentity",
    tree: () => ({
      "root/var/lib/kubelet": null,
      "root/var/lib/kubelet!": { link: "/data/kubelet" },
      "root/data/kubelet/pki/kubelet-client-current.pem": {
        link: "/data/kubelet/pki/kubelet-client-2024-01-01-00-00-00.pem"
      },
      "root/data/kubelet/pki/kubelet-client-2024-01-01-00-00-00.pem": "cert on the data disk",
      "root/data/kubelet/pki/kubelet.crt": "serving cert on the data disk",
      "root/data/kubelet/kubeconfig": "kubeconfig on the data disk"
    }),
    gone: [
      "root/data/kubelet/pki/kubelet-client-current.pem",
      "root/data/kubelet/pki/kubelet-client-2024-01-01-00-00-00.pem",
      "root/data/kubelet/kubeconfig"
    ]
  }
]

/**
 * The reset suite: CNI state and kubelet identity on trees without mounts,
 * the symlink attacks, and each auth mode. `hostLayer` provides the
 * `FileSystem` and a `MountFixture` (only `sandbox` and `mountInfo` are used).
 *
 * @since 0.1.0
 */
export const resets = (
  name: string,
  hostLayer: Layer.Layer<MountFixture | FileSystem.FileSystem | Directory.Directories>
): void =>
  layer(hostLayer)(`repave resets: ${name}`, (it) => {
    // The base tree every reset test starts from.
    const build = (extra: (sandbox: string) => Readonly<Record<string, Plant | null>> = () => ({})) =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const s = yield* makeSandbox
        yield* plant(s.sandbox, { ...cniTree, ...kubeletPki, ...sentinel })
        // `null` removes a base path; a key ending in "!" plants at the path without the "!".
        for (const [rel, what] of Object.entries(extra(s.sandbox))) {
          const path = rel.endsWith("!") ? rel.slice(0, -1) : rel
          if (what === null) {
            if (!rel.endsWith("!"))
              yield* Effect.orDie(fs.remove(`${s.sandbox}/${path}`, { recursive: true, force: true }))
          } else {
            yield* plant(s.sandbox, { [path]: what })
          }
        }
        return s
      })

    const runReset = (
      operation: AttackCase["operation"],
      s: { readonly root: string; readonly mountInfo: string; readonly sandbox: string }
    ) =>
      Effect.gen(function* () {
        const options = { hostRoot: s.root, mountInfo: s.mountInfo }
        const op =
          operation === "resetCniState"
            ? Repave.resetCniState(options)
            : Effect.flatMap(nodeStarts.BootstrapToken, (ns) => Repave.resetKubeletIdentity(ns, options))
        return yield* outcome(op).pipe(Fence.within([s.sandbox]))
      })

    for (const c of attacks) {
      it.effect(`symlink attack: ${c.name}`, () =>
        Effect.gen(function* () {
          const s = yield* build(c.tree)
          const before = yield* snapshot(s.sandbox)
          const result = yield* runReset(c.operation, s)
          const after = yield* snapshot(s.sandbox)
          // Every file outside the targets, the sentinel beside the root included, is unchanged.
          const expected: Record<string, string> = {}
          for (const [k, v] of Object.entries(before)) if (!c.gone.some((g) => isUnder(g, k))) expected[k] = v
          Object.assign(expected, c.added ?? {})
          assert.deepStrictEqual(differences(expected, after), [])
          for (const g of c.gone) assert.isDefined(before[g], `the case plants ${g}`)
          if (c.fails === undefined) {
            assert.strictEqual(result._tag, "Report", result._tag === "ResetError" ? result.error.message : "")
          } else {
            assert.strictEqual(result._tag, "ResetError")
            if (result._tag === "ResetError") {
              assert.strictEqual(result.error.reason._tag, c.fails)
              assert.strictEqual(result.error.operation, c.operation)
            }
          }
          // The report names exactly what went (the top paths; what was below them too).
          const removed = removedOf(result).map((p) => relativeTo(s.sandbox, p))
          for (const g of c.gone) assert.include(removed, g)
          for (const r of removed)
            assert.isTrue(
              c.gone.some((g) => isUnder(g, r)),
              `removed ${r}`
            )
        })
      )
    }

    it.effect("resetCniState empties /etc/cni/net.d, keeping the directory, and removes /var/lib/cni", () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const s = yield* build()
        const confBefore = yield* fs.stat(`${s.root}/etc/cni/net.d`)
        const result = yield* runReset("resetCniState", s)
        assert.strictEqual(result._tag, "Report")
        assert.deepStrictEqual(yield* fs.readDirectory(`${s.root}/etc/cni/net.d`), [])
        const confAfter = yield* fs.stat(`${s.root}/etc/cni/net.d`)
        assert.strictEqual(
          confAfter.ino._tag === "Some" ? confAfter.ino.value : -1n,
          confBefore.ino._tag === "Some" ? confBefore.ino.value : -2n
        )
        assert.isFalse(yield* fs.exists(`${s.root}/var/lib/cni`))
        assert.isTrue(yield* fs.exists(`${s.root}/var/lib`))
        assert.strictEqual(yield* fs.readFileString(`${s.root}/opt/cni/bin/bridge`), "binary")
        // Children are removed before their directory.
        const removed = removedOf(result)
        assert.isBelow(
          removed.indexOf(`${s.root}/var/lib/cni/networks/k8s-pod-network/lock`),
          removed.indexOf(`${s.root}/var/lib/cni/networks/k8s-pod-network`)
        )
        assert.strictEqual(removed.at(-1), `${s.root}/var/lib/cni`)
      })
    )

    it.effect("resets are idempotent, and missing directories are success (nothing is created)", () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const s = yield* build()
        yield* runReset("resetCniState", s)
        yield* runReset("resetKubeletIdentity", s)
        const once = yield* snapshot(s.sandbox)
        const again = [yield* runReset("resetCniState", s), yield* runReset("resetKubeletIdentity", s)]
        assert.deepStrictEqual(differences(once, yield* snapshot(s.sandbox)), [])
        for (const o of again) assert.deepStrictEqual(o, { _tag: "Report", report: SafeRemove.emptyReport })
        const bare = yield* makeSandbox
        yield* fs.makeDirectory(bare.root)
        const r1 = yield* runReset("resetCniState", bare)
        const r2 = yield* runReset("resetKubeletIdentity", bare)
        assert.deepStrictEqual(
          [r1, r2],
          [
            { _tag: "Report", report: SafeRemove.emptyReport },
            { _tag: "Report", report: SafeRemove.emptyReport }
          ]
        )
        assert.deepStrictEqual(yield* fs.readDirectory(bare.root), [])
      })
    )

    for (const mode of ["BootstrapToken", "Kubeconfig", "ExecCredential"] as const) {
      it.effect(
        `auth mode ${mode}: ${mode === "BootstrapToken" ? "exactly the client credentials go" : "nothing is removed"}`,
        () =>
          Effect.gen(function* () {
            const s = yield* build()
            const ns = yield* nodeStarts[mode]
            const before = yield* snapshot(s.sandbox)
            const report = yield* Repave.resetKubeletIdentity(ns, { hostRoot: s.root, mountInfo: s.mountInfo }).pipe(
              Fence.within([s.sandbox])
            )
            const after = yield* snapshot(s.sandbox)
            const gone = mode === "BootstrapToken" ? identityFiles : []
            assert.deepStrictEqual(
              Object.keys(before).filter((k) => after[k] === undefined),
              [...gone].sort()
            )
            assert.deepStrictEqual(
              differences(before, after, (k) => gone.includes(k)),
              []
            )
            assert.deepStrictEqual([...report.removed].map((p) => relativeTo(s.sandbox, p)).sort(), [...gone].sort())
            assert.deepStrictEqual(report.kept, [])
          })
      )
    }

    it.effect("a bootstrap kubeconfig at /var/lib/kubelet/kubeconfig is never removed", () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const s = yield* build()
        const ns = yield* NodeStart.decode({
          ...nodeBase,
          auth: {
            _tag: "BootstrapToken",
            token: "abcdef.0123456789abcdef",
            bootstrapKubeconfig: "/var/lib/kubelet/kubeconfig"
          }
        })
        const report = yield* Repave.resetKubeletIdentity(ns, { hostRoot: s.root, mountInfo: s.mountInfo }).pipe(
          Fence.within([s.sandbox])
        )
        assert.strictEqual(yield* fs.readFileString(`${s.root}/var/lib/kubelet/kubeconfig`), "current kubeconfig")
        assert.strictEqual(report.removed.length, identityFiles.length - 1)
      })
    )

    it.effect("the fence these tests run under refuses removals outside the sandbox and recursive removals", () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const s = yield* build(() => ({ "root/etc/cni/net.d/evil": { link: "/" } }))
        // Runs `f` with the fenced FileSystem, as the code under test gets it.
        const defect = (f: (fenced: FileSystem.FileSystem) => Effect.Effect<void, unknown>) =>
          Effect.map(Effect.exit(Fence.within([s.sandbox])(FileSystem.FileSystem.use(f))), (exit) =>
            exit._tag === "Failure" ? String(exit.cause) : "succeeded"
          )
        // A name that does not exist below `/`: even a broken fence deletes nothing here.
        const probe = `${s.root}/etc/cni/net.d/evil/nonexistent-hostnode-fence-probe`
        assert.include(yield* defect((f) => f.remove(probe)), "FenceViolation")
        assert.include(yield* defect((f) => f.remove(`${s.root}/etc/cni/net.d/../net.d/x`)), "FenceViolation")
        assert.include(
          yield* defect((f) => f.remove(`${s.root}/var/lib/cni`, { recursive: true })),
          "recursive remove of a directory with"
        )
        assert.isTrue(yield* fs.exists(`${s.root}/var/lib/cni/networks/k8s-pod-network/lock`))
        assert.strictEqual(yield* defect((f) => f.remove(`${s.root}/etc/cni/net.d/evil`)), "succeeded")
        assert.isFalse(yield* fs.exists(`${s.root}/etc/cni/net.d/evil`))
      })
    )

    it.effect("a directory swapped for a symlink just after it was listed is not followed", () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const dirs = yield* Directory.Directories
        // The link's target holds the same names as the directory it replaces.
        const s = yield* build(() => ({
          "outside/race/10.244.1.7": "not ours",
          "outside/race/last_reserved_ip.0": "not ours",
          "outside/race/lock": "not ours"
        }))
        const victim = `${s.root}/var/lib/cni/networks/k8s-pod-network`
        let swapped = false
        // The race, made deterministic: the listing returns the directory's
        // names, then the directory is moved aside (inside the root) and a
        // link to the sentinel put in its place, before the names are used.
        const racing: Directory.Directories = {
          ...dirs,
          list: (dir) =>
            Effect.tap(dirs.list(dir), () =>
              dir.path !== victim || swapped
                ? Effect.void
                : Effect.sync(() => {
                    swapped = true
                  }).pipe(
                    Effect.andThen(fs.rename(victim, `${s.root}/moved`)),
                    Effect.andThen(fs.symlink(`${s.outside}/race`, victim)),
                    Effect.orDie
                  )
            )
        }
        const before = yield* snapshot(s.sandbox)
        const result = yield* outcome(Repave.resetCniState({ hostRoot: s.root, mountInfo: s.mountInfo })).pipe(
          Fence.within([s.sandbox]),
          Effect.provideService(Directory.Directories, racing)
        )
        assert.isTrue(swapped)
        assert.strictEqual(result._tag, "ResetError")
        assert.deepStrictEqual(
          keptOf(result).map((k) => [k.path, k.reason]),
          [[victim, "Failed"]]
        )
        assert.include(keptOf(result)[0]?.detail ?? "", "replaced while it was being removed")
        const after = yield* snapshot(s.sandbox)
        // The sentinel the link points at, and everything outside the root, are intact.
        assert.deepStrictEqual(
          differences(before, after, (k) => !isUnder("outside", k)),
          []
        )
        // The link planted at the directory's name is still there, unfollowed.
        assert.strictEqual(after["root/var/lib/cni/networks/k8s-pod-network"], `l ${s.outside}/race`)
        // What was emptied is the directory that was opened, wherever it went: its handle, not its name.
        assert.deepStrictEqual(
          Object.keys(after).filter((k) => isUnder("root/moved", k)),
          ["root/moved"]
        )
      })
    )

    it.effect("SafeRemove refuses the host root itself, and an unusable mount table removes nothing", () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const s = yield* build()
        const before = yield* snapshot(s.sandbox)
        const options = { hostRoot: s.root, mountInfo: s.mountInfo }
        const e1 = yield* Effect.flip(SafeRemove.remove(["/var/.."], options))
        assert.strictEqual(e1._tag, "HostPathError")
        const e2 = yield* Effect.flip(SafeRemove.empty("/", options))
        assert.strictEqual(e2._tag, "HostPathError")
        const bad = `${s.sandbox}/bad-mountinfo`
        yield* fs.writeFileString(bad, "1 0 8:1 / / rw - ext4 /dev/root rw\nnot a mount\n")
        const e3 = yield* Effect.flip(
          Repave.resetCniState({ hostRoot: s.root, mountInfo: bad }).pipe(Fence.within([s.sandbox]))
        )
        assert.strictEqual(e3._tag, "MountInfoError")
        assert.deepStrictEqual(
          differences(before, yield* snapshot(s.sandbox), (k) => k === "bad-mountinfo"),
          []
        )
      })
    )
  })

// ---------------------------------------------------------------------------
// Teardown and removal on real mounts
// ---------------------------------------------------------------------------

/**
 * The paths of the kubelet layout built by {@link buildKubeletLayout}.
 *
 * @since 0.1.0
 */
export interface KubeletLayout {
  readonly sandbox: string
  readonly root: string
  readonly mountInfo: string
  readonly kubelet: string
  readonly pods: { readonly a: string; readonly b: string; readonly c: string; readonly d: string }
  readonly csiData: string
  readonly csiMount: string
  readonly secretB: string
  readonly nestedD: string
}

/**
 * Below a fresh sandbox, a host root whose kubelet directory has four pods:
 * `a` with a tmpfs secret and a projected volume (atomic-writer symlinks
 * inside), `b` with a CSI bind mount whose source `csi-data/` lies outside the
 * kubelet directory and a tmpfs secret, `c` with no mounts but symlinks to
 * `/`, outside and upwards, `d` with a tmpfs inside a tmpfs.
 *
 * @since 0.1.0
 */
export const buildKubeletLayout = Effect.gen(function* () {
  const fx = yield* MountFixture
  const fs = yield* FileSystem.FileSystem
  const s = yield* makeSandbox
  const kubelet = `${s.root}/var/lib/kubelet`
  const pods = {
    a: `${kubelet}/pods/aaaaaaaa-1111`,
    b: `${kubelet}/pods/bbbbbbbb-2222`,
    c: `${kubelet}/pods/cccccccc-3333`,
    d: `${kubelet}/pods/dddddddd-4444`
  }
  const mkdir = (p: string) => Effect.orDie(fs.makeDirectory(p, { recursive: true }))
  yield* plant(s.sandbox, {
    ...kubeletPki,
    ...sentinel,
    "root/var/lib/kubelet/plugins/kubernetes.io/csi/driver.example/abc/globalmount/keep": "plugin data",
    "csi-data/db": "precious",
    "csi-data/sub/deep/file": "precious too"
  })
  // pod a: a tmpfs secret and a projected volume written the kubelet's atomic way
  const secretA = `${pods.a}/volumes/kubernetes.io~secret/default-token`
  yield* mkdir(secretA)
  yield* fx.tmpfs(secretA)
  const projected = `${pods.a}/volumes/kubernetes.io~projected/kube-api-access-x1`
  yield* mkdir(projected)
  yield* fx.tmpfs(projected)
  yield* plant(pods.a, {
    "volumes/kubernetes.io~secret/default-token/token": "s3cr3t",
    "volumes/kubernetes.io~projected/kube-api-access-x1/..2024_01_01_00_00_00.1/token": "projected token",
    "volumes/kubernetes.io~projected/kube-api-access-x1/..data": { link: "..2024_01_01_00_00_00.1" },
    "volumes/kubernetes.io~projected/kube-api-access-x1/token": { link: "..data/token" },
    "volumes/kubernetes.io~empty-dir/cache/blob": "empty dir content",
    "etc-hosts": "127.0.0.1 localhost",
    "containers/app/0": ""
  })
  // pod b: the CSI bind mount, and a secret
  const csiMount = `${pods.b}/volumes/kubernetes.io~csi/pvc-1/mount`
  yield* mkdir(csiMount)
  yield* fx.bind(`${s.sandbox}/csi-data`, csiMount)
  const secretB = `${pods.b}/volumes/kubernetes.io~secret/s`
  yield* mkdir(secretB)
  yield* fx.tmpfs(secretB)
  yield* plant(pods.b, {
    "volumes/kubernetes.io~csi/pvc-1/vol_data.json": "{}",
    "volumes/kubernetes.io~secret/s/password": "hunter2",
    "etc-hosts": "127.0.0.1 localhost"
  })
  // pod c: no mounts, links that must never be followed
  yield* plant(pods.c, {
    "etc-hosts": "127.0.0.1 localhost",
    "volumes/kubernetes.io~empty-dir/data/to-root": { link: "/" },
    "volumes/kubernetes.io~empty-dir/data/to-outside": { link: `${s.outside}` },
    "volumes/kubernetes.io~empty-dir/data/upwards": { link: "../../../../../../../../../../outside" }
  })
  // pod d: a tmpfs inside a tmpfs
  const nestedD = `${pods.d}/volumes/v1/v2`
  yield* mkdir(`${pods.d}/volumes/v1`)
  yield* fx.tmpfs(`${pods.d}/volumes/v1`)
  yield* mkdir(nestedD)
  yield* fx.tmpfs(nestedD)
  yield* plant(pods.d, { "volumes/v1/a": "outer", "volumes/v1/v2/b": "inner", beside: "plain file" })
  return {
    ...s,
    kubelet,
    pods,
    csiData: `${s.sandbox}/csi-data`,
    csiMount,
    secretB,
    nestedD
  } satisfies KubeletLayout
})

/**
 * The mount suite: `teardownKubeletDir` and `SafeRemove` on real mounts.
 * `hostLayer` provides the `Mounter` under test, a `MountFixture` in the same
 * mount namespace, and the `FileSystem`.
 *
 * @since 0.1.0
 */
export const mounts = (
  name: string,
  hostLayer: Layer.Layer<Mounter.Mounter | MountFixture | FileSystem.FileSystem | Directory.Directories>
): void =>
  layer(hostLayer)(`repave on mounts: ${name}`, (it) => {
    const tableBelow = (dir: string) =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        return mountsBelow(yield* fx.table, dir)
      })

    it.effect("a same-device bind mount made after the table was read is not entered: the mount id says so", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const fs = yield* FileSystem.FileSystem
        const l = yield* buildKubeletLayout
        const csiBefore = yield* snapshot(l.csiData)
        const victim = `${l.pods.c}/volumes/kubernetes.io~empty-dir/data/late`
        yield* fs.makeDirectory(victim, { recursive: true }).pipe(Effect.orDie)
        const report = yield* Effect.scoped(
          Effect.gen(function* () {
            // The session reads the table now; the bind comes after, as a pod's mount made meanwhile would.
            const session = yield* SafeRemove.session({ hostRoot: l.root, mountInfo: l.mountInfo })
            yield* fx.bind(l.csiData, victim)
            return yield* session.remove(["/var/lib/kubelet/pods/cccccccc-3333"])
          })
        ).pipe(Fence.within([l.sandbox]))
        assert.deepStrictEqual(
          report.kept.map((k) => [k.path, k.reason]).filter(([p]) => p === victim),
          [[victim, "OtherFileSystem"]]
        )
        // Nothing was deleted through it: the source is whole.
        assert.deepStrictEqual(yield* snapshot(l.csiData), csiBefore)
        assert.deepStrictEqual(yield* snapshot(victim), csiBefore)
      })
    )

    it.effect("a table that does not list the mount the root is on is refused before anything is removed", () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const l = yield* buildKubeletLayout
        const empty = `${l.sandbox}/empty-mountinfo`
        yield* fs.writeFileString(empty, "").pipe(Effect.orDie)
        const foreign = `${l.sandbox}/foreign-mountinfo`
        yield* fs.writeFileString(foreign, "999999 1 8:1 / / rw - ext4 /dev/sda1 rw\n").pipe(Effect.orDie)
        const before = yield* snapshot(l.sandbox)
        for (const table of [empty, foreign]) {
          const e = yield* Effect.flip(
            Repave.teardownKubeletDir({ hostRoot: l.root, mountInfo: table }).pipe(Fence.within([l.sandbox]))
          )
          assert.strictEqual(e._tag === "MountInfoError" && e.reason._tag, "DoesNotCover", table)
          const r = yield* Effect.flip(
            SafeRemove.remove(["/var/lib/kubelet/pods"], { hostRoot: l.root, mountInfo: table })
          )
          assert.strictEqual(r._tag === "MountInfoError" && r.reason._tag, "DoesNotCover", table)
        }
        assert.deepStrictEqual(differences(before, yield* snapshot(l.sandbox)), [])
      })
    )

    it.effect("names that are not UTF-8 are removed by the teardown and the reset, and reported losslessly", () =>
      Effect.gen(function* () {
        const dirs = yield* Directory.Directories
        const l = yield* buildKubeletLayout
        const cafe = new Uint8Array([0x63, 0x61, 0x66, 0xe9])
        // Planted through handles: the FileSystem's strings cannot name them.
        yield* Effect.scoped(
          Effect.gen(function* () {
            const root = yield* dirs.openRoot(l.root)
            const at = (path: string) =>
              Effect.flatMap(dirs.resolve(root, path, { followFinal: true }), (r) =>
                r.name === undefined ? Effect.succeed(r.parent) : dirs.openDirectory(r.parent, r.name)
              )
            const data = yield* at("/var/lib/kubelet/pods/cccccccc-3333/volumes/kubernetes.io~empty-dir/data")
            yield* dirs.makeDirectory(data, cafe, 0o755)
            const sub = yield* dirs.openDirectory(data, cafe)
            yield* dirs.openFile(sub, cafe, { mode: "create", permissions: 0o644 })
          })
        ).pipe(Effect.orDie)
        const teardown = yield* Repave.teardownKubeletDir({ hostRoot: l.root, mountInfo: l.mountInfo }).pipe(
          Effect.provide(FaultyMounter.layer((t) => t === l.csiMount)),
          Fence.within([l.sandbox])
        )
        const escaped = "caf\udce9"
        assert.include(teardown.removed, `${l.pods.c}/volumes/kubernetes.io~empty-dir/data/${escaped}/${escaped}`)
        assert.include(teardown.removed, `${l.pods.c}/volumes/kubernetes.io~empty-dir/data/${escaped}`)
        assert.notInclude(
          teardown.kept.map((k) => k.path),
          l.pods.c
        )
        const fs = yield* FileSystem.FileSystem
        assert.isFalse(yield* fs.exists(l.pods.c))
        yield* plant(l.sandbox, cniTree)
        yield* Effect.scoped(
          Effect.gen(function* () {
            const root = yield* dirs.openRoot(l.root)
            for (const path of ["/etc/cni/net.d/x", "/var/lib/cni/networks/k8s-pod-network/x"]) {
              const at = yield* dirs.resolve(root, path)
              yield* dirs.openFile(at.parent, cafe, { mode: "create", permissions: 0o644 })
            }
          })
        ).pipe(Effect.orDie)
        const reset = yield* Repave.resetCniState({ hostRoot: l.root, mountInfo: l.mountInfo }).pipe(
          Fence.within([l.sandbox])
        )
        assert.include(reset.removed, `${l.root}/etc/cni/net.d/${escaped}`)
        assert.include(reset.removed, `${l.root}/var/lib/cni/networks/k8s-pod-network/${escaped}`)
        assert.isFalse(yield* fs.exists(`${l.root}/var/lib/cni`))
        assert.deepStrictEqual(yield* fs.readDirectory(`${l.root}/etc/cni/net.d`), [])
      })
    )

    it.effect("teardownKubeletDir keeps the pod whose bind mount could not be unmounted; the CSI data is intact", () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const l = yield* buildKubeletLayout
        const before = yield* snapshot(l.sandbox)
        const csiBefore = yield* snapshot(l.csiData)
        assert.strictEqual(csiBefore.db?.slice(0, 6), "f 644 ")
        const report = yield* Repave.teardownKubeletDir({ hostRoot: l.root, mountInfo: l.mountInfo }).pipe(
          Effect.provide(FaultyMounter.layer((t) => t === l.csiMount)),
          Fence.within([l.sandbox])
        )
        const { a, b, c, d } = l.pods
        assert.deepStrictEqual(report.prefixes, [a, b, c, d])
        assert.deepStrictEqual([...report.unmountFailures.keys()], [b])
        assert.deepStrictEqual(
          report.kept.map((k) => [k.path, k.reason, k.mountPoint]),
          [[b, "UnmountFailed", l.csiMount]]
        )
        for (const p of [a, c, d]) assert.isFalse(yield* fs.exists(p), p)
        assert.isTrue(yield* fs.exists(b))
        assert.deepStrictEqual(yield* fs.readDirectory(`${l.kubelet}/pods`), ["bbbbbbbb-2222"])
        // No mount remains below the root but the refused one.
        assert.deepStrictEqual(
          (yield* tableBelow(l.root)).map((e) => e.mountPoint),
          [l.csiMount]
        )
        // The CSI data, byte for byte, at its source and through the mount.
        assert.deepStrictEqual(yield* snapshot(l.csiData), csiBefore)
        assert.deepStrictEqual(yield* snapshot(l.csiMount), csiBefore)
        // Everything else is as it was: the kept pod but for its unmounted secret,
        // the rest of the kubelet directory, the sentinel.
        const after = yield* snapshot(l.sandbox)
        const rel = (p: string) => relativeTo(l.sandbox, p)
        const gone = [a, c, d].map(rel)
        assert.deepStrictEqual(
          differences(before, after, (k) => gone.some((g) => isUnder(g, k)) || isUnder(rel(l.secretB), k)),
          []
        )
        for (const g of gone) for (const k of Object.keys(after)) assert.isFalse(isUnder(g, k), k)
        // The report lists what was removed, all of it below the removed pods.
        for (const r of report.removed)
          assert.isTrue(
            [a, c, d].some((p) => isUnder(p, r)),
            r
          )
        for (const p of [a, c, d, `${a}/etc-hosts`, `${c}/volumes/kubernetes.io~empty-dir/data/to-root`]) {
          assert.include(report.removed, p)
        }
      })
    )

    it.effect("teardownKubeletDir with every unmount working leaves no pod, no mount, and the CSI data", () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const l = yield* buildKubeletLayout
        const csiBefore = yield* snapshot(l.csiData)
        const before = yield* snapshot(l.sandbox)
        const report = yield* Repave.teardownKubeletDir({ hostRoot: l.root, mountInfo: l.mountInfo }).pipe(
          Fence.within([l.sandbox])
        )
        assert.deepStrictEqual(report.kept, [])
        assert.strictEqual(report.unmountFailures.size, 0)
        assert.deepStrictEqual(yield* fs.readDirectory(`${l.kubelet}/pods`), [])
        assert.deepStrictEqual(yield* tableBelow(l.root), [])
        assert.deepStrictEqual(yield* snapshot(l.csiData), csiBefore)
        const pods = relativeTo(l.sandbox, `${l.kubelet}/pods`)
        assert.deepStrictEqual(
          differences(before, yield* snapshot(l.sandbox), (k) => k !== pods && isUnder(pods, k)),
          []
        )
        // The same teardown again finds nothing to do.
        const again = yield* Repave.teardownKubeletDir({ hostRoot: l.root, mountInfo: l.mountInfo }).pipe(
          Fence.within([l.sandbox])
        )
        assert.deepStrictEqual([again.prefixes, again.removed, again.kept], [[], [], []])
      })
    )

    it.effect("SafeRemove alone never deletes through a bind mount: the pod is kept and says which mount", () =>
      Effect.gen(function* () {
        const l = yield* buildKubeletLayout
        const before = yield* snapshot(l.sandbox)
        const report = yield* SafeRemove.remove(["/var/lib/kubelet/pods/bbbbbbbb-2222"], {
          hostRoot: l.root,
          mountInfo: l.mountInfo
        }).pipe(Fence.within([l.sandbox]))
        assert.deepStrictEqual(report.removed, [])
        assert.deepStrictEqual(
          report.kept.map((k) => [k.path, k.reason, k.mountPoint]),
          [[l.pods.b, "MountBelow", l.csiMount]]
        )
        assert.deepStrictEqual(differences(before, yield* snapshot(l.sandbox)), [])
      })
    )

    it.effect("a host root reached through a symlink still sees the mounts below it", () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const l = yield* buildKubeletLayout
        yield* fs.symlink(l.root, `${l.sandbox}/rootlink`)
        const before = yield* snapshot(l.sandbox)
        const report = yield* SafeRemove.remove(["/var/lib/kubelet/pods/bbbbbbbb-2222"], {
          hostRoot: `${l.sandbox}/rootlink`,
          mountInfo: l.mountInfo
        }).pipe(Fence.within([l.sandbox]))
        assert.deepStrictEqual(
          report.kept.map((k) => [k.path, k.reason]),
          [[l.pods.b, "MountBelow"]]
        )
        assert.deepStrictEqual(differences(before, yield* snapshot(l.sandbox)), [])
      })
    )

    it.effect("a mount the table shows at another path stops the walk by its device", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const fs = yield* FileSystem.FileSystem
        const l = yield* buildKubeletLayout
        // The table as a namespace that sees the root elsewhere would show it.
        const table = yield* fx.table
        const moved = table.map((e) =>
          Unmount.covers(l.root, HostPath.clean(e.mountPoint)) ? { ...e, mountPoint: `/elsewhere${e.mountPoint}` } : e
        )
        const fake = `${l.sandbox}/moved-mountinfo`
        yield* fs.writeFileString(fake, MountInfo.render(moved))
        const outer = `${l.pods.d}/volumes/v1`
        const mounted = yield* snapshot(outer)
        // The mount point itself as the path to remove: its device differs from its parent's.
        const direct = yield* SafeRemove.remove(["/var/lib/kubelet/pods/dddddddd-4444/volumes/v1"], {
          hostRoot: l.root,
          mountInfo: fake
        }).pipe(Fence.within([l.sandbox]))
        assert.deepStrictEqual(
          [direct.removed, direct.kept.map((k) => [k.path, k.reason])],
          [[], [[outer, "OtherFileSystem"]]]
        )
        // The pod: the walk stops at the mount and removes what is beside it.
        const report = yield* SafeRemove.remove(["/var/lib/kubelet/pods/dddddddd-4444"], {
          hostRoot: l.root,
          mountInfo: fake
        }).pipe(Fence.within([l.sandbox]))
        assert.deepStrictEqual(
          report.kept.map((k) => [k.path, k.reason]),
          [[outer, "OtherFileSystem"]]
        )
        assert.deepStrictEqual(report.removed, [`${l.pods.d}/beside`])
        assert.deepStrictEqual(yield* snapshot(outer), mounted)
        assert.strictEqual((yield* tableBelow(l.pods.d)).length, 2)
      })
    )

    it.effect("the table of another mount namespace maps through the host root's table root", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const fs = yield* FileSystem.FileSystem
        const l = yield* buildKubeletLayout
        // The table of a namespace whose `/` is the host root: its paths lack the root's prefix.
        const table = yield* fx.table
        const own = table.filter((e) => Unmount.covers(l.root, HostPath.clean(e.mountPoint)))
        // Their `/` is the mount the root is on (the sandbox's), under the id it really has.
        const rootMount = table
          .filter((e) => Unmount.covers(HostPath.clean(e.mountPoint), l.root))
          .sort((a, b) => b.mountPoint.length - a.mountPoint.length || b.id - a.id)[0] as MountInfo.MountEntry
        const theirs = [
          { ...rootMount, parentId: 0, root: "/", mountPoint: "/" },
          ...own.map((e) => ({ ...e, mountPoint: e.mountPoint.slice(l.root.length) }))
        ]
        const path = `${l.sandbox}/their-mountinfo`
        yield* fs.writeFileString(path, MountInfo.render(theirs))
        const csiBefore = yield* snapshot(l.csiData)
        const report = yield* SafeRemove.remove(
          ["/var/lib/kubelet/pods/bbbbbbbb-2222", "/var/lib/kubelet/pods/cccccccc-3333"],
          { hostRoot: yield* HostPath.decodeRoot({ path: l.root, mountInfo: path, tableRoot: l.root }) }
        ).pipe(Fence.within([l.sandbox]))
        assert.deepStrictEqual(
          report.kept.map((k) => [k.path, k.reason, k.mountPoint]),
          [[l.pods.b, "MountBelow", l.csiMount.slice(l.root.length)]]
        )
        assert.isFalse(yield* fs.exists(l.pods.c))
        assert.deepStrictEqual(yield* snapshot(l.csiMount), csiBefore)
      })
    )

    it.effect("a bind mount whose source lies in another pod keeps that pod too", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const fs = yield* FileSystem.FileSystem
        const s = yield* makeSandbox
        const pods = `${s.root}/var/lib/kubelet/pods`
        const source = `${pods}/e/volumes/shared`
        const view = `${pods}/f/volumes/view`
        yield* plant(s.root, {
          "var/lib/kubelet/pods/e/volumes/shared/data": "reachable through f",
          "var/lib/kubelet/pods/e/etc-hosts": "hosts",
          "var/lib/kubelet/pods/f/volumes/view": { dir: true },
          "var/lib/kubelet/pods/g/etc-hosts": "hosts"
        })
        yield* fx.bind(source, view)
        const through = yield* snapshot(view)
        const report = yield* Repave.teardownKubeletDir({ hostRoot: s.root, mountInfo: s.mountInfo }).pipe(
          Effect.provide(FaultyMounter.layer((t) => t === view)),
          Fence.within([s.sandbox])
        )
        assert.deepStrictEqual(
          report.kept.map((k) => [k.path, k.reason, k.mountPoint]),
          [
            [`${pods}/f`, "UnmountFailed", view],
            [`${pods}/e`, "MountSourceBelow", view]
          ]
        )
        assert.deepStrictEqual(yield* snapshot(view), through)
        assert.strictEqual(yield* fs.readFileString(`${pods}/e/etc-hosts`), "hosts")
        assert.deepStrictEqual(yield* fs.readDirectory(pods).pipe(Effect.map((n) => [...n].sort())), ["e", "f"])
      })
    )

    it.effect("resetCniState fails, naming the mount, when a mount is inside net.d or /var/lib/cni", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const fs = yield* FileSystem.FileSystem
        const s = yield* makeSandbox
        yield* plant(s.sandbox, cniTree)
        const inNetd = `${s.root}/etc/cni/net.d/mounted`
        const inCni = `${s.root}/var/lib/cni/networks/k8s-pod-network`
        yield* fs.makeDirectory(inNetd)
        yield* fx.tmpfs(inNetd)
        yield* fx.tmpfs(inCni)
        yield* plant(s.sandbox, {
          "root/etc/cni/net.d/mounted/00-a.conf": "in a mount",
          "root/var/lib/cni/networks/k8s-pod-network/10.244.0.9": "in a mount"
        })
        const before = yield* snapshot(s.sandbox)
        const error = yield* Effect.flip(
          Repave.resetCniState({ hostRoot: s.root, mountInfo: s.mountInfo }).pipe(Fence.within([s.sandbox]))
        )
        assert.strictEqual(error._tag, "ResetError")
        if (error._tag !== "ResetError") return
        assert.strictEqual(error.reason._tag, "MountBelow")
        assert.deepStrictEqual(
          error.kept.map((k) => [k.path, k.reason, k.mountPoint]),
          [
            [inNetd, "MountBelow", inNetd],
            [`${s.root}/var/lib/cni`, "MountBelow", inCni]
          ]
        )
        assert.include(error.message, inNetd)
        // What could go went; what is below the mounts is untouched.
        assert.deepStrictEqual(yield* fs.readDirectory(`${s.root}/etc/cni/net.d`), ["mounted"])
        const after = yield* snapshot(s.sandbox)
        const netd = "root/etc/cni/net.d"
        assert.deepStrictEqual(
          differences(before, after, (k) => isUnder(netd, k) && k !== netd && !isUnder(`${netd}/mounted`, k)),
          []
        )
        // A mount on net.d itself: nothing in it is removed.
        const s2 = yield* makeSandbox
        yield* plant(s2.sandbox, { "root/etc/cni/net.d": { dir: true } })
        yield* fx.tmpfs(`${s2.root}/etc/cni/net.d`)
        yield* plant(s2.sandbox, { "root/etc/cni/net.d/10-x.conf": "config on its own mount" })
        const e2 = yield* Effect.flip(
          Repave.resetCniState({ hostRoot: s2.root, mountInfo: s2.mountInfo }).pipe(Fence.within([s2.sandbox]))
        )
        assert.deepStrictEqual(
          e2._tag === "ResetError" ? e2.kept.map((k) => [k.path, k.reason, k.mountPoint]) : e2._tag,
          [[`${s2.root}/etc/cni/net.d`, "MountBelow", `${s2.root}/etc/cni/net.d`]]
        )
        assert.deepStrictEqual(yield* fs.readDirectory(`${s2.root}/etc/cni/net.d`), ["10-x.conf"])
      })
    )

    it.effect("teardownKubeletDir refuses the host root as a prefix before unmounting anything", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const l = yield* buildKubeletLayout
        const ids = (t: MountInfo.MountTable) => t.map((e) => e.id)
        const before = yield* fx.table
        for (const prefixes of [["/"], ["/var/lib/kubelet/pods/../../../.."]]) {
          const e = yield* Effect.flip(
            Repave.teardownKubeletDir({ hostRoot: l.root, mountInfo: l.mountInfo, prefixes }).pipe(
              Fence.within([l.sandbox])
            )
          )
          assert.strictEqual(e._tag, "HostPathError")
        }
        const bad = `${l.sandbox}/bad-mountinfo`
        yield* Effect.orDie(FileSystem.FileSystem.use((fs) => fs.writeFileString(bad, "garbage\n")))
        const e = yield* Effect.flip(
          Repave.teardownKubeletDir({ hostRoot: l.root, mountInfo: bad }).pipe(Fence.within([l.sandbox]))
        )
        assert.strictEqual(e._tag, "MountInfoError")
        assert.deepStrictEqual(ids(yield* fx.table), ids(before))
      })
    )

    it.effect("a pods directory that is a symlink is not followed", () =>
      Effect.gen(function* () {
        const s = yield* makeSandbox
        yield* plant(s.sandbox, {
          "outside/pods/x/data": "not ours",
          "root/var/lib/kubelet/pods": { link: `${s.outside}/pods` }
        })
        const before = yield* snapshot(s.sandbox)
        const report = yield* Repave.teardownKubeletDir({ hostRoot: s.root, mountInfo: s.mountInfo }).pipe(
          Fence.within([s.sandbox])
        )
        assert.deepStrictEqual(
          report.kept.map((k) => [k.path, k.reason]),
          [[`${s.root}/var/lib/kubelet/pods`, "NotADirectory"]]
        )
        assert.deepStrictEqual(differences(before, yield* snapshot(s.sandbox)), [])
      })
    )
  })

// ---------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------

const slotPaths = {
  netd: "/etc/cni/net.d",
  netdSub: "/etc/cni/net.d/sub",
  cni: "/var/lib/cni",
  cniNet: "/var/lib/cni/networks/net1",
  pki: "/var/lib/kubelet/pki",
  kubelet: "/var/lib/kubelet",
  p0: "/var/lib/kubelet/pods/p0",
  p0v: "/var/lib/kubelet/pods/p0/volumes/v",
  p1: "/var/lib/kubelet/pods/p1",
  p1v: "/var/lib/kubelet/pods/p1/volumes/v",
  p2v: "/var/lib/kubelet/pods/p2/volumes/v",
  etc: "/etc",
  data: "/data"
} as const

type SlotName = keyof typeof slotPaths

const Slot = Schema.Literals(Object.keys(slotPaths) as Array<SlotName>)

/** One generated entry: a file, a directory with a file, or a symlink (to `/`, up out of the root, outside, into the root). */
const GeneratedEntry = Schema.Struct({
  slot: Slot,
  name: Schema.Literals([
    "a",
    "b",
    "kubelet-client-2024-01-01-00-00-00.pem",
    "kubelet-client-current.pem",
    "kubelet-client.key.tmp",
    "kubelet.crt",
    "kubeconfig",
    "10-net.conflist",
    "last_reserved_ip.0"
  ]),
  kind: Schema.Literals(["file", "dir", "linkRoot", "linkUp", "linkOutside", "linkData"])
})

/** One generated mount: where, what (tmpfs, a bind of outside data, a bind of another pod's directory), and whether its unmount is refused. */
const GeneratedMount = Schema.Struct({
  at: Schema.Literals(["p0", "p1", "p2", "netd", "cni"]),
  kind: Schema.Literals(["tmpfs", "bindCsi", "bindPod"]),
  refuse: Schema.Boolean
})

/**
 * A generated host: entries, mounts, and which well-known directories are symlinks instead.
 *
 * @since 0.1.0
 */
export const Plan = Schema.Struct({
  entries: Schema.Array(GeneratedEntry).check(Schema.isMaxLength(24)),
  mounts: Schema.Array(GeneratedMount).check(Schema.isMaxLength(5)),
  linked: Schema.Array(Schema.Literals(["cni", "pki", "p2", "netd"])).check(Schema.isMaxLength(2))
})

/**
 * A generated host.
 *
 * @since 0.1.0
 */
export type Plan = typeof Plan.Type

const depth = (hostPath: string): number => HostPath.components(hostPath).length

const linkedHostPath = { cni: slotPaths.cni, pki: slotPaths.pki, p2: "/var/lib/kubelet/pods/p2", netd: slotPaths.netd }

interface MadeMount {
  readonly mountPoint: string
  readonly at: Plan["mounts"][number]["at"]
  readonly kind: Plan["mounts"][number]["kind"]
  readonly refused: boolean
  readonly source: string | undefined
}

/**
 * Builds `plan` below a fresh sandbox; returns the paths and the mounts made.
 *
 * @since 0.1.0
 */
export const buildPlan = (plan: Plan) =>
  Effect.gen(function* () {
    const fx = yield* MountFixture
    const fs = yield* FileSystem.FileSystem
    const s = yield* makeSandbox
    const linked = new Set(plan.linked)
    const isLinked = (hostPath: string) =>
      [...linked].some((l) => HostPath.isWithin(linkedHostPath[l], hostPath) && hostPath !== linkedHostPath[l]) ||
      [...linked].some((l) => linkedHostPath[l] === hostPath)
    const full = (hostPath: string) => `${s.root}${hostPath}`
    yield* plant(s.sandbox, {
      ...sentinel,
      "root/var/lib/kubelet/bootstrap-kubeconfig": "bootstrap",
      "root/data/keep": "data",
      "root/etc/cni/net.d/.keep": "k",
      "root/var/lib/cni/networks/net1/lock": ""
    })
    for (const hostPath of Object.values(slotPaths)) {
      if (!isLinked(hostPath)) yield* Effect.orDie(fs.makeDirectory(full(hostPath), { recursive: true }))
    }
    if (!isLinked("/var/lib/kubelet/pods/p2")) yield* plant(s.root, { "var/lib/kubelet/pods/p2/etc-hosts": "h" })
    for (const l of linked) {
      const at = full(linkedHostPath[l])
      yield* Effect.orDie(fs.remove(at, { recursive: true, force: true }))
      const target =
        l === "cni"
          ? `${s.outside}/cni`
          : l === "pki"
            ? `${s.outside}/pki`
            : l === "netd"
              ? `${s.outside}/netd`
              : "../../../../data"
      yield* plant(s.root, { [linkedHostPath[l].slice(1)]: { link: target } })
    }
    for (const e of plan.entries) {
      const dir = slotPaths[e.slot]
      if (isLinked(dir)) continue
      const path = `${full(dir)}/${e.name}`
      if ((yield* Effect.option(fs.lstat(path)))._tag === "Some") continue
      const up = "../".repeat(depth(dir) + 1)
      const rel = `${dir.slice(1)}/${e.name}`
      const what: Plant =
        e.kind === "file"
          ? `${e.slot}:${e.name}`
          : e.kind === "dir"
            ? { dir: true }
            : e.kind === "linkRoot"
              ? { link: "/" }
              : e.kind === "linkUp"
                ? { link: `${up}outside` }
                : e.kind === "linkOutside"
                  ? { link: `${s.outside}/sentinel` }
                  : { link: `${"../".repeat(depth(dir))}data` }
      yield* plant(s.root, { [rel]: what })
      if (e.kind === "dir") yield* plant(s.root, { [`${rel}/f`]: "in a directory" })
    }
    const pods = (["p0", "p1", "p2"] as const).filter((p) => !isLinked(`/var/lib/kubelet/pods/${p}`))
    const made: Array<MadeMount> = []
    for (const [i, m] of plan.mounts.entries()) {
      const base =
        m.at === "netd"
          ? slotPaths.netd
          : m.at === "cni"
            ? "/var/lib/cni/networks"
            : `/var/lib/kubelet/pods/${m.at}/volumes`
      if (isLinked(base) || isLinked(`${base}/m${i}`)) continue
      const mountPoint = `${full(base)}/m${i}`
      yield* Effect.orDie(fs.makeDirectory(mountPoint, { recursive: true }))
      let source: string | undefined
      if (m.kind === "tmpfs") {
        yield* fx.tmpfs(mountPoint)
        yield* plant(mountPoint, { secret: `tmpfs ${i}` })
      } else {
        const pod = pods.find((p) => p !== m.at)
        source =
          m.kind === "bindCsi" || pod === undefined
            ? `${s.sandbox}/csi/m${i}`
            : `${full(`/var/lib/kubelet/pods/${pod}/volumes`)}/src${i}`
        yield* plant(source, { data: `bound ${i}`, "sub/more": `more ${i}` })
        yield* fx.bind(source, mountPoint)
      }
      made.push({ mountPoint, at: m.at, kind: m.kind, refused: m.refuse && m.at !== "netd" && m.at !== "cni", source })
    }
    return { ...s, made, linked }
  })

/** The regions a repave may change, relative to the sandbox. */
const inTargets = (rel: string, linked: ReadonlySet<string>): boolean => {
  const r = "root"
  if (["p0", "p1", "p2"].some((p) => isUnder(`${r}/var/lib/kubelet/pods/${p}`, rel))) return true
  if (linked.has("netd") ? isUnder(`${r}/etc/cni/net.d`, rel) : rel.startsWith(`${r}/etc/cni/net.d/`)) return true
  if (isUnder(`${r}/var/lib/cni`, rel)) return true
  if (isUnder(`${r}/var/lib/kubelet/kubeconfig`, rel)) return true
  const pki = `${r}/var/lib/kubelet/pki/`
  if (!linked.has("pki") && rel.startsWith(pki)) {
    const name = rel.slice(pki.length).split("/")[0] ?? ""
    return Repave.isClientCredential(name)
  }
  return false
}

/**
 * The property suite: for random trees, mount layouts (binds of outside data
 * and of other pods' directories included) and refused unmounts, after
 * `teardownKubeletDir`, `resetCniState` and `resetKubeletIdentity`:
 * - nothing outside the targets changed, the sentinel outside the root included;
 * - no file reachable through a mount that stayed changed, nor anything in a
 *   kept path (but the contents of mounts that were unmounted);
 * - everything left in the targets is a kept path or an ancestor of one, and
 *   each kept path is kept for a reason the final mount table confirms;
 * - the resets fail exactly when a mount is inside the CNI directories or the
 *   pki directory is a symlink;
 * - the mounts left are exactly the refused ones and those in the CNI directories;
 * - running it all again changes nothing (idempotent).
 *
 * @since 0.1.0
 */
export const properties = (
  name: string,
  hostLayer: Layer.Layer<Mounter.Mounter | MountFixture | FileSystem.FileSystem | Directory.Directories>,
  options?: { readonly runs?: number | undefined }
): void =>
  layer(hostLayer)(`repave properties: ${name}`, (it) => {
    it.effect.prop(
      "teardown and resets delete nothing they must not, keep only what they must, and are idempotent",
      { plan: Plan },
      ({ plan }) =>
        Effect.gen(function* () {
          const fx = yield* MountFixture
          const h = yield* buildPlan(plan)
          const ns = yield* nodeStarts.BootstrapToken
          const refused = new Set(h.made.filter((m) => m.refused).map((m) => m.mountPoint))
          const options = { hostRoot: h.root, mountInfo: h.mountInfo }
          const repave = Effect.gen(function* () {
            const teardown = yield* Repave.teardownKubeletDir(options).pipe(
              Effect.provide(FaultyMounter.layer((t) => refused.has(t)))
            )
            const cni = yield* outcome(Repave.resetCniState(options))
            const identity = yield* outcome(Repave.resetKubeletIdentity(ns, options))
            return { teardown, cni, identity }
          }).pipe(Fence.within([h.sandbox]))
          const mountPoints = (t: MountInfo.MountTable) => mountsBelow(t, h.sandbox).map((e) => e.mountPoint)

          const before = yield* snapshot(h.sandbox)
          const tableBefore = mountPoints(yield* fx.table)
          const first = yield* repave
          const after = yield* snapshot(h.sandbox)
          const tableAfter = mountPoints(yield* fx.table)
          const rel = (p: string) => relativeTo(h.sandbox, p)
          const unmounted = tableBefore.filter((m) => !tableAfter.includes(m)).map(rel)
          const kept = [...first.teardown.kept, ...keptOf(first.cni), ...keptOf(first.identity)]

          // The mounts left: the refused ones and those in the CNI directories.
          const expectedLeft = h.made.filter((m) => m.refused || m.at === "netd" || m.at === "cni")
          assert.deepStrictEqual([...tableAfter].sort(), expectedLeft.map((m) => m.mountPoint).sort())
          // Nothing outside the targets changed.
          assert.deepStrictEqual(
            differences(before, after, (k) => inTargets(k, h.linked)),
            []
          )
          // Nothing reachable through a mount that stayed, nor in a kept path, changed.
          for (const mp of tableAfter) {
            assert.deepStrictEqual(
              differences(before, after, (k) => !isUnder(rel(mp), k)),
              [],
              `through ${mp}`
            )
          }
          for (const k of kept) {
            if (k.reason === "Failed" || k.reason === "OtherFileSystem")
              assert.fail(`unexpected: ${k.path} ${k.detail}`)
            const ignore = (key: string) => !isUnder(rel(k.path), key) || unmounted.some((u) => isUnder(u, key))
            assert.deepStrictEqual(differences(before, after, ignore), [], `kept ${k.path}`)
            // Each kept path is kept for a reason the final table confirms.
            if (k.reason === "NotADirectory") {
              assert.strictEqual(k.path, `${h.root}${slotPaths.pki}`)
            } else if (k.reason === "MountSourceBelow") {
              const m = h.made.find((x) => x.mountPoint === k.mountPoint)
              assert.isTrue(m !== undefined && tableAfter.includes(m.mountPoint), k.path)
              assert.isTrue(m?.source !== undefined && isUnder(k.path, m.source), k.path)
            } else {
              assert.isTrue(
                tableAfter.some((mp) => isUnder(k.path, mp)),
                `${k.reason} ${k.path}`
              )
            }
          }
          // Everything left in the targets is kept or holds something kept.
          for (const key of Object.keys(after)) {
            if (!inTargets(key, h.linked)) continue
            // A symlink at net.d is replaced by an empty directory.
            if (key === "root/etc/cni/net.d" && after[key] === "d 755") continue
            const explained = kept.some((k) => isUnder(rel(k.path), key) || isUnder(key, rel(k.path)))
            assert.isTrue(explained, `left in the targets: ${key} (${after[key]})`)
          }
          // The resets fail exactly when they must.
          const cniMounts = h.made.some((m) => m.at === "netd" || m.at === "cni")
          assert.strictEqual(first.cni._tag === "ResetError", cniMounts, JSON.stringify(keptOf(first.cni)))
          assert.strictEqual(first.identity._tag === "ResetError", h.linked.has("pki"))
          for (const r of [...first.teardown.removed, ...removedOf(first.cni), ...removedOf(first.identity)]) {
            assert.isTrue(inTargets(rel(r), h.linked), `removed ${r}`)
          }
          // Idempotent.
          const second = yield* repave
          assert.deepStrictEqual(differences(after, yield* snapshot(h.sandbox)), [])
          assert.deepStrictEqual(mountPoints(yield* fx.table), tableAfter)
          assert.deepStrictEqual(
            [second.teardown.removed, removedOf(second.cni), removedOf(second.identity)],
            [[], [], []]
          )
        }).pipe(Effect.scoped),
      { timeout: 600_000, arbitrary: { runs: options?.runs ?? 25 } }
    )
  })
