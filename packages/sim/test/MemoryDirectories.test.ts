/**
 * The Directories conformance suite on the simulated host, its swapper being
 * the adversary seam: the directory and the link exchange names before every
 * operation of the code under test.
 */
import { MemoryAdversary, MemoryHost } from "@hostnode/sim"
import { Gate, MountFixture } from "@hostnode/test"
import { DirectoryConformance } from "@hostnode/test/conformance"
import { Effect, Layer } from "effect"

DirectoryConformance.suite("MemoryHost", MountFixture.layerMemory.pipe(Layer.provideMerge(MemoryHost.layer())), {
  swapper: (a, b) =>
    Effect.acquireRelease(MemoryAdversary.every(MemoryAdversary.exchange(a, b)), (installed) => installed.remove),
  swapRuns: Gate.loops(2_000)
})
