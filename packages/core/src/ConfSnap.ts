/**
 * Which host paths make up the configuration that both stacks of a node
 * share (the Go package's `confsnap`): what an upgrade rewrites in place and
 * a rollback must put back. `Snapshot.take` saves {@link DefaultPaths};
 * {@link pathsFor} adds what a mode whose node stack writes more of the host
 * in place also changes.
 *
 * Boundary: pure data. A path here is a host path (joined below a host root
 * by `Snapshot`), a file or a directory (taken recursively); a path that does
 * not exist is recorded as absent, so a rollback removes what an upgrade
 * created there.
 *
 * @since 0.1.0
 */

/**
 * The shared configuration, each entry with the reason it is here:
 *
 * - `/etc/systemd/system/kubelet.service`, `kubelet.service.d`: the kubelet
 *   unit and its drop-ins (flags, environment files, the kubeadm-style
 *   `10-*.conf`). An upgrade changes the flags a new kubelet understands;
 *   the old kubelet fails to start with them.
 * - `/etc/systemd/system/containerd.service`, `containerd.service.d`: the
 *   same for containerd (its binary path, limits, `Delegate=`).
 * - `/etc/containerd`: `config.toml` (its schema `version` changes between
 *   containerd majors, and an old containerd refuses a new config) and
 *   `certs.d` registry hosts.
 * - `/etc/default/kubelet`: `KUBELET_EXTRA_ARGS` and friends, read by the
 *   kubelet unit's `EnvironmentFile=`.
 * - `/etc/kubernetes`: kubeconfigs, static pod manifests and the kubelet
 *   configuration file, whose `apiVersion` and fields follow the kubelet
 *   version. Its PKI is excluded (see {@link Exclude}).
 * - `/etc/sysctl.d/k8s.conf`, `/etc/modules-load.d/k8s.conf`: the
 *   forwarding and bridge-netfilter settings a node stack needs, and the
 *   modules (`overlay`, `br_netfilter`) those sysctls depend on, under the
 *   names the Kubernetes container runtime guide gives them.
 * - `/etc/systemd/resolved.conf.d`: resolved drop-ins; LocalDNS points the
 *   host's stub resolver at its listeners with one.
 * - `/etc/systemd/network`: networkd `.netdev`/`.network` files; LocalDNS's
 *   interface and its addresses are declared there.
 *
 * @category models
 * @since 0.1.0
 */
export const DefaultPaths: ReadonlyArray<string> = [
  "/etc/systemd/system/kubelet.service",
  "/etc/systemd/system/kubelet.service.d",
  "/etc/systemd/system/containerd.service",
  "/etc/systemd/system/containerd.service.d",
  "/etc/containerd",
  "/etc/default/kubelet",
  "/etc/kubernetes",
  "/etc/sysctl.d/k8s.conf",
  "/etc/modules-load.d/k8s.conf",
  "/etc/systemd/resolved.conf.d",
  "/etc/systemd/network"
]

/**
 * Paths never copied while a directory is walked, nor removed or rewritten
 * by a restore: `/etc/kubernetes/pki` holds the cluster CA and private keys.
 * A snapshot directory is no place for private keys, and certificates
 * rotated while an upgrade ran must survive its rollback. A path listed
 * explicitly is still taken; exclusion applies to what a walk finds.
 *
 * @category models
 * @since 0.1.0
 */
export const Exclude: ReadonlyArray<string> = ["/etc/kubernetes/pki"]

/**
 * What a `container` mode also writes on the host: the CNI network
 * configuration, which the containerised stack reads from the host's
 * `/etc/cni/net.d` (a rollback must not leave a config for the new stack's
 * CNI version behind).
 */
const ContainerPaths: ReadonlyArray<string> = ["/etc/cni/net.d"]

/**
 * What the `none` mode also writes in place: the CNI configuration as for
 * `container`, the binaries an in-place install replaces (kubelet, kubectl,
 * containerd, its shim, `ctr`, runc, the CNI plugins; a rollback to the old
 * configuration with the new binaries is a mixed node), and crictl's endpoint
 * configuration. These make the snapshot as large as the binaries (a few
 * hundred MB), which is the price of rolling them back.
 */
const NonePaths: ReadonlyArray<string> = [
  ...ContainerPaths,
  "/usr/local/bin/kubelet",
  "/usr/local/bin/kubectl",
  "/usr/local/bin/containerd",
  "/usr/local/bin/containerd-shim-runc-v2",
  "/usr/local/bin/ctr",
  "/usr/local/sbin/runc",
  "/opt/cni/bin",
  "/etc/crictl.yaml"
]

/**
 * The paths to snapshot for `mode`: {@link DefaultPaths}, plus what that
 * mode's node stack writes more of the host in place. Pass the result to
 * `Snapshot.takeOf`. The isolation modes, in the Go package's words: `nspawn`
 * runs the node stack in a systemd-nspawn machine (only the shared
 * configuration is on the host), `container` runs it in a container that uses
 * the host's CNI configuration, `none` runs it directly on the host, binaries
 * included.
 *
 * @example
 * ```ts
 * import { ConfSnap, Snapshot } from "@hostnode/core"
 *
 * // A node whose stack runs in a container on the host's CNI configuration: that configuration is rolled back too.
 * const paths = ConfSnap.pathsFor("container")
 * const beforeUpgrade = Snapshot.takeOf({ dir: "/etc/hostnode/snapshot", paths })
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const pathsFor = (mode: "nspawn" | "container" | "none"): ReadonlyArray<string> => {
  switch (mode) {
    case "nspawn":
      return DefaultPaths
    case "container":
      return [...DefaultPaths, ...ContainerPaths]
    case "none":
      return [...DefaultPaths, ...NonePaths]
  }
}
