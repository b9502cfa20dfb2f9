/**
 * The Mounter and unmount conformance suites (the ones the real kernel
 * passes) on the simulated host: `MemoryHost.layer`'s in-memory `Mounter`
 * with `MountFixture.layerMemory`.
 */
import { MemoryHost } from "@hostnode/sim"
import { MountFixture } from "@hostnode/test"
import { MounterConformance, UnmountConformance } from "@hostnode/test/conformance"
import { Layer } from "effect"

const host = () => MountFixture.layerMemory.pipe(Layer.provideMerge(MemoryHost.layer()))

MounterConformance.suite("MemoryHost", host())
UnmountConformance.suite("MemoryHost", host())
