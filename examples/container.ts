/**
 * The same program on a node stack that runs in a container: the container
 * composition provides what `NodeHost.layer` does, for the container whose
 * init is host process PID. Commands, unmounts, files, systemd and DNS are
 * the container's; the program is unchanged.
 */
import { NodeRuntime } from "@effect/platform-node"
import { NodeContainer } from "@hostnode/node"
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
  // Its files below its own root; `{ files: { shared: "/" } }` for a container
  // that shares /var/lib/kubelet and the CNI directories with this host at the same paths.
  Effect.provide(NodeContainer.layer(Number(process.argv[2]))),
  // PID is not a process (or not one whose namespaces this process may enter): nothing was done.
  Effect.catchTag("ContainerError", (e) => Effect.logError(e.message))
)

NodeRuntime.runMain(program)
