/**
 * The repave suites on the simulated host: the resets, the mount suite
 * (`teardownKubeletDir` and `SafeRemove` with tmpfs and bind mounts) and the
 * property suite, with MemoryHost's own mounts (`MountFixture.layerMemory`).
 */
import { MemoryHost, MountFixture } from "@hostnode/test"
import { RepaveConformance } from "@hostnode/test/conformance"
import { Layer } from "effect"

const host = () => MountFixture.layerMemory.pipe(Layer.provideMerge(MemoryHost.layer()))

RepaveConformance.resets("MemoryHost", host())
RepaveConformance.mounts("MemoryHost", host())
RepaveConformance.properties("MemoryHost", host(), { runs: 200 })
