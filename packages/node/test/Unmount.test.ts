import { NodeServices } from "@effect/platform-node"
import { describe } from "@effect/vitest"
import type { Mounter } from "@hostnode/core"
import { NodeMounter } from "@hostnode/node"
import { Gate, MountFixture } from "@hostnode/test"
import { UnmountConformance } from "@hostnode/test/conformance"
import { Layer } from "effect"

const gate = Gate.check("unmount operations (real mounts)", ["root", "private-mount-namespace", { command: "mount" }])

const host = <E>(mounter: Layer.Layer<Mounter.Mounter, E, NodeServices.NodeServices>) =>
  Layer.mergeAll(mounter, MountFixture.layerReal).pipe(Layer.provideMerge(NodeServices.layer), Layer.orDie)

describe.skipIf(gate.skip)("unmount operations on real mounts", () => {
  UnmountConformance.suite("NodeMounter.layer", host(NodeMounter.layer))
  UnmountConformance.suite("NodeMounter.layerCommand", host(NodeMounter.layerCommand()))
})
