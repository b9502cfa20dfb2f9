/**
 * What the scenarios every composition shares (`NodeScenarios`) need from a
 * node besides the composition under test: planting and reading its files where
 * this process sees them, a tmpfs in its mount namespace, its mount table, its
 * LocalDNS fixture, and the host root a program is given. One layer per
 * composition: {@link layerHostRoot} (a temporary host root in this process's
 * private mount namespace, units and links of the `SystemdMachine` in
 * context), {@link layerContainer} (the `SystemdMachine` as a container, reached
 * with `nsenter`, no host root given) and {@link layerMemory} (`MemoryNode`).
 * Everything a fixture makes is undone when its scope closes.
 *
 * @since 0.2.0
 */
import { HostCommand, MountInfo } from "@hostnode/core"
import { LocalDnsFixture, MemoryHost } from "@hostnode/sim"
import { Context, Effect, FileSystem, Layer } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import { SystemdMachine } from "./SystemdMachine.ts"

/**
 * The units whose activity means a scenario node's stack is up: the
 * composition under test is built to watch these (its `IsolationBackend`).
 * Fresh names, so the scenarios never touch a unit of anyone else's.
 *
 * @category fixtures
 * @since 0.2.0
 */
export const Units: readonly [string, string] = [
  "hostnode-scenario-containerd.service",
  "hostnode-scenario-kubelet.service"
]

/**
 * A node for the shared scenarios.
 *
 * @category services
 * @since 0.2.0
 */
export interface NodeFixture {
  /** The fixture's name, for test titles. */
  readonly name: string
  /** The host root the program gives the operations; `undefined`: none, the composition's own real root. */
  readonly hostRoot: string | undefined
  /** Where this process sees the node's `/`: its files are planted and checked below it. */
  readonly view: string
  /** Where the node's systemd reads unit files from, as this process sees it. */
  readonly unitDir: string
  /** A directory of this process's own for snapshots (never below the node's files). */
  readonly scratch: string
  /** Mounts a new empty tmpfs at host path `path` (an existing directory) in the node's mount namespace. */
  readonly tmpfs: (path: string) => Effect.Effect<void>
  /** The mount points of the node's mount table, as host paths. */
  readonly mountPoints: Effect.Effect<ReadonlyArray<string>>
  /** Links, rules and a DNS server in the node's network namespace. */
  readonly localDns: LocalDnsFixture.LocalDnsFixture
}

/**
 * The key of the {@link NodeFixture} service.
 *
 * @category services
 * @since 0.2.0
 */
export const NodeFixture = Context.Service<NodeFixture>("@hostnode/test/NodeFixture")

/**
 * A fixture step that could not be done: a defect of the setup, not of the code under test.
 *
 * @since 0.2.0
 */
class NodeFixtureError extends Error {
  /**
   * The error's name in stack traces and logs.
   *
   * @since 0.2.0
   */
  override readonly name = "NodeFixtureError"
}

const must = (command: string, args: ReadonlyArray<string>) =>
  HostCommand.run(command, args).pipe(
    Effect.orDie,
    Effect.flatMap((o) =>
      o.exitCode === 0
        ? Effect.void
        : Effect.die(new NodeFixtureError(`${command} ${args.join(" ")} exited ${o.exitCode}: ${o.stderr.trim()}`))
    )
  )

/** The mount points of `table` at or below `tableRoot` (this process's path of the node's `/`), as host paths. */
const below = (table: ReadonlyArray<MountInfo.MountEntry>, tableRoot: string): ReadonlyArray<string> =>
  table.flatMap((e) => {
    if (tableRoot === "/") return [e.mountPoint]
    if (e.mountPoint === tableRoot) return ["/"]
    return e.mountPoint.startsWith(`${tableRoot}/`) ? [e.mountPoint.slice(tableRoot.length)] : []
  })

/** The real LocalDNS fixture with this host's `ip`, `iptables` and `dnsmasq` run in the network namespace of `pid`. */
const inNetworkOf = (pid: number) =>
  LocalDnsFixture.LocalDnsFixture.pipe(
    Effect.provide(
      LocalDnsFixture.layerReal({ interfaceKind: "bridge" }).pipe(Layer.provide(HostCommand.layerNsenter(pid, ["n"])))
    )
  )

/**
 * The host composition's node: a temporary host root that is a tmpfs of its
 * own in this process's (private) mount namespace, detached with everything
 * below it when the layer closes; unit files, links and rules in the
 * `SystemdMachine` in context (booted with a network of its own), whose
 * systemd and network the test points the host composition at.
 *
 * @category layers
 * @since 0.2.0
 */
export const layerHostRoot: Layer.Layer<
  NodeFixture,
  never,
  ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem | SystemdMachine
> = Layer.effect(
  NodeFixture,
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const machine = yield* SystemdMachine
    const context = yield* Effect.context<ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem>()
    const root = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-node-" }).pipe(Effect.orDie)
    const scratch = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-scratch-" }).pipe(Effect.orDie)
    yield* Effect.acquireRelease(must("mount", ["-t", "tmpfs", "-o", "size=16m", "tmpfs", root]), () =>
      HostCommand.run("umount", ["-R", "-l", "--", root]).pipe(Effect.ignore)
    )
    const localDns = yield* inNetworkOf(machine.pid)
    return NodeFixture.of({
      name: "host composition on a temporary host root",
      hostRoot: root,
      view: root,
      unitDir: `${machine.hostRoot}/etc/systemd/system`,
      scratch,
      tmpfs: (path) =>
        must("mount", ["-t", "tmpfs", "-o", "size=16m", "tmpfs", `${root}${path}`]).pipe(Effect.provide(context)),
      mountPoints: MountInfo.read().pipe(
        Effect.map((t) => below(t, root)),
        Effect.orDie,
        Effect.provide(context)
      ),
      localDns
    })
  })
)

/**
 * The container's node: the `SystemdMachine` in context, which should have a
 * network namespace of its own (`SystemdMachine.layerWith({ network:
 * "private" })`). Files through `/proc/<pid>/root`; tmpfs mounts made in its
 * mount namespace (`nsenter -m`), gone with the machine; the LocalDNS
 * fixture's `ip`, `iptables` and `dnsmasq` are this host's binaries run in
 * its network namespace (`nsenter -n`).
 *
 * @category layers
 * @since 0.2.0
 */
export const layerContainer: Layer.Layer<
  NodeFixture,
  never,
  ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem | SystemdMachine
> = Layer.effect(
  NodeFixture,
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const machine = yield* SystemdMachine
    const context = yield* Effect.context<ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem>()
    const scratch = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-scratch-" }).pipe(Effect.orDie)
    const localDns = yield* inNetworkOf(machine.pid)
    return NodeFixture.of({
      name: "container composition on a SystemdMachine",
      hostRoot: undefined,
      view: machine.hostRoot,
      unitDir: `${machine.hostRoot}/etc/systemd/system`,
      scratch,
      tmpfs: (path) =>
        must("nsenter", [
          "-t",
          String(machine.pid),
          "-m",
          "--",
          "mount",
          "-t",
          "tmpfs",
          "-o",
          "size=16m",
          "tmpfs",
          path
        ]).pipe(Effect.provide(context)),
      mountPoints: MountInfo.read(`/proc/${machine.pid}/mountinfo`).pipe(
        Effect.map((t) => t.map((e) => e.mountPoint)),
        Effect.orDie,
        Effect.provide(context)
      ),
      localDns
    })
  })
)

/**
 * The simulated node's fixture: `MemoryNode` (or any `MemoryHost` with a
 * `LocalDnsFixture`) in context; its `/` is the simulated host's.
 *
 * @category layers
 * @since 0.2.0
 */
export const layerMemory: Layer.Layer<
  NodeFixture,
  never,
  MemoryHost.MemoryHost | FileSystem.FileSystem | LocalDnsFixture.LocalDnsFixture
> = Layer.effect(
  NodeFixture,
  Effect.gen(function* () {
    const host = yield* MemoryHost.MemoryHost
    const fs = yield* FileSystem.FileSystem
    const scratch = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-scratch-" }).pipe(Effect.orDie)
    return NodeFixture.of({
      name: "MemoryNode",
      hostRoot: undefined,
      view: "/",
      unitDir: "/etc/systemd/system",
      scratch,
      tmpfs: (path) => host.tmpfs(path).pipe(Effect.orDie),
      mountPoints: Effect.map(host.mountTable, (t) => t.map((e) => e.mountPoint)),
      localDns: yield* LocalDnsFixture.LocalDnsFixture
    })
  })
)
