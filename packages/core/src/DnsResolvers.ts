/**
 * The `DnsResolvers` service: Effect's `Dns` service, one per name server.
 * Waiting for LocalDNS needs queries sent to one listener address at a time,
 * so this service makes a `Dns` that asks exactly one server. The real
 * implementation is @hostnode/node's `NodeDns`; the simulated host answers
 * from its own state.
 *
 * Boundary: making per-server resolvers and saying, as a typed
 * {@link QueryFailure}, whether a failed query still got a response; only the
 * implementation knows its resolver's error codes, so it classifies them.
 *
 * @since 0.1.0
 */
import { Context, type Duration, type Effect, Schema, type Scope } from "effect"
import type { Dns } from "effect/net"

/**
 * What a failed query amounts to, told by its `_tag`; `detail` is how the
 * resolver put it (`NotFound (ENOTFOUND)`, `Refused (ECONNREFUSED)`), for
 * logs and errors:
 * - `Responded`: the server still sent a DNS response, whatever its response
 *   code: NXDOMAIN and NODATA, SERVFAIL, a response that could not be used
 *   (FORMERR), NOTIMP, REFUSED. It proves something listens and speaks DNS.
 * - `NoResponse`: no DNS response came: a timeout, an unreachable or closed
 *   port, a cancelled query, or anything the resolver cannot classify.
 *
 * @category models
 * @since 0.3.0
 */
export class QueryFailure extends Schema.Class<QueryFailure>("@hostnode/core/DnsResolvers/QueryFailure")({
  _tag: Schema.Literals(["Responded", "NoResponse"]),
  detail: Schema.String
}) {}

/**
 * Makes `Dns` services that ask one name server.
 *
 * @category services
 * @since 0.1.0
 */
export interface DnsResolvers {
  /**
   * A `Dns` whose queries go only to `address` (an IPv4 or IPv6 address,
   * port 53), each tried once with `timeout`. It lives as long as the scope;
   * closing the scope cancels its pending queries.
   */
  readonly forServer: (
    address: string,
    options: {
      /** How long one query waits for the server's answer. A query is tried once. */
      readonly timeout: Duration.Input
    }
  ) => Effect.Effect<Dns.Dns["Service"], never, Scope.Scope>
  /**
   * What a failed query of a resolver made by {@link DnsResolvers.forServer}
   * amounts to. `Dns.DnsError`'s reason alone cannot tell: `Refused` is both
   * an answer with rcode REFUSED and a server that could not be reached;
   * the resolver's own error code tells them apart, and only the
   * implementation knows its codes.
   */
  readonly classify: (error: Dns.DnsError) => QueryFailure
}

/**
 * The key of the {@link DnsResolvers} service.
 *
 * @category services
 * @since 0.1.0
 */
export const DnsResolvers = Context.Service<DnsResolvers>("@hostnode/core/DnsResolvers")
