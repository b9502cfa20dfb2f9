/**
 * `hostnode restart-changed` and its knobs: `--settle SECONDS` (a unit that
 * dies right after its restart fails the run, named), `--job-timeout SECONDS`
 * (a restart job that never finishes ends the run in that time, a typed
 * `Timeout`) and `--reload always|auto|never` (the daemon-reload before the
 * restarts). On `MemoryNode`, then on a real systemd through `--container`,
 * where systemd is reached over D-Bus and the messages name D-Bus and the
 * job, never a `systemctl` that did not run.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it, layer } from "@effect/vitest"
import { HostCommand } from "@hostnode/core"
import { NodeHost } from "@hostnode/node"
import { MemoryNode, MemorySystemd } from "@hostnode/sim"
import { Gate, SystemdMachine } from "@hostnode/test"
import { Clock, Effect, FileSystem, Layer } from "effect"
import { TestConsole } from "effect/testing"
import { cliEnvironment, runCli, runJson } from "./harness.ts"

const units = {
  "/etc/systemd/system/steady.service": "[Service]\nExecStart=/bin/sleep infinity\n",
  "/etc/systemd/system/dies.service": '[Service]\nType=simple\nExecStart=/bin/sh -c "exit 3"\n',
  // Never signals readiness, and systemd itself would wait forever.
  "/etc/systemd/system/hangs.service":
    "[Service]\nType=notify\nExecStart=/bin/sleep infinity\nTimeoutStartSec=infinity\n",
  "/etc/systemd/system/steady.service.d/10-flag.conf": "[Service]\nEnvironment=HN_FLAG=old\n"
}

const node = Layer.mergeAll(MemoryNode.layer({ files: units }), cliEnvironment, TestConsole.layer)

/** How long `effect` took, in milliseconds of the clock in context. */
const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const start = yield* Clock.currentTimeMillis
    const a = yield* effect
    return { ...a, millis: (yield* Clock.currentTimeMillis) - start }
  })

describe("restart-changed on a simulated node", () => {
  it.live("--settle 1: a unit that dies at once fails the run (exit 1), named, after the steady one", () =>
    Effect.gen(function* () {
      const text = yield* runCli([
        "restart-changed",
        "--was-running",
        "--settle",
        "1",
        "steady.service",
        "dies.service"
      ])
      assert.strictEqual(text.code, 1)
      const said = text.stderr.join("\n")
      assert.include(said, "restart of dies.service failed (already restarted: steady.service)")
      assert.include(said, "dies.service did not settle after its restart (NotSettled)")
      assert.include(said, "main process exited with status 3")
      // Without --settle its restart job succeeds: the unit counts as restarted.
      assert.strictEqual((yield* runCli(["restart-changed", "--was-running", "dies.service"])).code, 0)
      const json = yield* runJson(["restart-changed", "--was-running", "--settle", "1", "dies.service"])
      assert.strictEqual(json.code, 1)
      assert.strictEqual(json.doc.error._tag, "RestartError")
      assert.strictEqual(json.doc.error.unit, "dies.service")
      assert.strictEqual(json.doc.error.reason._tag, "NotSettled")
    }).pipe(Effect.provide(node))
  )

  it.live("--job-timeout 2: a restart job that never completes ends the run in 2 s, a typed Timeout", () =>
    Effect.gen(function* () {
      const run = yield* timed(
        runJson(["restart-changed", "--was-running", "--job-timeout", "2", "steady.service", "hangs.service"])
      )
      assert.strictEqual(run.code, 1)
      assert.isBelow(run.millis, 5_000)
      assert.isAtLeast(run.millis, 2_000)
      const error = run.doc.error
      assert.strictEqual(error._tag, "RestartError")
      assert.strictEqual(error.unit, "hangs.service")
      assert.deepStrictEqual(error.restarted, ["steady.service"])
      assert.strictEqual(error.reason._tag, "RestartFailed")
      assert.strictEqual(error.reason.cause._tag, "SystemdError")
      assert.strictEqual(error.reason.cause.reason._tag, "Timeout")
      assert.include(error.message, "within 2s")
    }).pipe(Effect.provide(node))
  )

  it.effect("--reload: always (the default) reloads once, never does not, auto when a unit needs it", () =>
    Effect.gen(function* () {
      const systemd = yield* MemorySystemd.MemorySystemd
      const reloads = () => systemd.daemonReloads
      yield* runCli(["restart-changed", "--was-running", "steady.service"])
      assert.strictEqual(yield* reloads(), 1)
      yield* runCli(["restart-changed", "--was-running", "--reload", "never", "steady.service"])
      assert.strictEqual(yield* reloads(), 1)
      yield* runCli(["restart-changed", "--was-running", "--reload", "auto", "steady.service"])
      assert.strictEqual(yield* reloads(), 1, "nothing changed: auto does not reload")
      const fs = yield* FileSystem.FileSystem
      yield* fs.writeFileString(
        "/etc/systemd/system/steady.service.d/20-new.conf",
        "[Service]\nEnvironment=HN_FLAG=new\n"
      )
      const json = yield* runJson(["restart-changed", "--was-running", "--reload", "auto", "steady.service"])
      assert.strictEqual(json.code, 0)
      assert.strictEqual(json.doc.result.reload, "auto")
      assert.strictEqual(yield* reloads(), 2)
      const pid = (yield* systemd.unit("steady.service"))?.mainPid ?? 0
      assert.deepStrictEqual(yield* systemd.processEnvironment(pid), ["HN_FLAG=new"])
    }).pipe(Effect.provide(node))
  )

  it.effect("bad values are refused before anything is restarted (exit 2, one line)", () =>
    Effect.gen(function* () {
      const systemd = yield* MemorySystemd.MemorySystemd
      for (const [argv, says] of [
        [["--settle", "-1"], "zero or a positive whole number of seconds, not -1"],
        [["--job-timeout", "soon"], "--job-timeout"],
        [["--reload", "sometimes"], "--reload"]
      ] as const) {
        const { code, stderr } = yield* runCli(["restart-changed", "--was-running", ...argv, "steady.service"])
        assert.strictEqual(code, 2, argv.join(" "))
        assert.strictEqual(stderr.length, 1, stderr.join("\n"))
        assert.include(stderr[0], says)
      }
      assert.deepStrictEqual(yield* systemd.jobs, [])
    }).pipe(Effect.provide(node))
  )
})

// ---------------------------------------------------------------------------
// a real systemd, over D-Bus

const gate = Gate.check("hostnode restart-changed on a real systemd machine", [
  "root",
  "pid-namespace",
  "private-mount-namespace",
  { command: "nsenter" },
  { command: "/lib/systemd/systemd", args: ["--version"] }
])

const withMachine = Layer.mergeAll(
  SystemdMachine.layer.pipe(Layer.provide(NodeServices.layer), Layer.orDie),
  NodeHost.layer,
  cliEnvironment
)

describe.skipIf(gate.skip)("restart-changed --container on a real systemd", () => {
  layer(withMachine, { timeout: "120 seconds", excludeTestServices: true })("a SystemdMachine", (it) => {
    const install = Effect.gen(function* () {
      const m = yield* SystemdMachine.SystemdMachine
      const fs = yield* FileSystem.FileSystem
      for (const [path, text] of Object.entries(units)) {
        yield* fs.makeDirectory(`${m.hostRoot}${path.slice(0, path.lastIndexOf("/"))}`, { recursive: true })
        yield* fs.writeFileString(`${m.hostRoot}${path}`, text)
      }
      const [head, ...rest] = m.nsenter
      const reload = yield* HostCommand.run(head ?? "nsenter", [...rest, "systemctl", "daemon-reload"])
      assert.strictEqual(reload.exitCode, 0, reload.stderr)
      return String(m.pid)
    })

    it.effect("--settle 1: a unit that dies at once exits 1, named; the message is not systemctl's", () =>
      Effect.gen(function* () {
        const pid = yield* install
        const text = yield* runCli([
          "--container",
          pid,
          "restart-changed",
          "--was-running",
          "--settle",
          "1",
          "steady.service",
          "dies.service"
        ])
        assert.strictEqual(text.code, 1, text.stderr.join("\n"))
        const said = text.stderr.join("\n")
        assert.include(said, "restart of dies.service failed (already restarted: steady.service)")
        assert.include(said, "dies.service did not settle after its restart (NotSettled)")
        assert.include(said, "main process exited with status 3")
        assert.notInclude(said, "systemctl restart")
      }).pipe(Effect.provide(TestConsole.layer))
    )

    it.effect("--job-timeout 2: a job that never completes ends in under 5 s, a Timeout naming D-Bus and the job", () =>
      Effect.gen(function* () {
        const pid = yield* install
        const run = yield* timed(
          runJson(["--container", pid, "restart-changed", "--was-running", "--job-timeout", "2", "hangs.service"])
        )
        assert.strictEqual(run.code, 1, JSON.stringify(run.doc))
        assert.isBelow(run.millis, 5_000)
        const cause = run.doc.error.reason.cause
        assert.strictEqual(run.doc.error._tag, "RestartError")
        assert.strictEqual(run.doc.error.reason._tag, "RestartFailed")
        assert.strictEqual(cause.reason._tag, "Timeout")
        assert.strictEqual(cause.dbus.method, "RestartUnit")
        assert.match(cause.dbus.job, /^\/org\/freedesktop\/systemd1\/job\/\d+$/)
        assert.match(
          run.doc.error.message,
          /D-Bus RestartUnit hangs\.service, job \/org\/freedesktop\/systemd1\/job\/\d+ failed \(Timeout\): job \S+ did not finish within 2s/
        )
        assert.notInclude(run.doc.error.message, "systemctl")
        // The job is left to systemd: the unit is still starting; a stop ends it.
        const [head, ...rest] = (yield* SystemdMachine.SystemdMachine).nsenter
        const state = yield* HostCommand.run(head ?? "nsenter", [...rest, "systemctl", "is-active", "hangs.service"])
        assert.strictEqual(state.stdout.trim(), "activating")
        yield* HostCommand.run(head ?? "nsenter", [...rest, "systemctl", "stop", "hangs.service"])
      }).pipe(Effect.provide(TestConsole.layer))
    )
  })
})
