/**
 * The real `DnsResolvers`: Effect's `Dns` service from
 * `@effect/platform-node`, one `node:dns` resolver per name server. Each
 * resolver asks only its server, once per query, with the given timeout, and
 * is cancelled when its scope closes. The c-ares codes of a failed query are
 * read into core's `DnsResolvers.QueryFailure` here: they stay in this layer.
 *
 * `layerIn(pid)` asks from another network namespace (a container's).
 *
 * @since 0.1.0
 */
import { NodeDns } from "@effect/platform-node"
import type { DnsResolvers } from "@hostnode/core"
import { DnsResolvers as Resolvers } from "@hostnode/core"
import { type Duration, Effect, Layer, type Scope } from "effect"
import { pin } from "./internal/container/pin.ts"
import * as Internal from "./internal/dns.ts"

/**
 * The `DnsResolvers` of this machine. An address that is not an IP address
 * is a defect: listener addresses are validated when the goal state is
 * decoded. A response with any code (NXDOMAIN, REFUSED, ...) surfaces as a
 * `DnsError` whose `cause.code` is the c-ares code (`ENOTFOUND`,
 * `EREFUSED`); no answer is `ETIMEOUT` or `ECONNREFUSED`.
 */
const make: DnsResolvers.DnsResolvers = Resolvers.DnsResolvers.of({
  forServer: (address, options) =>
    NodeDns.make({ nameServers: [address], timeout: options.timeout, tries: 1 }).pipe(Effect.orDie),
  classify: Internal.classify
})

/**
 * The real `DnsResolvers` of this machine: one `node:dns` resolver per name
 * server, asked once per query.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<DnsResolvers.DnsResolvers> = Layer.succeed(Resolvers.DnsResolvers, make)

/**
 * Options of {@link layerIn}.
 *
 * @category models
 * @since 0.2.0
 */
export interface InOptions {
  /** How long making the socket in the namespace may take (default 10 seconds). */
  readonly connectTimeout?: Duration.Input | undefined
}

/**
 * The `DnsResolvers` of the network namespace of host process `pid` (a
 * container's init): a listener on an address of that namespace (LocalDNS's
 * `169.254.10.10` on the container's own `localdns` interface) is reached
 * from there, never from this host's network. The process is pinned when
 * this is made (a pidfd, its network namespace opened as a descriptor, the
 * pidfd asked that it still lives), so a pid the kernel reuses later is
 * never entered, and once the process has exited no socket is made. Node
 * cannot enter another network namespace with its threads, so each
 * resolver's UDP socket is made by a short-lived connector (this Node under
 * `nsenter --net` on that descriptor) and handed over; the sockets stay in
 * that namespace for their whole life. Queries are A and AAAA, sent once
 * each; the response code maps to the same `DnsError` reasons and codes as
 * {@link layer}'s, and are read alike. A socket that cannot be made makes
 * every query of that resolver fail with reason `Unknown` and the
 * connector's words.
 */
const makeIn = (pid: number, options?: InOptions): Effect.Effect<DnsResolvers.DnsResolvers, never, Scope.Scope> =>
  Effect.map(Effect.result(pin(pid)), (pinned) =>
    Internal.makeInNamespace(
      pinned._tag === "Success"
        ? { net: pinned.success.fds.net, gone: pinned.success.gone }
        : { net: -1, gone: () => ({ detail: `process ${pid}: ${pinned.failure.detail}` }) },
      options
    )
  )

/**
 * The `DnsResolvers` of the network namespace of host process `pid` (a
 * container's init), pinned for the layer's lifetime: a pid the kernel
 * reuses later is never entered, and once the process has exited no socket
 * is made.
 *
 * @category layers
 * @since 0.2.0
 */
export const layerIn = (pid: number, options?: InOptions): Layer.Layer<DnsResolvers.DnsResolvers> =>
  Layer.effect(Resolvers.DnsResolvers, makeIn(pid, options))
