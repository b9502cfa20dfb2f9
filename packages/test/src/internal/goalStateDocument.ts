/** A goal state document for the GoalStateSource suite and the tests that need one. */
export const token = "abcdef.0123456789abcdef"
export const sha = (c: string) => c.repeat(64)

/**
 * A goal state file for `slot`, as JSON-ready data; `patch` replaces top-level fields.
 */
export const goalStateDocument = (slot: string, patch: Record<string, unknown> = {}): Record<string, unknown> => ({
  slot,
  kubernetesVersion: "1.31.2",
  artifacts: {
    kubelet: { url: "https://artifacts.example/kubelet", sha256: sha("a") },
    containerd: { url: "https://artifacts.example/containerd", sha256: sha("b") }
  },
  nodeStart: {
    nodeName: "node-a",
    apiServer: "https://10.0.0.1:6443",
    auth: { _tag: "BootstrapToken", token },
    localDns: {}
  },
  ...patch
})
