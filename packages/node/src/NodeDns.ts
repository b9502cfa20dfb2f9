/**
 * The real `DnsResolvers`: Effect's `Dns` service from
 * `@effect/platform-node`, one `node:dns` resolver per name server. Each
 * resolver asks only its server, once per query, with the given timeout, and
 * is cancelled when its scope closes. A response with any code (NXDOMAIN,
 * REFUSED, ...) surfaces as a `DnsError` whose `cause.code` is the c-ares code
 * (`ENOTFOUND`, `EREFUSED`), which is what `DnsResolvers.isAnswer` reads; no
 * answer is `ETIMEOUT` or `ECONNREFUSED`.
 *
 * @since 0.1.0
 */
import { NodeDns } from "@effect/platform-node"
import { DnsResolvers } from "@hostnode/core"
import { Effect, Layer } from "effect"

/**
 * The `DnsResolvers` of this machine. An address that is not an IP address
 * is a defect: listener addresses are validated when the goal state is
 * decoded.
 *
 * @since 0.1.0
 */
export const make: DnsResolvers.DnsResolvers = DnsResolvers.DnsResolvers.of({
  forServer: (address, options) =>
    NodeDns.make({ nameServers: [address], timeout: options.timeout, tries: 1 }).pipe(Effect.orDie)
})

/**
 * The real `DnsResolvers` (see {@link make}).
 *
 * @since 0.1.0
 */
export const layer: Layer.Layer<DnsResolvers.DnsResolvers> = Layer.succeed(DnsResolvers.DnsResolvers, make)
