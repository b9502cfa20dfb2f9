/** The simulated network: its state, the `ip` and `iptables` interpreters, the DNS resolvers and the inspection service. */
import type { DnsResolvers } from "@hostnode/core"
import { Deferred, Duration, Effect } from "effect"
import type { Dns } from "effect/net"
import { AddressNotAvailable, DnsServerError, type MemoryNetwork, type Options } from "../../MemoryNetwork.ts"
import * as MemoryCommands from "../memoryCommands.ts"
import { classify, normalizeName, resolverFor } from "./dns.ts"
import { ipInterpreter } from "./ip.ts"
import { chainOrder, iptablesInterpreter, ruleLine } from "./iptables.ts"
import { isLocal, makeState, type ServerState, type State, sortedLinks, viewOf } from "./state.ts"
import type { CommandFault, DnsServer, DnsServerOptions } from "./vocabulary.ts"

/**
 * The simulated network: its interpreters, its inspection service and its `DnsResolvers`.
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
