/**
 * `NodeHost.layer`: the services it provides, and the shared scenarios on
 * it (the same programs the container composition and `MemoryNode` run).
 * Its files and mounts are real, below a temporary host root in the test
 * runner's private mount namespace; its systemd, network commands and DNS
 * queries are pointed at a `SystemdMachine` with a network of its own (a
 * test never drives this host's systemd, and no other LocalDNS suite of the
 * run shares that network).
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Directory, DnsResolvers, HostCommand, IsolationBackend, Mounter, MountInfo, Systemd } from "@hostnode/core"
import { NodeDns, NodeHost, NodeSystemd } from "@hostnode/node"
import { Gate, NodeFixture, SystemdMachine } from "@hostnode/test"
import { NodeScenarios } from "@hostnode/test/conformance"
import { Effect, Layer } from "effect"

describe("NodeHost.layer", () => {
  it.effect("provides every service the operations need, backed by this machine", () =>
    Effect.gen(function* () {
      // the real mount table, read through the real FileSystem
      const table = yield* MountInfo.read()
      assert.isTrue(table.some((e) => e.mountPoint === "/"))
      // the services exist (their behaviour has suites of its own)
      const mounter = yield* Mounter.Mounter
      const systemd = yield* Systemd.Systemd
      const dns = yield* DnsResolvers.DnsResolvers
      const backend = yield* IsolationBackend.IsolationBackend
      assert.strictEqual(typeof mounter.unmount, "function")
      assert.strictEqual(typeof systemd.restart, "function")
      assert.strictEqual(typeof dns.forServer, "function")
      assert.strictEqual(backend.name, "host")
      // nothing is unmounted for a path that has no mounts
      const dirs = yield* Directory.Directories
      const r = yield* Effect.scoped(
        Effect.flatMap(dirs.openRoot("/"), (root) => mounter.unmount(root, [], { lazy: true }))
      )
      assert.deepStrictEqual(r, [])
    }).pipe(Effect.provide(NodeHost.layer))
  )
})

const gate = Gate.check("the host composition's scenarios (real mounts, a systemd machine)", [
  "root",
  "pid-namespace",
  "private-mount-namespace",
  { command: "mount" },
  { command: "nsenter" },
  { command: "systemctl" },
  { command: "ip", args: ["-V"] },
  { command: "iptables" },
  { command: "dnsmasq" }
])

const machine = SystemdMachine.layerWith({ network: "private" }).pipe(Layer.provide(NodeServices.layer), Layer.orDie)

// NodeHost.layer, its systemd, network commands and DNS those of the machine.
const host = Layer.unwrap(
  Effect.map(Effect.service(SystemdMachine.SystemdMachine), (m) =>
    Layer.merge(
      NodeHost.layer,
      Layer.mergeAll(
        IsolationBackend.layerHost({ units: NodeFixture.Units }).pipe(
          Layer.provideMerge(NodeSystemd.layerWithFallback({ pid: m.pid }))
        ),
        HostCommand.layerNsenter(m.pid, ["n"]).pipe(Layer.provide(NodeServices.layer)),
        NodeDns.layerIn(m.pid)
      )
    )
  )
)

describe.skipIf(gate.skip)("NodeHost.layer, scenarios", () => {
  NodeScenarios.suite(
    "NodeHost.layer on a temporary host root",
    Layer.mergeAll(host, NodeFixture.layerHostRoot.pipe(Layer.provide(NodeServices.layer))).pipe(
      Layer.provideMerge(machine)
    )
  )
})
