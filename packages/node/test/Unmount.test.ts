import type { NodeServices } from "@effect/platform-node"
import { describe } from "@effect/vitest"
import type { Directory, Mounter } from "@hostnode/core"
import { NodeMounter } from "@hostnode/node"
import { Gate } from "@hostnode/test"
import { UnmountConformance } from "@hostnode/test/conformance"
import type { Layer } from "effect"
import { realHost } from "./realHost.ts"

const gate = Gate.check("unmount operations (real mounts)", ["root", "private-mount-namespace", { command: "mount" }])

const host = <E>(mounter: Layer.Layer<Mounter.Mounter, E, NodeServices.NodeServices | Directory.Directories>) =>
  realHost({ mounter })

describe.skipIf(gate.skip)("unmount operations on real mounts", () => {
  UnmountConformance.suite("NodeMounter.layer", host(NodeMounter.layer))
  UnmountConformance.suite("NodeMounter.layerCommand", host(NodeMounter.layerCommand()))
})
