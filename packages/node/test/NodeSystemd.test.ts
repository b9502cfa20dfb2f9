import { NodeServices } from "@effect/platform-node"
import { assert, describe, layer } from "@effect/vitest"
import { Systemd } from "@hostnode/core"
import { NodeSystemd } from "@hostnode/node"
import { Gate, SystemdMachine } from "@hostnode/test"
import { SystemdConformance } from "@hostnode/test/conformance"
import { Effect, Layer } from "effect"

const gate = Gate.check("real systemd", [
  "root",
  "pid-namespace",
  { command: "/lib/systemd/systemd", args: ["--version"] },
  { command: "nsenter", args: ["--version"] }
])

// One machine for the whole file: booted once, killed by pid when the layer closes.
const machine = SystemdMachine.layer.pipe(Layer.provide(NodeServices.layer), Layer.orDie)
const host = Layer.unwrap(
  Effect.map(Effect.service(SystemdMachine.SystemdMachine), (m) => NodeSystemd.layerIn(m.pid))
).pipe(Layer.provideMerge(machine), Layer.provideMerge(NodeServices.layer))

describe.skipIf(gate.skip)("NodeSystemd against a real systemd", () => {
  SystemdConformance.suite(
    "NodeSystemd.layerIn (systemctl through nsenter)",
    host,
    Effect.map(Effect.service(SystemdMachine.SystemdMachine), (m) => m.hostRoot)
  )

  layer(host, { timeout: "60 seconds", excludeTestServices: true })("the test machine", (it) => {
    it.effect("booted on a throwaway root: its /tmp is not the host's", () =>
      Effect.gen(function* () {
        const m = yield* SystemdMachine.SystemdMachine
        const systemd = yield* Systemd.Systemd
        assert.strictEqual(yield* systemd.isActive(SystemdMachine.BootTarget), "active")
        yield* Effect.logInfo(`test systemd booted in ${m.bootMillis} ms`)
        assert.isBelow(m.bootMillis, 30_000)
      })
    )
  })
})
