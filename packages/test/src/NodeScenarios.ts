/**
 * The scenarios every composition shares: an agent's programs written once and
 * run unchanged on each composition of the node's services (host, container,
 * simulated node); one that passes on one composition and fails on another is
 * a bug in one of them. The composition's Layer also provides the
 * `NodeFixture` of the node it drives. Scenarios: the upgrade rolled back by
 * `Snapshot.scoped` (and kept when it succeeds); the repave (mounts below the
 * kubelet's directory, pods torn down, CNI state and identity reset); LocalDNS
 * setup, await and cleanup; `restartChanged` and `running` on the node's units.
 *
 * @since 0.2.0
 */
import { assert, layer, type Vitest } from "@effect/vitest"
import {
  AgentConfig,
  type Directory,
  type DnsResolvers,
  IsolationBackend,
  LocalDns,
  type Mounter,
  type NodeStart,
  Paths,
  Repave,
  RestartChanged,
  Snapshot,
  Systemd,
  Unmount
} from "@hostnode/core"
import { Data, Effect, FileSystem, type Layer, Redacted } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import { RuleComment } from "./internal/localDnsRules.ts"
import { rootAt } from "./internal/rootAt.ts"
import { NodeFixture, Units } from "./NodeFixture.ts"

/** `path` (a host path) as this process sees it on `fixture`'s node. */
const full = (fixture: NodeFixture, path: string): string => (fixture.view === "/" ? path : `${fixture.view}${path}`)

/**
 * What a composition must provide for the scenarios: the services of
 * `NodeHost.layer` that the operations use, and the node's fixture.
 *
 * @since 0.2.0
 */
type Composition =
  | FileSystem.FileSystem
  | ChildProcessSpawner.ChildProcessSpawner
  | Directory.Directories
  | Mounter.Mounter
  | Systemd.Systemd
  | DnsResolvers.DnsResolvers
  | IsolationBackend.IsolationBackend
  | NodeFixture

/** The upgrade's own failure, which a rollback must not hide. */
class UpgradeFailed extends Data.Error<{ readonly reason: string }> {
  readonly _tag = "UpgradeFailed"
}

const node: NodeStart.NodeStart = {
  nodeName: "node-a",
  apiServer: "https://10.0.0.1:6443",
  auth: {
    _tag: "BootstrapToken",
    token: Redacted.make("abcdef.0123456789abcdef"),
    bootstrapKubeconfig: "/var/lib/kubelet/bootstrap-kubeconfig"
  },
  localDns: { nodeListener: "169.254.10.10", clusterListener: "169.254.10.11" }
}

const plant = (files: Readonly<Record<string, string>>) =>
  Effect.gen(function* () {
    const fx = yield* NodeFixture
    const fs = yield* FileSystem.FileSystem
    for (const [path, text] of Object.entries(files)) {
      const at = full(fx, path)
      yield* fs.makeDirectory(at.slice(0, at.lastIndexOf("/")), { recursive: true })
      yield* fs.writeFileString(at, text)
    }
  }).pipe(Effect.orDie)

const read = (path: string) =>
  Effect.gen(function* () {
    const fx = yield* NodeFixture
    const fs = yield* FileSystem.FileSystem
    return yield* fs.readFileString(full(fx, path)).pipe(Effect.orElseSucceed(() => undefined))
  })

const exists = (path: string) =>
  Effect.gen(function* () {
    const fx = yield* NodeFixture
    const fs = yield* FileSystem.FileSystem
    return yield* fs.exists(full(fx, path)).pipe(Effect.orElseSucceed(() => false))
  })

let snapshots = 0

/**
 * Registers the scenarios on `it`, the methods of a `layer(...)` block whose
 * layer provides a {@link Composition} (and the real clock:
 * `excludeTestServices`). For a test file that adds tests of its own on the
 * same node, so one machine boot serves them all. The scenarios run one
 * after another and each leaves the node as the next expects it.
 *
 * @category conformance
 * @since 0.2.0
 */
export const register = (it: Vitest.MethodsNonLive<Composition>): void => {
  it.effect("an upgrade that fails is rolled back by Snapshot.scoped; its own error surfaces", () =>
    Effect.gen(function* () {
      const fx = yield* NodeFixture
      const fs = yield* FileSystem.FileSystem
      const before = {
        "/etc/kubernetes/kubelet.conf": "kubelet v1\n",
        "/etc/kubernetes/manifests/etcd.yaml": "etcd v1\n",
        "/etc/default/kubelet": "KUBELET_FLAGS=--v=1\n"
      }
      yield* plant(before)
      const paths = ["/etc/kubernetes", "/etc/default/kubelet"]
      const upgrade = (fail: boolean) =>
        Effect.gen(function* () {
          yield* Snapshot.scoped({
            dir: `${fx.scratch}/snapshot-${++snapshots}`,
            hostRoot: yield* rootAt(fx.hostRoot ?? ""),
            paths
          })
          // The upgrade rewrites one file, removes one, creates one, then fails (or not).
          yield* fs.writeFileString(full(fx, "/etc/kubernetes/kubelet.conf"), "kubelet v2\n")
          yield* fs.remove(full(fx, "/etc/default/kubelet"))
          yield* fs.writeFileString(full(fx, "/etc/kubernetes/new.conf"), "new\n")
          if (fail) return yield* new UpgradeFailed({ reason: "the new kubelet did not start" })
        }).pipe(Effect.scoped)

      const failure = yield* Effect.flip(upgrade(true))
      assert.strictEqual(failure._tag, "UpgradeFailed")
      assert.strictEqual(failure._tag === "UpgradeFailed" && failure.reason, "the new kubelet did not start")
      for (const [path, text] of Object.entries(before)) assert.strictEqual(yield* read(path), text, path)
      assert.isFalse(yield* exists("/etc/kubernetes/new.conf"))

      // One that succeeds keeps what it wrote.
      yield* upgrade(false)
      assert.strictEqual(yield* read("/etc/kubernetes/kubelet.conf"), "kubelet v2\n")
      assert.isFalse(yield* exists("/etc/default/kubelet"))
      assert.strictEqual(yield* read("/etc/kubernetes/new.conf"), "new\n")
    })
  )

  it.effect(
    "a repave unmounts strictly below the kubelet's directory, tears the pods down, resets CNI and identity",
    () =>
      Effect.gen(function* () {
        const fx = yield* NodeFixture
        const fs = yield* FileSystem.FileSystem
        const pod = "/var/lib/kubelet/pods/5f0c"
        const secret = `${pod}/volumes/kubernetes.io~secret/token`
        // The kubelet's directory is a mount of its own (a dedicated disk): it stays.
        yield* fs.makeDirectory(full(fx, Paths.Node.KubeletDir), { recursive: true }).pipe(Effect.orDie)
        yield* fx.tmpfs(Paths.Node.KubeletDir)
        yield* fs.makeDirectory(full(fx, secret), { recursive: true }).pipe(Effect.orDie)
        yield* fx.tmpfs(secret)
        yield* plant({
          [`${secret}/token`]: "the pod's token",
          [`${pod}/etc-hosts`]: "127.0.0.1 localhost\n",
          "/etc/cni/net.d/10-bridge.conflist": "{}",
          "/var/lib/cni/networks/cbr0/10.244.0.7": "c0ffee",
          "/var/lib/kubelet/pki/kubelet-client-2026-11-30-10-00-00.pem": "client cert",
          "/var/lib/kubelet/pki/kubelet.crt": "serving cert",
          "/var/lib/kubelet/kubeconfig": "points at the client cert",
          "/var/lib/kubelet/bootstrap-kubeconfig": "bootstrap"
        })
        yield* fs
          .symlink(
            "/var/lib/kubelet/pki/kubelet-client-2026-11-30-10-00-00.pem",
            full(fx, "/var/lib/kubelet/pki/kubelet-client-current.pem")
          )
          .pipe(Effect.orDie)
        const mountsBefore = yield* fx.mountPoints
        assert.include(mountsBefore, secret)

        const options = { hostRoot: fx.hostRoot === undefined ? undefined : yield* rootAt(fx.hostRoot) }
        const unmounted = yield* Unmount.unmountStrictlyBelow([Paths.Node.KubeletDir], options)
        assert.deepStrictEqual(
          unmounted.unmounted.map((m) => m.mountPoint.slice(m.mountPoint.indexOf(Paths.Node.KubeletDir))),
          [secret]
        )
        const torn = yield* Repave.teardownKubeletDir(options)
        assert.deepStrictEqual(torn.kept, [])
        const cni = yield* Repave.resetCniState(options)
        assert.deepStrictEqual(cni.kept, [])
        const identity = yield* Repave.resetKubeletIdentity(node, options)
        assert.deepStrictEqual(identity.kept, [])

        const mounts = yield* fx.mountPoints
        assert.include(mounts, Paths.Node.KubeletDir, "the kubelet's own mount stays")
        assert.isFalse(
          mounts.some((m) => m.startsWith(`${Paths.Node.KubeletDir}/`)),
          "no mount strictly below it"
        )
        assert.isFalse(yield* exists(pod))
        assert.isTrue(yield* exists(Paths.Node.CniConfDir))
        assert.deepStrictEqual(yield* fs.readDirectory(full(fx, Paths.Node.CniConfDir)).pipe(Effect.orDie), [])
        assert.isFalse(yield* exists(Paths.Node.CniStateDir))
        assert.isFalse(yield* exists("/var/lib/kubelet/pki/kubelet-client-2026-11-30-10-00-00.pem"))
        assert.isFalse(
          yield* fs.exists(full(fx, "/var/lib/kubelet/pki/kubelet-client-current.pem")).pipe(Effect.orDie),
          "the current link goes too"
        )
        assert.isFalse(yield* exists("/var/lib/kubelet/kubeconfig"))
        assert.strictEqual(yield* read("/var/lib/kubelet/pki/kubelet.crt"), "serving cert")
        assert.strictEqual(yield* read("/var/lib/kubelet/bootstrap-kubeconfig"), "bootstrap")
      })
  )

  it.effect("LocalDNS: setup, await both listeners, cleanup; the timeout names the listeners", () =>
    Effect.gen(function* () {
      const fx = (yield* NodeFixture).localDns
      yield* fx.cleanSlate(AgentConfig.Defaults.interfaceName)
      yield* LocalDns.setupLocalDnsNetwork(node, { interfaceKind: fx.interfaceKind })
      // idempotent: a second setup changes nothing
      yield* LocalDns.setupLocalDnsNetwork(node, { interfaceKind: fx.interfaceKind })
      const link = yield* fx.link(AgentConfig.Defaults.interfaceName)
      assert.deepStrictEqual(link?.ipv4, ["169.254.10.10/32", "169.254.10.11/32"])
      const ours = (yield* fx.rawRules).filter((r) => r.includes(RuleComment))
      assert.strictEqual(ours.length, 8, ours.join("\n"))

      yield* Effect.scoped(
        Effect.gen(function* () {
          yield* fx.dnsServer(["169.254.10.10", "169.254.10.11"])
          yield* LocalDns.awaitLocalDns(node, { timeout: "60 seconds", interval: "100 millis" })
        })
      )

      yield* LocalDns.cleanupHostNetwork()
      assert.isUndefined(yield* fx.link(AgentConfig.Defaults.interfaceName))
      assert.deepStrictEqual(
        (yield* fx.rawRules).filter((r) => r.includes(RuleComment)),
        []
      )
      // Nothing answers now: the wait ends at its deadline and names both listeners.
      const timeout = yield* Effect.flip(
        LocalDns.awaitLocalDns(node, { timeout: "1 second", interval: "200 millis", probeTimeout: "200 millis" })
      )
      assert.strictEqual(timeout.reason._tag, "Timeout")
      assert.include(timeout.message, "169.254.10.10")
      assert.include(timeout.message, "169.254.10.11")
    })
  )

  it.effect("restartChanged restarts only the changed units of a running node; running follows the units", () =>
    Effect.gen(function* () {
      const fx = yield* NodeFixture
      const fs = yield* FileSystem.FileSystem
      const systemd = yield* Systemd.Systemd
      const slot = IsolationBackend.SlotRef.make("a")
      const [containerd, kubelet] = Units
      yield* fs.makeDirectory(fx.unitDir, { recursive: true }).pipe(Effect.orDie)
      for (const unit of Units) {
        yield* fs
          .writeFileString(
            `${fx.unitDir}/${unit}`,
            `[Unit]\nDescription=${unit}\n\n[Service]\nExecStart=/bin/sleep infinity\n`
          )
          .pipe(Effect.orDie)
      }
      yield* systemd.daemonReload
      assert.isFalse(yield* IsolationBackend.running(slot), "nothing started yet")
      yield* systemd.start(containerd)
      assert.isFalse(yield* IsolationBackend.running(slot), "only one unit active")
      yield* systemd.start(kubelet)
      assert.isTrue(yield* IsolationBackend.running(slot))

      const mainPid = (unit: string) => Effect.map(systemd.show(unit, ["MainPID"]), (p) => p.MainPID)
      const before = { containerd: yield* mainPid(containerd), kubelet: yield* mainPid(kubelet) }
      const units = [
        { unit: containerd, changed: false },
        { unit: kubelet, changed: true }
      ]
      // Not running before the configuration was written: nothing restarts.
      yield* RestartChanged.restartChanged({ wasRunning: false, units })
      assert.strictEqual(yield* mainPid(kubelet), before.kubelet)
      yield* RestartChanged.restartChanged({ wasRunning: true, units })
      assert.strictEqual(yield* mainPid(containerd), before.containerd, "an unchanged unit is not restarted")
      assert.notStrictEqual(yield* mainPid(kubelet), before.kubelet, "the changed one is")
      assert.isTrue(yield* IsolationBackend.running(slot))

      yield* systemd.stop(kubelet)
      assert.isFalse(yield* IsolationBackend.running(slot))
      yield* systemd.stop(containerd)
    })
  )
}

/**
 * Registers the scenarios under `name` on `composition`, built once for the
 * block (see {@link register}).
 *
 * @category conformance
 * @since 0.2.0
 */
export const suite = (name: string, composition: Layer.Layer<Composition>): void =>
  layer(composition, { timeout: "120 seconds", excludeTestServices: true })(`Node scenarios: ${name}`, register)
