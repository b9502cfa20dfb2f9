/**
 * DNS on the simulated host, as `node:dns` (c-ares) reports it: a query to
 * an address answers only when the address is the host's and a running
 * server listens on it; an address of the host where nothing listens
 * refuses at once (`ECONNREFUSED`), one the host does not have times out
 * (`ETIMEOUT`). Failures carry the c-ares code as `cause.code`, and
 * {@link classify} reads those codes, as `NodeDns.layer`'s `classify` does.
 *
 * Internal to `MemoryNetwork`.
 *
 * @since 0.3.0
 */
import { DnsResolvers } from "@hostnode/core"
import { Deferred, Effect } from "effect"
import { Dns, type NetAddress } from "effect/net"
import { isLocal, type State } from "./state.ts"

export const normalizeName = (name: string) => name.toLowerCase().replace(/\.$/, "")

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
export const resolverFor = (
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

/** The codes of a failed query whose server still sent a response (an error response code). */
const respondedCodes: ReadonlySet<string> = new Set(["ENOTFOUND", "ENODATA", "ESERVFAIL", "EREFUSED"])

/** What a failed query of the simulated resolvers amounts to, from its code: `Refused (ECONNREFUSED)` is no response. */
export const classify = (error: Dns.DnsError): DnsResolvers.QueryFailure => {
  const cause = error.cause as { readonly code?: unknown } | undefined
  const code = typeof cause?.code === "string" ? cause.code : undefined
  const detail = code === undefined ? error.reason : `${error.reason} (${code})`
  return code !== undefined && respondedCodes.has(code)
    ? new DnsResolvers.QueryFailure({ _tag: "Responded", detail })
    : new DnsResolvers.QueryFailure({ _tag: "NoResponse", detail })
}
