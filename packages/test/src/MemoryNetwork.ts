/**
 * The simulated host's network: links with their IPv4 addresses, iptables
 * tables and chains, and DNS servers listening on addresses of the host.
 * `ip` and `iptables` interpreters (for `MemoryCommands`) print what
 * iproute2 6.1 and iptables 1.8.9 (nf_tables) print for the commands the
 * library runs (`LocalDns.ts`): `ip -j -d addr show dev X` JSON,
 * `iptables -t raw -S` lines in the canonical order and quoting, their error
 * messages and exit codes (checked against the real tools in a private
 * network namespace). `DnsResolvers` for the simulated host asks these DNS
 * servers; `layerLocalDnsFixture` is the in-memory `LocalDnsFixture`.
 *
 * What is simulated, after a real kernel:
 * - Links: `lo` (up, 127.0.0.1/8), and `dummy`, `bridge` and `veth` links
 *   (a veth pair is created and deleted together); interface indexes are never
 *   reused; a link's IPv4 addresses are listed primaries first, then
 *   secondaries (same subnet as a primary), each in the order added; deleting
 *   a primary deletes its secondaries (promote_secondaries off). An up Ethernet
 *   link also shows its IPv6 link-local address.
 * - iptables: the filter, nat, mangle, raw and security tables with their
 *   built-in chains and ACCEPT policies, user chains (`-N`, `-X`), and
 *   `-S`, `-A`, `-C`, `-D` (by spec or number), `-I`, `-F`, `-P`. A rule is
 *   kept in its canonical form (addresses as networks with a prefix, the
 *   implicit `-m tcp|udp` added where iptables adds it, matches in the order
 *   given), so `-C` and `-D` match exactly the rules real iptables matches.
 *   Matches: tcp, udp (`--sport`, `--dport`) and comment.
 * - DNS: a query to an address answers only when that address is on a link
 *   of the host and a DNS server that runs listens on it; an address of the
 *   host where nothing listens refuses at once (`ECONNREFUSED`), and an
 *   address the host does not have gets no answer before the resolver's
 *   timeout (`ETIMEOUT`). A server answers like `dnsmasq --no-resolv`: names
 *   in its records get their records, other names REFUSED (configurable).
 *
 * Not simulated: routes, neighbours, IPv6 addresses beyond link-local,
 * `info_data` of `ip -d`, packet matching (rules are bookkeeping), iptables
 * counters and other match or target extensions.
 *
 * This module holds the vocabulary, the inspection service and the
 * in-memory `LocalDnsFixture`; the state, the `ip` and `iptables`
 * interpreters and the DNS resolvers are in `internal/network/`.
 *
 * @since 0.1.0
 */
import { type DnsResolvers, LocalDns } from "@hostnode/core"
import { Context, Deferred, Duration, Effect, Layer, Schema, type Scope } from "effect"
import type { Dns } from "effect/net"
import * as MemoryCommands from "./internal/memoryCommands.ts"
import { classify, normalizeName, resolverFor } from "./internal/network/dns.ts"
import { ipInterpreter } from "./internal/network/ip.ts"
import { chainOrder, iptablesInterpreter, ruleLine, saveString } from "./internal/network/iptables.ts"
import { isLocal, makeState, type ServerState, type State, sortedLinks, viewOf } from "./internal/network/state.ts"
import * as LocalDnsFixture from "./LocalDnsFixture.ts"

export {
  /**
   * xtables_save_string: bare when only `[-_0-9A-Za-z]`, else double-quoted with `"`, `\` and `'` escaped.
   *
   * @since 0.1.0
   */
  saveString
} from "./internal/network/iptables.ts"

// ---------------------------------------------------------------------------
// vocabulary

/**
 * A link kind the simulated kernel can create.
 *
 * @since 0.1.0
 */
export type LinkKind = "dummy" | "bridge" | "veth"

/**
 * A link as the simulated kernel holds it.
 *
 * @since 0.1.0
 */
export interface LinkView {
  readonly index: number
  readonly name: string
  /** `dummy`, `bridge`, `veth`; empty for `lo`. */
  readonly kind: string
  /** Administratively up. */
  readonly up: boolean
  /** IPv4 addresses as `address/prefix`, in the order `ip addr` lists them. */
  readonly ipv4: ReadonlyArray<string>
  /** The other end of a veth pair. */
  readonly peer: string | undefined
}

/**
 * How a DNS server answers names it has no records for.
 *
 * @since 0.1.0
 */
export type UnknownNames = "refused" | "nxdomain" | "servfail" | "silent"

/**
 * Options of {@link MemoryNetwork.startDnsServer}.
 *
 * @since 0.1.0
 */
export interface DnsServerOptions {
  /** Records by owner name (case-insensitive, trailing dot ignored). */
  readonly records?: Readonly<Record<string, ReadonlyArray<Dns.DnsRecord>>> | undefined
  /**
   * Names without records are answered REFUSED (default, as `dnsmasq
   * --no-resolv` does), NXDOMAIN or SERVFAIL, or not at all (`silent`: a
   * hung server).
   */
  readonly unknownNames?: UnknownNames | undefined
}

/**
 * A simulated DNS server.
 *
 * @since 0.1.0
 */
export interface DnsServer {
  /** A made-up process id. */
  readonly pid: number
  readonly addresses: ReadonlyArray<string>
  readonly running: Effect.Effect<boolean>
  /** Stops it now (the scope would anyway). Idempotent. */
  readonly stop: Effect.Effect<void>
}

/**
 * Why `DnsServerError`: an address to listen on is not on any link of the host
 * (dnsmasq's "Cannot assign requested address").
 *
 * @category errors
 * @since 0.3.0
 */
export class AddressNotAvailable extends Schema.Error<AddressNotAvailable>(
  "@hostnode/test/MemoryNetwork/AddressNotAvailable"
)({
  _tag: Schema.tag("AddressNotAvailable"),
  address: Schema.String
}) {
  override get message(): string {
    return `${this.address}: Cannot assign requested address`
  }
}

/**
 * A DNS server could not listen; `reason` says why (an address the host does not have).
 *
 * @category errors
 * @since 0.1.0
 */
export class DnsServerError extends Schema.TaggedError<DnsServerError>()("MemoryDnsServerError", {
  reason: AddressNotAvailable
}) {
  override get message(): string {
    return `failed to create listening socket for ${this.reason.message}`
  }
}

/**
 * One DNS query, for inspection: the server asked, the name, the type and what came of it.
 *
 * @since 0.1.0
 */
export interface DnsQuery {
  readonly server: string
  readonly name: string
  readonly type: Dns.RecordType
  /** `answer`, or the resolver's error code (`EREFUSED`, `ECONNREFUSED`, `ETIMEOUT`, ...). */
  readonly outcome: string
}

/**
 * A failure to inject into the next run(s) of a command: instead of running,
 * it prints `stderr` and exits `exitCode` (e.g. `iptables` exiting 4 with
 * "Permission denied (you must be root)").
 *
 * @since 0.1.0
 */
export interface CommandFault {
  readonly command: "ip" | "iptables"
  /** Only runs whose argv this accepts (default: every run). */
  readonly when?: ((args: ReadonlyArray<string>) => boolean) | undefined
  readonly exitCode: number
  readonly stderr: string
  /** How many runs it affects (default 1; `Infinity` for every one). */
  readonly times?: number | undefined
}

/**
 * Inspection and fault injection of the simulated network.
 *
 * @since 0.1.0
 */
export interface MemoryNetwork {
  readonly links: Effect.Effect<ReadonlyArray<LinkView>>
  readonly link: (name: string) => Effect.Effect<LinkView | undefined>
  /** The rules of `table` (default `raw`) as the `-A` lines of `iptables -t <table> -S`. */
  readonly rules: (table?: string) => Effect.Effect<ReadonlyArray<string>>
  /** Starts a DNS server answering on `addresses` (port 53); stopped when the scope closes. */
  readonly startDnsServer: (
    addresses: ReadonlyArray<string>,
    options?: DnsServerOptions
  ) => Effect.Effect<DnsServer, DnsServerError, Scope.Scope>
  /** Every DNS query so far, oldest first. */
  readonly dnsQueries: Effect.Effect<ReadonlyArray<DnsQuery>>
  /** Arms a fault for the next run(s) of `ip` or `iptables` (see {@link CommandFault}). */
  readonly failCommand: (fault: CommandFault) => Effect.Effect<void>
  /** Disarms every fault that has not fired. */
  readonly clearFaults: Effect.Effect<void>
  /**
   * Runs `ip` or `iptables` on the simulated host as an administrator would,
   * past any injected fault: how fixtures plant links and rules exactly as
   * the commands make them.
   */
  readonly admin: (command: "ip" | "iptables", args: ReadonlyArray<string>) => Effect.Effect<MemoryCommands.Result>
}

/**
 * The key of the inspection service.
 *
 * @since 0.1.0
 */
export const MemoryNetwork = Context.Service<MemoryNetwork>("@hostnode/test/MemoryNetwork")

/**
 * The inspection service: the same as {@link MemoryNetwork}.
 *
 * @since 0.1.0
 */
export type MemoryNetworkService = MemoryNetwork

/**
 * Options of {@link make}.
 *
 * @since 0.1.0
 */
export interface Options {
  /** Link kinds the simulated kernel lacks (`ip link add` says "Unknown device type."), e.g. `["dummy"]` like this project's test kernels. */
  readonly unsupportedKinds?: ReadonlyArray<LinkKind> | undefined
  /** iptables tables the kernel lacks (`table 'raw' does not exist`). */
  readonly missingTables?: ReadonlyArray<string> | undefined
}

// ---------------------------------------------------------------------------
// the simulation

/**
 * The simulated network: its interpreters, its inspection service and its `DnsResolvers`.
 *
 * @since 0.1.0
 */
export interface Simulation {
  readonly service: MemoryNetwork
  readonly ip: MemoryCommands.Interpreter
  readonly iptables: MemoryCommands.Interpreter
  readonly resolvers: DnsResolvers.DnsResolvers
}

const withFaults =
  (state: State, command: CommandFault["command"], inner: MemoryCommands.Interpreter): MemoryCommands.Interpreter =>
  (args, stdin) =>
    Effect.suspend(() => {
      for (let i = 0; i < state.faults.length; i++) {
        const slot = state.faults[i] as { fault: CommandFault; left: number }
        if (slot.fault.command !== command || (slot.fault.when !== undefined && !slot.fault.when(args))) continue
        slot.left--
        if (slot.left <= 0) state.faults.splice(i, 1)
        return Effect.succeed(MemoryCommands.fail(slot.fault.exitCode, slot.fault.stderr))
      }
      return inner(args, stdin)
    })

const startServer = (state: State, addresses: ReadonlyArray<string>, options?: DnsServerOptions) =>
  Effect.gen(function* () {
    for (const address of addresses) {
      if (!isLocal(state, address)) {
        return yield* new DnsServerError({ reason: new AddressNotAvailable({ address }) })
      }
    }
    const records = new Map<string, ReadonlyArray<Dns.DnsRecord>>()
    for (const [name, rs] of Object.entries(options?.records ?? {})) records.set(normalizeName(name), rs)
    const server: ServerState = {
      pid: state.nextPid++,
      addresses: [...addresses],
      running: true,
      records,
      unknownNames: options?.unknownNames ?? "refused"
    }
    state.servers.push(server)
    const stop = Effect.sync(() => {
      server.running = false
      const i = state.servers.indexOf(server)
      if (i !== -1) state.servers.splice(i, 1)
    })
    yield* Effect.addFinalizer(() => stop)
    return {
      pid: server.pid,
      addresses: server.addresses,
      running: Effect.sync(() => server.running),
      stop
    } satisfies DnsServer
  })

/**
 * A simulated network: `lo` only, empty tables, no DNS server.
 *
 * @since 0.1.0
 */
export const make = Effect.fn("MemoryNetwork.make")(function* (options?: Options) {
  const state = yield* Effect.sync(() => makeState(options))
  const ip = ipInterpreter(state)
  const iptables = iptablesInterpreter(state)
  const service: MemoryNetwork = {
    links: Effect.sync(() => sortedLinks(state).map(viewOf)),
    link: (name) =>
      Effect.sync(() => {
        const link = state.links.get(name)
        return link === undefined ? undefined : viewOf(link)
      }),
    rules: (table = "raw") =>
      Effect.sync(() => {
        const chains = state.tables.get(table) ?? []
        return chainOrder(chains).flatMap((c) => c.rules.map((r) => ruleLine(c.name, r)))
      }),
    startDnsServer: (addresses, serverOptions) => startServer(state, addresses, serverOptions),
    dnsQueries: Effect.sync(() => [...state.queries]),
    failCommand: (fault) =>
      Effect.sync(() => {
        state.faults.push({ fault, left: fault.times ?? 1 })
      }),
    clearFaults: Effect.sync(() => {
      state.faults.length = 0
    }),
    admin: (command, args) => (command === "ip" ? ip(args, "") : iptables(args, ""))
  }
  const resolvers: DnsResolvers.DnsResolvers = {
    forServer: (address, serverOptions) =>
      Effect.gen(function* () {
        const cancelled = yield* Deferred.make<void>()
        yield* Effect.addFinalizer(() => Deferred.succeed(cancelled, undefined))
        const ms = Duration.toMillis(Duration.fromInputUnsafe(serverOptions.timeout))
        return resolverFor(state, address, ms, cancelled)
      }),
    classify
  }
  const simulation: Simulation = {
    service,
    ip: withFaults(state, "ip", ip),
    iptables: withFaults(state, "iptables", iptables),
    resolvers
  }
  return simulation
})

// ---------------------------------------------------------------------------
// the LocalDNS fixture

/**
 * Options of {@link layerLocalDnsFixture}.
 *
 * @since 0.1.0
 */
export interface FixtureOptions {
  /** The kind the suite creates the LocalDNS interface as (default `dummy`, what production uses). */
  readonly interfaceKind?: "dummy" | "bridge" | undefined
}

const fixtureDie = (what: string, out: MemoryCommands.Result) =>
  Effect.die(new LocalDnsFixture.LocalDnsFixtureError(`${what} exited ${out.exitCode}: ${out.stderr.trim()}`))

/**
 * The in-memory `LocalDnsFixture`: reads the simulated links and `raw` table
 * directly (not through `ip`/`iptables` or the code under test), plants links
 * and rules, and runs simulated DNS servers. Everything planted is undone
 * when the scope that made it closes, as in the real fixture.
 *
 * @since 0.1.0
 */
export const layerLocalDnsFixture = (
  options?: FixtureOptions
): Layer.Layer<LocalDnsFixture.LocalDnsFixture, never, MemoryNetwork> =>
  Layer.effect(
    LocalDnsFixture.LocalDnsFixture,
    Effect.gen(function* () {
      const network = yield* MemoryNetwork
      const kind = options?.interfaceKind ?? "dummy"
      return LocalDnsFixture.LocalDnsFixture.of({
        interfaceKind: kind,
        link: (name) =>
          Effect.map(network.link(name), (l) =>
            l === undefined ? undefined : { index: l.index, kind: l.kind, up: l.up, ipv4: [...l.ipv4].sort() }
          ),
        rawRules: network.rules("raw"),
        addRule: (chain, spec) =>
          Effect.acquireRelease(
            network
              .admin("iptables", ["-w", "-t", "raw", "-A", chain, ...spec])
              .pipe(Effect.flatMap((o) => (o.exitCode === 0 ? Effect.void : fixtureDie("iptables -A", o)))),
            () => network.admin("iptables", ["-w", "-t", "raw", "-D", chain, ...spec])
          ),
        createLink: (name, o) =>
          Effect.gen(function* () {
            const steps: Array<ReadonlyArray<string>> = [
              o.sameKind
                ? ["link", "add", "name", name, "type", kind]
                : ["link", "add", "name", name, "type", "veth", "peer", "name", `${name.slice(0, 11)}peer`],
              ...o.ipv4.map((a) => ["addr", "add", a, "dev", name]),
              ["link", "set", "dev", name, o.up ? "up" : "down"]
            ]
            for (const step of steps) {
              const out = yield* network.admin("ip", step)
              if (out.exitCode !== 0) return yield* fixtureDie(`ip ${step.join(" ")}`, out)
            }
          }),
        cleanSlate: (name) => {
          const removeOurs = Effect.gen(function* () {
            // Our comment has no blanks, so our lines split on spaces (as in the real fixture).
            const ours = `--comment ${saveString(LocalDns.RuleComment)}`
            for (const line of yield* network.rules("raw")) {
              if (!` ${line} `.includes(` ${ours} `)) continue
              const words = line
                .split(" ")
                .map((w) => (w === saveString(LocalDns.RuleComment) ? LocalDns.RuleComment : w))
              yield* network.admin("iptables", ["-w", "-t", "raw", "-D", ...words.slice(1)])
            }
            yield* network.admin("ip", ["link", "del", "dev", name])
          })
          return Effect.acquireRelease(removeOurs, () => removeOurs)
        },
        dnsServer: (addresses) =>
          network.startDnsServer(addresses).pipe(
            Effect.map((s): LocalDnsFixture.DnsServer => ({ pid: s.pid, running: s.running, stop: s.stop })),
            Effect.catchTag("MemoryDnsServerError", (e) =>
              Effect.die(new LocalDnsFixture.LocalDnsFixtureError(`dns server exited: ${e.message}`))
            )
          )
      })
    })
  )
