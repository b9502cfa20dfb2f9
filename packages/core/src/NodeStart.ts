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
import { Effect, Schema } from "effect"
import { AbsolutePath } from "./internal/agentConfig.ts"
import * as ConfigDecode from "./internal/configFile/decode.ts"
import { ListenerAddress } from "./internal/nodeStart.ts"

/**
 * The values a node start takes where the document leaves a field out.
 *
 * @category models
 * @since 0.4.0
 */
export const Defaults = {
  /** The LocalDNS node listener: the address pods' and the node's own DNS traffic for the node goes to (AKS). */
  nodeListener: "169.254.10.10",
  /** The LocalDNS cluster listener: the address CoreDNS-bound traffic goes to (AKS). */
  clusterListener: "169.254.10.11",
  /** Where the kubelet's bootstrap kubeconfig lives unless the goal state says otherwise. */
  bootstrapKubeconfig: "/var/lib/kubelet/bootstrap-kubeconfig"
} as const

/**
 * The LocalDNS listeners of a node. Both default to the AKS addresses; they
 * must differ, since each is waited on as its own listener.
 */
const LocalDnsListeners = Schema.Struct({
  nodeListener: ListenerAddress.pipe(Schema.withDecodingDefaultKey(Effect.succeed(Defaults.nodeListener))),
  clusterListener: ListenerAddress.pipe(Schema.withDecodingDefaultKey(Effect.succeed(Defaults.clusterListener)))
}).check(
  Schema.makeFilter((l: { readonly nodeListener: string; readonly clusterListener: string }) =>
    l.nodeListener === l.clusterListener
      ? { path: ["clusterListener"], issue: `must differ from nodeListener (${l.nodeListener})` }
      : undefined
  )
)

/**
 * A bootstrap token as kubeadm writes it: `[a-z0-9]{6}.[a-z0-9]{16}` (token id, then secret).
 */
const BootstrapTokenValue = Schema.String.check(
  Schema.makeFilter(
    (s: string) =>
      /^[a-z0-9]{6}\.[a-z0-9]{16}$/.test(s) ? undefined : "is not a bootstrap token ([a-z0-9]{6}.[a-z0-9]{16})",
    { title: "BootstrapToken" }
  )
)

/** How the kubelet authenticates (see `NodeStart.auth`). */
const AuthMode = Schema.TaggedUnion({
  BootstrapToken: {
    token: Schema.RedactedFromValue(BootstrapTokenValue),
    bootstrapKubeconfig: AbsolutePath.pipe(Schema.withDecodingDefaultKey(Effect.succeed(Defaults.bootstrapKubeconfig)))
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
 * A Kubernetes node name: a DNS-1123 subdomain (lowercase, at most 253 characters).
 */
const NodeName = Schema.String.check(
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
 */
const ApiServerUrl = Schema.String.check(
  Schema.makeFilter(
    (s: string) => (/^https:\/\/[^\s/?#]+(\/[^\s]*)?$/.test(s) ? undefined : "is not an https:// URL"),
    { title: "ApiServerUrl" }
  )
)

/**
 * The node start goal state. `localDns` absent means the node does not use
 * LocalDNS: there is nothing to set up and nothing to wait for.
 *
 * @category models
 * @since 0.1.0
 */
export const NodeStart = Schema.Struct({
  nodeName: NodeName,
  apiServer: ApiServerUrl,
  /**
   * How the kubelet authenticates to the API server, told by its `_tag`:
   * - `BootstrapToken`: TLS bootstrapping. The kubelet requests a client
   *   certificate with the token and rotates it; a repave must remove the old
   *   rotated certificates (`resetKubeletIdentity` acts only on this mode). The
   *   token is `Redacted`: it never appears in logs or error messages.
   * - `Kubeconfig`: a kubeconfig given directly, rewritten by configuration.
   * - `ExecCredential`: a client-go credential plugin.
   */
  auth: AuthMode,
  localDns: Schema.optionalKey(LocalDnsListeners)
})

/**
 * The node start goal state.
 *
 * @category models
 * @since 0.1.0
 */
export type NodeStart = typeof NodeStart.Type

/**
 * What the errors call this document.
 */
const What = "NodeStart"

/**
 * Decodes a node start from an already parsed value; `file` is named in errors.
 *
 * @example
 * ```ts
 * import { NodeStart } from "@hostnode/core"
 *
 * // A node that joins with a bootstrap token; the LocalDNS listeners take their defaults.
 * const nodeStart = NodeStart.decode({
 *   nodeName: "node-1",
 *   apiServer: "https://10.0.0.1:6443",
 *   auth: { _tag: "BootstrapToken", token: "abcdef.0123456789abcdef" },
 *   localDns: {}
 * })
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const decode = Effect.fn("NodeStart.decode")(function* (input: unknown, file = "") {
  return yield* ConfigDecode.decodeUnknown(NodeStart, What, file)(input)
})

/**
 * Decodes a node start from JSON text; `file` is named in errors.
 *
 * @example
 * ```ts
 * import { NodeStart } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // The node start a provisioning tool wrote as text: every wrong field is listed, with the file it came from.
 * const nodeStart = (text: string) =>
 *   NodeStart.decodeJson(text, "/etc/hostnode/nodestart.json").pipe(
 *     Effect.tapError((error) => Effect.logError(error.message))
 *   )
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const decodeJson = Effect.fn("NodeStart.decodeJson")(function* (text: string, file = "") {
  return yield* ConfigDecode.decodeJson(NodeStart, What, file)(text)
})
