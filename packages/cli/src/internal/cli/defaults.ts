/**
 * The library's defaults that the command tree's flags and descriptions
 * name, copied here so that `--help` need not load `@hostnode/core`: in the
 * bundled executable its index is shared with the commands' work, and loading
 * it loads every module a command uses. A test
 * (`packages/cli/test/Cli.test.ts`) keeps each equal to the library's.
 */

/** `Paths.Node.CniConfDir`. */
export const CniConfDir = "/etc/cni/net.d"

/** `Paths.Node.CniStateDir`. */
export const CniStateDir = "/var/lib/cni"

/** `NodeStart.Defaults.nodeListener`. */
export const NodeListener = "169.254.10.10"

/** `NodeStart.Defaults.clusterListener`. */
export const ClusterListener = "169.254.10.11"

/** `NodeStart.Defaults.bootstrapKubeconfig`. */
export const DefaultBootstrapKubeconfig = "/var/lib/kubelet/bootstrap-kubeconfig"

/** `Repave.KubeletPaths.podsDir`. */
export const KubeletPodsDir = "/var/lib/kubelet/pods"
