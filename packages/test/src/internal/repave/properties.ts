/**
 * The property part of the repave suites: a generated host (entries in
 * well-known slots, mounts of each kind, some refused, directories replaced
 * by links) and the properties a whole repave keeps on it. Internal:
 * `RepaveConformance.properties` runs these tests in its layer, and
 * re-exports `Plan` and `buildPlan`.
 *
 * @since 0.3.0
 */
import { assert, type Vitest } from "@effect/vitest"
import { type Directory, type Mounter, type MountInfo, Repave } from "@hostnode/core"
import { Lexical } from "@hostnode/core/Programs"
import { Effect, FileSystem, Schema } from "effect"
import * as FaultyMounter from "../../FaultyMounter.ts"
import * as Fence from "../../FencedFileSystem.ts"
import { MountFixture } from "../../MountFixture.ts"
import { rootAt } from "../rootAt.ts"
import { keptOf, makeSandbox, nodeStarts, outcome, removedOf, sentinel } from "./fixtures.ts"
import { differences, isUnder, mountsBelow, type Plant, plant, relativeTo, snapshot } from "./trees.ts"

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
 */
export const Plan = Schema.Struct({
  entries: Schema.Array(GeneratedEntry).check(Schema.isMaxLength(24)),
  mounts: Schema.Array(GeneratedMount).check(Schema.isMaxLength(5)),
  linked: Schema.Array(Schema.Literals(["cni", "pki", "p2", "netd"])).check(Schema.isMaxLength(2))
})

/**
 * A generated host.
 */
export type Plan = typeof Plan.Type

const depth = (hostPath: string): number => Lexical.components(hostPath).length

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
 */
export const buildPlan = (plan: Plan) =>
  Effect.gen(function* () {
    const fx = yield* MountFixture
    const fs = yield* FileSystem.FileSystem
    const s = yield* makeSandbox
    const linked = new Set(plan.linked)
    const isLinked = (hostPath: string) =>
      [...linked].some((l) => Lexical.isWithin(linkedHostPath[l], hostPath) && hostPath !== linkedHostPath[l]) ||
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

/**
 * The kubelet's client credentials as client-go names them (the rotated
 * pairs, the current and updated links, the pending key): the oracle's own
 * reading, not the library's.
 */
const isClientCredential = (name: string): boolean =>
  name === "kubelet-client.key.tmp" ||
  (name.startsWith("kubelet-client-") && name.endsWith(".pem") && name.length > "kubelet-client-.pem".length)

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
    return isClientCredential(name)
  }
  return false
}

/** The tests of `RepaveConformance.properties`, `runs` generated hosts (default 25). */
export const propertyTests = (
  it: Vitest.MethodsNonLive<Mounter.Mounter | MountFixture | FileSystem.FileSystem | Directory.Directories>,
  options?: { readonly runs?: number | undefined }
): void => {
  it.effect.prop(
    "teardown and resets delete nothing they must not, keep only what they must, and are idempotent",
    { plan: Plan },
    ({ plan }) =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const h = yield* buildPlan(plan)
        const ns = yield* nodeStarts.BootstrapToken
        const refused = new Set(h.made.filter((m) => m.refused).map((m) => m.mountPoint))
        const options = { hostRoot: yield* rootAt(h.root), mountInfo: h.mountInfo }
        const repave = Effect.gen(function* () {
          const teardown = yield* Repave.teardownKubeletDir(options).pipe(
            Effect.provide(FaultyMounter.layer((t) => refused.has(t)))
          )
          const cni = yield* outcome(Repave.resetCniState(options))
          const identity = yield* outcome(Repave.resetKubeletIdentity(ns, options))
          return { teardown, cni, identity }
        }).pipe(Fence.within([h.sandbox]))
        const mountPoints = (t: ReadonlyArray<MountInfo.MountEntry>) =>
          mountsBelow(t, h.sandbox).map((e) => e.mountPoint)

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
          if (k.reason === "Failed" || k.reason === "OtherFileSystem") assert.fail(`unexpected: ${k.path} ${k.detail}`)
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
}
