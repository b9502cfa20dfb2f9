import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, layer } from "@effect/vitest"
import { HostCommand, Systemd } from "@hostnode/core"
import { NodeSystemd } from "@hostnode/node"
import { Gate, SystemdMachine } from "@hostnode/test"
import { SystemdConformance } from "@hostnode/test/conformance"
import { Effect, FileSystem, Layer } from "effect"

const fixture = fileURLToPath(new URL("./fixtures/restore-in-machine.ts", import.meta.url))

const gate = Gate.check("real systemd", [
  "root",
  "pid-namespace",
  { command: "/lib/systemd/systemd", args: ["--version"] },
  { command: "nsenter", args: ["--version"] }
])

// A machine per block below (each `layer`/suite builds its own and kills it by pid when it closes).
const machine = SystemdMachine.layer.pipe(Layer.provide(NodeServices.layer), Layer.orDie)
const host = Layer.unwrap(
  Effect.map(Effect.service(SystemdMachine.SystemdMachine), (m) => NodeSystemd.layerIn(m.pid))
).pipe(Layer.provideMerge(machine), Layer.provideMerge(NodeServices.layer))

const sessionHost = Layer.unwrap(
  Effect.map(Effect.service(SystemdMachine.SystemdMachine), (m) => NodeSystemd.layerSessionIn(m.pid))
).pipe(Layer.provideMerge(machine), Layer.provideMerge(NodeServices.layer))

const dbusHost = Layer.unwrap(
  Effect.map(Effect.service(SystemdMachine.SystemdMachine), (m) => NodeSystemd.layerDbusIn(m.pid).pipe(Layer.orDie))
).pipe(Layer.provideMerge(machine), Layer.provideMerge(NodeServices.layer))

describe.skipIf(gate.skip)("NodeSystemd against a real systemd", () => {
  SystemdConformance.suite(
    "NodeSystemd.layerDbusIn (D-Bus on the machine's private socket)",
    dbusHost,
    Effect.map(Effect.service(SystemdMachine.SystemdMachine), (m) => m.hostRoot)
  )

  SystemdConformance.suite(
    "NodeSystemd.layerIn (systemctl through nsenter)",
    host,
    Effect.map(Effect.service(SystemdMachine.SystemdMachine), (m) => m.hostRoot)
  )

  SystemdConformance.suite(
    "NodeSystemd.layerSessionIn (systemctl in one shell entered with nsenter)",
    sessionHost,
    Effect.map(Effect.service(SystemdMachine.SystemdMachine), (m) => m.hostRoot)
  )

  layer(host, { timeout: "60 seconds", excludeTestServices: true })("the test machine", (it) => {
    it.effect("a snapshot restore on the machine's real root ends with a daemon-reload systemd performs", () =>
      Effect.gen(function* () {
        const m = yield* SystemdMachine.SystemdMachine
        const fs = yield* FileSystem.FileSystem
        const systemd = yield* Systemd.Systemd
        const unit = "hn-rollback.service"
        yield* fs.writeFileString(
          `${m.hostRoot}/etc/systemd/system/${unit}`,
          "[Unit]\nDescription=first\n\n[Service]\nExecStart=/bin/sleep infinity\n"
        )
        yield* systemd.daemonReload
        yield* systemd.start(unit)
        // The agent runs inside the machine, where its root is "/": the real root.
        const [head, ...rest] = m.nsenter
        const out = yield* HostCommand.run(head ?? "nsenter", [
          ...rest,
          process.execPath,
          "--conditions=@hostnode/source",
          fixture,
          unit,
          "/var/lib/hostnode-rollback-snapshot"
        ])
        assert.strictEqual(out.exitCode, 0, out.stderr)
        assert.deepStrictEqual(JSON.parse(out.stdout.trim().split("\n").at(-1) ?? "{}"), {
          upgraded: "second",
          restored: true
        })
        // Without the restore's daemon-reload systemd would still run "second"
        // and report that its file changed on disk.
        assert.deepStrictEqual(yield* systemd.show(unit, ["Description", "NeedDaemonReload"]), {
          Description: "first",
          NeedDaemonReload: "no"
        })
        yield* systemd.stop(unit)
      })
    )

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
