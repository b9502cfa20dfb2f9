/**
 * The simulated network's state: links with their addresses, iptables
 * tables and chains, the DNS servers, the queries asked and the armed
 * faults; how a fresh host starts (only `lo`, the built-in chains with
 * ACCEPT policies) and the views of a link the inspection service gives.
 *
 * Internal to `MemoryNetwork`: the `ip` and `iptables` interpreters and the
 * DNS resolvers in this directory act on it.
 *
 * @since 0.3.0
 */
import type { Dns } from "effect/net"
import type { Options } from "../../MemoryNetwork.ts"
import { formatIpv4, network, parseIpv4 } from "./addresses.ts"
import type { CommandFault, DnsQuery, LinkView, UnknownNames } from "./vocabulary.ts"

export interface Address {
  readonly local: number
  readonly prefix: number
  readonly secondary: boolean
}

export interface Link {
  readonly index: number
  readonly name: string
  /** "" for lo. */
  readonly kind: string
  up: boolean
  /** Has been up once: lo and veth keep the `noqueue` qdisc they got then. */
  everUp: boolean
  readonly mac: string
  addresses: Array<Address>
  readonly peer: string | undefined
}

export interface Rule {
  /** Canonical argv words after the chain (values unquoted). */
  readonly words: ReadonlyArray<string>
}

export interface Chain {
  readonly name: string
  /** The policy of a built-in chain; undefined for a user chain. */
  policy: string | undefined
  rules: Array<Rule>
  /**
   * iptables-nft creates a built-in chain in the kernel only when a command
   * writes to it (`-A`, `-I`, `-F CHAIN`, `-P`); until then deleting by
   * number says the chain does not exist. User chains exist once made.
   */
  created: boolean
}

export interface ServerState {
  readonly pid: number
  readonly addresses: ReadonlyArray<string>
  running: boolean
  readonly records: ReadonlyMap<string, ReadonlyArray<Dns.DnsRecord>>
  readonly unknownNames: UnknownNames
}

export interface State {
  readonly links: Map<string, Link>
  nextIndex: number
  readonly tables: Map<string, Array<Chain>>
  readonly unsupportedKinds: ReadonlyArray<string>
  readonly servers: Array<ServerState>
  nextPid: number
  readonly queries: Array<DnsQuery>
  readonly faults: Array<{ fault: CommandFault; left: number }>
}

const builtinChains: Record<string, ReadonlyArray<string>> = {
  filter: ["INPUT", "FORWARD", "OUTPUT"],
  nat: ["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"],
  mangle: ["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"],
  raw: ["PREROUTING", "OUTPUT"],
  security: ["INPUT", "FORWARD", "OUTPUT"]
}

export const makeState = (options?: Options): State => {
  const tables = new Map<string, Array<Chain>>()
  for (const [table, chains] of Object.entries(builtinChains)) {
    if (options?.missingTables?.includes(table)) continue
    tables.set(
      table,
      chains.map((name) => ({ name, policy: "ACCEPT", rules: [], created: false }))
    )
  }
  const lo: Link = {
    index: 1,
    name: "lo",
    kind: "",
    up: true,
    everUp: true,
    mac: "00:00:00:00:00:00",
    addresses: [{ local: parseIpv4("127.0.0.1") as number, prefix: 8, secondary: false }],
    peer: undefined
  }
  return {
    links: new Map([["lo", lo]]),
    nextIndex: 2,
    tables,
    unsupportedKinds: options?.unsupportedKinds ?? [],
    servers: [],
    nextPid: 7000,
    queries: [],
    faults: []
  }
}

export const macFor = (index: number, name: string): string => {
  // Locally administered and stable for a given index and name.
  let h = 0x2f6b_1d3a ^ index
  for (const c of name) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193) >>> 0
  const bytes = [0x02 | (h & 0xfc), (h >>> 8) & 0xff, (h >>> 16) & 0xff, (h >>> 24) & 0xff, index & 0xff, 0x5a]
  return bytes.map((b) => b.toString(16).padStart(2, "0")).join(":")
}

/** The EUI-64 IPv6 link-local address of `mac`. */
export const linkLocal = (mac: string): string => {
  const b = mac.split(":").map((x) => Number.parseInt(x, 16))
  const bytes = [(b[0] ?? 0) ^ 0x02, b[1] ?? 0, b[2] ?? 0, 0xff, 0xfe, b[3] ?? 0, b[4] ?? 0, b[5] ?? 0]
  const groups = [0, 2, 4, 6].map((i) => (((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0)).toString(16))
  return `fe80::${groups.join(":")}`
}

export const orderedAddresses = (link: Link): Array<Address> => [
  ...link.addresses.filter((a) => !a.secondary),
  ...link.addresses.filter((a) => a.secondary)
]

const ipv4Of = (link: Link): Array<string> => orderedAddresses(link).map((a) => `${formatIpv4(a.local)}/${a.prefix}`)

export const viewOf = (link: Link): LinkView => ({
  index: link.index,
  name: link.name,
  kind: link.kind,
  up: link.up,
  ipv4: ipv4Of(link),
  peer: link.peer
})

export const sortedLinks = (state: State) => [...state.links.values()].sort((a, b) => a.index - b.index)

/** True when `address` is an address of the host: on a link, or in lo's 127.0.0.0/8 while lo has it. */
export const isLocal = (state: State, address: string): boolean => {
  if (address === "::1") return state.links.get("lo")?.up === true
  const n = parseIpv4(address)
  if (n === undefined) return false
  for (const link of state.links.values()) {
    for (const a of link.addresses) {
      if (a.local === n) return true
      if (link.kind === "" && network(a.local, a.prefix) === network(n, a.prefix)) return true
    }
  }
  return false
}
