/**
 * The simulated host's network: links with their IPv4 addresses, iptables
 * tables and chains, and DNS servers listening on addresses of the host. Its
 * `ip` and `iptables` print what iproute2 6.1 and iptables 1.8.9 (nf_tables)
 * print for the commands the library runs (checked against the real tools in
 * a private network namespace), and `DnsResolvers` asks its DNS servers.
 * `MemoryNode.layer` provides it; `layerLocalDnsFixture` is the in-memory
 * `LocalDnsFixture`. What is simulated and what is not:
 * docs/design/simulated-host.md.
 *
 * @since 0.1.0
 */

import { localDnsRuleComment as RuleComment } from "@hostnode/core/Programs"
import { Context, Effect, Layer, Schema, type Scope } from "effect"
import type * as MemoryCommands from "./internal/memoryCommands.ts"
import { saveString } from "./internal/network/iptables.ts"
import type {
  CommandFault,
  DnsQuery,
  DnsServer,
  DnsServerOptions,
  LinkKind,
  LinkView
} from "./internal/network/vocabulary.ts"
import * as LocalDnsFixture from "./LocalDnsFixture.ts"

/**
 * Why `DnsServerError`: an address to listen on is not on any link of the host
 * (dnsmasq's "Cannot assign requested address").
 *
 * @category errors
 * @since 0.3.0
 */
export class AddressNotAvailable extends Schema.Error<AddressNotAvailable>(
  "@hostnode/sim/MemoryNetwork/AddressNotAvailable"
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
 * Inspection and fault injection of the simulated network.
 *
 * @category services
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
 * @category services
 * @since 0.1.0
 */
export const MemoryNetwork = Context.Service<MemoryNetwork>("@hostnode/sim/MemoryNetwork")

/**
 * Options of {@link make}.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** Link kinds the simulated kernel lacks (`ip link add` says "Unknown device type."), e.g. `["dummy"]` like this project's test kernels. */
  readonly unsupportedKinds?: ReadonlyArray<LinkKind> | undefined
  /** iptables tables the kernel lacks (`table 'raw' does not exist`). */
  readonly missingTables?: ReadonlyArray<string> | undefined
}

/**
 * Options of {@link layerLocalDnsFixture}.
 *
 * @since 0.1.0
 */
interface FixtureOptions {
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
 * @category layers
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
            const ours = `--comment ${saveString(RuleComment)}`
            for (const line of yield* network.rules("raw")) {
              if (!` ${line} `.includes(` ${ours} `)) continue
              const words = line.split(" ").map((w) => (w === saveString(RuleComment) ? RuleComment : w))
              yield* network.admin("iptables", ["-w", "-t", "raw", "-D", ...words.slice(1)])
            }
            yield* network.admin("ip", ["link", "del", "dev", name])
          })
          return Effect.acquireRelease(removeOurs, () => removeOurs)
        },
        dnsServer: (addresses) =>
          network.startDnsServer(addresses).pipe(
            Effect.map((s) => ({ pid: s.pid, running: s.running, stop: s.stop })),
            Effect.catchTag("MemoryDnsServerError", (e) =>
              Effect.die(new LocalDnsFixture.LocalDnsFixtureError(`dns server exited: ${e.message}`))
            )
          )
      })
    })
  )
