/**
 * The simulated systemd. The Systemd conformance suite (which a real systemd
 * 252 passes) runs against `MemoryNode`'s `Systemd` (systemctl run over the `systemctl`
 * interpreter, as `Systemd.layerCommand` runs it); properties check `restartChanged` on the simulated host
 * (issue 5) and that the interpreter and the `Systemd` service over it agree
 * on every outcome; unit tests pin the systemctl texts and systemd behaviours
 * the simulation reproduces (load on demand, NeedDaemonReload, Restart=, the
 * start limit, timeouts, masks, drop-ins, templates) and the crash gate.
 */
import { assert, describe, it } from "@effect/vitest"
import { IsolationBackend, RestartChanged, Systemd } from "@hostnode/core"
import { MemoryHost, MemoryNode, MemorySystemd } from "@hostnode/sim"
import * as SystemdSimulation from "@hostnode/sim/internal/memorySystemd/simulation"
import { SystemdConformance } from "@hostnode/test/conformance"
import * as SystemdObservers from "@hostnode/test/internal/systemdObservers"
import { Cause, Context, Effect, Exit, Fiber, FileSystem, Layer, Schema } from "effect"
import { TestClock } from "effect/testing"

SystemdConformance.suite(
  "MemoryNode (systemctl over the systemctl interpreter)",
  MemoryNode.layer(),
  Effect.succeed("/"),
  SystemdObservers.memoryObservers
)

const Units = {
  ...SystemdObservers.Units,
  oneshotTrue: "[Unit]\nDescription=once\n\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/true\n",
  reloadable:
    "[Unit]\nDescription=reloadable\n\n[Service]\nExecStart=/usr/bin/mydaemon --foreground\nExecReload=/bin/kill -HUP $MAINPID\n",
  crashy: (restart: string, restartSec = "100ms") =>
    `[Service]\nExecStart=/usr/bin/mydaemon\nRestart=${restart}\nRestartSec=${restartSec}\n`,
  notifySleeper: "[Service]\nType=notify\nExecStart=/bin/sleep infinity\nTimeoutStartSec=30\n"
} as const

/** Writes a unit file (replacing whatever is there, a mask included). */
const install = (unit: string, text: string, dir = "/etc/systemd/system") =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    yield* fs.makeDirectory(dir, { recursive: true })
    yield* fs.remove(`${dir}/${unit}`, { force: true })
    yield* fs.writeFileString(`${dir}/${unit}`, text)
  })

const systemd = Effect.service(Systemd.Systemd)
const inspect = Effect.service(MemorySystemd.MemorySystemd)

const viewOf = (unit: string) =>
  Effect.flatMap(inspect, (s) => s.unit(unit)).pipe(
    Effect.map((v) => {
      assert.isDefined(v, `${unit} is loaded`)
      return v as MemorySystemd.UnitView
    })
  )

/** Runs `effect` on a fresh simulated node. */
const onNode = <A, E>(effect: Effect.Effect<A, E, MemoryNode.Services>, options?: MemoryNode.Options) =>
  Effect.provide(effect, MemoryNode.layer(options))

// ---------------------------------------------------------------------------
// issue 5: restartChanged on the simulated host

/** What is wrong with a unit when it is restarted. */
const Trouble = Schema.Literals(["none", "JobFailed", "NotFound", "Missing", "FailingOneshot"])
const Entry = Schema.Struct({
  changed: Schema.Boolean,
  // Weighted: half of the units have no trouble.
  trouble: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 7 }))
})
const troubleOf = (n: number): typeof Trouble.Type =>
  (["JobFailed", "NotFound", "Missing", "FailingOneshot"] as const)[n] ?? "none"

describe("restartChanged on the simulated host (issue 5)", () => {
  it.effect.prop(
    "the units restarted are exactly the changed ones up to the first failure, in order",
    [Schema.Array(Entry).check(Schema.isMaxLength(8)), Schema.Boolean],
    ([entries, wasRunning]) =>
      onNode(
        Effect.gen(function* () {
          const units = entries.map((e, i) => ({ unit: `u${i}.service`, ...e, trouble: troubleOf(e.trouble) }))
          for (const u of units) {
            if (u.trouble === "Missing") continue
            yield* install(u.unit, u.trouble === "FailingOneshot" ? Units.failingOneshot : Units.sleeper(u.unit))
          }
          const s = yield* systemd
          yield* s.daemonReload
          for (const u of units) if (u.trouble !== "Missing" && u.trouble !== "FailingOneshot") yield* s.start(u.unit)
          const mem = yield* inspect
          for (const u of units) {
            if (u.trouble === "JobFailed" || u.trouble === "NotFound") {
              yield* mem.injectFault({ unit: u.unit, kind: u.trouble, verbs: ["restart"] })
            }
          }
          const pidsBefore = yield* Effect.forEach(units, (u) => Effect.map(mem.unit(u.unit), (v) => v?.mainPid ?? 0))
          yield* mem.clearHistory

          const result = yield* Effect.result(
            RestartChanged.restartChanged({
              wasRunning,
              units: units.map((u) => ({ unit: u.unit, changed: u.changed }))
            })
          )

          const changed = wasRunning ? units.filter((u) => u.changed) : []
          const firstFailure = changed.findIndex((u) => u.trouble !== "none")
          const restarted = (firstFailure === -1 ? changed : changed.slice(0, firstFailure)).map((u) => u.unit)
          const attempted = (firstFailure === -1 ? changed : changed.slice(0, firstFailure + 1)).map((u) => u.unit)

          // The counters and the job log say which units were restarted, and in which order.
          const jobs = yield* mem.jobs
          assert.deepStrictEqual(
            jobs.filter((j) => j.verb === "restart" && j.outcome === "done").map((j) => j.unit),
            restarted
          )
          assert.deepStrictEqual(
            jobs.filter((j) => j.verb === "restart").map((j) => j.unit),
            attempted
          )
          assert.isTrue(
            jobs.every((j) => j.verb === "restart"),
            "restartChanged asks for nothing but restarts"
          )
          assert.deepStrictEqual(yield* mem.restarts, Object.fromEntries(restarted.map((u) => [u, 1])))
          // Every unit not restarted still runs the process it had.
          const pidsAfter = yield* Effect.forEach(units, (u) => Effect.map(mem.unit(u.unit), (v) => v?.mainPid ?? 0))
          for (const [i, u] of units.entries()) {
            if (restarted.includes(u.unit)) assert.notStrictEqual(pidsAfter[i], pidsBefore[i], u.unit)
            else if (!attempted.includes(u.unit)) assert.strictEqual(pidsAfter[i], pidsBefore[i], u.unit)
          }

          if (firstFailure === -1) {
            assert.strictEqual(result._tag, "Success")
            return
          }
          assert.strictEqual(result._tag, "Failure")
          if (result._tag !== "Failure") return
          const failing = changed[firstFailure] as (typeof units)[number]
          const e = result.failure
          assert.strictEqual(e._tag, "RestartError")
          if (e._tag !== "RestartError") return
          assert.strictEqual(e.unit, failing.unit)
          assert.deepStrictEqual(e.restarted, restarted)
          assert.deepStrictEqual(
            e.notAttempted,
            changed.slice(firstFailure + 1).map((u) => u.unit)
          )
          assert.strictEqual(e.reason._tag, "RestartFailed")
          const cause = e.reason.cause
          assert.strictEqual(cause._tag, "SystemdError")
          if (cause._tag !== "SystemdError") return
          const notFound = failing.trouble === "NotFound" || failing.trouble === "Missing"
          assert.strictEqual(cause.reason._tag, notFound ? "UnitNotFound" : "JobFailed")
          if (cause.reason._tag !== "UnitNotFound" && cause.reason._tag !== "JobFailed") return
          assert.strictEqual(cause.reason.exitCode, notFound ? 5 : 1)
          assert.strictEqual(
            cause.reason.stderr,
            notFound
              ? `Failed to restart ${failing.unit}: Unit ${failing.unit} not found.\n`
              : `Job for ${failing.unit} failed because the control process exited with error code.\nSee "systemctl status ${failing.unit}" and "journalctl -xeu ${failing.unit}" for details.\n`
          )
          if (!notFound) assert.strictEqual((yield* viewOf(failing.unit)).activeState, "failed")
        })
      ),
    { timeout: 120_000, arbitrary: { runs: 200 } }
  )
})

// ---------------------------------------------------------------------------
// the interpreter and the service agree

const Op = Schema.Struct({
  verb: Schema.Literals([
    "start",
    "stop",
    "restart",
    "reload",
    "is-active",
    "show",
    "daemon-reload",
    "rewrite",
    "kill"
  ]),
  unit: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 6 }))
})

const pool = ["a.service", "b.service", "c.service", "d.service", "e.service", "f.service", "g.service"]
const poolFiles: Record<string, string | { readonly symlink: string }> = {
  "a.service": Units.sleeper("a"),
  "b.service": Units.failingOneshot,
  // c.service: missing
  "d.service": { symlink: "/dev/null" },
  "e.service": Units.oneshotTrue,
  "f.service": Units.reloadable,
  "g.service": Units.crashy("always")
}
const shownProperties = [
  "LoadState",
  "ActiveState",
  "SubState",
  "MainPID",
  "NRestarts",
  "Result",
  "Description",
  "NeedDaemonReload",
  "ActiveEnterTimestampMonotonic"
]

const parseShow = (stdout: string): Record<string, string> =>
  Object.fromEntries(
    stdout
      .split("\n")
      .filter((l) => l.includes("="))
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)])
  )

const seed = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  yield* fs.makeDirectory("/etc/systemd/system", { recursive: true })
  for (const [unit, file] of Object.entries(poolFiles)) {
    if (typeof file === "string") yield* fs.writeFileString(`/etc/systemd/system/${unit}`, file)
    else yield* fs.symlink(file.symlink, `/etc/systemd/system/${unit}`)
  }
})

describe("the systemctl interpreter and MemoryNode's Systemd over it agree", () => {
  it.effect.prop(
    "on every outcome (exit code, stderr, classified reason, properties) of random calls",
    [Schema.Array(Op).check(Schema.isMinLength(1), Schema.isMaxLength(16))],
    ([ops]) =>
      Effect.gen(function* () {
        // Host A: the library's Systemd over the spawner. Host B: the bare interpreter.
        const a = yield* Layer.build(MemoryNode.layer())
        const b = yield* Layer.build(MemoryHost.layer())
        const simB = yield* SystemdSimulation.makeOnHost().pipe(Effect.provideContext(b))
        const onA = <X, E>(e: Effect.Effect<X, E, MemoryNode.Services>) => Effect.provideContext(e, a)
        const onB = <X, E>(e: Effect.Effect<X, E, MemoryHost.MemoryHost | FileSystem.FileSystem>) =>
          Effect.provideContext(e, b)
        yield* onA(seed)
        yield* onB(seed)
        const sd = Context.get(a, Systemd.Systemd)
        const run = (args: ReadonlyArray<string>) => simB.systemctl(args, "")
        const expectSame = <X>(
          label: string,
          viaService: Effect.Effect<X, Systemd.SystemdError | { readonly _tag: "UnitNameError" }>,
          viaCli: MemoryCommands,
          value: (x: X) => unknown,
          cliValue: (stdout: string) => unknown
        ) =>
          Effect.gen(function* () {
            const exit = yield* Effect.exit(viaService)
            const out = yield* viaCli
            if (Exit.isSuccess(exit)) {
              assert.strictEqual(out.exitCode, 0, `${label}: service succeeded, systemctl exited ${out.exitCode}`)
              assert.deepStrictEqual(value(exit.value), cliValue(out.stdout), label)
              return
            }
            const error = Cause.squash(exit.cause) as Systemd.SystemdError
            assert.strictEqual(error._tag, "SystemdError", label)
            assert.strictEqual(error.reason._tag, Systemd.Failure.classify(out.exitCode, out.stderr)._tag, label)
            assert.strictEqual("exitCode" in error.reason && error.reason.exitCode, out.exitCode, label)
            assert.strictEqual("stderr" in error.reason && error.reason.stderr, out.stderr, label)
          })
        for (const op of ops) {
          const unit = pool[op.unit] as string
          const label = `${op.verb} ${unit}`
          switch (op.verb) {
            case "start":
            case "stop":
            case "restart":
            case "reload":
              yield* expectSame(
                label,
                sd[op.verb](unit),
                run([op.verb, "--", unit]),
                () => "",
                () => ""
              )
              break
            case "is-active":
              yield* expectSame(
                label,
                sd.isActive(unit),
                run(["is-active", "--", unit]).pipe(Effect.map((o) => ({ ...o, exitCode: 0 }))),
                (s) => s,
                (stdout) => stdout.trim()
              )
              break
            case "show":
              yield* expectSame(
                label,
                sd.show(unit, shownProperties),
                run(["show", `--property=${shownProperties.join(",")}`, "--", unit]),
                (p) => p,
                parseShow
              )
              break
            case "daemon-reload":
              yield* expectSame(
                label,
                sd.daemonReload,
                run(["daemon-reload"]),
                () => "",
                () => ""
              )
              break
            case "rewrite": {
              const text = `[Unit]\nDescription=rewritten ${unit}\n\n[Service]\nExecStart=/bin/sleep infinity\n`
              yield* onA(install(unit, text))
              yield* onB(install(unit, text))
              break
            }
            case "kill": {
              const killedA = yield* Context.get(a, MemorySystemd.MemorySystemd).killMain(unit)
              const killedB = yield* simB.service.killMain(unit)
              assert.strictEqual(killedA, killedB, label)
              break
            }
          }
          // After every call both hosts hold the same units in the same states.
          for (const u of pool) {
            yield* expectSame(
              `${label}, then show ${u}`,
              sd.show(u, shownProperties),
              run(["show", `--property=${shownProperties.join(",")}`, "--", u]),
              (p) => p,
              parseShow
            )
          }
        }
        // The library ran exactly the documented argv, `--` before every unit name.
        const invocations = yield* Context.get(a, MemoryNode.MemoryNode).invocations
        for (const i of invocations) {
          assert.strictEqual(i.command, "systemctl")
          if (i.args[0] !== "daemon-reload") assert.strictEqual(i.args[i.args.length - 2], "--", i.args.join(" "))
        }
      }).pipe(Effect.scoped),
    { timeout: 120_000, arbitrary: { runs: 100 } }
  )
})

type MemoryCommands = Effect.Effect<{ readonly stdout: string; readonly stderr: string; readonly exitCode: number }>

// ---------------------------------------------------------------------------
// systemctl texts and systemd behaviours

const cli = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const sim = yield* SystemdSimulation.makeOnHost()
    return yield* sim.systemctl(args, "")
  })

describe("the systemctl interpreter prints what systemctl 252 prints", () => {
  it.effect("a missing unit: start/restart/reload say not found, stop says not loaded, all exit 5", () =>
    Effect.gen(function* () {
      const sim = yield* SystemdSimulation.makeOnHost()
      const run = (args: ReadonlyArray<string>) => sim.systemctl(args, "")
      for (const verb of ["start", "restart", "reload"]) {
        assert.deepStrictEqual(yield* run([verb, "--", "x.service"]), {
          stdout: "",
          stderr: `Failed to ${verb} x.service: Unit x.service not found.\n`,
          exitCode: 5
        })
      }
      assert.deepStrictEqual(yield* run(["stop", "--", "x.service"]), {
        stdout: "",
        stderr: "Failed to stop x.service: Unit x.service not loaded.\n",
        exitCode: 5
      })
      assert.deepStrictEqual(yield* run(["is-active", "--", "x.service"]), {
        stdout: "inactive\n",
        stderr: "",
        exitCode: 3
      })
      // show of a missing unit succeeds with its defaults; requested empty properties are printed
      assert.deepStrictEqual(
        yield* run(["show", "--property=ActiveState,MainPID,LoadState,Description,FragmentPath", "--", "x.service"]),
        {
          stdout: "MainPID=0\nDescription=x.service\nLoadState=not-found\nActiveState=inactive\nFragmentPath=\n",
          stderr: "",
          exitCode: 0
        }
      )
      // a name without a type is a service
      assert.strictEqual((yield* run(["show", "-p", "Id", "--value", "kubelet"])).stdout, "kubelet.service\n")
      assert.deepStrictEqual(yield* run(["frobnicate"]), {
        stdout: "",
        stderr: "Unknown command verb frobnicate.\n",
        exitCode: 1
      })
    }).pipe(Effect.provide(MemoryHost.layer()))
  )

  it.effect("masked and badly configured units, reload without ExecReload, reload of an inactive unit", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      yield* install("bad.service", "[Unit]\nDescription=no ExecStart\n")
      yield* install("plain.service", Units.sleeper())
      yield* install("rl.service", Units.reloadable)
      yield* fs.symlink("/dev/null", "/etc/systemd/system/masked.service")
      const sim = yield* SystemdSimulation.makeOnHost()
      const run = (args: ReadonlyArray<string>) => sim.systemctl(args, "")
      assert.deepStrictEqual(yield* run(["start", "--", "masked.service"]), {
        stdout: "",
        stderr: "Failed to start masked.service: Unit masked.service is masked.\n",
        exitCode: 1
      })
      assert.strictEqual((yield* run(["stop", "--", "masked.service"])).exitCode, 0)
      assert.deepStrictEqual(yield* run(["restart", "--", "bad.service"]), {
        stdout: "",
        stderr:
          "Failed to restart bad.service: Unit bad.service has a bad unit file setting.\nSee system logs and 'systemctl status bad.service' for details.\n",
        exitCode: 1
      })
      assert.strictEqual(
        (yield* run(["show", "-p", "LoadState", "--value", "--", "bad.service"])).stdout,
        "bad-setting\n"
      )
      assert.deepStrictEqual(yield* run(["reload", "--", "plain.service"]), {
        stdout: "",
        stderr: "Failed to reload plain.service: Job type reload is not applicable for unit plain.service.\n",
        exitCode: 3
      })
      assert.deepStrictEqual(yield* run(["reload", "--", "rl.service"]), {
        stdout: "",
        stderr: "rl.service is not active, cannot reload.\n",
        exitCode: 1
      })
      assert.strictEqual((yield* run(["start", "--", "rl.service"])).exitCode, 0)
      const pid = (yield* run(["show", "-p", "MainPID", "--value", "--", "rl.service"])).stdout
      assert.deepStrictEqual(yield* run(["reload", "--", "rl.service"]), { stdout: "", stderr: "", exitCode: 0 })
      assert.strictEqual((yield* run(["show", "-p", "MainPID", "--value", "--", "rl.service"])).stdout, pid)
    }).pipe(Effect.provide(MemoryHost.layer()))
  )

  it.effect("show prints the Service interface's properties before the Unit interface's, as systemctl does", () =>
    Effect.gen(function* () {
      yield* install("o.service", Units.oneshotTrue)
      const out = yield* cli([
        "show",
        "-p",
        "NeedDaemonReload,ActiveState,Id,Type,NRestarts,RemainAfterExit",
        "o.service"
      ])
      assert.strictEqual(
        out.stdout,
        "Type=oneshot\nRemainAfterExit=yes\nNRestarts=0\nId=o.service\nActiveState=inactive\nNeedDaemonReload=no\n"
      )
    }).pipe(Effect.provide(MemoryHost.layer()))
  )
})

describe("the simulated systemd behaves as systemd 252", () => {
  it.effect("an inactive unit is read afresh when next used; a running or failed one keeps its definition", () =>
    onNode(
      Effect.gen(function* () {
        const s = yield* systemd
        yield* install("idle.service", Units.sleeper("one"))
        yield* install("run.service", Units.sleeper("one"))
        yield* install("bad.service", Units.failingOneshot)
        yield* s.daemonReload
        yield* s.start("run.service")
        yield* Effect.flip(s.start("bad.service"))
        for (const u of ["idle.service", "run.service"]) yield* install(u, Units.sleeper("two"))
        yield* install("bad.service", "[Unit]\nDescription=two\n[Service]\nType=oneshot\nExecStart=/bin/false\n")
        // no daemon-reload: the unused unit shows the new file at once
        assert.deepStrictEqual(yield* s.show("idle.service", ["Description", "NeedDaemonReload"]), {
          Description: "two",
          NeedDaemonReload: "no"
        })
        for (const u of ["run.service", "bad.service"]) {
          assert.deepStrictEqual(yield* s.show(u, ["NeedDaemonReload"]), { NeedDaemonReload: "yes" }, u)
        }
        assert.strictEqual((yield* s.show("run.service", ["Description"])).Description, "one")
        // systemctl warns on jobs for a unit whose files changed, and still succeeds
        const node = yield* MemoryNode.MemoryNode
        yield* node.clearInvocations
        yield* s.restart("run.service")
        const [restart] = yield* node.invocations
        assert.strictEqual(
          restart?.result.stderr,
          "Warning: The unit file, source configuration file or drop-ins of run.service changed on disk. Run 'systemctl daemon-reload' to reload units.\n"
        )
        assert.strictEqual((yield* s.show("run.service", ["Description"])).Description, "one")
        yield* s.daemonReload
        assert.strictEqual((yield* s.show("run.service", ["Description"])).Description, "two")
        assert.strictEqual((yield* s.show("bad.service", ["Description"])).Description, "two")
        assert.strictEqual(yield* (yield* inspect).daemonReloads, 2)
      })
    )
  )

  it.effect(
    "Restart=: a crashed daemon comes back after RestartSec, counting in NRestarts; Restart=no leaves it failed",
    () =>
      onNode(
        Effect.gen(function* () {
          const s = yield* systemd
          const mem = yield* inspect
          yield* install("always.service", Units.crashy("always", "5s"))
          yield* install("never.service", Units.crashy("no"))
          yield* s.start("always.service")
          yield* s.start("never.service")
          const pid = (yield* viewOf("always.service")).mainPid
          assert.isTrue(yield* mem.killMain("always.service", { signal: "SIGKILL" }))
          assert.isTrue(yield* mem.killMain("never.service"))
          assert.deepStrictEqual(yield* s.show("always.service", ["ActiveState", "SubState", "MainPID", "NRestarts"]), {
            MainPID: "0",
            NRestarts: "0",
            ActiveState: "activating",
            SubState: "auto-restart"
          })
          assert.deepStrictEqual(yield* s.show("never.service", ["ActiveState", "Result", "ExecMainStatus"]), {
            Result: "exit-code",
            ExecMainStatus: "1",
            ActiveState: "failed"
          })
          yield* TestClock.adjust("5 seconds")
          const after = yield* viewOf("always.service")
          assert.strictEqual(after.activeState, "active")
          assert.strictEqual(after.nRestarts, 1)
          assert.notStrictEqual(after.mainPid, pid)
          // a manual restart is not counted, and once the unit fully stopped the counter starts over
          yield* s.restart("always.service")
          assert.strictEqual((yield* viewOf("always.service")).nRestarts, 0)
        })
      )
  )

  it.effect("a daemon that exits at once with Restart=always hits the start limit: 5 restarts, then failed", () =>
    onNode(
      Effect.gen(function* () {
        const s = yield* systemd
        yield* install("flap.service", "[Service]\nExecStart=/bin/false\nRestart=always\n")
        yield* s.start("flap.service")
        yield* TestClock.adjust("1 second")
        assert.deepStrictEqual(yield* s.show("flap.service", ["ActiveState", "Result", "NRestarts"]), {
          Result: "start-limit-hit",
          NRestarts: "5",
          ActiveState: "failed"
        })
        const e = yield* Effect.flip(s.start("flap.service"))
        assert.strictEqual(e._tag === "SystemdError" && e.reason._tag, "JobFailed")
        assert.strictEqual(
          e._tag === "SystemdError" && "stderr" in e.reason && e.reason.stderr,
          'Job for flap.service failed because start of the service was attempted too often.\nSee "systemctl status flap.service" and "journalctl -xeu flap.service" for details.\nTo force a start use "systemctl reset-failed flap.service"\nfollowed by "systemctl start flap.service" again.\n'
        )
      })
    )
  )

  it.effect("manual starts count against the start limit; reset-failed clears it", () =>
    onNode(
      Effect.gen(function* () {
        const s = yield* systemd
        yield* install("r.service", Units.sleeper())
        yield* s.start("r.service")
        for (let i = 0; i < 4; i++) yield* s.restart("r.service")
        const e = yield* Effect.flip(s.restart("r.service"))
        assert.strictEqual(e._tag === "SystemdError" && "exitCode" in e.reason && e.reason.exitCode, 1)
        assert.strictEqual((yield* viewOf("r.service")).result, "start-limit-hit")
        yield* TestClock.adjust("11 seconds")
        yield* s.start("r.service")
        assert.strictEqual(yield* s.isActive("r.service"), "active")
      })
    )
  )

  it.effect("oneshot units: success ends inactive (or active with RemainAfterExit), a failure ends failed", () =>
    onNode(
      Effect.gen(function* () {
        const s = yield* systemd
        yield* install("once.service", "[Service]\nType=oneshot\nExecStart=/bin/true\nExecStart=/bin/sh -c 'exit 0'\n")
        yield* install("kept.service", Units.oneshotTrue)
        yield* install("fails.service", "[Service]\nType=oneshot\nExecStart=/bin/true\nExecStart=/bin/sh -c 'exit 3'\n")
        yield* install("ignored.service", "[Service]\nType=oneshot\nExecStart=-/bin/false\n")
        yield* s.start("once.service")
        yield* s.start("kept.service")
        yield* s.start("ignored.service")
        assert.strictEqual(yield* s.isActive("once.service"), "inactive")
        assert.deepStrictEqual(yield* s.show("kept.service", ["ActiveState", "SubState", "MainPID"]), {
          MainPID: "0",
          ActiveState: "active",
          SubState: "exited"
        })
        assert.strictEqual(yield* s.isActive("ignored.service"), "inactive")
        const e = yield* Effect.flip(s.start("fails.service"))
        assert.strictEqual(e._tag === "SystemdError" && e.reason._tag, "JobFailed")
        assert.deepStrictEqual(
          yield* s.show("fails.service", ["ActiveState", "Result", "ExecMainCode", "ExecMainStatus"]),
          {
            Result: "exit-code",
            ExecMainCode: "1",
            ExecMainStatus: "3",
            ActiveState: "failed"
          }
        )
      })
    )
  )

  it.effect("a notify service that never signals readiness fails after TimeoutStartSec= with a timeout", () =>
    onNode(
      Effect.gen(function* () {
        const s = yield* systemd
        yield* install("slow.service", Units.notifySleeper)
        const fiber = yield* Effect.forkChild(Effect.flip(s.start("slow.service")))
        yield* Effect.yieldNow
        yield* TestClock.adjust("10 seconds")
        assert.strictEqual(yield* s.isActive("slow.service"), "activating")
        yield* TestClock.adjust("20 seconds")
        const e = yield* Fiber.join(fiber)
        assert.strictEqual(e._tag === "SystemdError" && e.reason._tag, "Timeout")
        assert.include(
          e._tag === "SystemdError" && "stderr" in e.reason ? e.reason.stderr : "",
          "failed because a timeout was exceeded"
        )
        assert.deepStrictEqual(yield* s.show("slow.service", ["ActiveState", "Result"]), {
          Result: "timeout",
          ActiveState: "failed"
        })
      })
    )
  )

  it.effect("a hung job: the library's timeout fires, the unit stays activating until a stop replaces the job", () =>
    onNode(
      Effect.gen(function* () {
        const s = yield* systemd
        const mem = yield* inspect
        yield* install("hang.service", Units.sleeper())
        yield* mem.injectFault({ unit: "hang.service", kind: "Hang" })
        const fiber = yield* Effect.forkChild(Effect.flip(s.start("hang.service")))
        yield* Effect.yieldNow
        yield* TestClock.adjust("1 hour")
        const e = yield* Fiber.join(fiber)
        assert.strictEqual(e._tag === "SystemdError" && e.reason._tag, "Timeout")
        const v = yield* viewOf("hang.service")
        assert.strictEqual(v.activeState, "activating")
        assert.strictEqual(v.pendingJob, "start")
        yield* s.stop("hang.service")
        assert.strictEqual(yield* s.isActive("hang.service"), "inactive")
        assert.deepStrictEqual(
          (yield* mem.jobs).map((j) => [j.verb, j.outcome]),
          [
            ["start", "canceled"],
            ["stop", "done"]
          ]
        )
      }),
      { systemctlTimeout: "1 minute" }
    )
  )

  it.effect("drop-ins override the fragment in name order; templates serve their instances", () =>
    onNode(
      Effect.gen(function* () {
        const s = yield* systemd
        yield* install(
          "k.service",
          "[Unit]\nDescription=base\n[Service]\nExecStart=/bin/false\n",
          "/lib/systemd/system"
        )
        yield* install("20-b.conf", "[Unit]\nDescription=from b\n", "/etc/systemd/system/k.service.d")
        yield* install(
          "10-a.conf",
          "[Service]\nExecStart=\nExecStart=/usr/bin/kubelet \\\n  --v=2\n",
          "/run/systemd/system/k.service.d"
        )
        yield* install("getty@.service", "[Unit]\nDescription=Getty on %i\n[Service]\nExecStart=/sbin/agetty %I\n")
        yield* s.start("k.service")
        assert.deepStrictEqual(
          yield* s.show("k.service", ["Description", "FragmentPath", "DropInPaths", "ActiveState"]),
          {
            Description: "from b",
            ActiveState: "active",
            FragmentPath: "/lib/systemd/system/k.service",
            DropInPaths: "/run/systemd/system/k.service.d/10-a.conf /etc/systemd/system/k.service.d/20-b.conf"
          }
        )
        yield* s.start("getty@tty1.service")
        assert.deepStrictEqual(yield* s.show("getty@tty1.service", ["Description", "ActiveState"]), {
          Description: "Getty on tty1",
          ActiveState: "active"
        })
      })
    )
  )

  it.effect(
    "NeedDaemonReload as systemd 252 answers it: a new drop-in directory (the unit's or the type's service.d) reads no until a unit is loaded afresh",
    () =>
      onNode(
        Effect.gen(function* () {
          const s = yield* systemd
          const flag = (v: string) => `[Service]\nEnvironment=HN_FLAG=${v}\nExecStart=/usr/bin/mydaemon\n`
          for (const u of ["a.service", "b.service", "c.service"]) yield* install(u, flag("old"))
          yield* install("10-base.conf", "[Service]\nEnvironment=HN_BASE=1\n", "/etc/systemd/system/a.service.d")
          yield* s.daemonReload
          for (const u of ["a.service", "b.service", "c.service"]) yield* s.start(u)
          const ndr = () =>
            Effect.forEach(["a.service", "b.service", "c.service"], (u) =>
              Effect.map(s.show(u, ["NeedDaemonReload"]), (p) => p.NeedDaemonReload)
            )
          // A drop-in added to a directory systemd knows; one in a directory made now; the type's directory made now.
          yield* install("20-new.conf", "[Service]\nEnvironment=HN_FLAG=new\n", "/etc/systemd/system/a.service.d")
          yield* install("20-new.conf", "[Service]\nEnvironment=HN_FLAG=new\n", "/etc/systemd/system/b.service.d")
          yield* install("50-all.conf", "[Service]\nEnvironment=HN_TYPED=1\n", "/etc/systemd/system/service.d")
          assert.deepStrictEqual(yield* ndr(), ["yes", "no", "no"])
          // A restart runs the loaded definition all the same.
          yield* s.restart("b.service")
          const mem = yield* inspect
          assert.deepStrictEqual(yield* mem.processEnvironment((yield* viewOf("b.service")).mainPid), ["HN_FLAG=old"])
          // Loading a unit systemd does not hold reads the unit directories again.
          assert.strictEqual(yield* s.isActive("never-loaded.service"), "inactive")
          assert.deepStrictEqual(yield* ndr(), ["yes", "yes", "yes"])
          yield* s.daemonReload
          assert.deepStrictEqual(yield* ndr(), ["no", "no", "no"])
          yield* s.restart("a.service")
          yield* s.restart("b.service")
          assert.deepStrictEqual(yield* mem.processEnvironment((yield* viewOf("a.service")).mainPid), [
            "HN_FLAG=new",
            "HN_BASE=1",
            "HN_TYPED=1"
          ])
          assert.deepStrictEqual(yield* mem.processEnvironment((yield* viewOf("b.service")).mainPid), [
            "HN_FLAG=new",
            "HN_TYPED=1"
          ])
          // c was not restarted: its process keeps the environment it was started with.
          assert.deepStrictEqual(yield* mem.processEnvironment((yield* viewOf("c.service")).mainPid), ["HN_FLAG=old"])
          assert.isUndefined(yield* mem.processEnvironment(999_999))
        })
      )
  )

  it.effect(
    "NeedDaemonReload: a removed drop-in reads yes; a file set back in time reads no; a higher fragment is not looked for",
    () =>
      onNode(
        Effect.gen(function* () {
          const s = yield* systemd
          const fs = yield* FileSystem.FileSystem
          // Files get the simulated clock's time: move it off the epoch, so a time set back is older.
          yield* TestClock.adjust("1 hour")
          yield* install("d.service", Units.sleeper())
          yield* install("10-x.conf", "[Unit]\nDescription=x\n", "/etc/systemd/system/d.service.d")
          yield* install("t.service", Units.sleeper())
          yield* install("10-x.conf", "[Unit]\nDescription=x\n", "/etc/systemd/system/t.service.d")
          yield* install("v.service", Units.sleeper("vendor"), "/lib/systemd/system")
          yield* s.daemonReload
          for (const u of ["d.service", "t.service", "v.service"]) yield* s.start(u)
          yield* fs.remove("/etc/systemd/system/d.service.d/10-x.conf")
          yield* fs.writeFileString("/etc/systemd/system/t.service.d/10-x.conf", "[Unit]\nDescription=y\n")
          yield* fs.utimes("/etc/systemd/system/t.service.d/10-x.conf", 0, 0)
          yield* install("v.service", Units.sleeper("admin"))
          for (const [u, expected] of [
            ["d.service", "yes"],
            ["t.service", "no"],
            ["v.service", "no"]
          ] as const) {
            assert.strictEqual((yield* s.show(u, ["NeedDaemonReload"])).NeedDaemonReload, expected, u)
          }
          yield* s.daemonReload
          assert.deepStrictEqual(yield* s.show("t.service", ["Description"]), { Description: "y" })
          assert.deepStrictEqual(yield* s.show("v.service", ["Description", "FragmentPath"]), {
            Description: "admin",
            FragmentPath: "/etc/systemd/system/v.service"
          })
          // The deliberate difference (the simulated clock stands still here): new content at the same time counts.
          yield* fs.writeFileString("/etc/systemd/system/t.service.d/10-x.conf", "[Unit]\nDescription=z\n")
          assert.strictEqual((yield* s.show("t.service", ["NeedDaemonReload"])).NeedDaemonReload, "yes")
        })
      )
  )

  it.effect(
    "Environment=: quoted words, a later assignment of a name replacing it in place, an empty one resetting",
    () =>
      onNode(
        Effect.gen(function* () {
          const s = yield* systemd
          yield* install(
            "e.service",
            '[Service]\nEnvironment="A=b c" D=e\nEnvironment=X=1\nEnvironment=\nEnvironment=Y=2 Z=3 Y=4 1BAD=5\nExecStart=/usr/bin/mydaemon\n'
          )
          yield* install("f.service", '[Service]\nEnvironment="A=b c" D=e\nExecStart=/usr/bin/mydaemon\n')
          yield* install("10-a.conf", "[Service]\nEnvironment=A=dropin\n", "/etc/systemd/system/f-x.service.d")
          yield* install("10-a.conf", "[Service]\nEnvironment=P=prefix\n", "/etc/systemd/system/f-.service.d")
          yield* install("f-x.service", "[Service]\nEnvironment=A=unit\nExecStart=/usr/bin/mydaemon\n")
          yield* s.start("e.service")
          yield* s.start("f.service")
          yield* s.start("f-x.service")
          assert.deepStrictEqual(yield* s.show("e.service", ["Environment"]), { Environment: "Y=4 Z=3" })
          assert.deepStrictEqual(yield* s.show("f.service", ["Environment"]), { Environment: '"A=b c" D=e' })
          // The unit's own drop-in directory wins over its dash prefix's for the same file name.
          assert.deepStrictEqual(yield* s.show("f-x.service", ["Environment", "DropInPaths"]), {
            Environment: "A=dropin",
            DropInPaths: "/etc/systemd/system/f-x.service.d/10-a.conf"
          })
          const mem = yield* inspect
          assert.deepStrictEqual(yield* mem.processEnvironment((yield* viewOf("f.service")).mainPid), ["A=b c", "D=e"])
        })
      )
  )

  it.effect("running(root) follows the units of the host backend of the node layer", () =>
    onNode(
      Effect.gen(function* () {
        const s = yield* systemd
        yield* install("containerd.service", Units.sleeper())
        yield* install("kubelet.service", Units.sleeper())
        const root = IsolationBackend.SlotRef.make("host")
        assert.isFalse(yield* IsolationBackend.running(root))
        yield* s.start("containerd.service")
        yield* s.start("kubelet.service")
        assert.isTrue(yield* IsolationBackend.running(root))
        yield* (yield* inspect).killMain("kubelet.service")
        assert.isFalse(yield* IsolationBackend.running(root))
      })
    )
  )

  it.effect("spawning systemctl is an operation of the simulated process: logged, and refused once it crashed", () =>
    onNode(
      Effect.gen(function* () {
        const s = yield* systemd
        const host = yield* MemoryHost.MemoryHost
        yield* install("x.service", Units.sleeper())
        yield* host.clearOperations
        yield* s.start("x.service")
        assert.deepStrictEqual(
          (yield* host.operations).map((o) => [o.kind, o.outcome]),
          [["spawn", "ok"]]
        )
        yield* host.crashAfter(0)
        const exit = yield* Effect.exit(s.stop("x.service"))
        assert.isTrue(Exit.isFailure(exit) && MemoryHost.isCrash(Cause.squash(exit.cause)))
        yield* host.restart
        // systemd itself did not crash: the unit still runs
        assert.strictEqual(yield* s.isActive("x.service"), "active")
      })
    )
  )
})
