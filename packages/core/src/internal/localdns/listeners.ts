/**
 * The LocalDNS listeners of a node start, decoded, for the phases.
 *
 * @since 0.4.0
 */
import { Effect, Schema } from "effect"
import { BadListener, LocalDnsError } from "../../LocalDnsError.ts"
import type * as NodeStart from "../../NodeStart.ts"
import { type Listener, ListenerAddress } from "../nodeStart.ts"

/**
 * The listeners of `nodeStart`, decoded (`NodeStart.NodeStart`'s `localDns`): what
 * the setup, the cleanup of a setup that failed and the wait all act on. A
 * node start built in code rather than decoded from a goal state is checked
 * here too: a bad address is a {@link LocalDnsError} with reason
 * `InvalidListener`, two listeners with one address `SameAddress`.
 */
export const decode = Effect.fn("LocalDns.decodeListeners")(function* (nodeStart: NodeStart.NodeStart) {
  const given = nodeStart.localDns
  const none: ReadonlyArray<Listener> = []
  if (given === undefined) return none
  const one = (listener: Listener["name"], address: unknown) =>
    Schema.decodeUnknownEffect(ListenerAddress)(address).pipe(
      Effect.mapError(
        (e) =>
          new LocalDnsError({
            reason: new BadListener({ _tag: "InvalidListener", listener, address: String(address), problem: e.message })
          })
      )
    )
  const node = yield* one("node", given.nodeListener)
  const cluster = yield* one("cluster", given.clusterListener)
  if (node === cluster) {
    return yield* new LocalDnsError({
      reason: new BadListener({ _tag: "SameAddress", listener: "cluster", address: cluster })
    })
  }
  const decoded: ReadonlyArray<Listener> = [
    { name: "node", address: node },
    { name: "cluster", address: cluster }
  ]
  return decoded
})
