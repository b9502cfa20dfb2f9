/**
 * The seams a node exposes so tests can run it against a temporary tree and a
 * fake host (the Go package's `Hooks`): goal state resolution, the host root,
 * where configuration snapshots go, and the three LocalDNS phases. Every seam
 * left unset is the real host and the real phase, so production passes only
 * the agent configuration.
 *
 * Boundary: choosing between an override and the default and wiring the
 * agent configuration into the defaults. The phases themselves are in
 * `LocalDns` and `GoalState`.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import type { AgentConfig } from "./AgentConfig.ts"
import type { DnsResolvers } from "./DnsResolvers.ts"
import * as GoalState from "./GoalState.ts"
import type * as HostPath from "./HostPath.ts"
import * as Lexical from "./internal/hostPath/lexical.ts"
import * as LocalDns from "./LocalDns.ts"
import type { NodeStart } from "./NodeStart.ts"

/**
 * The seams; every one is optional and defaults to the real host or the real phase.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** Overrides goal state resolution. The default reads the slot's file below `hostRoot` (see `GoalState.makeSource`). */
  readonly resolve?: GoalState.SourceOptions["resolve"]
  /**
   * The host root, decoded by `HostPath.decodeRoot`, below which the node's
   * same-path host locations (`/etc`, `/var/lib`, `/opt/cni`) are. Absent:
   * the real host.
   */
  readonly hostRoot?: HostPath.HostRoot | undefined
  /**
   * Where an upgrade saves the shared configuration so a rollback can restore
   * it. Empty means a directory in the agent configuration directory below
   * `hostRoot` (see {@link Hooks.snapshotDir}).
   */
  readonly configSnapshotDir?: string | undefined
  /** Replaces the LocalDNS network setup. */
  readonly setupNetwork?:
    | ((nodeStart: NodeStart) => Effect.Effect<void, LocalDns.LocalDnsError, ChildProcessSpawner.ChildProcessSpawner>)
    | undefined
  /** Replaces the host network cleanup. */
  readonly cleanupNetwork?:
    | (() => Effect.Effect<void, LocalDns.LocalDnsError, ChildProcessSpawner.ChildProcessSpawner>)
    | undefined
  /** Replaces the LocalDNS readiness wait; given the node start whose listeners are waited on. */
  readonly waitLocalDns?:
    | ((nodeStart: NodeStart) => Effect.Effect<void, LocalDns.LocalDnsError, DnsResolvers>)
    | undefined
}

/**
 * A node's seams, resolved: each operation is the override when set, else the real one.
 *
 * @category models
 * @since 0.1.0
 */
export interface Hooks {
  /** The agent configuration the defaults use. */
  readonly config: AgentConfig
  /** The host root (`undefined`: the real host). */
  readonly hostRoot: HostPath.HostRoot | undefined
  /** The goal state of a slot: the `resolve` override, else the default resolver below `hostRoot`. */
  readonly resolve: NonNullable<GoalState.SourceOptions["resolve"]>
  /**
   * A `GoalStateSource` whose resolution is these hooks' (the override when
   * set, else the default below `hostRoot`), with the given goal state and
   * download overrides.
   */
  readonly goalStateSource: (options?: {
    readonly goalState?: GoalState.MachineGoalState | undefined
    readonly downloads?: GoalState.SourceOptions["downloads"]
  }) => GoalState.GoalStateSource
  /** Where an upgrade saves the shared configuration: the override when set, otherwise `name` in the agent configuration directory below `hostRoot`. */
  readonly snapshotDir: (name: string) => string
  /** Prepares the shared LocalDNS network (the configured interface name and kind by default). */
  readonly setupLocalDnsNetwork: (
    nodeStart: NodeStart
  ) => Effect.Effect<void, LocalDns.LocalDnsError, ChildProcessSpawner.ChildProcessSpawner>
  /** Removes the host networking the stopped node left behind, as a repave does. */
  readonly cleanupHostNetwork: () => Effect.Effect<
    void,
    LocalDns.LocalDnsError,
    ChildProcessSpawner.ChildProcessSpawner
  >
  /** Waits for LocalDNS to answer on the node start's listeners, with the configured deadline and intervals. */
  readonly awaitLocalDns: (nodeStart: NodeStart) => Effect.Effect<void, LocalDns.LocalDnsError, DnsResolvers>
}

/**
 * Resolves `options` against the agent configuration: the seams of a node.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (config: AgentConfig, options: Options = {}): Hooks => {
  const hostRoot = options.hostRoot
  const override = options.resolve
  const resolve: NonNullable<GoalState.SourceOptions["resolve"]> =
    override ?? ((slot) => GoalState.makeSource({ config, hostRoot }).for(slot))
  const network = { interfaceName: config.localDns.interfaceName, interfaceKind: config.localDns.interfaceKind }
  return {
    config,
    hostRoot,
    resolve,
    goalStateSource: (source) =>
      GoalState.makeSource({
        config,
        hostRoot,
        goalState: source?.goalState,
        downloads: source?.downloads,
        resolve: override
      }),
    snapshotDir: (name) =>
      options.configSnapshotDir !== undefined && options.configSnapshotDir !== ""
        ? options.configSnapshotDir
        : Lexical.join(hostRoot?.path ?? "", `${config.configDir}/${name}`),
    setupLocalDnsNetwork: (nodeStart) =>
      (options.setupNetwork !== undefined
        ? options.setupNetwork(nodeStart)
        : LocalDns.setupLocalDnsNetwork(nodeStart, network)
      ).pipe(
        Effect.withSpan("Hooks.setupLocalDnsNetwork", {
          attributes: { overridden: options.setupNetwork !== undefined }
        })
      ),
    cleanupHostNetwork: () =>
      (options.cleanupNetwork !== undefined
        ? options.cleanupNetwork()
        : LocalDns.cleanupHostNetwork({ interfaceName: network.interfaceName })
      ).pipe(
        Effect.withSpan("Hooks.cleanupHostNetwork", {
          attributes: { overridden: options.cleanupNetwork !== undefined }
        })
      ),
    awaitLocalDns: (nodeStart) =>
      (options.waitLocalDns !== undefined
        ? options.waitLocalDns(nodeStart)
        : LocalDns.awaitLocalDns(nodeStart, {
            timeout: config.localDns.readinessTimeout,
            interval: config.localDns.probeInterval,
            probeTimeout: config.localDns.probeTimeout
          })
      ).pipe(Effect.withSpan("Hooks.awaitLocalDns", { attributes: { overridden: options.waitLocalDns !== undefined } }))
  }
}
