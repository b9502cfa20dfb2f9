/**
 * The LocalDNS network phases (the AKS design, Azure/AgentBaker
 * `localdns.sh`): a `localdns` interface carrying the node and cluster
 * listener addresses as /32s, iptables `raw` rules that exempt DNS traffic to
 * them from connection tracking, their removal on a repave, and the wait
 * until something answers DNS on every listener.
 *
 * - Changes go through `ip` and `iptables` as argv arrays; setup is idempotent.
 * - Cleanup deletes only rules carrying the comment `hostnode:localdns`, by their spec.
 *
 * Boundary: it does not run the DNS server on the listeners; the steps are
 * in `internal/localdns/`.
 *
 * @since 0.1.0
 */
import { Duration, Effect } from "effect"
import { Defaults } from "./AgentConfig.ts"
import type { DnsResolvers } from "./DnsResolvers.ts"
import {
  DefaultInterfaceKind,
  DefaultProbeInterval,
  DefaultProbeTimeout,
  DefaultReadinessTimeout,
  type InterfaceKind
} from "./internal/agentConfig.ts"
import * as Listeners from "./internal/localdns/listeners.ts"
import * as Probe from "./internal/localdns/probe.ts"
import * as Setup from "./internal/localdns/setup.ts"
import * as Track from "./internal/metrics.ts"
import { boundedByDeadline } from "./internal/timeLeft.ts"
import type { LocalDnsError } from "./LocalDnsError.ts"
import type * as NodeStart from "./NodeStart.ts"

/**
 * How the phases fail: `LocalDnsError`, its reasons `Failure`, `BadListener` and `Timeout`, defined
 * in the `LocalDnsError` module, whose page ([LocalDnsError.ts.md](LocalDnsError.ts.md)) shows
 * each class's fields.
 *
 * @category errors
 * @since 0.4.0
 */
export * from "./LocalDnsError.ts"

/** The name the readiness probes ask for. AKS's LocalDNS configuration answers it locally; any answer counts anyway. */
const DefaultProbeName = "health-check.localdns.local"

/**
 * Options of the network phases.
 *
 * @category models
 * @since 0.1.0
 */
export interface NetworkOptions {
  /** The interface carrying the listeners (default `localdns`). */
  readonly interfaceName?: string | undefined
  /** Its link kind (default `dummy`). */
  readonly interfaceKind?: InterfaceKind | undefined
}

/**
 * Prepares the LocalDNS network for `nodeStart`: the interface (created,
 * reused, or recreated when it has another kind) carrying exactly the
 * listener addresses as /32s and up, and our NOTRACK rules in `raw`
 * `OUTPUT` and `PREROUTING`, tcp and udp, for each address; rules of ours for
 * other addresses, and duplicates, are removed. Running it again changes
 * nothing. A node that does not use LocalDNS gets nothing.
 *
 * The listeners are decoded first (a {@link LocalDnsError} with a listener
 * reason changes nothing). A setup that fails part-way (a network reason)
 * removes the interface, addresses and rules it created itself before its
 * error returns; the one change it cannot take back is an interface of
 * another kind it replaced.
 *
 * @example
 * ```ts
 * import { LocalDns, type NodeStart } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // The interface and rules first, then the server, then the wait until it answers.
 * const localDns = (nodeStart: NodeStart.NodeStart, startLocalDnsServer: Effect.Effect<void>) =>
 *   Effect.gen(function* () {
 *     yield* LocalDns.setupLocalDnsNetwork(nodeStart)
 *     yield* startLocalDnsServer
 *     yield* LocalDns.awaitLocalDns(nodeStart, { timeout: "1 minute" })
 *   })
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const setupLocalDnsNetwork = Effect.fn("LocalDns.setupLocalDnsNetwork")(
  function* (nodeStart: NodeStart.NodeStart, options?: NetworkOptions) {
    // Decoded before the first command: a bad address changes nothing.
    const addresses = (yield* Listeners.decode(nodeStart)).map((l) => l.address)
    if (addresses.length === 0) {
      yield* Effect.logInfo("the node does not use LocalDNS; no network to set up")
      return
    }
    yield* Setup.setup(
      options?.interfaceName ?? Defaults.interfaceName,
      options?.interfaceKind ?? DefaultInterfaceKind,
      addresses
    )
  },
  (effect, _nodeStart: NodeStart.NodeStart, options?: NetworkOptions) =>
    Effect.annotateLogs(effect, {
      phase: "setup-localdns-network",
      interface: options?.interfaceName ?? Defaults.interfaceName
    }).pipe(Track.track("LocalDns.setupLocalDnsNetwork"))
)

/**
 * Removes the host networking a stopped node left behind, as a repave does:
 * every rule of ours in `raw` `OUTPUT` and `PREROUTING` (deleted by its spec,
 * whatever addresses it names) and the interface. What is already gone is
 * success, and so is a kernel without the `raw` table; rules without our
 * comment are never touched. Fails with a {@link LocalDnsError} with a
 * network reason.
 *
 * @example
 * ```ts
 * import { LocalDns } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // On a repave, once the node stack is stopped: the interface and our NOTRACK rules go, other rules stay.
 * const cleanup = LocalDns.cleanupHostNetwork({ interfaceName: "localdns" }).pipe(
 *   Effect.catchReason("LocalDnsError", "PermissionDenied", (denied) =>
 *     Effect.fail(`run the agent with CAP_NET_ADMIN: ${denied.message}`)
 *   )
 * )
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const cleanupHostNetwork = Effect.fn("LocalDns.cleanupHostNetwork")(
  function* (options?: Pick<NetworkOptions, "interfaceName">) {
    yield* Setup.cleanup(options?.interfaceName ?? Defaults.interfaceName)
  },
  (effect, options?: Pick<NetworkOptions, "interfaceName">) =>
    Effect.annotateLogs(effect, {
      phase: "cleanup-host-network",
      interface: options?.interfaceName ?? Defaults.interfaceName
    }).pipe(Track.track("LocalDns.cleanupHostNetwork"))
)

/**
 * Waits until every LocalDNS listener of `nodeStart` answers a real DNS
 * query, one resolver per listener (from `DnsResolvers`), each asking its
 * listener only. Any DNS response counts as answering (a failed query the
 * resolvers classify as `Responded`); a listener that answered is not asked
 * again. Rounds of probes run on a `Schedule` until the deadline (a round
 * that starts before it may end up to one probe timeout after it); then the
 * {@link LocalDnsError} with reason `Timeout` names the listeners that never
 * answered. Each failed round is logged (debug) with its attempt number, the
 * outcome (info, or warning on timeout) with the attempt count, as log
 * annotations. A node that does not use LocalDNS has nothing to wait for.
 *
 * @example
 * ```ts
 * import { LocalDns, type NodeStart } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // Which listeners stayed silent, for the node's condition message.
 * const ready = (nodeStart: NodeStart.NodeStart) =>
 *   LocalDns.awaitLocalDns(nodeStart).pipe(
 *     Effect.catchReason("LocalDnsError", "Timeout", (timeout) =>
 *       Effect.fail(`LocalDNS not ready: ${timeout.listeners.map((l) => l.address).join(", ")}`)
 *     )
 *   )
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const awaitLocalDns: (
  nodeStart: NodeStart.NodeStart,
  options?: {
    /** How long to keep probing (default 2 minutes); never past the `Deadline` in effect. */
    readonly timeout?: Duration.Input | undefined
    /** The pause between two rounds of probes (default 500 ms). */
    readonly interval?: Duration.Input | undefined
    /** How long one probe waits for an answer (default 1 s). */
    readonly probeTimeout?: Duration.Input | undefined
    /** The name asked for (default `health-check.localdns.local`). */
    readonly probeName?: string | undefined
  }
) => Effect.Effect<void, LocalDnsError, DnsResolvers> = Effect.fn("LocalDns.awaitLocalDns")(
  function* (nodeStart, options) {
    const listeners = yield* Listeners.decode(nodeStart)
    if (listeners.length === 0) {
      yield* Effect.logInfo("the node does not use LocalDNS; nothing to wait for")
      return
    }
    // Never past the deadline in effect (`Deadline.within`, the CLI's --timeout): the wait ends by then with its
    // own report (the listeners that never answered), not cut off from outside.
    yield* Probe.untilAnswered(listeners, {
      timeout: yield* boundedByDeadline(Duration.fromInputUnsafe(options?.timeout ?? DefaultReadinessTimeout)),
      interval: Duration.fromInputUnsafe(options?.interval ?? DefaultProbeInterval),
      probeTimeout: Duration.fromInputUnsafe(options?.probeTimeout ?? DefaultProbeTimeout),
      probeName: options?.probeName ?? DefaultProbeName
    })
  },
  (effect) =>
    effect.pipe(Effect.scoped, Effect.annotateLogs({ phase: "await-localdns" }), Track.track("LocalDns.awaitLocalDns"))
)
