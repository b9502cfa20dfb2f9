import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, layer } from "@effect/vitest"
import { HostCommand, Systemd } from "@hostnode/core"
import * as Layers from "@hostnode/core/Layers"
import { NodeSystemd } from "@hostnode/node"
import { Gate, SystemdMachine } from "@hostnode/test"
import { SystemdConformance } from "@hostnode/test/conformance"
import * as SystemdObservers from "@hostnode/test/internal/systemdObservers"
import { Clock, Context, Duration, Effect, Fiber, FileSystem, Layer, Schedule } from "effect"

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
  Effect.map(Effect.service(SystemdMachine.SystemdMachine), (m) => NodeSystemd.layer({ pid: m.pid }))
).pipe(Layer.provideMerge(machine), Layer.provideMerge(NodeServices.layer))

const sessionHost = Layer.unwrap(
  Effect.map(Effect.service(SystemdMachine.SystemdMachine), (m) => NodeSystemd.layer({ pid: m.pid, session: true }))
).pipe(Layer.provideMerge(machine), Layer.provideMerge(NodeServices.layer))

// A D-Bus layer that gives up on a call after 2 seconds, for the timeout test.
const impatient = Layer.unwrap(
  Effect.map(Effect.service(SystemdMachine.SystemdMachine), (m) =>
    NodeSystemd.layerDbusIn(m.pid, { timeout: Duration.seconds(2) }).pipe(Layer.orDie)
  )
)

const dbusHost = Layer.unwrap(
  Effect.map(Effect.service(SystemdMachine.SystemdMachine), (m) => NodeSystemd.layerDbusIn(m.pid).pipe(Layer.orDie))
).pipe(Layer.provideMerge(machine), Layer.provideMerge(NodeServices.layer))

// The machine with a system bus: dbus-daemon started in it (systemd connects
// to the bus once dbus.service is up), and the D-Bus layer on the bus socket.
const busGate = Gate.check("real systemd with a system bus", [
  "root",
  "pid-namespace",
  { command: "/lib/systemd/systemd", args: ["--version"] },
  { command: "dbus-daemon", args: ["--version"] }
])
const withBus = Layer.effectDiscard(
  Effect.gen(function* () {
    const m = yield* SystemdMachine.SystemdMachine
    const [head, ...rest] = m.nsenter
    const started = yield* HostCommand.run(head ?? "nsenter", [...rest, "systemctl", "start", "dbus.service"])
    if (started.exitCode !== 0) return yield* Effect.die(new Error(`dbus.service did not start: ${started.stderr}`))
    // systemd takes its name on the bus a moment after dbus.service is up.
    yield* HostCommand.run(head ?? "nsenter", [
      ...rest,
      "busctl",
      "--system",
      "status",
      "org.freedesktop.systemd1"
    ]).pipe(
      Effect.filterOrFail((o) => o.exitCode === 0),
      Effect.retry({ schedule: Schedule.spaced(Duration.millis(100)), times: 100 }),
      Effect.orDie
    )
  }).pipe(Effect.orDie)
).pipe(Layer.provide(NodeServices.layer))
const busMachine = Layer.provideMerge(withBus, machine)
const busHost = Layer.unwrap(
  Effect.map(Effect.service(SystemdMachine.SystemdMachine), (m) =>
    NodeSystemd.layerDbusIn(m.pid, { via: "bus" }).pipe(Layer.orDie)
  )
).pipe(Layer.provideMerge(busMachine), Layer.provideMerge(NodeServices.layer))

describe.skipIf(busGate.skip)("NodeSystemd over the system bus", () => {
  SystemdConformance.suite(
    "NodeSystemd.layerDbusIn (D-Bus through the machine's system bus: Hello, AddMatch, Subscribe)",
    busHost,
    Effect.map(Effect.service(SystemdMachine.SystemdMachine), (m) => m.hostRoot),
    SystemdObservers.machineObservers
  )
})

describe.skipIf(gate.skip)("NodeSystemd against a real systemd", () => {
  SystemdConformance.suite(
    "NodeSystemd.layerDbusIn (D-Bus on the machine's private socket)",
    dbusHost,
    Effect.map(Effect.service(SystemdMachine.SystemdMachine), (m) => m.hostRoot),
    SystemdObservers.machineObservers
  )

  SystemdConformance.suite(
    "NodeSystemd.layer({ pid }) (systemctl through nsenter)",
    host,
    Effect.map(Effect.service(SystemdMachine.SystemdMachine), (m) => m.hostRoot),
    SystemdObservers.machineObservers
  )

  SystemdConformance.suite(
    "NodeSystemd.layer({ pid, session }) (systemctl in one shell entered with nsenter)",
    sessionHost,
    Effect.map(Effect.service(SystemdMachine.SystemdMachine), (m) => m.hostRoot),
    SystemdObservers.machineObservers
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

  layer(dbusHost, { timeout: "90 seconds", excludeTestServices: true })(
    "NodeSystemd.layerDbusIn: what systemd itself reports",
    (it) => {
      let n = 0
      const fresh = (stem: string) => `hn-dbus-${stem}-${++n}.service`
      const install = (units: Readonly<Record<string, string>>) =>
        Effect.gen(function* () {
          const m = yield* SystemdMachine.SystemdMachine
          const fs = yield* FileSystem.FileSystem
          for (const [unit, text] of Object.entries(units)) {
            yield* fs.writeFileString(`${m.hostRoot}/etc/systemd/system/${unit}`, text)
          }
          yield* (yield* Systemd.Systemd).daemonReload
        })
      const inMachine = (args: ReadonlyArray<string>) =>
        Effect.gen(function* () {
          const m = yield* SystemdMachine.SystemdMachine
          const [head, ...rest] = m.nsenter
          const out = yield* HostCommand.run(head ?? "nsenter", [...rest, ...args])
          assert.strictEqual(out.exitCode, 0, out.stderr)
          return out.stdout
        })

      it.effect("a oneshot unit whose ExecStart fails: job result failed, the unit's states and exit status", () =>
        Effect.gen(function* () {
          const systemd = yield* Systemd.Systemd
          const u = fresh("false")
          yield* install({ [u]: "[Service]\nType=oneshot\nExecStart=/bin/false\n" })
          const e = yield* Effect.flip(systemd.restart(u))
          assert.strictEqual(e._tag, "SystemdError")
          if (e._tag !== "SystemdError") return
          assert.strictEqual(e.reason._tag, "JobFailed")
          if (e.reason._tag !== "JobFailed") return
          assert.strictEqual(e.reason.jobResult, "failed")
          assert.deepStrictEqual(e.reason.status, {
            activeState: "failed",
            subState: "failed",
            result: "exit-code",
            execMainCode: 1,
            execMainStatus: 1
          })
          assert.strictEqual(e.reason.exitCode, 1)
          assert.include(e.reason.stderr, `Job for ${u} failed because the control process exited with error code.`)
          assert.include(e.message, "main process exited with status 1")
          // The message names what ran: D-Bus, the method and the job systemd queued, never systemctl.
          assert.strictEqual(e.dbus?.method, "RestartUnit")
          assert.match(e.dbus?.job ?? "", /^\/org\/freedesktop\/systemd1\/job\/\d+$/)
          assert.isTrue(
            e.message.startsWith(`D-Bus RestartUnit ${u}, job ${e.dbus?.job} failed (JobFailed, job failed): `),
            e.message
          )
          assert.notInclude(e.message, "systemctl restart")
        })
      )

      it.effect(
        "a unit that does not exist: UnitNotFound for every job, inactive, and its properties say not-found",
        () =>
          Effect.gen(function* () {
            const systemd = yield* Systemd.Systemd
            const u = fresh("missing")
            for (const [verb, said] of [
              ["start", "not found"],
              ["restart", "not found"],
              ["stop", "not loaded"]
            ] as const) {
              const e = yield* Effect.flip(systemd[verb](u))
              assert.strictEqual(e._tag, "SystemdError")
              if (e._tag !== "SystemdError") return
              assert.strictEqual(e.reason._tag, "UnitNotFound", verb)
              if (e.reason._tag !== "UnitNotFound") return
              assert.strictEqual(e.reason.exitCode, 5, verb)
              assert.strictEqual(e.reason.stderr, `Failed to ${verb} ${u}: Unit ${u} ${said}.`)
              // Named as the D-Bus call and error it was: no job was queued.
              const method = { start: "StartUnit", restart: "RestartUnit", stop: "StopUnit" }[verb]
              assert.isTrue(
                e.message.startsWith(`D-Bus ${method} ${u} failed (UnitNotFound, org.freedesktop.systemd1.`),
                e.message
              )
              assert.isUndefined(e.dbus?.job)
              assert.notInclude(e.message, "systemctl")
            }
            assert.strictEqual(yield* systemd.isActive(u), "inactive")
            assert.deepStrictEqual(yield* systemd.show(u, ["LoadState", "ActiveState", "NoSuchProperty"]), {
              LoadState: "not-found",
              ActiveState: "inactive"
            })
          })
      )

      it.effect("a start that outlasts TimeoutStartSec fails as a Timeout with the unit's result", () =>
        Effect.gen(function* () {
          const systemd = yield* Systemd.Systemd
          const u = fresh("slow")
          yield* install({ [u]: "[Service]\nType=notify\nExecStart=/bin/sleep infinity\nTimeoutStartSec=1\n" })
          const e = yield* Effect.flip(systemd.restart(u))
          assert.strictEqual(e._tag, "SystemdError")
          if (e._tag !== "SystemdError") return
          assert.strictEqual(e.reason._tag, "Timeout")
          if (e.reason._tag !== "Timeout") return
          assert.strictEqual(e.reason.jobResult, "failed")
          assert.strictEqual(e.reason.status?.result, "timeout")
          assert.include(e.reason.stderr, "failed because a timeout was exceeded")
        })
      )

      it.effect("a job that outlasts JobTimeoutSec: job result timeout", () =>
        Effect.gen(function* () {
          const systemd = yield* Systemd.Systemd
          const u = fresh("jobtimeout")
          yield* install({
            [u]: "[Unit]\nJobTimeoutSec=1\n\n[Service]\nType=notify\nExecStart=/bin/sleep infinity\nTimeoutStartSec=infinity\n"
          })
          const e = yield* Effect.flip(systemd.restart(u))
          assert.strictEqual(e._tag, "SystemdError")
          if (e._tag !== "SystemdError") return
          assert.strictEqual(e.reason._tag, "Timeout")
          if (e.reason._tag !== "Timeout") return
          assert.strictEqual(e.reason.jobResult, "timeout")
          assert.strictEqual(e.reason.stderr, `Job for ${u} timed out.`)
        })
      )

      it.effect("a restart that outlasts the layer's own timeout fails as a Timeout; the layer stays usable", () =>
        Effect.gen(function* () {
          const systemd = yield* Systemd.Systemd
          const u = fresh("hangs")
          yield* install({ [u]: "[Service]\nType=notify\nExecStart=/bin/sleep infinity\nTimeoutStartSec=infinity\n" })
          const layerImpatient = yield* Layer.build(impatient)
          const quick = Systemd.Systemd.pipe(Effect.provide(layerImpatient))
          const e = yield* Effect.flip(Effect.flatMap(quick, (s) => s.restart(u)))
          assert.strictEqual(e._tag, "SystemdError")
          if (e._tag !== "SystemdError") return
          assert.strictEqual(e.reason._tag, "Timeout")
          if (e.reason._tag !== "Timeout") return
          // The layer's own limit ran out: no client exit code.
          assert.isUndefined(e.reason.exitCode)
          assert.include(e.reason.stderr, "within 2s")
          // The job systemd queued is named; it is still systemd's.
          assert.match(
            e.message,
            /^D-Bus RestartUnit \S+, job \/org\/freedesktop\/systemd1\/job\/\d+ failed \(Timeout\): /
          )
          assert.include(e.message, "it is left to systemd")
          // systemd still has the job; a stop replaces it.
          assert.strictEqual(yield* Effect.flatMap(quick, (s) => s.isActive(u)), "activating")
          yield* systemd.stop(u)
          assert.strictEqual(yield* systemd.isActive(u), "inactive")
        })
      )

      it.effect(
        "Layers.SystemdCallTimeout limits one call where it is provided, in place of the layer's 3 minutes",
        () =>
          Effect.gen(function* () {
            const systemd = yield* Systemd.Systemd
            const u = fresh("calltimeout")
            yield* install({ [u]: "[Service]\nType=notify\nExecStart=/bin/sleep infinity\nTimeoutStartSec=infinity\n" })
            const started = yield* Clock.currentTimeMillis
            const e = yield* Effect.flip(
              systemd.restart(u).pipe(Effect.provideService(Layers.SystemdCallTimeout, Duration.seconds(1)))
            )
            const took = (yield* Clock.currentTimeMillis) - started
            assert.strictEqual(e._tag, "SystemdError")
            if (e._tag !== "SystemdError") return
            assert.strictEqual(e.reason._tag, "Timeout")
            assert.include(e.message, "did not finish within 1s")
            assert.isDefined(e.dbus?.job)
            // Bounded by the limit given, not the layer's (a generous margin for a loaded machine).
            assert.isBelow(took, 30_000)
            // Without it, the same layer waits longer: the stop below ends the job it left.
            yield* systemd.stop(u)
            assert.strictEqual(yield* systemd.isActive(u), "inactive")
          })
      )

      it.effect(
        "systemd re-executing closes the connection; the next calls reopen it, one in flight is sent again",
        () =>
          Effect.gen(function* () {
            const systemd = yield* Systemd.Systemd
            const [u, slow] = [fresh("reexec"), fresh("reexec-slow")]
            yield* install({
              [u]: "[Service]\nExecStart=/bin/sleep infinity\n",
              [slow]: "[Service]\nExecStartPre=/bin/sleep 2\nExecStart=/bin/sleep infinity\n"
            })
            yield* systemd.start(u)
            const before = (yield* systemd.show(u, ["MainPID"])).MainPID
            // A restart waiting for its job while systemd re-executes (or just
            // before, or just after: each ends with the unit restarted).
            const inFlight = yield* Effect.forkChild(systemd.restart(slow))
            yield* inMachine(["systemctl", "daemon-reexec"])
            yield* Fiber.join(inFlight)
            assert.strictEqual(yield* systemd.isActive(slow), "active")
            // The connection the layer held is gone; these go over a new one.
            yield* systemd.restart(u)
            const after = (yield* systemd.show(u, ["MainPID"])).MainPID
            assert.notStrictEqual(after, before)
            assert.strictEqual(yield* systemd.isActive(u), "active")
            yield* inMachine(["systemctl", "daemon-reexec"])
            assert.strictEqual(yield* systemd.isActive(u), "active")
            yield* systemd.stop(u)
            yield* systemd.stop(slow)
          })
      )

      it.effect("show prints values as systemctl show does", () =>
        Effect.gen(function* () {
          const systemd = yield* Systemd.Systemd
          const u = fresh("show")
          yield* install({
            [u]: "[Unit]\nDescription=shown\n\n[Service]\nExecStart=/bin/sleep infinity\nTimeoutStartSec=90\nRestartSec=1500ms\n"
          })
          yield* systemd.start(u)
          const properties = [
            "Description",
            "NeedDaemonReload",
            "MainPID",
            "ActiveEnterTimestampMonotonic",
            "ActiveEnterTimestamp",
            "InactiveExitTimestamp",
            "ActiveExitTimestamp",
            "TimeoutStartUSec",
            "RestartUSec",
            "RuntimeMaxUSec",
            "Names",
            "Type",
            "Restart"
          ]
          const ours = yield* systemd.show(u, properties)
          const text = yield* inMachine(["systemctl", "show", `--property=${properties.join(",")}`, "--", u])
          const theirs: Record<string, string> = {}
          for (const line of text.split("\n")) {
            const eq = line.indexOf("=")
            if (eq > 0) theirs[line.slice(0, eq)] = line.slice(eq + 1)
          }
          assert.deepStrictEqual(ours, theirs)
          yield* systemd.stop(u)
        })
      )
    }
  )

  layer(host, { timeout: "60 seconds", excludeTestServices: true })("NodeSystemd.layerWithFallback", (it) => {
    // Which layer answered shows in a failed job: only D-Bus knows the job's result.
    const jobResultOf = (systemd: Layer.Layer<Systemd.Systemd>) =>
      Effect.gen(function* () {
        const m = yield* SystemdMachine.SystemdMachine
        const fs = yield* FileSystem.FileSystem
        const u = "hn-fallback.service"
        yield* fs.writeFileString(
          `${m.hostRoot}/etc/systemd/system/${u}`,
          "[Service]\nType=oneshot\nExecStart=/bin/false\n"
        )
        const s = Context.get(yield* Layer.build(systemd), Systemd.Systemd)
        yield* s.daemonReload
        const e = yield* Effect.flip(s.restart(u))
        assert.strictEqual(e._tag, "SystemdError")
        if (e._tag !== "SystemdError") return "not a SystemdError"
        return "jobResult" in e.reason ? e.reason.jobResult : undefined
      })

    it.effect("uses D-Bus when the machine's private socket answers", () =>
      Effect.gen(function* () {
        const m = yield* SystemdMachine.SystemdMachine
        assert.strictEqual(yield* jobResultOf(NodeSystemd.layerWithFallback({ pid: m.pid })), "failed")
      })
    )

    it.effect("falls back to systemctl when no socket answers (here: no system bus in the machine)", () =>
      Effect.gen(function* () {
        const m = yield* SystemdMachine.SystemdMachine
        assert.isUndefined(yield* jobResultOf(NodeSystemd.layerWithFallback({ pid: m.pid, via: "bus" })))
      })
    )
  })
})
