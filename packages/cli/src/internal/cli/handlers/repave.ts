/**
 * `hostnode reset-cni`, `reset-kubelet-identity` and `teardown-kubelet-dir`'s
 * work, loaded only when one of them runs. Boundary: the operations and their
 * output; the flags are declared in `commands.ts`.
 */
import { type NodeStart, Repave } from "@hostnode/core"
import { Redacted } from "effect"
import { keptText, operate, reportText, type Work, withRoot } from "../operate.ts"
import { outsideWarning, propagatedText } from "./unmount.ts"

/** Removes the CNI configuration and state below the host root. */
export const resetCni = (): Work =>
  operate(
    "reset-cni",
    withRoot("reset-cni", (hostRoot) => Repave.resetCniState({ hostRoot })),
    (r) => reportText("CNI state reset", r)
  )

/** Removes the kubelet's rotated client credentials (bootstrap-token mode only). */
export const resetKubeletIdentity = ({
  auth,
  bootstrapKubeconfig
}: {
  readonly auth: "bootstrap-token" | "kubeconfig" | "exec-credential"
  readonly bootstrapKubeconfig: string
}): Work => {
  // The reset reads only the mode's tag and the bootstrap kubeconfig's path;
  // no token or credential command is needed (or read).
  const mode: NodeStart.NodeStart["auth"] =
    auth === "bootstrap-token"
      ? { _tag: "BootstrapToken", token: Redacted.make(""), bootstrapKubeconfig }
      : auth === "kubeconfig"
        ? { _tag: "Kubeconfig", path: Repave.KubeletPaths.kubeconfig }
        : {
            _tag: "ExecCredential",
            command: "unused",
            args: [],
            apiVersion: "client.authentication.k8s.io/v1",
            env: {}
          }
  return operate(
    "reset-kubelet-identity",
    withRoot("reset-kubelet-identity", (hostRoot) => Repave.resetKubeletIdentity({ auth: mode }, { hostRoot })),
    (r) => reportText("kubelet identity reset", r)
  )
}

/** Unmounts and removes each pod's directory, keeping any with a mount that will not go. */
export const teardownKubeletDir = ({ peersOutsideRoot }: { readonly peersOutsideRoot: "detach" | "refuse" }): Work =>
  operate(
    "teardown-kubelet-dir",
    withRoot("teardown-kubelet-dir", (hostRoot) => Repave.teardownKubeletDir({ hostRoot, peersOutsideRoot })),
    (r) => `${reportText("pod directories torn down", r)}${propagatedText(r.propagated)}${keptText(r.kept)}`,
    { kept: (r) => r.kept.length, warnings: (r) => outsideWarning(r.propagated) }
  )
