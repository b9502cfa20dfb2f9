/**
 * The well-known host locations a node agent works on, and the defaulting rule
 * teardowns use for them. Pure data: nothing here touches the host.
 *
 * @since 0.1.0
 */

/**
 * The well-known host locations a node agent works on, as host paths (below
 * an operation's host root):
 *
 * - `KubeletDir`: the kubelet state directory. Pod volume mounts propagate to
 *   it, so it is the prefix every unmount and teardown starts from.
 * - `KubeletClientPkiDir`: where the kubelet keeps its rotated client
 *   certificates. Not the cluster CA directory: a repave removes what is here
 *   and keeps the CA.
 * - `CniStateDir`: where CNI plugins keep per-node state, host-local IPAM's
 *   address reservations among it. Stale reservations leak addresses across a
 *   repave, so it is removed.
 * - `CniConfDir`: the CNI network configuration directory. A repave empties it
 *   (the directory stays) so containerd does not report the network ready
 *   with a stale config.
 *
 * @example
 * ```ts
 * import { Paths, Unmount } from "@hostnode/core"
 *
 * // The pod volumes below the kubelet directory; its own mount stays.
 * const program = Unmount.unmountStrictlyBelow([Paths.Node.KubeletDir])
 * ```
 *
 * @since 0.4.0
 * @category models
 */
export const Node = {
  KubeletDir: "/var/lib/kubelet",
  KubeletClientPkiDir: "/var/lib/kubelet/pki",
  CniStateDir: "/var/lib/cni",
  CniConfDir: "/etc/cni/net.d"
} as const

/**
 * `v`, or `def` when `v` is empty or undefined. Teardowns use it for the
 * directories whose zero value means "the real host's".
 *
 * @example
 * ```ts
 * import { Paths } from "@hostnode/core"
 *
 * // A teardown option left empty means the real host's directory.
 * assert.strictEqual(Paths.orDefault("", Paths.Node.KubeletDir), "/var/lib/kubelet")
 * assert.strictEqual(Paths.orDefault("/srv/kubelet", Paths.Node.KubeletDir), "/srv/kubelet")
 * ```
 *
 * @since 0.1.0
 * @category operations
 */
export const orDefault = (v: string | undefined, def: string): string => (v === undefined || v === "" ? def : v)
