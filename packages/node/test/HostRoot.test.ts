/**
 * The host-root suite on the real host: real tmpfs mounts in the private
 * mount namespace, NodeFileSystem, the in-process Mounter.
 */

import { describe } from "@effect/vitest"
import { Gate } from "@hostnode/test"
import { HostRootConformance } from "@hostnode/test/conformance"
import { realHost } from "./realHost.ts"

const gate = Gate.check("host roots and prefixes on real mounts", [
  "root",
  "private-mount-namespace",
  { command: "mount" }
])

const host = realHost()

describe.skipIf(gate.skip)("host roots and prefixes on real mounts in a private mount namespace", () => {
  HostRootConformance.suite("NodeMounter.layer", host, { runs: Gate.loops(100) })
})
