/**
 * `Snapshot` on the real file system (NodeFileSystem in scoped temporary
 * directories): the same conformance suite the simulated host passes. Needs
 * root, since the trees have files owned by other users.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { describe } from "@effect/vitest"
import { NodeDirectory, NodeHashing } from "@hostnode/node"
import { Gate } from "@hostnode/test"
import { SnapshotConformance } from "@hostnode/test/conformance"
import { Layer } from "effect"

const gate = Gate.check("Snapshot on the real file system", ["root"])

describe.skipIf(gate.skip)("Snapshot on the real file system", () => {
  SnapshotConformance.suite(
    "NodeFileSystem and NodeDirectory",
    Layer.mergeAll(NodeFileSystem.layer, NodeDirectory.layer.pipe(Layer.orDie), NodeHashing.layer),
    { runs: 200 }
  )
})
