/** The vocabulary of the simulated network: links, DNS servers and queries, command faults. */
import type { Effect } from "effect"
import type { Dns } from "effect/net"

/**
 * A link kind the simulated kernel can create.
 */
export type LinkKind = "dummy" | "bridge" | "veth"

/**
 * A link as the simulated kernel holds it.
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
 */
export type UnknownNames = "refused" | "nxdomain" | "servfail" | "silent"

/**
 * Options of {@link MemoryNetwork.startDnsServer}.
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
 * One DNS query, for inspection: the server asked, the name, the type and what came of it.
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
