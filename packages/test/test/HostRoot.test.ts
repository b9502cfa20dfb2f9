/**
 * The host-root suite on the simulated host, with its own mounts.
 */
import { Gate, MemoryHost, MountFixture } from "@hostnode/test"
import { HostRootConformance } from "@hostnode/test/conformance"
import { Layer } from "effect"

HostRootConformance.suite("MemoryHost", MountFixture.layerMemory.pipe(Layer.provideMerge(MemoryHost.layer())), {
  runs: Gate.loops(300)
})
