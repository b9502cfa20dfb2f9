import { NodeServices } from "@effect/platform-node"
import { describe } from "@effect/vitest"
import type { Mounter } from "@hostnode/core"
import { NodeMounter } from "@hostnode/node"
import { Gate, MountFixture } from "@hostnode/test"
import { MounterConformance } from "@hostnode/test/conformance"
import { Layer } from "effect"

const gate = Gate.check("NodeMounter (real mounts)", ["root", "private-mount-namespace", { command: "mount" }])

const host = <E>(mounter: Layer.Layer<Mounter.Mounter, E, NodeServices.NodeServices>) =>
  Layer.mergeAll(mounter, MountFixture.layerReal).pipe(Layer.provideMerge(NodeServices.layer), Layer.orDie)

describe.skipIf(gate.skip)("NodeMounter", () => {
  MounterConformance.suite("NodeMounter.layer (umount2 through koffi)", host(NodeMounter.layer))
  MounterConformance.suite("NodeMounter.layerCommand (umount -l)", host(NodeMounter.layerCommand()))
})
