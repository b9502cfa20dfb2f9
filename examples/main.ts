/**
 * The agent's entry point: the same program on the real host. `NodeHost.layer`
 * provides the FileSystem, the in-process Mounter (umount2), systemd and DNS.
 */
import { NodeRuntime } from "@effect/platform-node"
import { NodeHost } from "@hostnode/node"
import { Effect, Redacted } from "effect"
import { repave } from "./repave.ts"

const program = repave({
  nodeName: "node-a",
  apiServer: "https://10.0.0.1:6443",
  auth: {
    _tag: "BootstrapToken",
    token: Redacted.make(process.env.BOOTSTRAP_TOKEN ?? ""),
    bootstrapKubeconfig: "/var/lib/kubelet/bootstrap-kubeconfig"
  }
}).pipe(
  Effect.tap((report) =>
    Effect.log("repaved").pipe(
      Effect.annotateLogs({ podPaths: report.podPaths, removed: report.removed.length, kept: report.kept.length })
    )
  ),
  Effect.provide(NodeHost.layer)
)

NodeRuntime.runMain(program)
