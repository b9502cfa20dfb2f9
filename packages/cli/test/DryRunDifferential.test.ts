/**
 * The dry run is the real run's exact plan, on generated hosts: pod volumes
 * of every kind (tmpfs, stacked, nested, binds of files and of directories
 * from outside), the kubelet directory a bind of a shared data disk with
 * peers inside or outside the host root and a slave, links, CNI and identity
 * files, and snapshot files changed, touched, removed or added. For each
 * host, every subcommand that touches files or mounts runs with `--dry-run`
 * (the host must come out identical: every node's bytes, mode, owner and
 * inode, and the mount table), then for real on that same, untouched host,
 * and the two are compared operation by operation:
 *
 * - the exit code, the result (or the error) and the warnings are the same;
 * - the mounts that left the table are exactly those the plan's steps take
 *   out, replayed on the table before (each `unmount` the top mount at its
 *   path and everything below it, each `detach by propagation` its mount);
 *   the unmounts the real `Mounter` performed are the plan's, in order;
 * - the files the real run changed are exactly those the plan's steps name,
 *   replayed on the tree before (removals, writes, renames, mode and owner
 *   changes, new directories and links, mount points uncovered): every
 *   other path is as it was, down to its inode, and each path the plan
 *   changes did change.
 *
 * It runs on real mounts in the test's private mount namespace (peers and
 * slaves with `mount --make-shared` and `--make-slave`) and on `MemoryHost`.
 * The counts come from `Gate.loops`; the totals are written to stderr.
 */
import { NodeServices } from "@effect/platform-node"
import { afterAll, assert, describe, layer } from "@effect/vitest"
import { Mounter, type MountInfo } from "@hostnode/core"
import { Lexical, stackTop } from "@hostnode/core/Programs"
import { NodeDirectory, NodeMounter } from "@hostnode/node"
import { MemoryNode, TreeWalk } from "@hostnode/sim"
import { Gate, MountFixture, RefusingSystemd } from "@hostnode/test"
import { Context, Effect, FileSystem, Layer, Ref, Schema } from "effect"
import { cliEnvironment, refusedDns, refusedIsolation, runJson } from "./harness.ts"

// ---------------------------------------------------------------------------
// the generated host

const Volume = Schema.Literals(["tmpfs", "stack", "nested", "fileBind", "csiBind"])

const Pod = Schema.Struct({
  volumes: Schema.Array(Volume).check(Schema.isMaxLength(3)),
  files: Schema.Array(Schema.Literals(["etc-hosts", "containers/app/0.log", "plugins/state"])).check(
    Schema.isMaxLength(2)
  ),
  link: Schema.Literals(["none", "toRoot", "toOutside"])
})

const Spec = Schema.Struct({
  pods: Schema.Array(Pod).check(Schema.isMinLength(1), Schema.isMaxLength(3)),
  /** Where the data disk the kubelet directory is a (shared) bind of is mounted: nowhere, outside or inside the root. */
  disk: Schema.Literals(["none", "outsideRoot", "insideRoot"]),
  /** A slave bind of the disk elsewhere (outside the root). */
  slave: Schema.Boolean,
  cni: Schema.Array(Schema.Literals(["10-flannel.conflist", "99-loopback.conf", "multus.d/kubeconfig"])).check(
    Schema.isMaxLength(3)
  ),
  cniState: Schema.Boolean,
  identity: Schema.Array(
    Schema.Literals(["kubelet-client-2026-01-01.pem", "kubelet-client-current.pem", "kubelet.crt"])
  ).check(Schema.isMaxLength(3)),
  /** After a snapshot of /etc/kubernetes: which of its five files change, which only get a new mtime. */
  changed: Schema.Array(Schema.Literals([0, 1, 2, 3, 4])).check(Schema.isMaxLength(5)),
  touched: Schema.Array(Schema.Literals([0, 1, 2, 3, 4])).check(Schema.isMaxLength(2)),
  removed: Schema.Boolean,
  added: Schema.Boolean
})
type Spec = typeof Spec.Type

const snapshotFiles = ["admin.conf", "kubelet.conf", "controller-manager.conf", "scheduler.conf", "bootstrap.conf"]

/** Builds `spec` below a fresh sandbox: the host root `root/`, and beside it what lies outside the root. */
const build = (spec: Spec) =>
  Effect.gen(function* () {
    const fx = yield* MountFixture.MountFixture
    const fs = yield* FileSystem.FileSystem
    const sandbox = yield* fs.realPath(yield* fx.sandbox).pipe(Effect.orDie)
    const root = `${sandbox}/root`
    const mkdir = (p: string) => Effect.orDie(fs.makeDirectory(p, { recursive: true }))
    const write = (p: string, text: string) =>
      Effect.andThen(mkdir(Lexical.dirname(p)), Effect.orDie(fs.writeFileString(p, text)))
    yield* mkdir(`${sandbox}/snaps`)
    yield* write(`${sandbox}/outside/sentinel`, "must survive")
    const kubelet = `${root}/var/lib/kubelet`
    // The kubelet directory: plain, or a bind of a shared data disk (mounted outside or inside the root).
    const disk = spec.disk === "none" ? undefined : spec.disk === "outsideRoot" ? `${sandbox}/disk` : `${root}/mnt/disk`
    if (disk === undefined) yield* mkdir(`${kubelet}/pods`)
    else {
      yield* mkdir(disk)
      yield* fx.tmpfs(disk)
      yield* fx.propagation(disk, "shared")
      yield* mkdir(`${disk}/kubelet/pods`)
      yield* mkdir(kubelet)
      yield* fx.bind(`${disk}/kubelet`, kubelet)
      if (spec.slave) {
        yield* mkdir(`${sandbox}/slave`)
        yield* fx.bind(disk, `${sandbox}/slave`)
        yield* fx.propagation(`${sandbox}/slave`, "slave")
      }
    }
    yield* write(`${kubelet}/config.yaml`, "kind: KubeletConfiguration\n")
    for (const [i, pod] of spec.pods.entries()) {
      const dir = `${kubelet}/pods/pod-${i}`
      yield* mkdir(`${dir}/volumes`)
      for (const f of pod.files) yield* write(`${dir}/${f}`, `${f} of pod ${i}\n`)
      if (pod.link !== "none") {
        yield* mkdir(`${dir}/volumes/kubernetes.io~empty-dir/cache`)
        yield* fs
          .symlink(pod.link === "toRoot" ? "/" : `${sandbox}/outside`, `${dir}/volumes/kubernetes.io~empty-dir/cache/l`)
          .pipe(Effect.orDie)
      }
      for (const [j, v] of pod.volumes.entries()) {
        switch (v) {
          case "tmpfs": {
            const at = `${dir}/volumes/kubernetes.io~secret/s${j}`
            yield* mkdir(at)
            yield* fx.tmpfs(at)
            yield* write(`${at}/token`, `token ${i}.${j}`)
            break
          }
          case "stack": {
            const at = `${dir}/volumes/kubernetes.io~projected/p${j}`
            yield* mkdir(at)
            yield* fx.tmpfs(at)
            yield* fx.tmpfs(at)
            yield* write(`${at}/ca.crt`, `ca ${i}.${j}`)
            break
          }
          case "nested": {
            const at = `${dir}/volumes/kubernetes.io~empty-dir/e${j}`
            yield* mkdir(at)
            yield* fx.tmpfs(at)
            yield* mkdir(`${at}/inner`)
            yield* fx.tmpfs(`${at}/inner`)
            yield* write(`${at}/inner/x`, `inner ${i}.${j}`)
            break
          }
          case "fileBind": {
            // A subPath of a file: the configmap's file bound onto an empty file the kubelet made.
            const source = `${dir}/volumes/kubernetes.io~configmap/c${j}/app.conf`
            const target = `${dir}/volume-subpaths/c${j}/app/0`
            yield* write(source, `app config ${i}.${j}\n`)
            yield* write(target, "")
            yield* fx.bind(source, target)
            break
          }
          case "csiBind": {
            const source = `${sandbox}/csi/v${i}-${j}`
            const at = `${dir}/volumes/kubernetes.io~csi/v${j}/mount`
            yield* write(`${source}/data`, `volume data ${i}.${j}`)
            yield* mkdir(at)
            yield* fx.bind(source, at)
            break
          }
        }
      }
    }
    for (const f of spec.cni) yield* write(`${root}/etc/cni/net.d/${f}`, `{"name":"${f}"}`)
    if (spec.cniState) yield* write(`${root}/var/lib/cni/networks/cbr0/10.244.0.7`, "c0ffee")
    for (const f of spec.identity) yield* write(`${kubelet}/pki/${f}`, `${f}\n`)
    yield* write(`${kubelet}/bootstrap-kubeconfig`, "bootstrap\n")
    for (const f of snapshotFiles) yield* write(`${root}/etc/kubernetes/${f}`, `${f} as installed\n`)
    yield* fs.symlink("admin.conf", `${root}/etc/kubernetes/current.conf`).pipe(Effect.orDie)
    return { sandbox, root, snapshotDir: `${sandbox}/snaps/s`, disk }
  })

type Host = Effect.Success<ReturnType<typeof build>>

/** What an upgrade that went wrong did to the recorded files, per the spec. */
const mutate = (h: Host, spec: Spec) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const at = (i: number) => `${h.root}/etc/kubernetes/${snapshotFiles[i]}`
    for (const i of new Set(spec.changed)) yield* fs.writeFileString(at(i), `${snapshotFiles[i]} upgraded\n`)
    for (const i of new Set(spec.touched)) yield* fs.utimes(at(i), new Date(1_000_000), new Date(2_000_000))
    if (spec.removed) yield* fs.remove(at(4), { force: true })
    if (spec.added) yield* fs.writeFileString(`${h.root}/etc/kubernetes/new.conf`, "added by the upgrade\n")
  }).pipe(Effect.orDie)

// ---------------------------------------------------------------------------
// the subcommands

interface Case {
  readonly name: string
  /** What the host needs before the command (a snapshot taken for real, an upgrade), done for real. */
  readonly setup?: ((h: Host, spec: Spec) => Effect.Effect<void, never, Services>) | undefined
  readonly argv: (h: Host) => ReadonlyArray<string>
}

const takeFor = (h: Host) => [
  "--host-root",
  h.root,
  "snapshot",
  "take",
  "--dir",
  h.snapshotDir,
  "--path",
  "/etc/kubernetes"
]

const taken = (h: Host) =>
  Effect.gen(function* () {
    const r = yield* runJson(takeFor(h))
    assert.strictEqual(r.code, 0, JSON.stringify(r.doc))
  })

const cases: ReadonlyArray<Case> = [
  { name: "unmount-below", argv: (h) => ["--host-root", h.root, "unmount-below", "/var/lib/kubelet/pods"] },
  { name: "unmount-below (kubelet dir)", argv: (h) => ["--host-root", h.root, "unmount-below", "/var/lib/kubelet"] },
  {
    name: "unmount-below --strict",
    argv: (h) => ["--host-root", h.root, "unmount-below", "--strict", "/var/lib/kubelet"]
  },
  {
    name: "unmount-below --peers-outside-root refuse",
    argv: (h) => ["--host-root", h.root, "unmount-below", "--peers-outside-root", "refuse", "/var/lib/kubelet/pods"]
  },
  { name: "teardown-kubelet-dir", argv: (h) => ["--host-root", h.root, "teardown-kubelet-dir"] },
  {
    name: "teardown-kubelet-dir --peers-outside-root refuse",
    argv: (h) => ["--host-root", h.root, "teardown-kubelet-dir", "--peers-outside-root", "refuse"]
  },
  { name: "reset-cni", argv: (h) => ["--host-root", h.root, "reset-cni"] },
  {
    name: "reset-kubelet-identity",
    argv: (h) => ["--host-root", h.root, "reset-kubelet-identity", "--auth", "bootstrap-token"]
  },
  { name: "snapshot take", argv: takeFor },
  {
    name: "snapshot restore",
    setup: (h, spec) => Effect.andThen(taken(h), mutate(h, spec)),
    argv: (h) => ["--host-root", h.root, "snapshot", "restore", "--dir", h.snapshotDir]
  },
  {
    name: "snapshot recover",
    setup: (h, spec) => Effect.andThen(taken(h), mutate(h, spec)),
    argv: (h) => ["--host-root", h.root, "snapshot", "recover", "--dir", h.snapshotDir]
  },
  {
    name: "snapshot discard",
    setup: (h) => taken(h),
    argv: (h) => ["--host-root", h.root, "snapshot", "discard", "--dir", h.snapshotDir]
  }
]

// ---------------------------------------------------------------------------
// observing the host

/** Every path below the sandbox but the other views of the data disk: type, mode, owner, inode and content. */
const treeOf = (h: Host) =>
  Effect.map(
    TreeWalk.walk(h.sandbox, {
      // The disk and its slave show the kubelet directory's files again: the mount table says what happens there.
      skip: (p) => p === `${h.sandbox}/disk` || p === `${h.sandbox}/slave` || (h.disk !== undefined && p === h.disk)
    }),
    (visited) => {
      const out = new Map<string, string>()
      for (const v of visited) {
        const i = v.info
        const head = `${v.type} ${(i.mode & 0o7777).toString(8)} ${i.uid._tag === "Some" ? i.uid.value : "?"}:${i.gid._tag === "Some" ? i.gid.value : "?"} ${i.ino._tag === "Some" ? i.ino.value : "?"}`
        const rel = v.path === h.sandbox ? "" : v.path.slice(h.sandbox.length + 1)
        out.set(
          rel,
          v.type === "File"
            ? `${head} ${Buffer.from(v.bytes).toString("base64")}`
            : v.type === "SymbolicLink"
              ? `${head} -> ${v.target}`
              : head
        )
      }
      return out
    }
  ).pipe(Effect.orDie)

/** The mounts below the sandbox, by id. */
const mountsOf = (h: Host) =>
  Effect.gen(function* () {
    const fx = yield* MountFixture.MountFixture
    return (yield* fx.table).filter((e) => e.mountPoint.startsWith(`${h.sandbox}/`))
  })

// ---------------------------------------------------------------------------
// replaying a plan

interface Step {
  readonly service: string
  readonly action: string
  readonly target: string
}

const under = (prefix: string, path: string) => path === prefix || path.startsWith(`${prefix}/`)

/** The mounts the plan's steps take out of `before`, replayed in order. */
const replayMounts = (before: ReadonlyArray<MountInfo.MountEntry>, plan: ReadonlyArray<Step>): Set<number> => {
  const live = new Map(before.map((e) => [e.id, e] as const))
  const gone = new Set<number>()
  const take = (id: number) => {
    const stack = [id]
    while (stack.length > 0) {
      const x = stack.pop() as number
      if (!live.has(x)) continue
      live.delete(x)
      gone.add(x)
      for (const e of live.values()) if (e.parentId === x) stack.push(e.id)
    }
  }
  for (const s of plan) {
    if (s.service !== "Mounter") continue
    const propagated = /^detach by propagation \(mount (\d+),/.exec(s.action)
    if (propagated !== null) {
      // The copy alone: a mount on its root stays (moved down), and what is inside it is detached with its own step.
      const id = Number(propagated[1])
      if (live.delete(id)) gone.add(id)
      continue
    }
    const at = [...live.values()].filter((e) => Lexical.clean(e.mountPoint) === s.target)
    const top = stackTop(at)
    assert.isDefined(top, `the plan unmounts ${s.target}, where nothing is mounted any more`)
    if (top !== undefined) take(top.id)
  }
  return gone
}

type Fate = "same" | "changed" | "uncovered"

/** What the plan's file steps leave of the tree before: each path, and whether it must be as it was. */
const replayFiles = (h: Host, before: ReadonlyMap<string, string>, plan: ReadonlyArray<Step>) => {
  const rel = (full: string) => {
    assert.isTrue(under(h.sandbox, full), `the plan names ${full}, outside the sandbox`)
    return full === h.sandbox ? "" : full.slice(h.sandbox.length + 1)
  }
  const fates = new Map<string, Fate>([...before.keys()].map((k) => [k, "same" as Fate]))
  const drop = (r: string, andSelf: boolean) => {
    for (const k of [...fates.keys()]) if ((andSelf && k === r) || k.startsWith(`${r}/`)) fates.delete(k)
  }
  for (const s of plan) {
    if (s.service === "Mounter") {
      // What the mount showed is gone with it; the mount point shows what is beneath.
      if (!fates.has(rel(s.target)) && !s.action.startsWith("detach by propagation")) {
        assert.fail(`the plan unmounts ${s.target}, which the tree does not have`)
      }
      if (fates.has(rel(s.target))) {
        drop(rel(s.target), false)
        fates.set(rel(s.target), "uncovered")
      }
      continue
    }
    if (s.service !== "FileSystem") continue
    const renamed = /^rename (.*) to$/.exec(s.action)
    if (renamed !== null) {
      const from = rel(renamed[1] as string)
      const to = rel(s.target)
      const moved = [...fates.keys()].filter((k) => k === from || k.startsWith(`${from}/`))
      drop(to, true)
      for (const k of moved) {
        fates.delete(k)
        fates.set(to + k.slice(from.length), "changed")
      }
      continue
    }
    if (s.action === "remove" || s.action === "remove recursively") {
      drop(rel(s.target), true)
      continue
    }
    // Made, written, truncated, linked, its mode, owner or times set: that path changed.
    fates.set(rel(s.target), "changed")
  }
  return fates
}

// ---------------------------------------------------------------------------
// the suite

/** The unmounts the real `Mounter` performed (a dry run never reaches it), each that succeeded. */
class Performed extends Context.Service<Performed, Ref.Ref<ReadonlyArray<string>>>()("DryRunDifferential/Performed") {}

const recording = Layer.effect(
  Mounter.Mounter,
  Effect.gen(function* () {
    const inner = yield* Mounter.Mounter
    const performed = yield* Performed
    return Mounter.Mounter.of({
      ...inner,
      unmount: (root, targets, options) =>
        Effect.tap(inner.unmount(root, targets, options), (results) =>
          Ref.update(performed, (p) => [...p, ...results.filter((r) => r._tag === "Unmounted").map((r) => r.target)])
        )
    })
  })
)

type Services =
  | Effect.Services<ReturnType<typeof runJson>>
  | MountFixture.MountFixture
  | FileSystem.FileSystem
  | Performed

/** What the suite compared, over every host and subcommand. */
const totals = { hosts: 0, runs: 0, steps: 0, mounts: 0, paths: 0, disagreements: 0 }
const totalsBy: Record<string, typeof totals> = {}

/** Runs `c` with `--dry-run` and for real on a fresh build of `spec`, and compares the two (see the module comment). */
const differential = (where: string, spec: Spec, c: Case) =>
  Effect.gen(function* () {
    const t = totalsBy[where] as typeof totals
    const performed = yield* Performed
    const h = yield* build(spec)
    if (c.setup !== undefined) yield* c.setup(h, spec)
    const argv = c.argv(h)
    const before = { tree: yield* treeOf(h), mounts: yield* mountsOf(h) }
    const dry = yield* runJson(["--dry-run", ...argv])
    const plan: ReadonlyArray<Step> = dry.doc.plan ?? []
    const label = `${c.name} (${JSON.stringify(spec)})`
    // The dry run changed nothing: every node as it was (inodes too), and the mount table.
    assert.deepStrictEqual([...(yield* treeOf(h))], [...before.tree], `${label}: the dry run changed the host`)
    assert.deepStrictEqual(yield* mountsOf(h), before.mounts, `${label}: the dry run changed the mounts`)

    yield* Ref.set(performed, [])
    const real = yield* runJson(argv)
    const after = { tree: yield* treeOf(h), mounts: yield* mountsOf(h) }
    t.disagreements++
    // The same outcome.
    assert.strictEqual(
      real.code,
      dry.code,
      `${label}: exit codes\n${JSON.stringify(dry.doc)}\n${JSON.stringify(real.doc)}`
    )
    assert.deepStrictEqual(real.doc.result, dry.doc.result, `${label}: results`)
    assert.deepStrictEqual(real.doc.error, dry.doc.error, `${label}: errors`)
    assert.deepStrictEqual(real.doc.warnings, dry.doc.warnings, `${label}: warnings`)
    // The same unmounts, in order, and the same mounts gone (the propagated ones included).
    assert.deepStrictEqual(
      yield* Ref.get(performed),
      plan.filter((s) => s.service === "Mounter" && s.action.startsWith("unmount")).map((s) => s.target),
      `${label}: the unmounts`
    )
    const still = new Set(after.mounts.map((e) => e.id))
    const left = before.mounts.filter((e) => !still.has(e.id)).map((e) => e.id)
    assert.deepStrictEqual([...replayMounts(before.mounts, plan)].sort(), left.sort(), `${label}: the mounts gone`)
    // The same files changed, and only those.
    const fates = replayFiles(h, before.tree, plan)
    assert.deepStrictEqual([...after.tree.keys()].sort(), [...fates.keys()].sort(), `${label}: the paths there after`)
    for (const [k, fate] of fates) {
      if (fate === "same") assert.strictEqual(after.tree.get(k), before.tree.get(k), `${label}: ${k} changed`)
      if (fate === "changed") assert.notStrictEqual(after.tree.get(k), before.tree.get(k), `${label}: ${k} unchanged`)
    }
    t.disagreements--
    t.runs++
    t.steps += plan.length
    t.mounts += before.mounts.length
    t.paths += fates.size
    return { dry, real, plan }
  }).pipe(Effect.scoped)

const suite = <E>(where: string, host: Layer.Layer<Services, E>, runs: number) => {
  totalsBy[where] = { hosts: 0, runs: 0, steps: 0, mounts: 0, paths: 0, disagreements: 0 }
  layer(host, { excludeTestServices: false })(where, (it) => {
    it.effect.prop(
      "every subcommand's dry run is the real run's plan: outcome, unmounts (propagated ones too), removals, writes",
      { spec: Spec },
      ({ spec }) =>
        Effect.gen(function* () {
          for (const c of cases) yield* differential(where, spec, c)
          ;(totalsBy[where] as typeof totals).hosts++
        }),
      { timeout: 1_200_000, arbitrary: { runs } }
    )
  })
}

afterAll(() => {
  for (const [where, t] of Object.entries(totalsBy)) {
    for (const k of Object.keys(totals) as Array<keyof typeof totals>) totals[k] += t[k]
    process.stderr.write(
      `dry-run differential ${where}: ${t.hosts} hosts, ${t.runs} subcommand runs, ${t.steps} plan steps, ${t.mounts} mounts and ${t.paths} paths compared, ${t.disagreements} disagreements\n`
    )
  }
})

// ---------------------------------------------------------------------------
// the hosts

const performedLayer = Layer.effect(Performed, Ref.make<ReadonlyArray<string>>([]))

const memoryHost = Layer.mergeAll(MountFixture.layerMemory, recording, cliEnvironment).pipe(
  Layer.provideMerge(performedLayer),
  Layer.provideMerge(MemoryNode.layer())
)

suite("on MemoryHost", memoryHost, Gate.loops(60))

const realHost = Layer.mergeAll(
  MountFixture.layerReal,
  recording,
  RefusingSystemd.layer("a restore below a temporary host root must never reach the machine's systemd"),
  refusedIsolation,
  refusedDns,
  cliEnvironment
).pipe(
  Layer.provideMerge(performedLayer),
  Layer.provideMerge(NodeMounter.layer),
  Layer.provideMerge(Layer.mergeAll(NodeDirectory.layer, NodeServices.layer)),
  Layer.orDie
)

const gate = Gate.check("the dry-run differential on real mounts", [
  "root",
  "private-mount-namespace",
  { command: "mount" }
])

describe.skipIf(gate.skip)("real mounts in a private mount namespace", () => {
  suite("on the real host", realHost, Gate.loops(15))
})
