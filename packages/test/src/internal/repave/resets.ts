/**
 * The reset part of the repave suites: CNI state and kubelet identity on
 * trees without mounts, the symlink attacks (a table of cases), and each
 * auth mode. Internal: `RepaveConformance.resets` runs these tests in its
 * layer.
 *
 * @since 0.3.0
 */
import { assert, type Vitest } from "@effect/vitest"
import { Directory, NodeStart, Repave, SafeRemove } from "@hostnode/core"
import { Effect, FileSystem } from "effect"
import * as Fence from "../../FencedFileSystem.ts"
import type { MountFixture } from "../../MountFixture.ts"
import { rootAt } from "../rootAt.ts"
import {
  cniTree,
  identityFiles,
  keptOf,
  kubeletPki,
  makeSandbox,
  nodeBase,
  nodeStarts,
  outcome,
  removedOf,
  sentinel
} from "./fixtures.ts"
import { differences, isUnder, type Plant, plant, relativeTo, snapshot } from "./trees.ts"

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
  readonly fails?: SafeRemove.Kept["reason"]
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
 * The tests of `RepaveConformance.resets`: the symlink attacks, each auth
 * mode, and the failures a reset reports.
 */
export const resetTests = (
  it: Vitest.MethodsNonLive<MountFixture | FileSystem.FileSystem | Directory.Directories>
): void => {
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
      const options = { hostRoot: yield* rootAt(s.root), mountInfo: s.mountInfo }
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
      for (const o of again)
        assert.deepStrictEqual(o, { _tag: "Report", report: { removed: [], kept: [], removedCount: 0, keptCount: 0 } })
      const bare = yield* makeSandbox
      yield* fs.makeDirectory(bare.root)
      const r1 = yield* runReset("resetCniState", bare)
      const r2 = yield* runReset("resetKubeletIdentity", bare)
      assert.deepStrictEqual(
        [r1, r2],
        [
          { _tag: "Report", report: { removed: [], kept: [], removedCount: 0, keptCount: 0 } },
          { _tag: "Report", report: { removed: [], kept: [], removedCount: 0, keptCount: 0 } }
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
          const report = yield* Repave.resetKubeletIdentity(ns, {
            hostRoot: yield* rootAt(s.root),
            mountInfo: s.mountInfo
          }).pipe(Fence.within([s.sandbox]))
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
      const report = yield* Repave.resetKubeletIdentity(ns, {
        hostRoot: yield* rootAt(s.root),
        mountInfo: s.mountInfo
      }).pipe(Fence.within([s.sandbox]))
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
      // Rebuilt from the primitives, so the removal walk runs over the racing `list`
      // (the program a layer runs natively is the same program).
      const racing: Directory.Directories = Directory.make({
        ...dirs,
        removeTree: undefined,
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
      })
      const before = yield* snapshot(s.sandbox)
      const result = yield* outcome(
        Repave.resetCniState({ hostRoot: yield* rootAt(s.root), mountInfo: s.mountInfo })
      ).pipe(Fence.within([s.sandbox]), Effect.provideService(Directory.Directories, racing))
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
      const options = { hostRoot: yield* rootAt(s.root), mountInfo: s.mountInfo }
      const e1 = yield* Effect.flip(SafeRemove.remove(["/var/.."], options))
      assert.strictEqual(e1._tag, "HostPathError")
      const e2 = yield* Effect.flip(SafeRemove.empty("/", options))
      assert.strictEqual(e2._tag, "HostPathError")
      const bad = `${s.sandbox}/bad-mountinfo`
      yield* fs.writeFileString(bad, "1 0 8:1 / / rw - ext4 /dev/root rw\nnot a mount\n")
      const e3 = yield* Effect.flip(
        Repave.resetCniState({ hostRoot: yield* rootAt(s.root), mountInfo: bad }).pipe(Fence.within([s.sandbox]))
      )
      assert.strictEqual(e3._tag, "MountInfoError")
      assert.deepStrictEqual(
        differences(before, yield* snapshot(s.sandbox), (k) => k === "bad-mountinfo"),
        []
      )
    })
  )
}
