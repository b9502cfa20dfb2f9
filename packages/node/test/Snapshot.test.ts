/**
 * `Snapshot` on the real file system (NodeFileSystem in scoped temporary
 * directories): the same conformance suite the simulated host passes. Needs
 * root, since the trees have files owned by other users.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { describe } from "@effect/vitest"
import { Gate } from "@hostnode/test"
import { SnapshotConformance } from "@hostnode/test/conformance"

const gate = Gate.check("Snapshot on the real file system", ["root"])

describe.skipIf(gate.skip)("Snapshot on the real file system", () => {
  SnapshotConformance.suite("NodeFileSystem", NodeFileSystem.layer, { runs: 200 })
})
