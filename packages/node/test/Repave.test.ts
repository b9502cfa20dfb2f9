import { describe } from "@effect/vitest"
import { Gate } from "@hostnode/test"
import { RepaveConformance } from "@hostnode/test/conformance"
import { realHost } from "./realHost.ts"

const gate = Gate.check("repave on a real host root (real mounts)", [
  "root",
  "private-mount-namespace",
  { command: "mount" }
])

const host = realHost()

describe.skipIf(gate.skip)("repave on real mounts in a private mount namespace", () => {
  RepaveConformance.resets("NodeServices", host)
  RepaveConformance.mounts("NodeMounter.layer", host)
  RepaveConformance.properties("NodeMounter.layer", host, { runs: 30 })
})
