import type { NodeServices } from "@effect/platform-node"
import { describe } from "@effect/vitest"
import type { Directory, Mounter } from "@hostnode/core"
import { NodeMounter } from "@hostnode/node"
import { Gate } from "@hostnode/test"
import { MounterConformance } from "@hostnode/test/conformance"
import type { Layer } from "effect"
import { realHost } from "./realHost.ts"

const gate = Gate.check("NodeMounter (real mounts)", ["root", "private-mount-namespace", { command: "mount" }])

const host = <E>(mounter: Layer.Layer<Mounter.Mounter, E, NodeServices.NodeServices | Directory.Directories>) =>
  realHost({ mounter })

describe.skipIf(gate.skip)("NodeMounter", () => {
  MounterConformance.suite("NodeMounter.layer (umount2 through koffi)", host(NodeMounter.layer))
  MounterConformance.suite("NodeMounter.layerCommand (umount -l)", host(NodeMounter.layerCommand()))
  // Another namespace's mounter pointed at this process's own: the helper enters
  // the namespace the fixture mounts in, so the very suite applies.
  MounterConformance.suite(
    "NodeMounter.layerIn (verified descriptors, nsenter umount)",
    host(NodeMounter.layerIn(process.pid))
  )
})
