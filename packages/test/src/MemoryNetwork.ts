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
 * @since 0.1.0
 */
import { type DnsResolvers, LocalDns } from "@hostnode/core"
import { Context, Deferred, Duration, Effect, Layer, Schema, type Scope } from "effect"
import { Dns, type NetAddress } from "effect/net"
import * as LocalDnsFixture from "./LocalDnsFixture.ts"
import * as MemoryCommands from "./MemoryCommands.ts"

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
 * Options of {@link MemoryNetworkService.startDnsServer}.
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
 * A DNS server could not listen: an address is not on any link of the host (dnsmasq's "Cannot assign requested address").
 *
 * @since 0.1.0
 */
export class DnsServerError extends Schema.TaggedError<DnsServerError>()("MemoryDnsServerError", {
  reason: Schema.Literals(["AddressNotAvailable"]),
  address: Schema.String
}) {
  override get message(): string {
    return `failed to create listening socket for ${this.address}: Cannot assign requested address`
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
export interface MemoryNetworkService {
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
export class MemoryNetwork extends Context.Service<MemoryNetwork, MemoryNetworkService>()(
  "@hostnode/test/MemoryNetwork"
) {}

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
// addresses

const parseIpv4 = (text: string): number | undefined => {
  const parts = text.split(".")
  if (parts.length !== 4) return undefined
  let n = 0
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return undefined
    const v = Number(p)
    if (v > 255) return undefined
    n = n * 256 + v
  }
  return n
}

const formatIpv4 = (n: number): string => [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join(".")

const maskOf = (prefix: number): number => (prefix === 0 ? 0 : (0xffffffff - (2 ** (32 - prefix) - 1)) >>> 0)

const network = (address: number, prefix: number): number => (address & maskOf(prefix)) >>> 0

/** `a.b.c.d[/n]` as an address and a prefix, or undefined when invalid. */
const parseCidr = (text: string): { readonly address: number; readonly prefix: number } | undefined => {
  const slash = text.indexOf("/")
  const address = parseIpv4(slash === -1 ? text : text.slice(0, slash))
  if (address === undefined) return undefined
  if (slash === -1) return { address, prefix: 32 }
  const p = text.slice(slash + 1)
  if (/^\d{1,2}$/.test(p) && Number(p) <= 32) return { address, prefix: Number(p) }
  // A dotted netmask (iptables accepts one).
  const mask = parseIpv4(p)
  if (mask === undefined) return undefined
  for (let prefix = 0; prefix <= 32; prefix++) if (maskOf(prefix) === mask) return { address, prefix }
  return undefined
}

// ---------------------------------------------------------------------------
// state

interface Address {
  readonly local: number
  readonly prefix: number
  readonly secondary: boolean
}

interface Link {
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

interface Rule {
  /** Canonical argv words after the chain (values unquoted). */
  readonly words: ReadonlyArray<string>
}

interface Chain {
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

interface ServerState {
  readonly pid: number
  readonly addresses: ReadonlyArray<string>
  running: boolean
  readonly records: ReadonlyMap<string, ReadonlyArray<Dns.DnsRecord>>
  readonly unknownNames: UnknownNames
}

interface State {
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

const makeState = (options?: Options): State => {
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

const macFor = (index: number, name: string): string => {
  // Locally administered and stable for a given index and name.
  let h = 0x2f6b_1d3a ^ index
  for (const c of name) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193) >>> 0
  const bytes = [0x02 | (h & 0xfc), (h >>> 8) & 0xff, (h >>> 16) & 0xff, (h >>> 24) & 0xff, index & 0xff, 0x5a]
  return bytes.map((b) => b.toString(16).padStart(2, "0")).join(":")
}

/** The EUI-64 IPv6 link-local address of `mac`. */
const linkLocal = (mac: string): string => {
  const b = mac.split(":").map((x) => Number.parseInt(x, 16))
  const bytes = [(b[0] ?? 0) ^ 0x02, b[1] ?? 0, b[2] ?? 0, 0xff, 0xfe, b[3] ?? 0, b[4] ?? 0, b[5] ?? 0]
  const groups = [0, 2, 4, 6].map((i) => (((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0)).toString(16))
  return `fe80::${groups.join(":")}`
}

const orderedAddresses = (link: Link): Array<Address> => [
  ...link.addresses.filter((a) => !a.secondary),
  ...link.addresses.filter((a) => a.secondary)
]

const ipv4Of = (link: Link): Array<string> => orderedAddresses(link).map((a) => `${formatIpv4(a.local)}/${a.prefix}`)

const viewOf = (link: Link): LinkView => ({
  index: link.index,
  name: link.name,
  kind: link.kind,
  up: link.up,
  ipv4: ipv4Of(link),
  peer: link.peer
})

const sortedLinks = (state: State) => [...state.links.values()].sort((a, b) => a.index - b.index)

/** True when `address` is an address of the host: on a link, or in lo's 127.0.0.0/8 while lo has it. */
const isLocal = (state: State, address: string): boolean => {
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

// ---------------------------------------------------------------------------
// links (shared by `ip` and the fixture)

type Outcome = MemoryCommands.Result

const ok = MemoryCommands.ok
const fail = MemoryCommands.fail

const IFNAMSIZ = 16

const validIfname = (name: string) => name.length > 0 && name.length < IFNAMSIZ && !/[\s/:]/.test(name)

const addLink = (state: State, name: string, kind: string, peerName: string | undefined): Outcome => {
  if (!validIfname(name)) return fail(255, `Error: argument "${name}" is wrong: "name" not a valid ifname`)
  if (peerName !== undefined && !validIfname(peerName)) {
    return fail(255, `Error: argument "${peerName}" is wrong: "name" not a valid ifname`)
  }
  // The kernel looks the name up before the kind.
  if (state.links.has(name)) return fail(2, "RTNETLINK answers: File exists")
  if (!["dummy", "bridge", "veth"].includes(kind) || state.unsupportedKinds.includes(kind)) {
    return fail(2, "Error: Unknown device type.")
  }
  if (kind === "veth") {
    let peer = peerName
    if (peer === undefined) {
      let n = 0
      while (state.links.has(`veth${n}`)) n++
      peer = `veth${n}`
    }
    if (state.links.has(peer) || peer === name) return fail(2, "RTNETLINK answers: File exists")
    // The kernel creates the peer first: it gets the lower index.
    newLink(state, peer, kind, name)
    newLink(state, name, kind, peer)
    return ok()
  }
  newLink(state, name, kind, undefined)
  return ok()
}

/** A new link, down and without addresses, with the next index. */
const newLink = (state: State, name: string, kind: string, peer: string | undefined): void => {
  const index = state.nextIndex++
  state.links.set(name, { index, name, kind, up: false, everUp: false, mac: macFor(index, name), addresses: [], peer })
}

const deleteLink = (state: State, name: string): Outcome => {
  const link = state.links.get(name)
  if (link === undefined) return fail(1, `Cannot find device "${name}"`)
  if (link.kind === "") return fail(2, "RTNETLINK answers: Operation not supported")
  state.links.delete(name)
  if (link.peer !== undefined) state.links.delete(link.peer)
  return ok()
}

const addAddress = (state: State, name: string, cidr: string): Outcome => {
  const parsed = /^\d+\.\d+\.\d+\.\d+(\/\d+)?$/.test(cidr) ? parseCidr(cidr) : undefined
  if (parsed === undefined) return fail(1, `Error: any valid prefix is expected rather than "${cidr}".`)
  const link = state.links.get(name)
  if (link === undefined) return fail(1, `Cannot find device "${name}"`)
  if (link.addresses.some((a) => a.local === parsed.address && a.prefix === parsed.prefix)) {
    return fail(2, "Error: ipv4: Address already assigned.")
  }
  const secondary = link.addresses.some(
    (a) =>
      !a.secondary &&
      a.prefix === parsed.prefix &&
      network(a.local, a.prefix) === network(parsed.address, parsed.prefix)
  )
  link.addresses.push({ local: parsed.address, prefix: parsed.prefix, secondary })
  return ok()
}

const wildcardWarning = (address: string) =>
  `Warning: Executing wildcard deletion to stay compatible with old scripts.\n         Explicitly specify the prefix length (${address}/32) to avoid this warning.\n         This special behaviour is likely to disappear in further releases,\n         fix your scripts!\n`

const deleteAddress = (state: State, name: string, cidr: string): Outcome => {
  const parsed = /^\d+\.\d+\.\d+\.\d+(\/\d+)?$/.test(cidr) ? parseCidr(cidr) : undefined
  if (parsed === undefined) return fail(1, `Error: any valid prefix is expected rather than "${cidr}".`)
  const wildcard = !cidr.includes("/")
  const warning = wildcard ? wildcardWarning(cidr) : ""
  const link = state.links.get(name)
  if (link === undefined) return { stdout: "", stderr: `${warning}Cannot find device "${name}"\n`, exitCode: 1 }
  const found = link.addresses.find((a) => a.local === parsed.address && (wildcard || a.prefix === parsed.prefix))
  if (found === undefined) {
    return { stdout: "", stderr: `${warning}Error: ipv4: Address not found.\n`, exitCode: 2 }
  }
  link.addresses = link.addresses.filter(
    (a) =>
      a !== found &&
      // promote_secondaries is off: a primary takes its secondaries with it.
      !(
        !found.secondary &&
        a.secondary &&
        a.prefix === found.prefix &&
        network(a.local, a.prefix) === network(found.local, found.prefix)
      )
  )
  return { stdout: "", stderr: warning, exitCode: 0 }
}

const setLink = (state: State, name: string, up: boolean): Outcome => {
  const link = state.links.get(name)
  if (link === undefined) return fail(1, `Cannot find device "${name}"`)
  link.up = up
  if (up) link.everUp = true
  return ok()
}

// ---------------------------------------------------------------------------
// ip

const carrier = (state: State, link: Link): boolean => {
  if (!link.up) return false
  if (link.kind !== "veth") return true
  return link.peer !== undefined && state.links.get(link.peer)?.up === true
}

const linkJson = (state: State, link: Link, details: boolean, withAddresses: boolean): Record<string, unknown> => {
  const isLo = link.kind === ""
  const flags = isLo
    ? ["LOOPBACK", ...(link.up ? ["UP", "LOWER_UP"] : [])]
    : [
        ...(link.kind === "veth" && link.up && !carrier(state, link) ? ["NO-CARRIER"] : []),
        "BROADCAST",
        link.kind === "dummy" ? "NOARP" : "MULTICAST",
        ...(link.up ? ["UP"] : []),
        ...(carrier(state, link) ? ["LOWER_UP"] : []),
        ...(link.kind === "veth" && !(link.peer !== undefined && state.links.get(link.peer)?.up === true)
          ? ["M-DOWN"]
          : [])
      ]
  const operstate = !link.up
    ? "DOWN"
    : link.kind === "veth"
      ? carrier(state, link)
        ? "UP"
        : "LOWERLAYERDOWN"
      : "UNKNOWN"
  const out: Record<string, unknown> = { ifindex: link.index }
  if (link.peer !== undefined) out.link = link.peer
  Object.assign(out, {
    ifname: link.name,
    flags,
    mtu: isLo ? 65536 : 1500,
    qdisc: link.up || (link.everUp && (isLo || link.kind === "veth")) ? "noqueue" : "noop",
    operstate
  })
  if (!withAddresses) out.linkmode = "DEFAULT"
  Object.assign(out, {
    group: "default",
    txqlen: 1000,
    link_type: isLo ? "loopback" : "ether",
    address: link.mac,
    broadcast: isLo ? "00:00:00:00:00:00" : "ff:ff:ff:ff:ff:ff"
  })
  if (details) {
    Object.assign(out, {
      promiscuity: 0,
      allmulti: 0,
      min_mtu: isLo || link.kind === "dummy" ? 0 : 68,
      max_mtu: isLo || link.kind === "dummy" ? 0 : 65535
    })
    if (!isLo) out.linkinfo = { info_kind: link.kind }
    Object.assign(out, {
      num_tx_queues: link.kind === "veth" ? 2 : 1,
      num_rx_queues: link.kind === "veth" ? 2 : 1,
      gso_max_size: 65536,
      gso_max_segs: 65535,
      tso_max_size: isLo || link.kind === "veth" ? 524280 : 65536,
      tso_max_segs: 65535,
      gro_max_size: 65536
    })
  }
  if (withAddresses) {
    const v4 = orderedAddresses(link)
    const info: Array<Record<string, unknown>> = v4.map((a) => ({
      family: "inet",
      local: formatIpv4(a.local),
      prefixlen: a.prefix,
      // iproute2 gives 127.0.0.0/8 addresses host scope, every other address global scope.
      scope: a.local >>> 24 === 127 ? "host" : "global",
      ...(a.secondary ? { secondary: true } : {}),
      label: link.name,
      valid_life_time: 4294967295,
      preferred_life_time: 4294967295
    }))
    // The kernel adds the IPv6 link-local address once the link has carrier.
    if (isLo ? link.up : carrier(state, link)) {
      info.push({
        family: "inet6",
        local: isLo ? "::1" : linkLocal(link.mac),
        prefixlen: isLo ? 128 : 64,
        scope: isLo ? "host" : "link",
        valid_life_time: 4294967295,
        preferred_life_time: 4294967295
      })
    }
    out.addr_info = info
  }
  return out
}

const flagsText = (json: Record<string, unknown>) => (json.flags as ReadonlyArray<string>).join(",")

/** The plain-text form of one link (`ip addr show` / `ip link show`). */
const linkText = (state: State, link: Link, withAddresses: boolean): string => {
  const j = linkJson(state, link, false, withAddresses)
  const name = link.peer === undefined ? link.name : `${link.name}@${link.peer}`
  const mode = withAddresses ? "" : " mode DEFAULT"
  let out = `${link.index}: ${name}: <${flagsText(j)}> mtu ${j.mtu} qdisc ${j.qdisc} state ${j.operstate}${mode} group default qlen 1000\n`
  out += `    link/${j.link_type} ${j.address} brd ${j.broadcast}\n`
  if (withAddresses) {
    for (const a of (j.addr_info as ReadonlyArray<Record<string, unknown>>) ?? []) {
      const secondary = a.secondary === true ? " secondary" : ""
      // iproute2 ends an inet6 line with a blank where an inet line has its label.
      out +=
        a.family === "inet"
          ? `    inet ${a.local}/${a.prefixlen} scope ${a.scope}${secondary} ${a.label}\n`
          : `    inet6 ${a.local}/${a.prefixlen} scope ${a.scope} \n`
      out += "       valid_lft forever preferred_lft forever\n"
    }
  }
  return out
}

const matches = (word: string | undefined, full: string, min = 1) =>
  word !== undefined && word.length >= min && full.startsWith(word)

/** `dev NAME` or a bare `NAME` from `args`; the rest of the words. */
const devArg = (args: ReadonlyArray<string>): { readonly dev: string | undefined; readonly rest: Array<string> } => {
  let dev: string | undefined
  const rest: Array<string> = []
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string
    if (a === "dev") dev = args[++i]
    else rest.push(a)
  }
  return { dev, rest }
}

const ipInterpreter =
  (state: State): MemoryCommands.Interpreter =>
  (args) =>
    Effect.sync(() => {
      let json = false
      let details = false
      let pretty = false
      let i = 0
      for (; i < args.length; i++) {
        const a = args[i] as string
        if (a === "-j" || a === "-json") json = true
        else if (a === "-d" || a === "-details") details = true
        else if (a === "-p" || a === "-pretty") pretty = true
        else if (a === "-4" || a === "-s" || a === "-stats") continue
        else if (a.startsWith("-")) return fail(255, `Option "${a}" is unknown, try "ip -help".`)
        else break
      }
      const object = args[i]
      const rest = args.slice(i + 1)
      const render = (links: ReadonlyArray<Link>, withAddresses: boolean): string =>
        json
          ? `${JSON.stringify(
              links.map((l) => linkJson(state, l, details, withAddresses)),
              undefined,
              pretty ? 4 : undefined
            )}\n`
          : links.map((l) => linkText(state, l, withAddresses)).join("")
      const show = (words: ReadonlyArray<string>, withAddresses: boolean): Outcome => {
        const { dev, rest: more } = devArg(words)
        const name = dev ?? more[0]
        if (name === undefined) return ok(render(sortedLinks(state), withAddresses))
        const link = state.links.get(name)
        if (link === undefined) return fail(1, `Device "${name}" does not exist.`)
        return ok(render([link], withAddresses))
      }
      if (matches(object, "address") || matches(object, "addr")) {
        const [command, ...words] = rest
        if (command === undefined || matches(command, "show") || matches(command, "list")) return show(words, true)
        if (command === "add" || command === "del" || matches(command, "delete", 3)) {
          const { dev, rest: more } = devArg(words)
          const cidr = more[0]
          if (cidr === undefined) return fail(1, 'Not enough information: "dev" argument is required.')
          if (dev === undefined) return fail(1, 'Not enough information: "dev" argument is required.')
          return command === "add" ? addAddress(state, dev, cidr) : deleteAddress(state, dev, cidr)
        }
        return fail(255, `Command "${command}" is unknown, try "ip address help".`)
      }
      if (matches(object, "link")) {
        const [command, ...words] = rest
        if (command === undefined || matches(command, "show") || matches(command, "list")) return show(words, false)
        if (command === "add") {
          let name: string | undefined
          let kind: string | undefined
          let peer: string | undefined
          for (let k = 0; k < words.length; k++) {
            const w = words[k] as string
            if (w === "name" || w === "dev") name = words[++k]
            else if (w === "type") {
              kind = words[++k]
              if (words[k + 1] === "peer") {
                k += 1
                if (words[k + 1] === "name") {
                  peer = words[k + 2]
                  k += 2
                }
              }
            } else if (name === undefined) name = w
          }
          if (name === undefined) return fail(1, 'Not enough information: "dev" argument is required.')
          if (kind === undefined) return fail(1, 'Not enough information: "type" argument is required')
          return addLink(state, name, kind, peer)
        }
        if (command === "del" || matches(command, "delete", 3)) {
          const { dev, rest: more } = devArg(words)
          const name = dev ?? more[0]
          if (name === undefined) return fail(1, 'Not enough information: "dev" argument is required.')
          return deleteLink(state, name)
        }
        if (command === "set") {
          const { dev, rest: more } = devArg(words)
          const name = dev ?? more.shift()
          if (name === undefined) return fail(1, 'Not enough information: "dev" argument is required.')
          let up: boolean | undefined
          for (const w of more) {
            if (w === "up") up = true
            else if (w === "down") up = false
            else return fail(255, `Error: either "dev" is duplicate, or "${w}" is a garbage.`)
          }
          if (!state.links.has(name)) return fail(1, `Cannot find device "${name}"`)
          return up === undefined ? ok() : setLink(state, name, up)
        }
        return fail(255, `Command "${command}" is unknown, try "ip link help".`)
      }
      if (object === undefined) return fail(255, "Usage: ip [ OPTIONS ] OBJECT { COMMAND | help }")
      return fail(1, `Object "${object}" is unknown, try "ip help".`)
    })

// ---------------------------------------------------------------------------
// iptables

const IPT = "iptables v1.8.9 (nf_tables)"

const usageError = (message: string): Outcome =>
  fail(2, `${IPT}: ${message}\nTry \`iptables -h' or 'iptables --help' for more information.`)

const standardTargets = ["ACCEPT", "DROP", "RETURN", "QUEUE"]
const extensionTargets = [
  "NOTRACK",
  "CT",
  "LOG",
  "REJECT",
  "MASQUERADE",
  "SNAT",
  "DNAT",
  "REDIRECT",
  "MARK",
  "CONNMARK",
  "TPROXY"
]
const protocolNames: Record<string, string> = { "1": "icmp", "6": "tcp", "17": "udp" }

const noQuoteChars = /^[-_0-9A-Za-z]+$/

/**
 * xtables_save_string: bare when only `[-_0-9A-Za-z]`, else double-quoted with `"`, `\` and `'` escaped.
 *
 * @since 0.1.0
 */
export const saveString = (value: string): string =>
  noQuoteChars.test(value) ? value : `"${value.replace(/["\\']/g, "\\$&")}"`

interface MatchSpec {
  readonly name: string
  readonly options: Array<{ readonly negate: boolean; readonly option: string; readonly value: string }>
}

/**
 * Parses the rule-spec words of `-A/-C/-D/-I` into iptables' canonical form,
 * or the usage error iptables prints.
 */
const canonicalRule = (
  words: ReadonlyArray<string>,
  tableChains: ReadonlyArray<Chain>
): { readonly words: ReadonlyArray<string> } | { readonly error: Outcome } => {
  const singles: Record<string, { negate: boolean; value: string } | undefined> = {}
  const matchList: Array<MatchSpec> = []
  let target: { name: string; options: Array<string> } | undefined
  let negate = false
  let proto: string | undefined
  const needValue = (i: number, option: string): string | Outcome => {
    const v = words[i + 1]
    return v === undefined ? usageError(`option "${option}" requires an argument`) : v
  }
  for (let i = 0; i < words.length; i++) {
    const w = words[i] as string
    if (target !== undefined && w.startsWith("--")) {
      target.options.push(w)
      const next = words[i + 1]
      if (next !== undefined && !next.startsWith("-") && w !== "--notrack") target.options.push(words[++i] as string)
      continue
    }
    if (w === "!") {
      negate = true
      continue
    }
    const single: Record<string, string> = {
      "-s": "-s",
      "--source": "-s",
      "--src": "-s",
      "-d": "-d",
      "--destination": "-d",
      "--dst": "-d",
      "-p": "-p",
      "--protocol": "-p",
      "-i": "-i",
      "--in-interface": "-i",
      "-o": "-o",
      "--out-interface": "-o"
    }
    const key = single[w]
    if (key !== undefined) {
      const v = needValue(i, w)
      if (typeof v !== "string") return { error: v }
      i++
      let value = v
      if (key === "-s" || key === "-d") {
        const cidr = parseCidr(v)
        if (cidr === undefined) return { error: usageError(`host/network \`${v.split("/")[0]}' not found`) }
        value = `${formatIpv4(network(cidr.address, cidr.prefix))}/${cidr.prefix}`
      } else if (key === "-p") {
        const p = v.toLowerCase()
        const name = protocolNames[p] ?? p
        if (!["tcp", "udp", "icmp", "all", "sctp", "udplite", "esp", "ah", "gre"].includes(name)) {
          return { error: usageError(`unknown protocol "${v}" specified`) }
        }
        proto = name
        value = name
      }
      singles[key] = { negate, value }
      negate = false
      continue
    }
    if (w === "-m" || w === "--match") {
      const v = needValue(i, w)
      if (typeof v !== "string") return { error: v }
      i++
      if (!["tcp", "udp", "comment"].includes(v)) {
        return {
          error: fail(
            2,
            `${IPT}: Couldn't load match \`${v}':No such file or directory\n\nTry \`iptables -h' or 'iptables --help' for more information.`
          )
        }
      }
      matchList.push({ name: v, options: [] })
      continue
    }
    if (w === "-j" || w === "--jump") {
      const v = needValue(i, w)
      if (typeof v !== "string") return { error: v }
      i++
      const isChain = tableChains.some((c) => c.name === v && c.policy === undefined)
      if (!standardTargets.includes(v) && !extensionTargets.includes(v) && !isChain) {
        return { error: usageError(`Chain '${v}' does not exist`) }
      }
      target = { name: v, options: [] }
      continue
    }
    const portOption = {
      "--dport": "--dport",
      "--destination-port": "--dport",
      "--sport": "--sport",
      "--source-port": "--sport"
    }[w]
    if (portOption !== undefined) {
      let match = [...matchList].reverse().find((m) => m.name === "tcp" || m.name === "udp")
      if (match === undefined || matchList[matchList.length - 1] !== match) {
        // The implicit `-m <proto>` loads where its first option appears.
        if (proto !== "tcp" && proto !== "udp") return { error: usageError(`unknown option "${w}"`) }
        if (match === undefined) {
          match = { name: proto, options: [] }
          matchList.push(match)
        }
      }
      const v = needValue(i, w)
      if (typeof v !== "string") return { error: v }
      i++
      if (!/^\d{1,5}(:\d{1,5})?$/.test(v)) return { error: usageError(`invalid port/service \`${v}' specified`) }
      match.options.push({ negate, option: portOption, value: v })
      negate = false
      continue
    }
    if (w === "--comment") {
      const last = matchList[matchList.length - 1]
      if (last?.name !== "comment") return { error: usageError(`unknown option "${w}"`) }
      const v = needValue(i, w)
      if (typeof v !== "string") return { error: v }
      i++
      if (v.length > 255) return { error: usageError("COMMENT must be shorter than 256 characters") }
      last.options.push({ negate: false, option: "--comment", value: v })
      continue
    }
    return { error: usageError(`unknown option "${w}"`) }
  }
  const out: Array<string> = []
  for (const key of ["-s", "-d", "-i", "-o", "-p"]) {
    const s = singles[key]
    if (s === undefined) continue
    if ((key === "-s" || key === "-d") && s.value === "0.0.0.0/0" && !s.negate) continue
    if (key === "-p" && s.value === "all" && !s.negate) continue
    out.push(...(s.negate ? ["!"] : []), key, s.value)
  }
  for (const m of matchList) {
    out.push("-m", m.name)
    // libxt_tcp/udp save --sport before --dport, whatever the order given.
    const ordered =
      m.name === "comment"
        ? m.options
        : [...m.options.filter((o) => o.option === "--sport"), ...m.options.filter((o) => o.option === "--dport")]
    for (const o of ordered) out.push(...(o.negate ? ["!"] : []), o.option, o.value)
  }
  if (target !== undefined) out.push("-j", target.name, ...target.options)
  return { words: out }
}

/** A rule's words as `-S` prints them (comments quoted by {@link saveString}). */
const renderWords = (words: ReadonlyArray<string>): string =>
  words.map((w, i) => (words[i - 1] === "--comment" ? saveString(w) : w)).join(" ")

const ruleLine = (chain: string, rule: Rule): string =>
  rule.words.length === 0 ? `-A ${chain}` : `-A ${chain} ${renderWords(rule.words)}`

const sameRule = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) =>
  a.length === b.length && a.every((w, i) => w === b[i])

const listRules = (chains: ReadonlyArray<Chain>): string => {
  let out = ""
  for (const c of chains) out += c.policy === undefined ? `-N ${c.name}\n` : `-P ${c.name} ${c.policy}\n`
  for (const c of chains) for (const r of c.rules) out += `${ruleLine(c.name, r)}\n`
  return out
}

/** The chains of `table` in `-S` order: built-in chains first, then user chains. */
const chainOrder = (chains: ReadonlyArray<Chain>) => [
  ...chains.filter((c) => c.policy !== undefined),
  ...chains.filter((c) => c.policy === undefined)
]

const iptablesInterpreter =
  (state: State): MemoryCommands.Interpreter =>
  (args) =>
    Effect.sync(() => {
      let table = "filter"
      let command: string | undefined
      let chain: string | undefined
      const rest: Array<string> = []
      const commands: Record<string, string> = {
        "-S": "-S",
        "--list-rules": "-S",
        "-A": "-A",
        "--append": "-A",
        "-C": "-C",
        "--check": "-C",
        "-D": "-D",
        "--delete": "-D",
        "-I": "-I",
        "--insert": "-I",
        "-F": "-F",
        "--flush": "-F",
        "-N": "-N",
        "--new-chain": "-N",
        "-X": "-X",
        "--delete-chain": "-X",
        "-P": "-P",
        "--policy": "-P"
      }
      const optionalChain = ["-S", "-F", "-X"]
      for (let i = 0; i < args.length; i++) {
        const a = args[i] as string
        if (a === "-t" || a === "--table") {
          const t = args[++i]
          if (t === undefined) return usageError(`option "${a}" requires an argument`)
          table = t
        } else if (a === "-w" || a === "--wait") {
          if (args[i + 1] !== undefined && /^\d+(\.\d+)?$/.test(args[i + 1] as string)) i++
        } else if (a === "-W" || a === "--wait-interval") i++
        else if (a === "-v" || a === "--verbose" || a === "-n" || a === "--numeric") continue
        else if (commands[a] !== undefined && command === undefined) {
          command = commands[a]
          const next = args[i + 1]
          if (next !== undefined && !next.startsWith("-")) {
            chain = next
            i++
          } else if (!optionalChain.includes(command as string)) {
            return usageError(`option "${a}" requires an argument`)
          }
        } else rest.push(a)
      }
      if (command === undefined) return usageError("no command specified")
      const chains = state.tables.get(table)
      if (chains === undefined) {
        return fail(3, `${IPT}: table '${table}' does not exist\nPerhaps iptables or your kernel needs to be upgraded.`)
      }
      const found = chain === undefined ? undefined : chains.find((c) => c.name === chain)
      const noChain = fail(1, "iptables: No chain/target/match by that name.")
      const badRule = fail(1, "iptables: Bad rule (does a matching rule exist in that chain?).")
      switch (command) {
        case "-S": {
          if (chain === undefined) return ok(listRules(chainOrder(chains)))
          if (found === undefined) {
            return fail(1, `${IPT}: chain \`${chain}' in table \`${table}' is incompatible, use 'nft' tool.`)
          }
          return ok(listRules([found]))
        }
        case "-F": {
          if (chain === undefined) {
            for (const c of chains) c.rules = []
            return ok()
          }
          if (found === undefined) return noChain
          found.rules = []
          found.created = true
          return ok()
        }
        case "-N": {
          if (found !== undefined) return fail(1, "iptables: Chain already exists.")
          chains.push({ name: chain as string, policy: undefined, rules: [], created: true })
          return ok()
        }
        case "-X": {
          if (chain !== undefined && found === undefined) return noChain
          const targets = chain === undefined ? chains.filter((c) => c.policy === undefined) : [found as Chain]
          const jumpsTo = (name: string) =>
            chains.some((c) => c.rules.some((r) => r.words[r.words.indexOf("-j") + 1] === name))
          for (const c of targets) {
            if (c.rules.length > 0 || jumpsTo(c.name)) {
              return fail(4, `${IPT}:  CHAIN_DEL failed (Device or resource busy): chain ${c.name}`)
            }
          }
          for (const c of targets) {
            // A built-in chain goes back to not existing in the kernel; a user chain is gone.
            if (c.policy === undefined) chains.splice(chains.indexOf(c), 1)
            else c.created = false
          }
          return ok()
        }
        case "-P": {
          const policy = rest[0]
          if (found === undefined || found.policy === undefined) return fail(1, "iptables: Bad built-in chain name.")
          if (policy === undefined || !["ACCEPT", "DROP"].includes(policy)) {
            return fail(1, "iptables: Bad policy name. Run `dmesg' for more information.")
          }
          found.policy = policy
          found.created = true
          return ok()
        }
      }
      // -A, -C, -D, -I: a rule spec (or, for -D, a rule number; for -I, an optional position).
      const ruleNumber = (word: string): number | Outcome =>
        /^\d+$/.test(word) && Number(word) > 0 ? Number(word) : usageError(`Invalid rule number \`${word}'`)
      if (command === "-D" && rest.length === 1 && !(rest[0] as string).startsWith("-")) {
        const n = ruleNumber(rest[0] as string)
        if (typeof n !== "number") return n
        if (found === undefined || !found.created) return noChain
        if (n > found.rules.length) return fail(1, "iptables: Index of deletion too big.")
        found.rules.splice(n - 1, 1)
        return ok()
      }
      let position: number | undefined
      if (command === "-I" && rest[0] !== undefined && !rest[0].startsWith("-") && rest[0] !== "!") {
        const n = ruleNumber(rest.shift() as string)
        if (typeof n !== "number") return n
        position = n
      }
      const parsed = canonicalRule(rest, chains)
      if ("error" in parsed) return parsed.error
      switch (command) {
        case "-A":
          if (found === undefined) return noChain
          found.rules.push({ words: parsed.words })
          found.created = true
          return ok()
        case "-I": {
          if (found === undefined) return noChain
          const at = (position ?? 1) - 1
          if (at > found.rules.length) return fail(1, "iptables: Index of insertion too big.")
          found.rules.splice(at, 0, { words: parsed.words })
          found.created = true
          return ok()
        }
        case "-C":
          if (found === undefined) return badRule
          return found.rules.some((r) => sameRule(r.words, parsed.words)) ? ok() : badRule
        default: {
          if (found === undefined) return badRule
          const index = found.rules.findIndex((r) => sameRule(r.words, parsed.words))
          if (index === -1) return badRule
          found.rules.splice(index, 1)
          return ok()
        }
      }
    })

// ---------------------------------------------------------------------------
// DNS

const normalizeName = (name: string) => name.toLowerCase().replace(/\.$/, "")

const dnsCause = (code: string, syscall: string, hostname: string) =>
  Object.assign(new Error(`${syscall} ${code} ${hostname}`), { code, syscall, hostname })

const reasonOf: Record<string, Dns.DnsErrorReason> = {
  ENOTFOUND: "NotFound",
  ENODATA: "NotFound",
  ETIMEOUT: "Timeout",
  ESERVFAIL: "ServerFailure",
  EREFUSED: "Refused",
  ECONNREFUSED: "Refused",
  ECANCELLED: "Unknown"
}

const syscallOf = (type: Dns.RecordType) => `query${type.charAt(0)}${type.slice(1).toLowerCase()}`

/**
 * A `Dns` whose queries go to the simulated server at `server`, each waiting
 * at most `timeoutMs`; queries fail with ECANCELLED once `closed` says so.
 */
const resolverFor = (
  state: State,
  server: string,
  timeoutMs: number,
  cancelled: Deferred.Deferred<void>
): Dns.Dns["Service"] => {
  const query = (name: string, type: Dns.RecordType) =>
    Effect.gen(function* () {
      const hostname = normalizeName(name)
      const failWith = (code: string) => {
        state.queries.push({ server, name: hostname, type, outcome: code })
        return Effect.fail(
          new Dns.DnsError({
            reason: reasonOf[code] ?? "Unknown",
            method: "resolve",
            hostname,
            recordType: type,
            cause: dnsCause(code, syscallOf(type), hostname)
          })
        )
      }
      if (Deferred.isDoneUnsafe(cancelled)) return yield* failWith("ECANCELLED")
      const noAnswer = Effect.gen(function* () {
        const winner = yield* Effect.raceFirst(
          Effect.as(Deferred.await(cancelled), "ECANCELLED"),
          Effect.as(Effect.sleep(timeoutMs), "ETIMEOUT")
        )
        return yield* failWith(winner)
      })
      if (!isLocal(state, server)) return yield* noAnswer
      const listener = state.servers.find((s) => s.running && s.addresses.includes(server))
      if (listener === undefined) return yield* failWith("ECONNREFUSED")
      const records = listener.records.get(hostname)
      if (records !== undefined) {
        const ofType = records.filter((r) => r._tag === type)
        if (ofType.length === 0) return yield* failWith("ENODATA")
        state.queries.push({ server, name: hostname, type, outcome: "answer" })
        return ofType
      }
      switch (listener.unknownNames) {
        case "nxdomain":
          return yield* failWith("ENOTFOUND")
        case "servfail":
          return yield* failWith("ESERVFAIL")
        case "silent":
          return yield* noAnswer
        default:
          return yield* failWith("EREFUSED")
      }
    })
  return Dns.make({
    // Unlike NodeDns (whose lookup uses the system resolver), lookups ask the
    // same server: the simulated host has no other resolver.
    lookup: (host, family) =>
      Effect.gen(function* () {
        const types: ReadonlyArray<"A" | "AAAA"> =
          family === "IPv4" ? ["A"] : family === "IPv6" ? ["AAAA"] : ["A", "AAAA"]
        const out: Array<NetAddress.IpAddress> = []
        let firstError: Dns.DnsError | undefined
        for (const type of types) {
          const result = yield* Effect.result(query(host, type))
          if (result._tag === "Success") {
            for (const r of result.success) if (r._tag === "A" || r._tag === "AAAA") out.push(r.address)
          } else firstError ??= result.failure
        }
        if (out.length === 0 && firstError !== undefined) {
          return yield* Effect.fail(
            new Dns.DnsError({ ...firstError, method: "lookup", hostname: firstError.hostname, recordType: undefined })
          )
        }
        return out
      }),
    resolve: (name, type) => query(name, type)
  })
}

// ---------------------------------------------------------------------------
// the simulation

/**
 * The simulated network: its interpreters, its inspection service and its `DnsResolvers`.
 *
 * @since 0.1.0
 */
export interface Simulation {
  readonly service: MemoryNetworkService
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
        return Effect.succeed(fail(slot.fault.exitCode, slot.fault.stderr))
      }
      return inner(args, stdin)
    })

const startServer = (state: State, addresses: ReadonlyArray<string>, options?: DnsServerOptions) =>
  Effect.gen(function* () {
    for (const address of addresses) {
      if (!isLocal(state, address)) return yield* new DnsServerError({ reason: "AddressNotAvailable", address })
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
export const make = (options?: Options): Effect.Effect<Simulation> =>
  Effect.sync(() => {
    const state = makeState(options)
    const ip = ipInterpreter(state)
    const iptables = iptablesInterpreter(state)
    const service: MemoryNetworkService = {
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
        })
    }
    return {
      service,
      ip: withFaults(state, "ip", ip),
      iptables: withFaults(state, "iptables", iptables),
      resolvers
    }
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

const fixtureDie = (what: string, out: Outcome) =>
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
