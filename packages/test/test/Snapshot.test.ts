/**
 * `Snapshot` on the simulated host: the conformance suite (500 property
 * cases, and the real-root tests, which only a simulated host can run).
 */
import { MemoryHost } from "@hostnode/test"
import { SnapshotConformance } from "@hostnode/test/conformance"

SnapshotConformance.suite("MemoryHost", MemoryHost.layer(), { runs: 500, realRootIsSafe: true })
