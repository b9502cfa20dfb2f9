/**
 * The host-root suite on the real host: real tmpfs mounts in the private
 * mount namespace, NodeFileSystem, the in-process Mounter.
 */
import { NodeServices } from "@effect/platform-node"
import { describe } from "@effect/vitest"
import { NodeMounter } from "@hostnode/node"
import { Gate, MountFixture } from "@hostnode/test"
import { HostRootConformance } from "@hostnode/test/conformance"
import { Layer } from "effect"

const gate = Gate.check("host roots and prefixes on real mounts", [
  "root",
  "private-mount-namespace",
  { command: "mount" }
])

const host = Layer.mergeAll(NodeMounter.layer, MountFixture.layerReal).pipe(
  Layer.provideMerge(NodeServices.layer),
  Layer.orDie
)

describe.skipIf(gate.skip)("host roots and prefixes on real mounts in a private mount namespace", () => {
  HostRootConformance.suite("NodeMounter.layer", host, { runs: Gate.loops(100) })
})
