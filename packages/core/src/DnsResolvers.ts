/**
 * The `DnsResolvers` service: Effect's `Dns` service, one per name server.
 * `Dns` in context resolves with the host's configured servers; waiting for
 * LocalDNS needs queries sent to one listener address at a time, so this
 * service makes a `Dns` that asks exactly one server. The real implementation
 * (@hostnode/node `NodeDns`) is `@effect/platform-node`'s `NodeDns.make` with
 * that server; the simulated host answers from its own state.
 *
 * Boundary: making per-server resolvers and saying whether a failed query
 * still got an answer. What to ask and how often is the caller's.
 *
 * @since 0.1.0
 */
import { Context, type Duration, type Effect, type Scope } from "effect"
import type { Dns } from "effect/net"

/**
 * Options of {@link DnsResolvers.forServer}.
 *
 * @since 0.1.0
 */
export interface ServerOptions {
  /** How long one query waits for the server's answer. A query is tried once. */
  readonly timeout: Duration.Input
}

/**
 * Makes `Dns` services that ask one name server.
 *
 * @since 0.1.0
 */
export interface DnsResolvers {
  /**
   * A `Dns` whose queries go only to `address` (an IPv4 or IPv6 address,
   * port 53), each tried once with `timeout`. It lives as long as the scope;
   * closing the scope cancels its pending queries.
   */
  readonly forServer: (address: string, options: ServerOptions) => Effect.Effect<Dns.Dns["Service"], never, Scope.Scope>
}

/**
 * The key of the {@link DnsResolvers} service.
 *
 * @since 0.1.0
 */
export const DnsResolvers = Context.Service<DnsResolvers>("@hostnode/core/DnsResolvers")

const codeOf = (cause: unknown): string | undefined =>
  typeof cause === "object" && cause !== null && "code" in cause
    ? String((cause as { readonly code: unknown }).code).replace(/^DNS_/, "")
    : undefined

/**
 * True when a failed query still got a DNS response from the server, whatever
 * its response code: NXDOMAIN and NODATA (`NotFound`), SERVFAIL, a response
 * that could not be used (`InvalidResponse`, FORMERR), NOTIMP, and REFUSED.
 * Those prove something is listening and speaking DNS. A timeout, an
 * unreachable or closed port (`ECONNREFUSED`), and anything unclassified are
 * no answer.
 *
 * `Refused` covers both an answer with rcode REFUSED and a server that could
 * not be reached; only the resolver's own error code (`EREFUSED` vs
 * `ECONNREFUSED`, kept as the error's `cause.code`) tells them apart, so a
 * `Refused` without `EREFUSED` counts as no answer.
 *
 * @since 0.1.0
 */
export const isAnswer = (error: Dns.DnsError): boolean => {
  switch (error.reason) {
    case "NotFound":
    case "ServerFailure":
    case "InvalidResponse":
      return true
    case "Refused":
      return codeOf(error.cause) === "EREFUSED"
    case "Unsupported":
      return codeOf(error.cause) === "ENOTIMP"
    default:
      return false
  }
}

/**
 * A short description of a failed query for logs and errors: the reason and the resolver's code (`Refused (ECONNREFUSED)`).
 *
 * @since 0.1.0
 */
export const describe = (error: Dns.DnsError): string => {
  const code = codeOf(error.cause)
  return code === undefined ? error.reason : `${error.reason} (${code})`
}
