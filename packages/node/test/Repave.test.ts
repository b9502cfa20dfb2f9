import { NodeServices } from "@effect/platform-node"
import { describe } from "@effect/vitest"
import { NodeMounter } from "@hostnode/node"
import { Gate, MountFixture } from "@hostnode/test"
import { RepaveConformance } from "@hostnode/test/conformance"
import { Layer } from "effect"

const gate = Gate.check("repave on a real host root (real mounts)", [
  "root",
  "private-mount-namespace",
  { command: "mount" }
])

const host = Layer.mergeAll(NodeMounter.layer, MountFixture.layerReal).pipe(
  Layer.provideMerge(NodeServices.layer),
  Layer.orDie
)

describe.skipIf(gate.skip)("repave on real mounts in a private mount namespace", () => {
  RepaveConformance.resets("NodeServices", host)
  RepaveConformance.mounts("NodeMounter.layer", host)
  RepaveConformance.properties("NodeMounter.layer", host, { runs: 30 })
})
