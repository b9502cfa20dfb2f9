/**
 * The LocalDNS network phases (the AKS design, Azure/AgentBaker
 * `localdns.sh`): a `localdns` interface carrying the node and cluster
 * listener addresses as /32s, iptables `raw` rules that exempt DNS traffic to
 * them from connection tracking, their removal on a repave, and the wait
 * until something answers DNS on every listener.
 *
 * Every host change goes through `ip` and `iptables` run by the
 * `ChildProcessSpawner` in context, as argv arrays. Setup is idempotent
 * (rules are checked with `-C` before `-A`; an existing interface is reused
 * or recreated with exactly the listener addresses), and cleanup deletes
 * rules by their spec, never by line number, and only rules that carry
 * {@link RuleComment}: rules of anyone else are never touched.
 *
 * Boundary: this module decides what the host must look like and issues the
 * commands; it does not run the DNS server that answers on the listeners.
 * It holds the phases, their options and the listener decoding, and
 * re-exports the rules, the interface inspection and the errors; the steps
 * themselves are in `internal/localdns/`.
 *
 * Every failure is a `LocalDnsError`; its `reason` (a tagged class, reached
 * with `Effect.catchReason("LocalDnsError", "PermissionDenied", ...)`) says
 * what happened and has only its own fields.
 *
 * @since 0.1.0
 */
import { Duration, Effect, Schema } from "effect"
import { DefaultInterfaceName } from "./AgentConfig.ts"
import {
  DefaultInterfaceKind,
  DefaultProbeInterval,
  DefaultProbeTimeout,
  DefaultReadinessTimeout,
  type InterfaceKind
} from "./internal/agentConfig.ts"
import { InvalidListener, LocalDnsError, SameAddress } from "./internal/localdns/errors.ts"
import * as Probe from "./internal/localdns/probe.ts"
import type { Chains } from "./internal/localdns/rules.ts"
import * as Setup from "./internal/localdns/setup.ts"
import * as Track from "./internal/metrics.ts"
import { ListenerAddress } from "./internal/nodeStart.ts"
import type * as NodeStart from "./NodeStart.ts"

export {
  /**
   * The iptables table the rules live in: `raw`, where NOTRACK applies before conntrack sees a packet.
   *
   * @since 0.1.0
   */
  Table
} from "./internal/localdns/commands.ts"
export {
  /**
   * The command exited non-zero for a reason not classified otherwise: a
   * {@link LocalDnsError} reason with the exit code and what the command
   * printed on stderr.
   *
   * @since 0.3.0
   */
  CommandFailed,
  /**
   * The command could not be started at all (not installed, not
   * executable): a {@link LocalDnsError} reason. `detail` says why.
   *
   * @since 0.3.0
   */
  CommandUnavailable,
  /**
   * iptables lacks a match or target extension the rules use (`comment`,
   * `NOTRACK`): a {@link LocalDnsError} reason with the exit code and stderr.
   *
   * @since 0.3.0
   */
  ExtensionUnavailable,
  /**
   * A listener address that is not one: not a canonical dotted quad
   * (`169.254.010.10` would reach `ip` as 169.254.8.10) or outside the
   * link-local range. A {@link LocalDnsError} reason: the listeners are
   * decoded before any command runs, so nothing was changed.
   *
   * @since 0.3.0
   */
  InvalidListener,
  /**
   * A LocalDNS phase that failed. `reason` says why, each reason with only
   * its own fields: a network step (`CommandUnavailable`,
   * `PermissionDenied`, `UnsupportedKind`, `TableUnavailable`,
   * `ExtensionUnavailable`, `UnexpectedOutput`, `CommandFailed`: the step,
   * the command and its arguments, and the exit code and stderr of a command
   * that ran), a listener address (`InvalidListener`, `SameAddress`), or the
   * wait's deadline (`Timeout`). The setup fails with network and listener
   * reasons, the cleanup with network reasons, the wait with listener reasons
   * and `Timeout`.
   *
   * @since 0.3.0
   */
  LocalDnsError,
  /**
   * Why a LocalDNS phase failed: every reason of a {@link LocalDnsError}.
   *
   * @since 0.3.0
   */
  LocalDnsErrorReason,
  /**
   * Why a LocalDNS network step failed, classified from the command's exit
   * and stderr: the network reasons of a {@link LocalDnsError}.
   *
   * @since 0.1.0
   */
  NetworkErrorReason,
  /**
   * The command was refused: this process may not change links or rules
   * (no CAP_NET_ADMIN, not root). A {@link LocalDnsError} reason with the
   * exit code and stderr.
   *
   * @since 0.3.0
   */
  PermissionDenied,
  /**
   * Both listeners have the same address: a {@link LocalDnsError} reason;
   * `listener` is the one that repeats the other's. Nothing was changed.
   *
   * @since 0.3.0
   */
  SameAddress,
  /**
   * A listener that never answered, and why its last probe failed.
   *
   * @since 0.1.0
   */
  SilentListener,
  /**
   * The kernel lacks the iptables table (`raw`): a {@link LocalDnsError}
   * reason with the exit code and stderr. The cleanup takes a missing table
   * as holding no rule of ours.
   *
   * @since 0.3.0
   */
  TableUnavailable,
  /**
   * LocalDNS did not answer on every listener before the deadline: a
   * {@link LocalDnsError} reason. `listeners` names those that never
   * answered (with why their last probe failed); `answered` the addresses
   * that did.
   *
   * @since 0.3.0
   */
  Timeout,
  /**
   * The command succeeded but printed what cannot be used (`ip -j` output
   * that is not the JSON expected): a {@link LocalDnsError} reason; `detail`
   * says what.
   *
   * @since 0.3.0
   */
  UnexpectedOutput,
  /**
   * The kernel lacks the link kind asked for (`ip link add ... type dummy`
   * says "Unknown device type."): a {@link LocalDnsError} reason with the
   * exit code and stderr.
   *
   * @since 0.3.0
   */
  UnsupportedKind
} from "./internal/localdns/errors.ts"
export {
  /**
   * The interface `name`, or `undefined` when there is none.
   *
   * @since 0.1.0
   */
  showLink
} from "./internal/localdns/link.ts"
export {
  /**
   * The chains the rules go in: locally generated traffic and traffic arriving from pods.
   *
   * @since 0.1.0
   */
  Chains,
  /**
   * True when the words of a listed rule (`-A CHAIN ...`) are a rule of ours: one of our chains and our comment.
   *
   * @since 0.1.0
   */
  isOurRule,
  /**
   * The rules of the `raw` table as `iptables -t raw -S` lists them, one argv array per `-A` line.
   *
   * @since 0.1.0
   */
  listRules,
  /**
   * DNS runs over both.
   *
   * @since 0.1.0
   */
  Protocols,
  /**
   * The argv words of one line of `iptables -S`: split on spaces, with the
   * double-quoted values iptables prints (comments) unquoted and unescaped, so
   * the words can be given back to `iptables -D` as they are.
   *
   * @since 0.1.0
   */
  parseRuleLine,
  /**
   * The comment every rule of ours carries (`-m comment --comment ...`). It is
   * what makes a rule ours: cleanup deletes exactly the rules with it.
   *
   * @since 0.1.0
   */
  RuleComment,
  /**
   * A rule as `iptables -t raw -S` prints it: `-A OUTPUT -d ... --comment "hostnode:localdns" -j NOTRACK`.
   *
   * @since 0.1.0
   */
  renderRule,
  /**
   * Our rules for `addresses`: per chain, per address, per protocol,
   * `-d <addr>/32 -p <proto> -m <proto> --dport 53 -m comment --comment
   * hostnode:localdns -j NOTRACK`. The spec is written exactly as `iptables -S`
   * prints it back (with the implicit `-m <proto>`), so `-C`, `-D` and the
   * listing all speak of the same rule.
   *
   * @since 0.1.0
   */
  rules
} from "./internal/localdns/rules.ts"

/**
 * A chain a rule of ours goes in.
 *
 * @since 0.1.0
 */
export type Chain = (typeof Chains)[number]

/**
 * One iptables rule of ours: its chain and its spec, in the canonical form `iptables -S` prints it.
 *
 * @since 0.1.0
 */
export interface Rule {
  readonly chain: Chain
  readonly spec: ReadonlyArray<string>
}

/**
 * What `ip -j -d addr show dev <name>` says about an interface.
 *
 * @since 0.1.0
 */
export interface LinkState {
  readonly index: number
  readonly name: string
  /** The link kind (`dummy`, `bridge`, `veth`); empty for a link without one (`lo`). */
  readonly kind: string
  /** Administratively up. */
  readonly up: boolean
  /** The IPv4 addresses as `address/prefix`, in the order the kernel lists them. */
  readonly ipv4: ReadonlyArray<string>
}

/**
 * The name the readiness probes ask for. AKS's LocalDNS configuration answers it locally; any answer counts anyway.
 *
 * @since 0.1.0
 */
export const DefaultProbeName = "health-check.localdns.local"

/**
 * The listeners of `nodeStart`, decoded (`NodeStart.NodeStart`'s `localDns`): what
 * the setup, the cleanup of a setup that failed and the wait all act on. A
 * node start built in code rather than decoded from a goal state is checked
 * here too: a bad address is a {@link LocalDnsError} with reason
 * `InvalidListener`, two listeners with one address `SameAddress`.
 *
 * @since 0.2.0
 */
export const decodeListeners = Effect.fn("LocalDns.decodeListeners")(function* (nodeStart: NodeStart.NodeStart) {
  const given = nodeStart.localDns
  const none: ReadonlyArray<NodeStart.Listener> = []
  if (given === undefined) return none
  const one = (listener: NodeStart.Listener["name"], address: unknown) =>
    Schema.decodeUnknownEffect(ListenerAddress)(address).pipe(
      Effect.mapError(
        (e) =>
          new LocalDnsError({ reason: new InvalidListener({ listener, address: String(address), problem: e.message }) })
      )
    )
  const node = yield* one("node", given.nodeListener)
  const cluster = yield* one("cluster", given.clusterListener)
  if (node === cluster) {
    return yield* new LocalDnsError({ reason: new SameAddress({ listener: "cluster", address: cluster }) })
  }
  const decoded: ReadonlyArray<NodeStart.Listener> = [
    { name: "node", address: node },
    { name: "cluster", address: cluster }
  ]
  return decoded
})

/**
 * Options of the network phases.
 *
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
 * @since 0.1.0
 */
export const setupLocalDnsNetwork = Effect.fn("LocalDns.setupLocalDnsNetwork")(
  function* (nodeStart: NodeStart.NodeStart, options?: NetworkOptions) {
    // Decoded before the first command: a bad address changes nothing.
    const addresses = (yield* decodeListeners(nodeStart)).map((l) => l.address)
    if (addresses.length === 0) {
      yield* Effect.logInfo("the node does not use LocalDNS; no network to set up")
      return
    }
    yield* Setup.setup(
      options?.interfaceName ?? DefaultInterfaceName,
      options?.interfaceKind ?? DefaultInterfaceKind,
      addresses
    )
  },
  (effect, _nodeStart: NodeStart.NodeStart, options?: NetworkOptions) =>
    Effect.annotateLogs(effect, {
      phase: "setup-localdns-network",
      interface: options?.interfaceName ?? DefaultInterfaceName
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
 * @since 0.1.0
 */
export const cleanupHostNetwork = Effect.fn("LocalDns.cleanupHostNetwork")(
  function* (options?: Pick<NetworkOptions, "interfaceName">) {
    yield* Setup.cleanup(options?.interfaceName ?? DefaultInterfaceName)
  },
  (effect, options?: Pick<NetworkOptions, "interfaceName">) =>
    Effect.annotateLogs(effect, {
      phase: "cleanup-host-network",
      interface: options?.interfaceName ?? DefaultInterfaceName
    }).pipe(Track.track("LocalDns.cleanupHostNetwork"))
)

/**
 * Options of {@link awaitLocalDns}.
 *
 * @since 0.1.0
 */
export interface AwaitOptions {
  /** The deadline: how long to keep probing (default 2 minutes). */
  readonly timeout?: Duration.Input | undefined
  /** The pause between two rounds of probes (default 500 ms). */
  readonly interval?: Duration.Input | undefined
  /** How long one probe waits for an answer (default 1 s). */
  readonly probeTimeout?: Duration.Input | undefined
  /** The name asked for (default {@link DefaultProbeName}). */
  readonly probeName?: string | undefined
}

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
 * @since 0.1.0
 */
export const awaitLocalDns = Effect.fn("LocalDns.awaitLocalDns")(
  function* (nodeStart: NodeStart.NodeStart, options?: AwaitOptions) {
    const listeners = yield* decodeListeners(nodeStart)
    if (listeners.length === 0) {
      yield* Effect.logInfo("the node does not use LocalDNS; nothing to wait for")
      return
    }
    yield* Probe.untilAnswered(listeners, {
      timeout: Duration.fromInputUnsafe(options?.timeout ?? DefaultReadinessTimeout),
      interval: Duration.fromInputUnsafe(options?.interval ?? DefaultProbeInterval),
      probeTimeout: Duration.fromInputUnsafe(options?.probeTimeout ?? DefaultProbeTimeout),
      probeName: options?.probeName ?? DefaultProbeName
    })
  },
  (effect) =>
    effect.pipe(Effect.scoped, Effect.annotateLogs({ phase: "await-localdns" }), Track.track("LocalDns.awaitLocalDns"))
)
