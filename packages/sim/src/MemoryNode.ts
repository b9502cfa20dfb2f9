/**
 * A whole simulated node in one layer: the `MemoryHost` file system and
 * mounts, the simulated systemd and network, the command line that reaches them
 * (`systemctl`, `ip`, `iptables`, `mount`, `umount`), and the library's own
 * services over that command line (`Systemd.layerCommand`,
 * `IsolationBackend.layerHost`, `DnsResolvers`, the in-memory
 * `LocalDnsFixture`). Code that runs against `NodeHost.layer` runs unchanged
 * against it. Spawning is an operation of the simulated process (journal kind
 * `spawn`: logged, faulted by `failNth`, stopped by a crash); systemd and the
 * network are other processes, which a crash does not stop.
 *
 * @since 0.1.0
 */
import { type Directory, DnsResolvers, IsolationBackend, type Mounter, Systemd } from "@hostnode/core"
import { Context, type Duration, Effect, type FileSystem, Layer, type Path } from "effect"
import * as PlatformError from "effect/PlatformError"
import { ChildProcessSpawner } from "effect/process"
import { reasonTag } from "./internal/errno.ts"
import { admit, complete, type Journal } from "./internal/journal.ts"
import * as MemoryCommands from "./internal/memoryCommands.ts"
import * as MemoryMounts from "./internal/memoryMounts.ts"
import * as SystemdSimulation from "./internal/memorySystemd/simulation.ts"
import * as NetworkSimulation from "./internal/network/simulation.ts"
import type { LocalDnsFixture } from "./LocalDnsFixture.ts"
import * as MemoryHost from "./MemoryHost.ts"
import * as MemoryNetwork from "./MemoryNetwork.ts"
import * as MemorySystemd from "./MemorySystemd.ts"

/**
 * One command as the simulated command line saw it (re-exported for assertions).
 *
 * @since 0.1.0
 */
type Invocation = MemoryCommands.Invocation

/**
 * How to build a node. Every field is optional: `MemoryNode.layer()` is an empty host with only `lo`.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options extends MemoryHost.Options {
  /** The simulated systemd (unit search path, first pid). */
  readonly systemd?: MemorySystemd.Options | undefined
  /** The simulated network (kinds and tables the kernel lacks). */
  readonly network?: MemoryNetwork.Options | undefined
  /** How long one `systemctl` call may take before `Systemd` fails with a Timeout (default 3 minutes). */
  readonly systemctlTimeout?: Duration.Input | undefined
  /** The units whose activity means the host's node stack runs (`IsolationBackend.layerHost`; default containerd and kubelet). */
  readonly hostUnits?: ReadonlyArray<string> | undefined
  /** The kind the LocalDNS fixture creates the interface as (default `dummy`). */
  readonly localDnsInterfaceKind?: "dummy" | "bridge" | undefined
}

/**
 * Inspection of the simulated command line.
 *
 * @category services
 * @since 0.1.0
 */
export interface MemoryNode {
  /** Every command spawned so far (after `nsenter` was stripped), oldest first. */
  readonly invocations: Effect.Effect<ReadonlyArray<Invocation>>
  /** Forgets the invocations so far. */
  readonly clearInvocations: Effect.Effect<void>
}

/**
 * The key of the command-line inspection service.
 *
 * @category services
 * @since 0.1.0
 */
export const MemoryNode = Context.Service<MemoryNode>("@hostnode/sim/MemoryNode")

/**
 * Everything {@link layer} provides.
 *
 * @category models
 * @since 0.1.0
 */
export type Services =
  | MemoryHost.MemoryHost
  | FileSystem.FileSystem
  | Path.Path
  | Directory.Directories
  | Mounter.Mounter
  | ChildProcessSpawner.ChildProcessSpawner
  | Systemd.Systemd
  | IsolationBackend.IsolationBackend
  | DnsResolvers.DnsResolvers
  | LocalDnsFixture
  | MemorySystemd.MemorySystemd
  | MemoryNetwork.MemoryNetwork
  | MemoryNode

/** `inner`, with every spawn passing the simulated process's journal (log, faults, crash). */
const journaled = (
  journal: Journal,
  inner: ChildProcessSpawner.ChildProcessSpawner["Service"]
): ChildProcessSpawner.ChildProcessSpawner["Service"] =>
  ChildProcessSpawner.make((command) =>
    Effect.suspend(() => {
      const admission = admit(journal, "spawn", [])
      if (admission._tag === "Crashed") return Effect.die(admission.defect)
      if (admission._tag === "Inject") {
        complete(journal, "spawn", [], admission.fault.code, true)
        return Effect.fail(
          PlatformError.systemError({
            _tag: reasonTag(admission.fault.code),
            module: "ChildProcess",
            method: "spawn",
            pathOrDescriptor: "command" in command ? command.command : "",
            description: `injected ${admission.fault.code}`
          })
        )
      }
      return inner.spawn(command).pipe(
        // The journal records the errno the spawn failed with (a missing interpreter is ENOENT).
        Effect.tapError((e) =>
          Effect.sync(() => {
            const cause = e.reason.cause as { readonly code?: unknown } | undefined
            complete(journal, "spawn", [], typeof cause?.code === "string" ? cause.code : e.reason._tag)
          })
        ),
        Effect.tap(() => Effect.sync(() => complete(journal, "spawn", [], "ok")))
      )
    })
  )

/**
 * A fresh simulated node (see the module comment). Each build of the layer
 * is a new, independent host.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: Options = {}): Layer.Layer<Services> => {
  const simulations = Layer.effectContext(
    Effect.gen(function* () {
      const host = yield* MemoryHost.MemoryHost
      const systemd = yield* SystemdSimulation.makeOnHost(options.systemd)
      const network = yield* NetworkSimulation.make(options.network)
      const invocations: Array<Invocation> = []
      const interpreters = new Map<string, MemoryCommands.Interpreter>([
        ...MemoryMounts.interpreters(host.state),
        ["systemctl", systemd.systemctl],
        ["ip", network.ip],
        ["iptables", network.iptables]
      ])
      const spawner = journaled(
        host.state.journal,
        MemoryCommands.makeSpawner(interpreters, (i) => {
          invocations.push(i)
        })
      )
      return Context.make(ChildProcessSpawner.ChildProcessSpawner, spawner).pipe(
        Context.add(MemorySystemd.MemorySystemd, systemd.service),
        Context.add(MemoryNetwork.MemoryNetwork, network.service),
        Context.add(DnsResolvers.DnsResolvers, network.resolvers),
        Context.add(
          MemoryNode,
          MemoryNode.of({
            invocations: Effect.sync(() => [...invocations]),
            clearInvocations: Effect.sync(() => {
              invocations.length = 0
            })
          })
        )
      )
    })
  ).pipe(Layer.provideMerge(MemoryHost.layer(options)))
  const systemd = IsolationBackend.layerHost({ units: options.hostUnits }).pipe(
    Layer.provideMerge(Systemd.layerCommand({ timeout: options.systemctlTimeout }))
  )
  return Layer.mergeAll(
    systemd,
    MemoryNetwork.layerLocalDnsFixture({ interfaceKind: options.localDnsInterfaceKind })
  ).pipe(Layer.provideMerge(simulations))
}
