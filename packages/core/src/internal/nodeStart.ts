/**
 * What `NodeStart` shares with the operations: the listener address schema it
 * decodes with (and `LocalDns` decodes a listener with), and questions asked
 * of a node start. `NodeStart` is the public face.
 *
 * @since 0.4.0
 */
import { Result, Schema } from "effect"
import { NetAddress } from "effect/net"
import type { NodeStart } from "../NodeStart.ts"

/**
 * An IPv4 address in canonical dotted-quad form (`169.254.10.10`; not
 * `169.254.010.10`), the form `ip` and `iptables` print back, so addresses
 * can be compared as strings.
 */
export const Ipv4Address = Schema.String.check(
  Schema.makeFilter(
    (s: string) => {
      const parsed = NetAddress.ipv4FromString(s)
      if (Result.isFailure(parsed)) return "is not an IPv4 address"
      return NetAddress.formatIp(parsed.success) === s ? undefined : "is not in canonical dotted-quad form"
    },
    { title: "Ipv4Address" }
  )
)

/**
 * A LocalDNS listener address: an {@link Ipv4Address} in the IPv4 link-local
 * range `169.254.0.0/16`, where the design puts the listeners (AKS uses
 * `169.254.10.10` and `169.254.10.11`): link-local addresses are never routed
 * off the node, so the NOTRACK rules and the `/32`s on the interface cannot
 * capture traffic meant for a real host.
 */
export const ListenerAddress = Ipv4Address.check(
  Schema.makeFilter(
    (s: string) => (s.startsWith("169.254.") ? undefined : "is not in the link-local range 169.254.0.0/16"),
    {
      title: "ListenerAddress"
    }
  )
)

/**
 * One LocalDNS listener: its role and its address.
 */
export interface Listener {
  /** Which listener the address is, as errors and logs name it. */
  readonly name: "node" | "cluster"
  readonly address: string
}

/**
 * True when the kubelet bootstraps with a token, the only mode whose rotated client credentials a repave removes.
 */
export const usesBootstrapToken = <N extends Pick<NodeStart, "auth">>(
  nodeStart: N
): nodeStart is N & { readonly auth: Extract<NodeStart["auth"], { readonly _tag: "BootstrapToken" }> } =>
  nodeStart.auth._tag === "BootstrapToken"

/**
 * The LocalDNS listeners of `nodeStart`, node listener first; empty when the node does not use LocalDNS.
 */
export const listeners = (nodeStart: NodeStart): ReadonlyArray<Listener> =>
  nodeStart.localDns === undefined
    ? []
    : [
        { name: "node", address: nodeStart.localDns.nodeListener },
        { name: "cluster", address: nodeStart.localDns.clusterListener }
      ]
