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
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect, Schedule, Schema } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import {
  DefaultInterfaceKind,
  DefaultInterfaceName,
  DefaultProbeInterval,
  DefaultProbeTimeout,
  DefaultReadinessTimeout,
  type InterfaceKind
} from "./AgentConfig.ts"
import * as DnsResolvers from "./DnsResolvers.ts"
import * as HostCommand from "./HostCommand.ts"
import * as NodeStart from "./NodeStart.ts"

/**
 * The comment every rule of ours carries (`-m comment --comment ...`). It is
 * what makes a rule ours: cleanup deletes exactly the rules with it.
 *
 * @since 0.1.0
 */
export const RuleComment = "hostnode:localdns"

/**
 * The iptables table the rules live in: `raw`, where NOTRACK applies before conntrack sees a packet.
 *
 * @since 0.1.0
 */
export const Table = "raw"

/**
 * The chains the rules go in: locally generated traffic and traffic arriving from pods.
 *
 * @since 0.1.0
 */
export const Chains = ["OUTPUT", "PREROUTING"] as const

/**
 * A chain a rule of ours goes in.
 *
 * @since 0.1.0
 */
export type Chain = (typeof Chains)[number]

/**
 * DNS runs over both.
 *
 * @since 0.1.0
 */
export const Protocols = ["tcp", "udp"] as const

/**
 * The name the readiness probes ask for. AKS's LocalDNS configuration answers it locally; any answer counts anyway.
 *
 * @since 0.1.0
 */
export const DefaultProbeName = "health-check.localdns.local"

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
 * Our rules for `addresses`: per chain, per address, per protocol,
 * `-d <addr>/32 -p <proto> -m <proto> --dport 53 -m comment --comment
 * hostnode:localdns -j NOTRACK`. The spec is written exactly as `iptables -S`
 * prints it back (with the implicit `-m <proto>`), so `-C`, `-D` and the
 * listing all speak of the same rule.
 *
 * @since 0.1.0
 */
export const rules = (addresses: ReadonlyArray<string>): ReadonlyArray<Rule> =>
  Chains.flatMap((chain) =>
    addresses.flatMap((address) =>
      Protocols.map((proto) => ({
        chain,
        spec: [
          "-d",
          `${address}/32`,
          "-p",
          proto,
          "-m",
          proto,
          "--dport",
          "53",
          "-m",
          "comment",
          "--comment",
          RuleComment,
          "-j",
          "NOTRACK"
        ]
      }))
    )
  )

// xtables_save_string: a value made only of these is printed bare, anything
// else in double quotes with `"`, `\` and `'` escaped by a backslash.
const bareSaveValue = /^[-_0-9A-Za-z]+$/

/**
 * A rule as `iptables -t raw -S` prints it: `-A OUTPUT -d ... --comment "hostnode:localdns" -j NOTRACK`.
 *
 * @since 0.1.0
 */
export const renderRule = (rule: Rule): string =>
  [
    "-A",
    rule.chain,
    ...rule.spec.map((token, i) =>
      rule.spec[i - 1] === "--comment" && !bareSaveValue.test(token) ? `"${token.replace(/["\\']/g, "\\$&")}"` : token
    )
  ].join(" ")

/**
 * The argv words of one line of `iptables -S`: split on spaces, with the
 * double-quoted values iptables prints (comments) unquoted and unescaped, so
 * the words can be given back to `iptables -D` as they are.
 *
 * @since 0.1.0
 */
export const parseRuleLine = (line: string): ReadonlyArray<string> => {
  const words: Array<string> = []
  let current = ""
  let inWord = false
  let quoted = false
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string
    if (quoted) {
      if (c === "\\" && i + 1 < line.length) current += line[++i]
      else if (c === '"') quoted = false
      else current += c
    } else if (c === '"') {
      quoted = true
      inWord = true
    } else if (c === " " || c === "\t") {
      if (inWord) words.push(current)
      current = ""
      inWord = false
    } else {
      current += c
      inWord = true
    }
  }
  if (inWord) words.push(current)
  return words
}

/**
 * True when the words of a listed rule (`-A CHAIN ...`) are a rule of ours: one of our chains and our comment.
 *
 * @since 0.1.0
 */
export const isOurRule = (words: ReadonlyArray<string>): boolean => {
  if (words[0] !== "-A" || !(Chains as ReadonlyArray<string | undefined>).includes(words[1])) return false
  for (let i = 2; i < words.length - 1; i++) {
    if (words[i] === "--comment" && words[i + 1] === RuleComment) return true
  }
  return false
}

/**
 * Why a LocalDNS network step failed, classified from the command's exit and stderr.
 *
 * @since 0.1.0
 */
export const NetworkErrorReason = Schema.Literals([
  "CommandUnavailable",
  "PermissionDenied",
  "UnsupportedKind",
  "TableUnavailable",
  "ExtensionUnavailable",
  "UnexpectedOutput",
  "CommandFailed"
])

/**
 * Why a LocalDNS network step failed.
 *
 * @since 0.1.0
 */
export type NetworkErrorReason = typeof NetworkErrorReason.Type

/**
 * A LocalDNS network step that failed: what it was doing, the command and its
 * arguments, the exit code (-1 when it could not run at all) and what the
 * command printed on stderr, so a person sees exactly what `ip` or `iptables`
 * said.
 *
 * @since 0.1.0
 */
export class LocalDnsNetworkError extends Schema.TaggedError<LocalDnsNetworkError>()("LocalDnsNetworkError", {
  reason: NetworkErrorReason,
  step: Schema.String,
  command: Schema.String,
  args: Schema.Array(Schema.String),
  exitCode: Schema.Number,
  stderr: Schema.String
}) {
  override get message(): string {
    const said = this.stderr.trim()
    const exit = this.exitCode < 0 ? "could not run" : `exited ${this.exitCode}`
    return `LocalDNS network: ${this.step} failed (${this.reason}): ${[this.command, ...this.args].join(" ")} ${exit}${said === "" ? "" : `: ${said}`}`
  }
}

/**
 * A LocalDNS listener address that is not one: not a canonical dotted quad
 * (`169.254.010.10` would reach `ip` as 169.254.8.10), outside the link-local
 * range, or both listeners the same. Every step decodes the listeners before
 * it runs a command, so this error means nothing was changed.
 *
 * @since 0.2.0
 */
export class LocalDnsListenerError extends Schema.TaggedError<LocalDnsListenerError>()("LocalDnsListenerError", {
  /** Which listener (`node`, `cluster`), or `listeners` when the pair is wrong. */
  listener: Schema.String,
  address: Schema.String,
  problem: Schema.String
}) {
  override get message(): string {
    return `LocalDNS ${this.listener} listener ${JSON.stringify(this.address)} ${this.problem}`
  }
}

/**
 * The listeners of `nodeStart`, decoded (`NodeStart.LocalDnsListeners`): what
 * the setup, the cleanup of a setup that failed and the wait all act on. A
 * node start built in code rather than decoded from a goal state is checked
 * here too.
 *
 * @since 0.2.0
 */
export const decodeListeners = (
  nodeStart: NodeStart.NodeStart
): Effect.Effect<ReadonlyArray<NodeStart.Listener>, LocalDnsListenerError> => {
  const given = nodeStart.localDns
  if (given === undefined) return Effect.succeed([])
  const one = (name: NodeStart.ListenerName, address: unknown) =>
    Schema.decodeUnknownEffect(NodeStart.ListenerAddress)(address).pipe(
      Effect.mapError(
        (e) =>
          new LocalDnsListenerError({
            listener: name,
            address: String(address),
            problem: e.message
          })
      )
    )
  return Effect.gen(function* () {
    const node = yield* one("node", given.nodeListener)
    const cluster = yield* one("cluster", given.clusterListener)
    if (node === cluster) {
      return yield* new LocalDnsListenerError({
        listener: "cluster",
        address: cluster,
        problem: `is the node listener's address too; the two must differ`
      })
    }
    return [
      { name: "node" as const, address: node },
      { name: "cluster" as const, address: cluster }
    ]
  })
}

/**
 * A listener that never answered, and why its last probe failed.
 *
 * @since 0.1.0
 */
export const SilentListener = Schema.Struct({
  name: Schema.Literals(["node", "cluster"]),
  address: Schema.String,
  reason: Schema.String
})

/**
 * A listener that never answered.
 *
 * @since 0.1.0
 */
export type SilentListener = typeof SilentListener.Type

/**
 * LocalDNS did not answer on every listener before the deadline. `listeners`
 * names those that never answered (with why their last probe failed);
 * `answered` the addresses that did.
 *
 * @since 0.1.0
 */
export class LocalDnsTimeout extends Schema.TaggedError<LocalDnsTimeout>()("LocalDnsTimeout", {
  listeners: Schema.Array(SilentListener),
  answered: Schema.Array(Schema.String),
  attempts: Schema.Number,
  timeoutMillis: Schema.Number
}) {
  override get message(): string {
    const silent = this.listeners.map((l) => `${l.name} listener ${l.address} (${l.reason})`).join(", ")
    return `LocalDNS did not answer within ${Duration.format(Duration.millis(this.timeoutMillis))} (${this.attempts} attempts): ${silent}`
  }
}

const classify = (out: HostCommand.Output): NetworkErrorReason => {
  const s = out.stderr
  if (/permission denied|operation not permitted|you must be root/i.test(s)) return "PermissionDenied"
  if (/unknown device type|unknown link kind/i.test(s)) return "UnsupportedKind"
  // legacy iptables says "Table does not exist"; iptables-nft 1.8 says "table 'raw' does not exist"
  if (/table does not exist|table '[^']*' does not exist|can't initialize iptables table/i.test(s))
    return "TableUnavailable"
  if (/no chain\/target\/match by that name|couldn't load (target|match)|extension .* not found/i.test(s))
    return "ExtensionUnavailable"
  return "CommandFailed"
}

type Run = Effect.Effect<HostCommand.Output, LocalDnsNetworkError, ChildProcessSpawner.ChildProcessSpawner>

/** Runs a command for `step`; failing to start it is a {@link LocalDnsNetworkError}, a non-zero exit is a result. */
const run = (step: string, command: string, args: ReadonlyArray<string>): Run =>
  HostCommand.run(command, args).pipe(
    Effect.mapError(
      (e) =>
        new LocalDnsNetworkError({
          reason: "CommandUnavailable",
          step,
          command,
          args: [...args],
          exitCode: -1,
          stderr: e.reason.detail
        })
    )
  )

const failed = (step: string, command: string, args: ReadonlyArray<string>, out: HostCommand.Output) =>
  new LocalDnsNetworkError({
    reason: classify(out),
    step,
    command,
    args: [...args],
    exitCode: out.exitCode,
    stderr: out.stderr
  })

/** Runs a command that must succeed; `ok` also accepts the exits that mean "already so". */
const expect = (
  step: string,
  command: string,
  args: ReadonlyArray<string>,
  ok: (out: HostCommand.Output) => boolean = () => false
) =>
  Effect.flatMap(run(step, command, args), (out) =>
    out.exitCode === 0 || ok(out) ? Effect.succeed(out) : Effect.fail(failed(step, command, args, out))
  )

const missingDevice = (out: HostCommand.Output): boolean => /does not exist|cannot find device/i.test(out.stderr)

const badRule = (out: HostCommand.Output): boolean =>
  out.exitCode === 1 && /bad rule|does a matching rule exist/i.test(out.stderr)

const iptables = (args: ReadonlyArray<string>): ReadonlyArray<string> => ["-w", "-t", Table, ...args]

// ---------------------------------------------------------------------------
// the interface

const IpAddrInfo = Schema.Struct({
  family: Schema.optionalKey(Schema.String),
  local: Schema.optionalKey(Schema.String),
  prefixlen: Schema.optionalKey(Schema.Number)
})

const IpLink = Schema.Struct({
  ifindex: Schema.Number,
  ifname: Schema.String,
  flags: Schema.Array(Schema.String).pipe(Schema.withDecodingDefaultKey(Effect.succeed([]))),
  linkinfo: Schema.optionalKey(Schema.Struct({ info_kind: Schema.optionalKey(Schema.String) })),
  addr_info: Schema.Array(IpAddrInfo).pipe(Schema.withDecodingDefaultKey(Effect.succeed([])))
})

const IpLinks = Schema.fromJsonString(Schema.Array(IpLink))

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
 * The interface `name`, or `undefined` when there is none.
 *
 * @since 0.1.0
 */
export const showLink = Effect.fn("LocalDns.showLink")(function* (name: string) {
  const args = ["-j", "-d", "addr", "show", "dev", name]
  const out = yield* expect("inspect the interface", "ip", args, missingDevice)
  if (out.exitCode !== 0) return undefined
  const links = yield* Schema.decodeUnknownEffect(IpLinks)(out.stdout).pipe(
    Effect.mapError(
      (e) =>
        new LocalDnsNetworkError({
          reason: "UnexpectedOutput",
          step: "inspect the interface",
          command: "ip",
          args,
          exitCode: 0,
          stderr: `cannot read ip's JSON: ${e.message}`
        })
    )
  )
  const link = links.find((l) => l.ifname === name)
  if (link === undefined) return undefined
  return {
    index: link.ifindex,
    name: link.ifname,
    kind: link.linkinfo?.info_kind ?? "",
    up: link.flags.includes("UP"),
    ipv4: link.addr_info.flatMap((a) =>
      a.family === "inet" && a.local !== undefined && a.prefixlen !== undefined ? [`${a.local}/${a.prefixlen}`] : []
    )
  } satisfies LinkState
})

/**
 * What one setup created: the interface, addresses it added to an interface
 * that was already there, and rules. A setup that fails removes exactly these
 * before its error returns, so the host is as it found it.
 */
interface Created {
  link: boolean
  readonly addresses: Array<string>
  readonly rules: Array<Rule>
}

const ensureInterface = Effect.fnUntraced(function* (
  name: string,
  kind: InterfaceKind,
  addresses: ReadonlyArray<string>,
  created: Created
) {
  let link = yield* showLink(name)
  if (link !== undefined && link.kind !== kind) {
    // The one change a failed setup cannot undo: the old interface is gone.
    yield* Effect.logInfo("recreating the LocalDNS interface: it has another kind", { found: link.kind, kind })
    yield* expect("remove the interface of another kind", "ip", ["link", "del", "dev", name], missingDevice)
    link = undefined
  }
  if (link === undefined) {
    yield* expect("create the interface", "ip", ["link", "add", "name", name, "type", kind])
    created.link = true
    yield* Effect.logInfo("created the LocalDNS interface", { kind })
    link = yield* showLink(name)
    if (link === undefined) {
      return yield* new LocalDnsNetworkError({
        reason: "UnexpectedOutput",
        step: "create the interface",
        command: "ip",
        args: ["-j", "-d", "addr", "show", "dev", name],
        exitCode: 0,
        stderr: `${name} was created but is not listed`
      })
    }
  }
  const wanted = addresses.map((a) => `${a}/32`)
  for (const address of wanted.filter((a) => !link.ipv4.includes(a))) {
    yield* expect("add a listener address", "ip", ["addr", "add", address, "dev", name], (o) =>
      /already assigned|file exists/i.test(o.stderr)
    )
    if (!created.link) created.addresses.push(address)
    yield* Effect.logInfo("added a LocalDNS listener address", { address })
  }
  return link
})

/**
 * What setup changes but does not create: foreign addresses go and the
 * interface comes up. Done last, once everything that could fail and be
 * undone has succeeded.
 */
const finishInterface = Effect.fnUntraced(function* (name: string, addresses: ReadonlyArray<string>, link: LinkState) {
  const wanted = addresses.map((a) => `${a}/32`)
  for (const extra of link.ipv4.filter((a) => !wanted.includes(a))) {
    yield* expect("remove a foreign address from the interface", "ip", ["addr", "del", extra, "dev", name], (o) =>
      /address not found|cannot assign/i.test(o.stderr)
    )
    yield* Effect.logInfo("removed an address that is not a LocalDNS listener", { address: extra })
  }
  if (!link.up) {
    yield* expect("bring the interface up", "ip", ["link", "set", "dev", name, "up"])
    yield* Effect.logInfo("brought the LocalDNS interface up")
  }
})

/**
 * Removes what a failed setup created (see {@link Created}), newest first.
 * Its own failures are logged: the setup's error is what the caller sees.
 */
const undo = (name: string, created: Created) =>
  Effect.gen(function* () {
    for (const rule of [...created.rules].reverse()) {
      yield* deleteRule(["-A", rule.chain, ...rule.spec], "undo a rule this setup added").pipe(
        Effect.tapError((e) => Effect.logWarning(`could not undo a rule: ${e.message}`)),
        Effect.ignore
      )
    }
    if (created.link) {
      yield* expect("undo the interface this setup created", "ip", ["link", "del", "dev", name], missingDevice).pipe(
        Effect.tapError((e) => Effect.logWarning(`could not remove the interface again: ${e.message}`)),
        Effect.ignore
      )
    } else {
      for (const address of created.addresses) {
        yield* expect("undo an address this setup added", "ip", ["addr", "del", address, "dev", name], (o) =>
          /address not found|cannot assign/i.test(o.stderr)
        ).pipe(
          Effect.tapError((e) => Effect.logWarning(`could not remove an address again: ${e.message}`)),
          Effect.ignore
        )
      }
    }
    const what = created.rules.length + (created.link ? 1 : created.addresses.length)
    if (what > 0) {
      yield* Effect.logInfo("setup failed; removed what it had created", {
        link: created.link,
        addresses: created.addresses,
        rules: created.rules.length
      })
    }
  })

// ---------------------------------------------------------------------------
// the rules

/**
 * The rules of the `raw` table as `iptables -t raw -S` lists them, one argv array per `-A` line.
 *
 * @since 0.1.0
 */
export const listRules = Effect.fn("LocalDns.listRules")(function* () {
  const args = iptables(["-S"])
  const out = yield* expect("list the raw table", "iptables", args)
  return out.stdout
    .split("\n")
    .filter((line) => line.startsWith("-A "))
    .map(parseRuleLine)
})

const ruleKey = (words: ReadonlyArray<string>): string => JSON.stringify(words)

const deleteRule = (words: ReadonlyArray<string>, step: string) =>
  expect(step, "iptables", iptables(["-D", ...words.slice(1)]), badRule)

const ensureRules = Effect.fnUntraced(function* (addresses: ReadonlyArray<string>, created: Created) {
  const wanted = rules(addresses)
  for (const rule of wanted) {
    const check = yield* expect("check a rule", "iptables", iptables(["-C", rule.chain, ...rule.spec]), badRule)
    if (check.exitCode === 0) continue
    yield* expect("add a rule", "iptables", iptables(["-A", rule.chain, ...rule.spec]))
    created.rules.push(rule)
    yield* Effect.logInfo("added a LocalDNS NOTRACK rule", { chain: rule.chain, rule: rule.spec.join(" ") })
  }
  // Ours but not wanted (a listener that changed) or listed twice: gone, so
  // the table holds exactly our rules. Only after the wanted ones are in
  // place, so the listeners are never without NOTRACK.
  const wantedKeys = new Set(wanted.map((r) => ruleKey(["-A", r.chain, ...r.spec])))
  const seen = new Set<string>()
  for (const words of yield* listRules()) {
    if (!isOurRule(words)) continue
    const key = ruleKey(words)
    if (wantedKeys.has(key) && !seen.has(key)) {
      seen.add(key)
      continue
    }
    yield* deleteRule(words, "remove a stale rule of ours")
    yield* Effect.logInfo("removed a stale LocalDNS rule", { rule: words.join(" ") })
  }
})

// ---------------------------------------------------------------------------
// the phases

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

const setupImpl = Effect.fn("LocalDns.setupLocalDnsNetwork")(
  function* (nodeStart: NodeStart.NodeStart, options?: NetworkOptions) {
    // Decoded before the first command: a bad address changes nothing.
    const addresses = (yield* decodeListeners(nodeStart)).map((l) => l.address)
    if (addresses.length === 0) {
      yield* Effect.logInfo("the node does not use LocalDNS; no network to set up")
      return
    }
    const name = options?.interfaceName ?? DefaultInterfaceName
    const created: Created = { link: false, addresses: [], rules: [] }
    yield* Effect.gen(function* () {
      // What can be undone first (the interface, our addresses, our rules),
      // then what cannot (foreign addresses removed, the link brought up).
      const link = yield* ensureInterface(name, options?.interfaceKind ?? DefaultInterfaceKind, addresses, created)
      yield* ensureRules(addresses, created)
      yield* finishInterface(name, addresses, link)
    }).pipe(Effect.onError(() => undo(name, created)))
  },
  (effect, _nodeStart, options) =>
    Effect.annotateLogs(effect, {
      phase: "setup-localdns-network",
      interface: options?.interfaceName ?? DefaultInterfaceName
    })
)

/**
 * Prepares the LocalDNS network for `nodeStart`: the interface (created,
 * reused, or recreated when it has another kind) carrying exactly the
 * listener addresses as /32s and up, and our NOTRACK rules in `raw`
 * `OUTPUT` and `PREROUTING`, tcp and udp, for each address; rules of ours for
 * other addresses, and duplicates, are removed. Running it again changes
 * nothing. A node that does not use LocalDNS gets nothing.
 *
 * The listeners are decoded first (a {@link LocalDnsListenerError} changes
 * nothing). A setup that fails part-way removes the interface, addresses and
 * rules it created itself before its error returns; the one change it cannot
 * take back is an interface of another kind it replaced.
 *
 * @since 0.1.0
 */
export const setupLocalDnsNetwork = (
  nodeStart: NodeStart.NodeStart,
  options?: NetworkOptions
): Effect.Effect<void, LocalDnsNetworkError | LocalDnsListenerError, ChildProcessSpawner.ChildProcessSpawner> =>
  setupImpl(nodeStart, options)

const cleanupImpl = Effect.fn("LocalDns.cleanupHostNetwork")(
  function* (options?: Pick<NetworkOptions, "interfaceName">) {
    const name = options?.interfaceName ?? DefaultInterfaceName
    const listed = yield* Effect.result(listRules())
    if (listed._tag === "Failure" && listed.failure.reason !== "TableUnavailable") return yield* listed.failure
    const ours = listed._tag === "Success" ? listed.success.filter(isOurRule) : []
    for (const words of ours) {
      yield* deleteRule(words, "delete a rule of ours")
      yield* Effect.logInfo("deleted a LocalDNS rule", { rule: words.join(" ") })
    }
    const del = yield* expect("delete the interface", "ip", ["link", "del", "dev", name], missingDevice)
    if (del.exitCode === 0) yield* Effect.logInfo("deleted the LocalDNS interface")
  },
  (effect, options) =>
    Effect.annotateLogs(effect, {
      phase: "cleanup-host-network",
      interface: options?.interfaceName ?? DefaultInterfaceName
    })
)

/**
 * Removes the host networking a stopped node left behind, as a repave does:
 * every rule of ours in `raw` `OUTPUT` and `PREROUTING` (deleted by its spec,
 * whatever addresses it names) and the interface. What is already gone is
 * success; rules without our comment are never touched.
 *
 * @since 0.1.0
 */
export const cleanupHostNetwork = (
  options?: Pick<NetworkOptions, "interfaceName">
): Effect.Effect<void, LocalDnsNetworkError, ChildProcessSpawner.ChildProcessSpawner> => cleanupImpl(options)

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

class NotYet {
  readonly _tag = "NotYet"
}

const awaitImpl = Effect.fn("LocalDns.awaitLocalDns")(
  function* (nodeStart: NodeStart.NodeStart, options?: AwaitOptions) {
    const listeners = yield* decodeListeners(nodeStart)
    if (listeners.length === 0) {
      yield* Effect.logInfo("the node does not use LocalDNS; nothing to wait for")
      return
    }
    const timeout = Duration.fromInputUnsafe(options?.timeout ?? DefaultReadinessTimeout)
    const interval = Duration.fromInputUnsafe(options?.interval ?? DefaultProbeInterval)
    const probeTimeout = Duration.fromInputUnsafe(options?.probeTimeout ?? DefaultProbeTimeout)
    const probeName = options?.probeName ?? DefaultProbeName
    const resolvers = yield* DnsResolvers.DnsResolvers
    const pending = new Map<string, { listener: NodeStart.Listener; ask: Effect.Effect<string | undefined> }>()
    for (const listener of listeners) {
      const dns = yield* resolvers.forServer(listener.address, { timeout: probeTimeout })
      const ask = dns.resolve(probeName, "A").pipe(
        Effect.as(undefined),
        Effect.catchTag("DnsError", (e) =>
          Effect.succeed(DnsResolvers.isAnswer(e) ? undefined : DnsResolvers.describe(e))
        ),
        Effect.timeoutOrElse({
          duration: probeTimeout,
          orElse: () => Effect.succeed(`no answer within ${Duration.format(probeTimeout)}`)
        })
      )
      pending.set(listener.address, { listener, ask })
    }
    const lastReason = new Map<string, string>(listeners.map((l) => [l.address, "not asked"]))
    const deadline = (yield* Clock.currentTimeMillis) + Duration.toMillis(timeout)
    let attempts = 0
    const round = Effect.gen(function* () {
      attempts++
      const outcomes = yield* Effect.forEach(
        [...pending.values()],
        (p) => Effect.map(p.ask, (reason) => ({ listener: p.listener, reason })),
        { concurrency: "unbounded" }
      )
      for (const { listener, reason } of outcomes) {
        if (reason === undefined) {
          pending.delete(listener.address)
          yield* Effect.logInfo("LocalDNS listener answered", {
            listener: listener.name,
            address: listener.address,
            attempt: attempts
          })
        } else {
          lastReason.set(listener.address, reason)
        }
      }
      if (pending.size === 0) return
      yield* Effect.logDebug("LocalDNS not answering yet", {
        attempt: attempts,
        waitingFor: [...pending.values()].map((p) => `${p.listener.name} ${p.listener.address}`)
      })
      return yield* Effect.fail(new NotYet())
    })
    const intervalMillis = Duration.toMillis(interval)
    const schedule = Schedule.spaced(interval).pipe(Schedule.while(({ now }) => now + intervalMillis <= deadline))
    yield* round.pipe(
      Effect.retry({ schedule }),
      Effect.catchTag("NotYet", () =>
        Effect.fail(
          new LocalDnsTimeout({
            listeners: [...pending.values()].map((p) => ({
              name: p.listener.name,
              address: p.listener.address,
              reason: lastReason.get(p.listener.address) ?? "not asked"
            })),
            answered: listeners.filter((l) => !pending.has(l.address)).map((l) => l.address),
            attempts,
            timeoutMillis: Duration.toMillis(timeout)
          })
        )
      ),
      Effect.tapError((e) => Effect.logWarning(e.message, { attempts })),
      Effect.tap(() => Effect.logInfo("LocalDNS is answering on every listener", { attempts }))
    )
  },
  (effect) => effect.pipe(Effect.scoped, Effect.annotateLogs({ phase: "await-localdns" }))
)

/**
 * Waits until every LocalDNS listener of `nodeStart` answers a real DNS
 * query, one resolver per listener (from `DnsResolvers`), each asking its
 * listener only. Any DNS response counts as answering (see
 * `DnsResolvers.isAnswer`); a listener that answered is not asked again.
 * Rounds of probes run on a `Schedule` until the deadline (a round that
 * starts before it may end up to one probe timeout after it); then the
 * {@link LocalDnsTimeout} names the listeners that never answered. Each
 * failed round is logged (debug) with its attempt number, the outcome (info,
 * or warning on timeout) with the attempt count. A node that does not use
 * LocalDNS has nothing to wait for.
 *
 * @since 0.1.0
 */
export const awaitLocalDns = (
  nodeStart: NodeStart.NodeStart,
  options?: AwaitOptions
): Effect.Effect<void, LocalDnsTimeout | LocalDnsListenerError, DnsResolvers.DnsResolvers> =>
  awaitImpl(nodeStart, options)
