/**
 * The shared scenarios on the simulated node: the same programs the host and
 * container compositions run (packages/node/test/NodeHost.test.ts and
 * NodeContainer.test.ts), on `MemoryNode`.
 */
import { MemoryNode, NodeFixture } from "@hostnode/test"
import { NodeScenarios } from "@hostnode/test/conformance"
import { Layer } from "effect"

NodeScenarios.suite(
  "MemoryNode",
  NodeFixture.layerMemory.pipe(Layer.provideMerge(MemoryNode.layer({ hostUnits: NodeFixture.Units })))
)
