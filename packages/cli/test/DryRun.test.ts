/**
 * `--dry-run` end to end: each subcommand runs with `--dry-run` on a
 * temporary host root, which must come out byte-identical with the mount
 * table unchanged; then the same command runs for real, and the plan must be
 * what the real run did: the same unmounts and commands in the same order, the
 * same result, and every path the real run changed named by the plan.
 *
 * The suite runs on real mounts in a private mount namespace (and real links
 * and iptables rules in a private network namespace) and on `MemoryNode`.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it, layer } from "@effect/vitest"
import type { Cli } from "@hostnode/cli"
import { HostCommand, Mounter, Systemd } from "@hostnode/core"
import { NodeDirectory, NodeMounter } from "@hostnode/node"
import { type DryRun, MemoryNetwork, MemoryNode, MemorySystemd } from "@hostnode/sim"
import * as DryRunCommands from "@hostnode/sim/internal/dryrun/commands"
import { Gate, MountFixture, RefusingSystemd } from "@hostnode/test"
import * as RepaveTrees from "@hostnode/test/internal/repave/trees"
import { Context, Effect, FileSystem, Layer, Ref } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import { cliEnvironment, refusedDns, refusedIsolation, runCli, runJson } from "./harness.ts"

// ---------------------------------------------------------------------------
// what a real run did

/** The unmounts and commands the services in context performed (a dry run replaces them, so only real runs count). */
interface Performed {
  readonly unmounts: Ref.Ref<ReadonlyArray<string>>
  readonly commands: Ref.Ref<ReadonlyArray<string>>
}
const Performed = Context.Service<Performed>("@hostnode/cli/test/Performed")

const performedLayer = Layer.effect(
  Performed,
  Effect.gen(function* () {
    return Performed.of({
      unmounts: yield* Ref.make<ReadonlyArray<string>>([]),
      commands: yield* Ref.make<ReadonlyArray<string>>([])
    })
  })
)

/** The Mounter and spawner in context, recording into {@link Performed} before they act. */
const recording = Layer.mergeAll(
  Layer.effect(
    Mounter.Mounter,
    Effect.gen(function* () {
      const inner = yield* Mounter.Mounter
      const performed = yield* Performed
      return Mounter.Mounter.of({
        unmount: (root, targets, options) =>
          Ref.update(performed.unmounts, (u) => [...u, ...targets.map((t) => t.path)]).pipe(
            Effect.andThen(inner.unmount(root, targets, options))
          )
      })
    })
  ),
  Layer.effect(
    ChildProcessSpawner.ChildProcessSpawner,
    Effect.gen(function* () {
      const inner = yield* ChildProcessSpawner.ChildProcessSpawner
      const performed = yield* Performed
      return ChildProcessSpawner.make((command) =>
        ChildProcess.isStandardCommand(command) && !DryRunCommands.isReadOnly(command.command, command.args.map(String))
          ? Ref.update(performed.commands, (c) => [...c, [command.command, ...command.args].join(" ")]).pipe(
              Effect.andThen(inner.spawn(command))
            )
          : inner.spawn(command)
      )
    })
  )
)

// ---------------------------------------------------------------------------
// the suite

type Services =
  | Cli.Services
  | FileSystem.FileSystem
  | MountFixture.MountFixture
  | Performed
  | Mounter.Mounter
  | ChildProcessSpawner.ChildProcessSpawner
  | Layer.Success<typeof cliEnvironment>

const { differences, plant, snapshot } = RepaveTrees

const podA = "root/var/lib/kubelet/pods/11111111-aaaa"
const podB = "root/var/lib/kubelet/pods/22222222-bbbb"

/** A node's files below `sandbox/root`, a CSI volume's data in `sandbox/outside`. */
const nodeTree = {
  "root/etc/cni/net.d/10-flannel.conflist": '{"cniVersion":"1.0.0","name":"cbr0"}\n',
  "root/etc/cni/net.d/99-loopback.conf": '{"type":"loopback"}\n',
  "root/var/lib/cni/networks/cbr0/10.244.0.2": "c0ffee\neth0\n",
  "root/var/lib/cni/networks/cbr0/last_reserved_ip.0": "10.244.0.2",
  "root/var/lib/kubelet/config.yaml": "kind: KubeletConfiguration\n",
  "root/var/lib/kubelet/kubeconfig": "apiVersion: v1\nkind: Config\n",
  "root/var/lib/kubelet/pki/kubelet-client-2026-11-30-10-00-00.pem": "CERT+KEY\n",
  "root/var/lib/kubelet/pki/kubelet-client-current.pem": {
    link: "/var/lib/kubelet/pki/kubelet-client-2026-11-30-10-00-00.pem"
  },
  "root/var/lib/kubelet/pki/kubelet.crt": "serving\n",
  "root/var/lib/kubelet/bootstrap-kubeconfig": "bootstrap\n",
  "root/etc/kubernetes/bootstrap-kubelet.conf": "bootstrap\n",
  "root/etc/containerd/config.toml": 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n',
  "root/etc/systemd/system/kubelet.service.d/10-kubeadm.conf": "[Service]\nEnvironment=A=1\n",
  [`${podA}/volumes/kubernetes.io~secret/token`]: { dir: true },
  [`${podA}/volumes/kubernetes.io~projected/kube-api-access`]: { dir: true },
  [`${podA}/volumes/kubernetes.io~csi/pvc-1/mount`]: { dir: true },
  [`${podA}/etc-hosts`]: "127.0.0.1 localhost\n",
  [`${podB}/containers/app/0.log`]: "log\n",
  "outside/csi/data.bin": "precious volume data\n"
} as const

/** Mounts a pod has: a tmpfs secret, a twice-stacked projected volume, a CSI volume bound from outside. */
const mountPods = (sandbox: string) =>
  Effect.gen(function* () {
    const fx = yield* MountFixture.MountFixture
    const fs = yield* FileSystem.FileSystem
    const secret = `${sandbox}/${podA}/volumes/kubernetes.io~secret/token`
    yield* fx.tmpfs(secret)
    yield* fs.writeFileString(`${secret}/token`, "s3cr3t").pipe(Effect.orDie)
    const projected = `${sandbox}/${podA}/volumes/kubernetes.io~projected/kube-api-access`
    yield* fx.tmpfs(projected)
    yield* fx.tmpfs(projected)
    yield* fs.writeFileString(`${projected}/ca.crt`, "ca").pipe(Effect.orDie)
    yield* fx.bind(`${sandbox}/outside/csi`, `${sandbox}/${podA}/volumes/kubernetes.io~csi/pvc-1/mount`)
  })

/** A sandbox with the node planted below `root/` (and its pods mounted unless `mounts` is false). */
const node = (mounts = true) =>
  Effect.gen(function* () {
    const fx = yield* MountFixture.MountFixture
    const fs = yield* FileSystem.FileSystem
    const sandbox = yield* fs.realPath(yield* fx.sandbox).pipe(Effect.orDie)
    yield* plant(sandbox, nodeTree)
    if (mounts) yield* mountPods(sandbox)
    return { sandbox, root: `${sandbox}/root` }
  })

/** The mounts below `dir`, as lines that identify each mount. */
const mountsBelow = (dir: string) =>
  Effect.gen(function* () {
    const fx = yield* MountFixture.MountFixture
    const table = yield* fx.table
    return table
      .filter((e) => e.mountPoint.startsWith(`${dir}/`))
      .map((e) => `${e.id} ${e.parentId} ${e.mountPoint} ${e.fsType}`)
  })

/** Everything a dry run must leave as it was: the files (bytes, modes, links) and the mounts. */
const observe = (sandbox: string) => Effect.all({ tree: snapshot(sandbox), mounts: mountsBelow(sandbox) })

type PlanStep = DryRun.PlanStep

const planTargets = (plan: ReadonlyArray<PlanStep>, service: PlanStep["service"]) =>
  plan.filter((s) => s.service === service).map((s) => s.target)

/**
 * Every path the real run changed is named by the plan: a step's target is
 * the path or a directory above it (a recursive removal, an unmount that took
 * the files of a mount with it, a new directory), or the source of a rename.
 */
const assertPlanCovers = (
  sandbox: string,
  plan: ReadonlyArray<PlanStep>,
  before: Record<string, string>,
  after: Record<string, string>,
  aliases: Readonly<Record<string, string>> = {}
) => {
  const named = plan.flatMap((s) => {
    const renamed = /^rename (.*) to$/.exec(s.action)
    return renamed?.[1] === undefined ? [s.target] : [s.target, renamed[1]]
  })
  const changed = differences(before, after).map(
    (line) => `${sandbox}/${JSON.parse(line.slice(0, line.indexOf(": ")))}`
  )
  // A path seen through another view of the same directory (a bind of it) is named as the plan names it.
  const named_ = (p: string) => {
    for (const [view, as] of Object.entries(aliases)) {
      if (p === view || p.startsWith(`${view}/`)) return as + p.slice(view.length)
    }
    return p
  }
  const unnamed = changed.map(named_).filter((p) => !named.some((t) => p === t || p.startsWith(`${t}/`)))
  assert.deepStrictEqual(unnamed, [], `paths the real run changed that the plan did not name`)
  return changed
}

/**
 * Runs `argv` with `--dry-run`, checks that nothing changed, then runs it for
 * real and checks the plan against what the real run did. Returns both documents.
 */
const dryThenReal = (sandbox: string, argv: ReadonlyArray<string>, aliases: Readonly<Record<string, string>> = {}) =>
  Effect.gen(function* () {
    const performed = yield* Performed
    const before = yield* observe(sandbox)
    const dry = yield* runJson(["--dry-run", ...argv])
    assert.strictEqual(dry.code, 0, JSON.stringify(dry.doc))
    assert.isTrue(dry.doc.ok)
    assert.isTrue(dry.doc.dryRun)
    const plan: ReadonlyArray<PlanStep> = dry.doc.plan
    assert.deepStrictEqual(yield* observe(sandbox), before, "a dry run changed the host")

    yield* Ref.set(performed.unmounts, [])
    yield* Ref.set(performed.commands, [])
    const real = yield* runJson(argv)
    assert.strictEqual(real.code, 0, JSON.stringify(real.doc))
    assert.isUndefined(real.doc.plan)
    const after = yield* observe(sandbox)
    assert.deepStrictEqual(real.doc.result, dry.doc.result, "the dry run's result is not the real run's")
    // The unmounts the Mounter was asked for; the copies the kernel detaches by propagation are steps of their own.
    assert.deepStrictEqual(
      yield* Ref.get(performed.unmounts),
      plan.filter((s) => s.service === "Mounter" && s.action.startsWith("unmount")).map((s) => s.target),
      "the unmounts differ"
    )
    assert.deepStrictEqual(
      yield* Ref.get(performed.commands),
      planTargets(plan, "ChildProcessSpawner"),
      "the commands differ"
    )
    const changed = assertPlanCovers(sandbox, plan, before.tree, after.tree, aliases)
    return { dry: dry.doc, real: real.doc, plan, before, after, changed }
  })

const has = (tree: Record<string, string>, rel: string) => tree[rel] !== undefined

/** The dry-run suite on a host whose mounts `MountFixture` makes. */
const suite = <E>(name: string, host: Layer.Layer<Services, E>) =>
  layer(host, { excludeTestServices: false })(name, (it) => {
    it.effect("teardown-kubelet-dir: the plan is the real run's unmounts and removals", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { sandbox, root } = yield* node()
          const { plan, before, after } = yield* dryThenReal(sandbox, ["--host-root", root, "teardown-kubelet-dir"])
          const unmounts = planTargets(plan, "Mounter")
          // Four mounts (the projected volume twice), each once.
          assert.strictEqual(unmounts.length, 4)
          assert.isTrue(has(before.tree, `${podA}/volumes/kubernetes.io~secret/token/token`))
          assert.isFalse(has(after.tree, podA))
          assert.isFalse(has(after.tree, podB))
          assert.strictEqual(after.tree["outside/csi/data.bin"], before.tree["outside/csi/data.bin"])
          assert.deepStrictEqual(after.mounts, [], "mounts left below the sandbox")
          assert.isTrue(has(after.tree, "root/var/lib/kubelet/config.yaml"))
        })
      )
    )

    it.effect("unmount-below and unmount-below --strict: the same unmounts, in the same order", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { sandbox, root } = yield* node(false)
          const fx = yield* MountFixture.MountFixture
          const kubelet = `${root}/var/lib/kubelet`
          yield* fx.bind(kubelet, kubelet)
          yield* mountPods(sandbox)
          const strict = yield* dryThenReal(sandbox, ["unmount-below", "--strict", kubelet])
          assert.notInclude(planTargets(strict.plan, "Mounter"), kubelet)
          assert.deepStrictEqual(
            (yield* mountsBelow(sandbox)).map((l) => l.split(" ")[2]),
            [kubelet],
            "--strict keeps the prefix's own mount and nothing else"
          )
          yield* mountPods(sandbox)
          const all = yield* dryThenReal(sandbox, ["unmount-below", kubelet])
          assert.include(planTargets(all.plan, "Mounter"), kubelet)
          assert.deepStrictEqual(all.after.mounts, [])
        })
      )
    )

    it.effect("reset-cni and reset-kubelet-identity: the same removals as the real run", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { sandbox, root } = yield* node(false)
          const cni = yield* dryThenReal(sandbox, ["--host-root", root, "reset-cni"])
          assert.isAbove(cni.dry.result.removed.length, 0)
          assert.isFalse(has(cni.after.tree, "root/var/lib/cni"))
          assert.isFalse(has(cni.after.tree, "root/etc/cni/net.d/10-flannel.conflist"))
          const identity = yield* dryThenReal(sandbox, [
            "--host-root",
            root,
            "reset-kubelet-identity",
            "--auth",
            "bootstrap-token"
          ])
          assert.include(identity.dry.result.removed, `${root}/var/lib/kubelet/pki/kubelet-client-current.pem`)
          assert.isFalse(has(identity.after.tree, "root/var/lib/kubelet/pki/kubelet-client-current.pem"))
          assert.isTrue(has(identity.after.tree, "root/var/lib/kubelet/pki/kubelet.crt"))
        })
      )
    )

    it.effect("snapshot take of the default paths (some missing, pki excluded) and its restore", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { sandbox, root } = yield* node(false)
          const fs = yield* FileSystem.FileSystem
          yield* plant(sandbox, {
            "root/etc/kubernetes/pki/ca.key": "never recorded",
            "root/etc/kubernetes/admin.conf": "admin",
            "root/etc/systemd/system/kubelet.service": "[Service]\nExecStart=/usr/bin/kubelet\n",
            "root/etc/default/kubelet": "KUBELET_EXTRA_ARGS=\n"
          })
          const dir = `${sandbox}/snap-default`
          const take = yield* dryThenReal(sandbox, ["--host-root", root, "snapshot", "take", "--dir", dir])
          // Excluded from the snapshot: changed after it, it stays changed by the restore.
          yield* fs.writeFileString(`${root}/etc/kubernetes/pki/ca.key`, "rotated").pipe(Effect.orDie)
          yield* fs.writeFileString(`${root}/etc/default/kubelet`, "KUBELET_EXTRA_ARGS=--v=9\n").pipe(Effect.orDie)
          yield* fs.remove(`${root}/etc/kubernetes/admin.conf`).pipe(Effect.orDie)
          const restore = yield* dryThenReal(sandbox, ["--host-root", root, "snapshot", "restore", "--dir", dir])
          assert.strictEqual(
            restore.after.tree["root/etc/default/kubelet"],
            take.before.tree["root/etc/default/kubelet"]
          )
          assert.strictEqual(
            restore.after.tree["root/etc/kubernetes/admin.conf"],
            take.before.tree["root/etc/kubernetes/admin.conf"]
          )
          assert.strictEqual(
            restore.after.tree["root/etc/kubernetes/pki/ca.key"],
            restore.before.tree["root/etc/kubernetes/pki/ca.key"]
          )
          assert.notStrictEqual(
            restore.after.tree["root/etc/kubernetes/pki/ca.key"],
            take.before.tree["root/etc/kubernetes/pki/ca.key"]
          )
        })
      )
    )

    it.effect("snapshot take, restore, discard and recover: nothing written by the dry runs", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { sandbox, root } = yield* node(false)
          const fs = yield* FileSystem.FileSystem
          const dir = `${sandbox}/snap`
          const paths = [
            "--path",
            "/etc/containerd/config.toml",
            "--path",
            "/etc/systemd/system/kubelet.service.d",
            "--path",
            "/var/lib/kubelet/config.yaml"
          ]
          const take = yield* dryThenReal(sandbox, ["--host-root", root, "snapshot", "take", "--dir", dir, ...paths])
          assert.isFalse(has(take.before.tree, "snap"))
          assert.isTrue(has(take.after.tree, "snap"))

          // An upgrade that went wrong: one file changed, one drop-in added, one removed.
          yield* fs.writeFileString(`${root}/etc/containerd/config.toml`, "version = 3\n").pipe(Effect.orDie)
          yield* fs
            .writeFileString(`${root}/etc/systemd/system/kubelet.service.d/20-new.conf`, "[Service]\n")
            .pipe(Effect.orDie)
          yield* fs.remove(`${root}/var/lib/kubelet/config.yaml`).pipe(Effect.orDie)
          const restore = yield* dryThenReal(sandbox, ["--host-root", root, "snapshot", "restore", "--dir", dir])
          for (const rel of [
            "root/etc/containerd/config.toml",
            "root/etc/systemd/system/kubelet.service.d/20-new.conf",
            "root/var/lib/kubelet/config.yaml"
          ]) {
            assert.strictEqual(restore.after.tree[rel], take.before.tree[rel], rel)
          }
          assert.includeMembers(restore.changed, [
            `${root}/etc/containerd/config.toml`,
            `${root}/var/lib/kubelet/config.yaml`
          ])

          const discard = yield* dryThenReal(sandbox, ["--host-root", root, "snapshot", "discard", "--dir", dir])
          assert.isFalse(has(discard.after.tree, "snap"))

          yield* runJson(["--host-root", root, "snapshot", "take", "--dir", dir, ...paths])
          yield* fs.writeFileString(`${root}/etc/containerd/config.toml`, "version = 4\n").pipe(Effect.orDie)
          const recover = yield* dryThenReal(sandbox, ["--host-root", root, "snapshot", "recover", "--dir", dir])
          assert.isTrue(recover.dry.result.recovered)
          assert.isFalse(has(recover.after.tree, "snap"))
          assert.strictEqual(
            recover.after.tree["root/etc/containerd/config.toml"],
            take.before.tree["root/etc/containerd/config.toml"]
          )
        })
      )
    )
  })

/**
 * The cases measured against 0.3 (issue 24), each where the dry run used to
 * disagree with the real run: a restore of a snapshot with one file of five
 * changed, mounts on regular files, and the kubelet directory bound as a
 * shared peer of a data disk outside the host root.
 */
const measuredSuite = <E>(name: string, host: Layer.Layer<Services, E>) =>
  layer(host, { excludeTestServices: false })(`${name}: the cases measured on 0.3`, (it) => {
    const sandboxed = Effect.gen(function* () {
      const fx = yield* MountFixture.MountFixture
      const fs = yield* FileSystem.FileSystem
      const sandbox = yield* fs.realPath(yield* fx.sandbox).pipe(Effect.orDie)
      return { fx, fs, sandbox, root: `${sandbox}/root` }
    })

    it.effect(
      "a snapshot of five files, one changed: the restore's dry run plans that one file, as the real one changes it",
      () =>
        Effect.scoped(
          Effect.gen(function* () {
            const { fs, sandbox, root } = yield* sandboxed
            const files = ["a.conf", "b.conf", "c.conf", "d.conf", "e.conf"]
            yield* plant(sandbox, Object.fromEntries(files.map((f) => [`root/etc/kubernetes/${f}`, `${f} v1\n`])))
            const dir = `${sandbox}/snaps/s`
            const take = yield* runJson([
              "--host-root",
              root,
              "snapshot",
              "take",
              "--dir",
              dir,
              "--path",
              "/etc/kubernetes"
            ])
            assert.strictEqual(take.code, 0, JSON.stringify(take.doc))
            yield* fs.writeFileString(`${root}/etc/kubernetes/c.conf`, "c.conf v2\n").pipe(Effect.orDie)
            const inodes = Effect.forEach(files, (f) =>
              Effect.map(fs.stat(`${root}/etc/kubernetes/${f}`), (i) => String(i.ino))
            ).pipe(Effect.orDie)
            const before = yield* inodes
            const { plan } = yield* dryThenReal(sandbox, ["--host-root", root, "snapshot", "restore", "--dir", dir])
            // Only c.conf is written: its temporary file, made, set and renamed over it. Nothing else in /etc/kubernetes.
            const touched = [
              ...new Set(
                plan
                  .filter((s) => s.target.startsWith(`${root}/etc/kubernetes/`))
                  .map((s) => s.target.slice(`${root}/etc/kubernetes/`.length))
                  .filter((t) => !t.startsWith(".hostnode-restore-"))
              )
            ]
            assert.deepStrictEqual(touched, ["c.conf"], JSON.stringify(plan))
            // And so the real one: the four others are the very same files (inodes), c.conf a new one.
            const after = yield* inodes
            assert.deepStrictEqual(
              files.filter((_, i) => after[i] !== before[i]),
              ["c.conf"]
            )
            assert.strictEqual(
              yield* fs.readFileString(`${root}/etc/kubernetes/c.conf`).pipe(Effect.orDie),
              "c.conf v1\n"
            )
          })
        )
    )

    it.effect(
      "mounts on regular files (a subPath of a file, a raw block volume's node): the dry runs exit 0 as the real runs do",
      () =>
        Effect.scoped(
          Effect.gen(function* () {
            const { fx, sandbox, root } = yield* sandboxed
            const pod = `${root}/var/lib/kubelet/pods/33333333-cccc`
            yield* plant(sandbox, {
              "root/var/lib/kubelet/pods/33333333-cccc/volumes/kubernetes.io~configmap/cfg/app.conf": "key: value\n",
              "root/var/lib/kubelet/pods/33333333-cccc/volume-subpaths/cfg/app/0": "",
              "root/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/publish/pvc-9/dev": "block device stand-in",
              "root/var/lib/kubelet/pods/33333333-cccc/volumeDevices/kubernetes.io~csi/pvc-9": "",
              "root/var/lib/kubelet/pods/33333333-cccc/etc-hosts": "127.0.0.1 localhost\n"
            })
            yield* fx.bind(`${pod}/volumes/kubernetes.io~configmap/cfg/app.conf`, `${pod}/volume-subpaths/cfg/app/0`)
            yield* fx.bind(
              `${root}/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/publish/pvc-9/dev`,
              `${pod}/volumeDevices/kubernetes.io~csi/pvc-9`
            )
            // Both dry runs used to refuse the file mounts (UNVERIFIED Moved: "is not a directory"): exit 1 and 3.
            const teardown = yield* dryThenReal(sandbox, ["--host-root", root, "teardown-kubelet-dir"])
            assert.deepStrictEqual(teardown.dry.result.kept, [])
            assert.strictEqual(teardown.dry.result.unmounted.length, 2)
            assert.isFalse(has(teardown.after.tree, "root/var/lib/kubelet/pods/33333333-cccc"))
            yield* plant(sandbox, {
              "root/var/lib/kubelet/pods/44444444-dddd/volumes/kubernetes.io~configmap/cfg/app.conf": "key: value\n",
              "root/var/lib/kubelet/pods/44444444-dddd/volume-subpaths/cfg/app/0": ""
            })
            const pod2 = `${root}/var/lib/kubelet/pods/44444444-dddd`
            yield* fx.bind(`${pod2}/volumes/kubernetes.io~configmap/cfg/app.conf`, `${pod2}/volume-subpaths/cfg/app/0`)
            const unmount = yield* dryThenReal(sandbox, ["--host-root", root, "unmount-below", "/var/lib/kubelet"])
            assert.deepStrictEqual(
              unmount.dry.result.unmounted.map((m: { readonly mountPoint: string }) => m.mountPoint),
              [`${pod2}/volume-subpaths/cfg/app/0`]
            )
          })
        )
    )

    it.effect(
      "the kubelet directory a shared peer of a disk outside the root: the copies the kernel detaches are reported and predicted",
      () =>
        Effect.scoped(
          Effect.gen(function* () {
            const { fx, fs, sandbox, root } = yield* sandboxed
            // A data disk mounted outside the host root, shared, and bound as the kubelet directory.
            const disk = `${sandbox}/data-disk`
            yield* plant(sandbox, { "data-disk": { dir: true }, "root/var/lib/kubelet": { dir: true } })
            yield* fx.tmpfs(disk)
            yield* fx.propagation(disk, "shared")
            yield* plant(sandbox, {
              "data-disk/kubelet/pods/55555555-eeee/volumes/kubernetes.io~secret/token": { dir: true },
              "data-disk/kubelet/pods/55555555-eeee/volumes/kubernetes.io~configmap/cfg/app.conf": "key: value\n",
              "data-disk/kubelet/pods/55555555-eeee/volume-subpaths/cfg/app/0": ""
            })
            yield* fx.bind(`${disk}/kubelet`, `${root}/var/lib/kubelet`)
            const pod = `${root}/var/lib/kubelet/pods/55555555-eeee`
            yield* fx.tmpfs(`${pod}/volumes/kubernetes.io~secret/token`)
            yield* fs.writeFileString(`${pod}/volumes/kubernetes.io~secret/token/token`, "s3cr3t").pipe(Effect.orDie)
            yield* fx.bind(`${pod}/volumes/kubernetes.io~configmap/cfg/app.conf`, `${pod}/volume-subpaths/cfg/app/0`)
            const copies = (yield* fx.table)
              .filter((e) => e.mountPoint.startsWith(`${disk}/kubelet/pods/`))
              .map((e) => e.mountPoint)
              .sort()
            assert.deepStrictEqual(copies, [
              `${disk}/kubelet/pods/55555555-eeee/volume-subpaths/cfg/app/0`,
              `${disk}/kubelet/pods/55555555-eeee/volumes/kubernetes.io~secret/token`
            ])
            // Refused on request, before anything changes (exit 2), the dry run alike.
            const tableBefore = yield* mountsBelow(sandbox)
            for (const argv of [
              ["--host-root", root, "teardown-kubelet-dir", "--peers-outside-root", "refuse"],
              ["--dry-run", "--host-root", root, "teardown-kubelet-dir", "--peers-outside-root", "refuse"]
            ]) {
              const refused = yield* runJson(argv)
              assert.strictEqual(refused.code, 2, JSON.stringify(refused.doc))
              assert.strictEqual(refused.doc.error.reason._tag, "PeersOutsideRoot")
              assert.deepStrictEqual(
                refused.doc.error.reason.mounts.map((m: { readonly mountPoint: string }) => m.mountPoint).sort(),
                copies
              )
            }
            assert.deepStrictEqual(yield* mountsBelow(sandbox), tableBefore)
            // By default detached, and reported: the dry run predicts the same copies and plans the same removals.
            // The disk shows the kubelet directory's files again: what the plan does there, it does through the bind.
            const { dry, real, plan, after } = yield* dryThenReal(
              sandbox,
              ["--host-root", root, "teardown-kubelet-dir"],
              { [`${disk}/kubelet`]: `${root}/var/lib/kubelet` }
            )
            assert.deepStrictEqual(
              dry.result.kept,
              [],
              "the dry run kept a pod (MountSourceBelow) the real run removes"
            )
            const reported = (r: {
              readonly propagated: ReadonlyArray<{ readonly mountPoint: string; readonly outsideRoot: boolean }>
            }) => r.propagated.map((m) => `${m.mountPoint} ${m.outsideRoot}`).sort()
            assert.deepStrictEqual(
              reported(real.result),
              copies.map((c) => `${c} true`)
            )
            assert.deepStrictEqual(reported(dry.result), reported(real.result))
            assert.deepStrictEqual(
              plan
                .filter((s) => s.action.startsWith("detach by propagation"))
                .map((s) => s.target)
                .sort(),
              copies
            )
            assert.deepStrictEqual(
              after.mounts.map((l) => l.split(" ")[2]),
              [disk, `${root}/var/lib/kubelet`]
            )
            assert.isFalse(has(after.tree, "root/var/lib/kubelet/pods/55555555-eeee"))
            assert.include((real.warnings ?? []).join("\n"), "outside the host root by propagation")
          })
        )
    )

    it.effect("unmount-below of a prefix that does not exist warns, on stderr and in the JSON warnings", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { sandbox, root } = yield* sandboxed
          yield* plant(sandbox, { "root/var/lib/kubelet/config.yaml": "kind: KubeletConfiguration\n" })
          const json = yield* runJson(["--host-root", root, "unmount-below", "/var/lib/kubelett"])
          assert.strictEqual(json.code, 0)
          assert.deepStrictEqual(json.doc.result.missing, ["/var/lib/kubelett"])
          assert.strictEqual(json.doc.warnings.length, 1)
          assert.include(json.doc.warnings[0], "/var/lib/kubelett")
          assert.include(json.doc.warnings[0], "does not exist")
          const text = yield* runCli(["--host-root", root, "unmount-below", "/var/lib/kubelett", "/var/lib/kubelet"])
          assert.strictEqual(text.code, 0)
          assert.lengthOf(
            text.stderr.filter((l) => l.includes("warning") && l.includes("/var/lib/kubelett")),
            1
          )
          assert.isFalse(text.stderr.some((l) => l.includes('"/var/lib/kubelet" does not exist')))
        })
      )
    )
  })

/** LocalDNS setup and cleanup: the dry run runs the queries only, and its commands are the real run's. */
const networkSuite = <E>(name: string, host: Layer.Layer<Services, E>) =>
  layer(host, { excludeTestServices: false })(name, (it) => {
    const state = Effect.all({
      links: HostCommand.run("ip", ["-j", "addr", "show"]).pipe(Effect.map((o) => o.stdout)),
      rules: HostCommand.run("iptables", ["-t", "raw", "-S"]).pipe(Effect.map((o) => o.stdout))
    }).pipe(Effect.orDie)

    it.effect("localdns setup and cleanup: the commands of the plan are the real run's", () =>
      Effect.gen(function* () {
        const performed = yield* Performed
        // A bridge: this machine's test kernels have no dummy links (and a dry run cannot know that).
        for (const argv of [
          ["localdns", "setup", "--kind", "bridge"],
          ["localdns", "cleanup"]
        ]) {
          const before = yield* state
          const dry = yield* runJson(["--dry-run", ...argv])
          assert.isTrue(dry.doc.ok, JSON.stringify(dry.doc))
          assert.deepStrictEqual(yield* state, before, `${argv.join(" ")} --dry-run changed the network`)
          const plan: ReadonlyArray<PlanStep> = dry.doc.plan
          assert.isAbove(planTargets(plan, "ChildProcessSpawner").length, 0)
          yield* Ref.set(performed.commands, [])
          const real = yield* runJson(argv)
          assert.isTrue(real.doc.ok, JSON.stringify(real.doc))
          assert.deepStrictEqual(yield* Ref.get(performed.commands), planTargets(plan, "ChildProcessSpawner"))
          assert.notDeepEqual(yield* state, before, `${argv.join(" ")} changed nothing`)
        }
      })
    )
  })

// ---------------------------------------------------------------------------
// the hosts

const memoryHost = (files: Record<string, string> = {}) =>
  Layer.mergeAll(MountFixture.layerMemory, recording, cliEnvironment).pipe(
    Layer.provideMerge(performedLayer),
    Layer.provideMerge(MemoryNode.layer({ files }))
  )

suite("on MemoryNode", memoryHost())
measuredSuite("on MemoryNode", memoryHost())
networkSuite("on MemoryNode", memoryHost())

const mountGate = Gate.check("dry runs on real mounts", ["root", "private-mount-namespace", { command: "mount" }])
const netGate = Gate.check("dry runs on a real network", [
  "root",
  "private-net-namespace",
  { command: "ip", args: ["-V"] },
  { command: "iptables" }
])

const realHost = Layer.mergeAll(
  MountFixture.layerReal,
  recording,
  RefusingSystemd.layer("the real-root runs must never reach the machine's systemd"),
  refusedIsolation,
  refusedDns,
  cliEnvironment
).pipe(
  Layer.provideMerge(performedLayer),
  Layer.provideMerge(NodeMounter.layer),
  Layer.provideMerge(Layer.mergeAll(NodeDirectory.layer, NodeServices.layer)),
  Layer.orDie
)

describe.skipIf(mountGate.skip)("real mounts in a private mount namespace", () => {
  suite("on NodeMounter.layer", realHost)
  measuredSuite("on NodeMounter.layer", realHost)
})

describe.skipIf(netGate.skip)("a real network namespace", () => {
  networkSuite("on ip and iptables", realHost)
})

describe("restart-changed --dry-run", () => {
  const units = {
    "/etc/systemd/system/containerd.service": "[Service]\nExecStart=/usr/bin/containerd\n",
    "/etc/systemd/system/kubelet.service": "[Service]\nExecStart=/usr/bin/kubelet\n"
  }
  it.effect("records the restarts, restarts nothing, and names what a real run restarts", () =>
    Effect.gen(function* () {
      const systemd = yield* Systemd.Systemd
      const simulated = yield* MemorySystemd.MemorySystemd
      yield* systemd.start("containerd.service")
      yield* systemd.start("kubelet.service")
      yield* simulated.clearHistory
      const argv = ["restart-changed", "--was-running", "containerd.service", "kubelet.service=true", "x.service=false"]
      const dry = yield* runJson(["--dry-run", ...argv])
      assert.isTrue(dry.doc.ok)
      assert.deepStrictEqual(yield* simulated.jobs, [])
      const plan: ReadonlyArray<PlanStep> = dry.doc.plan
      // The daemon-reload before the restarts (reload always, the default), then the restarts.
      assert.deepStrictEqual(
        plan.map((s) => `${s.action} ${s.target}`.trim()),
        ["daemon-reload", "restart containerd.service", "restart kubelet.service"]
      )
      assert.strictEqual(yield* simulated.daemonReloads, 0)
      const real = yield* runJson(argv)
      assert.deepStrictEqual(real.doc.result, dry.doc.result)
      assert.strictEqual(yield* simulated.daemonReloads, 1)
      assert.deepStrictEqual(
        (yield* simulated.jobs).map((j) => `${j.verb} ${j.unit}`),
        plan.slice(1).map((s) => `${s.action} ${s.target}`)
      )
    }).pipe(Effect.provide(Layer.mergeAll(MemoryNode.layer({ files: units }), cliEnvironment)))
  )

  it.effect("running only asks: the plan is empty and the answer is the real one", () =>
    Effect.gen(function* () {
      const systemd = yield* Systemd.Systemd
      const before = yield* runJson(["--dry-run", "running"])
      assert.deepStrictEqual(before.doc.plan, [])
      assert.isFalse(before.doc.result.running)
      yield* systemd.start("containerd.service")
      yield* systemd.start("kubelet.service")
      const after = yield* runJson(["--dry-run", "running"])
      assert.deepStrictEqual(after.doc.plan, [])
      assert.isTrue(after.doc.result.running)
    }).pipe(Effect.provide(Layer.mergeAll(MemoryNode.layer({ files: units }), cliEnvironment)))
  )

  it.effect("localdns await only asks: the plan is empty once both listeners answer", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const network = yield* MemoryNetwork.MemoryNetwork
        const setup = yield* runJson(["localdns", "setup"])
        assert.isTrue(setup.doc.ok, JSON.stringify(setup.doc))
        yield* network.startDnsServer(["169.254.10.10", "169.254.10.11"]).pipe(Effect.orDie)
        const before = yield* Effect.all([network.links, network.rules()])
        const dry = yield* runJson(["--dry-run", "localdns", "await", "--timeout", "5"])
        assert.isTrue(dry.doc.ok, JSON.stringify(dry.doc))
        assert.deepStrictEqual(dry.doc.plan, [])
        assert.deepStrictEqual(yield* Effect.all([network.links, network.rules()]), before)
      })
    ).pipe(Effect.provide(Layer.mergeAll(MemoryNode.layer(), cliEnvironment)))
  )

  it.effect("a bad unit name fails the dry run as it would fail the real one", () =>
    Effect.gen(function* () {
      const dry = yield* runJson(["--dry-run", "restart-changed", "--was-running", "no-suffix"])
      const real = yield* runJson(["restart-changed", "--was-running", "no-suffix"])
      // Refused as bad input, before any command: nothing in the plan.
      assert.strictEqual(dry.code, 2)
      assert.strictEqual(dry.doc.error._tag, "UnitNameError")
      assert.deepStrictEqual(dry.doc.plan, [])
      assert.strictEqual(real.code, 2)
      assert.deepStrictEqual(real.doc.error, dry.doc.error)
    }).pipe(Effect.provide(Layer.mergeAll(MemoryNode.layer(), cliEnvironment)))
  )
})
