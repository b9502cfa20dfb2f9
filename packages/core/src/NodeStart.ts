/**
 * The node start goal state: what a node needs to start and join its cluster.
 * Its name, the API server, how the kubelet authenticates (a tagged union:
 * bootstrap token, a direct kubeconfig, or an exec credential plugin) and,
 * when the node uses LocalDNS, the listener addresses that must answer before
 * the kubelet starts.
 *
 * Boundary: a Schema, its decoders and pure accessors. The operations that act
 * on a node start (`LocalDns`, the identity reset) live in their own modules.
 *
 * @since 0.1.0
 */
import { Effect, Result, Schema } from "effect"
import { NetAddress } from "effect/net"
import { AbsolutePath } from "./AgentConfig.ts"
import * as ConfigDecode from "./internal/configFile/decode.ts"

/**
 * The LocalDNS node listener: the address pods' and the node's own DNS traffic for the node goes to (AKS).
 *
 * @since 0.1.0
 */
export const NodeListener = "169.254.10.10"

/**
 * The LocalDNS cluster listener: the address CoreDNS-bound traffic goes to (AKS).
 *
 * @since 0.1.0
 */
export const ClusterListener = "169.254.10.11"

/**
 * An IPv4 address in canonical dotted-quad form (`169.254.10.10`; not
 * `169.254.010.10`), the form `ip` and `iptables` print back, so addresses
 * can be compared as strings.
 *
 * @since 0.1.0
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
 *
 * @since 0.2.0
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
 * The LocalDNS listeners of a node. Both default to the AKS addresses; they
 * must differ, since each is waited on as its own listener.
 *
 * @since 0.1.0
 */
export const LocalDnsListeners = Schema.Struct({
  nodeListener: ListenerAddress.pipe(Schema.withDecodingDefaultKey(Effect.succeed(NodeListener))),
  clusterListener: ListenerAddress.pipe(Schema.withDecodingDefaultKey(Effect.succeed(ClusterListener)))
}).check(
  Schema.makeFilter((l: { readonly nodeListener: string; readonly clusterListener: string }) =>
    l.nodeListener === l.clusterListener
      ? { path: ["clusterListener"], issue: `must differ from nodeListener (${l.nodeListener})` }
      : undefined
  )
)

/**
 * The LocalDNS listeners of a node.
 *
 * @since 0.1.0
 */
export type LocalDnsListeners = typeof LocalDnsListeners.Type

/**
 * A bootstrap token as kubeadm writes it: `[a-z0-9]{6}.[a-z0-9]{16}` (token id, then secret).
 *
 * @since 0.1.0
 */
export const BootstrapTokenValue = Schema.String.check(
  Schema.makeFilter(
    (s: string) =>
      /^[a-z0-9]{6}\.[a-z0-9]{16}$/.test(s) ? undefined : "is not a bootstrap token ([a-z0-9]{6}.[a-z0-9]{16})",
    { title: "BootstrapToken" }
  )
)

/**
 * Where the kubelet's bootstrap kubeconfig lives unless the goal state says otherwise.
 *
 * @since 0.1.0
 */
export const DefaultBootstrapKubeconfig = "/var/lib/kubelet/bootstrap-kubeconfig"

/**
 * How the kubelet authenticates to the API server.
 *
 * - `BootstrapToken`: TLS bootstrapping. The kubelet requests a client
 *   certificate with the token and rotates it; a repave must remove the old
 *   rotated certificates (`resetKubeletIdentity` acts only on this mode). The
 *   token is `Redacted`: it never appears in logs or error messages.
 * - `Kubeconfig`: a kubeconfig given directly, rewritten by configuration.
 * - `ExecCredential`: a client-go credential plugin.
 *
 * @since 0.1.0
 */
export const AuthMode = Schema.TaggedUnion({
  BootstrapToken: {
    token: Schema.RedactedFromValue(BootstrapTokenValue),
    bootstrapKubeconfig: AbsolutePath.pipe(Schema.withDecodingDefaultKey(Effect.succeed(DefaultBootstrapKubeconfig)))
  },
  Kubeconfig: {
    path: AbsolutePath
  },
  ExecCredential: {
    command: Schema.NonEmptyString,
    args: Schema.Array(Schema.String).pipe(Schema.withDecodingDefaultKey(Effect.succeed([]))),
    apiVersion: Schema.Literals(["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"]).pipe(
      Schema.withDecodingDefaultKey(Effect.succeed("client.authentication.k8s.io/v1" as const))
    ),
    env: Schema.Record(Schema.String, Schema.String).pipe(Schema.withDecodingDefaultKey(Effect.succeed({})))
  }
})

/**
 * How the kubelet authenticates.
 *
 * @since 0.1.0
 */
export type AuthMode = typeof AuthMode.Type

/**
 * A Kubernetes node name: a DNS-1123 subdomain (lowercase, at most 253 characters).
 *
 * @since 0.1.0
 */
export const NodeName = Schema.String.check(
  Schema.makeFilter(
    (s: string) =>
      s.length === 0
        ? "is empty"
        : s.length > 253
          ? `is ${s.length} characters long, more than 253`
          : /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(s)
            ? undefined
            : "is not a DNS-1123 subdomain (lowercase letters, digits, '-' and '.')",
    { title: "NodeName" }
  )
)

/**
 * The API server's URL: `https://host[:port][/path]`.
 *
 * @since 0.1.0
 */
export const ApiServerUrl = Schema.String.check(
  Schema.makeFilter(
    (s: string) => (/^https:\/\/[^\s/?#]+(\/[^\s]*)?$/.test(s) ? undefined : "is not an https:// URL"),
    { title: "ApiServerUrl" }
  )
)

/**
 * The node start goal state. `localDns` absent means the node does not use
 * LocalDNS: there is nothing to set up and nothing to wait for.
 *
 * @since 0.1.0
 */
export const NodeStart = Schema.Struct({
  nodeName: NodeName,
  apiServer: ApiServerUrl,
  auth: AuthMode,
  localDns: Schema.optionalKey(LocalDnsListeners)
})

/**
 * The node start goal state.
 *
 * @since 0.1.0
 */
export type NodeStart = typeof NodeStart.Type

/**
 * What the errors call this document.
 *
 * @since 0.1.0
 */
export const What = "NodeStart"

/**
 * Decodes a node start from an already parsed value; `file` is named in errors.
 *
 * @since 0.1.0
 */
export const decode = Effect.fn("NodeStart.decode")(function* (input: unknown, file = "") {
  return yield* ConfigDecode.decodeUnknown(NodeStart, What, file)(input)
})

/**
 * Decodes a node start from JSON text; `file` is named in errors.
 *
 * @since 0.1.0
 */
export const decodeJson = Effect.fn("NodeStart.decodeJson")(function* (text: string, file = "") {
  return yield* ConfigDecode.decodeJson(NodeStart, What, file)(text)
})

/**
 * True when the kubelet bootstraps with a token, the only mode whose rotated client credentials a repave removes.
 *
 * @since 0.1.0
 */
export const usesBootstrapToken = <N extends Pick<NodeStart, "auth">>(
  nodeStart: N
): nodeStart is N & { readonly auth: Extract<AuthMode, { readonly _tag: "BootstrapToken" }> } =>
  nodeStart.auth._tag === "BootstrapToken"

/**
 * Which LocalDNS listener an address is, as errors and logs name it.
 *
 * @since 0.1.0
 */
export type ListenerName = "node" | "cluster"

/**
 * One LocalDNS listener: its role and its address.
 *
 * @since 0.1.0
 */
export interface Listener {
  readonly name: ListenerName
  readonly address: string
}

/**
 * The LocalDNS listeners of `nodeStart`, node listener first; empty when the node does not use LocalDNS.
 *
 * @since 0.1.0
 */
export const listeners = (nodeStart: NodeStart): ReadonlyArray<Listener> =>
  nodeStart.localDns === undefined
    ? []
    : [
        { name: "node", address: nodeStart.localDns.nodeListener },
        { name: "cluster", address: nodeStart.localDns.clusterListener }
      ]
