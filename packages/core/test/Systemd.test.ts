import { assert, describe, it } from "@effect/vitest"
import { Systemd } from "@hostnode/core"
import { Effect, Ref } from "effect"

// `make` is the one place unit names are validated; these tests check that no
// primitive runs for an invalid name and that derived methods use the primitives.
const recording = Effect.gen(function* () {
  const calls = yield* Ref.make<Array<string>>([])
  const record = (s: string) => Ref.update(calls, (xs) => [...xs, s])
  const systemd = Systemd.make({
    job: (verb, unit) => record(`${verb} ${unit}`),
    daemonReload: record("daemon-reload"),
    show: (unit, props) =>
      Effect.as(record(`show ${unit} ${props.join(",")}`), {
        ActiveState: unit === "weird.service" ? "bogus" : "failed"
      })
  })
  return { systemd, calls }
})

describe("Systemd.make", () => {
  it.effect("validates unit names before any primitive runs", () =>
    Effect.gen(function* () {
      const { systemd, calls } = yield* recording
      for (const bad of ["", "kubelet", "-x", "a;b.service", "@x.service"]) {
        for (const call of [systemd.start, systemd.stop, systemd.restart, systemd.reload, systemd.isActive]) {
          const e = yield* Effect.flip(call(bad))
          assert.strictEqual(e._tag, "UnitNameError")
        }
        const e = yield* Effect.flip(systemd.show(bad, ["MainPID"]))
        assert.strictEqual(e._tag, "UnitNameError")
      }
      assert.deepStrictEqual(yield* Ref.get(calls), [])
    })
  )

  it.effect("derives the verbs and isActive from the primitives", () =>
    Effect.gen(function* () {
      const { systemd, calls } = yield* recording
      yield* systemd.start("a.service")
      yield* systemd.restart("b.service")
      yield* systemd.daemonReload
      assert.strictEqual(yield* systemd.isActive("c.service"), "failed")
      // a state systemd might add later is reported as inactive, not passed through
      assert.strictEqual(yield* systemd.isActive("weird.service"), "inactive")
      assert.deepStrictEqual(yield* Ref.get(calls), [
        "start a.service",
        "restart b.service",
        "daemon-reload",
        "show c.service ActiveState",
        "show weird.service ActiveState"
      ])
    })
  )

  it("SystemdError says the verb, unit, exit code and systemctl's stderr", () => {
    const e = new Systemd.SystemdError({
      reason: new Systemd.Failure({
        _tag: "UnitNotFound",
        exitCode: 5,
        stderr: "Failed to restart x.service: Unit x.service not found.\n"
      }),
      verb: "restart",
      unit: "x.service"
    })
    assert.strictEqual(
      e.message,
      "systemctl restart x.service failed (UnitNotFound, exit 5): Failed to restart x.service: Unit x.service not found."
    )
    // Without a unit (daemon-reload) or a client exit code (our own time limit), the message says neither.
    const timeout = new Systemd.SystemdError({
      reason: new Systemd.Failure({ _tag: "Timeout", stderr: "systemctl did not finish within 3m" }),
      verb: "daemon-reload"
    })
    assert.strictEqual(timeout.message, "systemctl daemon-reload failed (Timeout): systemctl did not finish within 3m")
    // A D-Bus job failure: the job's result and the unit's status after it.
    const job = new Systemd.SystemdError({
      reason: Systemd.Failure.classify(
        1,
        "Job for y.service failed because the control process exited with error code.",
        {
          jobResult: "failed",
          status: { activeState: "failed", subState: "failed", result: "exit-code", execMainCode: 1, execMainStatus: 2 }
        }
      ),
      verb: "start",
      unit: "y.service"
    })
    assert.strictEqual(
      job.message,
      "systemctl start y.service failed (JobFailed, job failed, exit 1): Job for y.service failed because the control process exited with error code.; the unit is failed (failed), result exit-code, main process exited with status 2"
    )
  })

  it("over D-Bus the message names D-Bus, the method, the job and the D-Bus error; a settle check names neither", () => {
    const job = new Systemd.SystemdError({
      reason: Systemd.Failure.classify(
        1,
        "Job for y.service failed because the control process exited with error code.",
        {
          jobResult: "failed"
        }
      ),
      verb: "restart",
      unit: "y.service",
      dbus: { method: "RestartUnit", job: "/org/freedesktop/systemd1/job/7" }
    })
    assert.strictEqual(
      job.message,
      "D-Bus RestartUnit y.service, job /org/freedesktop/systemd1/job/7 failed (JobFailed, job failed): Job for y.service failed because the control process exited with error code."
    )
    const missing = new Systemd.SystemdError({
      reason: new Systemd.Failure({
        _tag: "UnitNotFound",
        exitCode: 5,
        stderr: "Failed to restart x.service: Unit x.service not found."
      }),
      verb: "restart",
      unit: "x.service",
      dbus: { method: "RestartUnit", error: "org.freedesktop.systemd1.NoSuchUnit" }
    })
    assert.strictEqual(
      missing.message,
      "D-Bus RestartUnit x.service failed (UnitNotFound, org.freedesktop.systemd1.NoSuchUnit): Failed to restart x.service: Unit x.service not found."
    )
    assert.notInclude(missing.message, "systemctl")
    const reload = new Systemd.SystemdError({
      reason: new Systemd.Failure({ _tag: "Timeout", stderr: "systemd did not answer Reload within 2s" }),
      verb: "daemon-reload",
      dbus: { method: "Reload" }
    })
    assert.strictEqual(reload.message, "D-Bus Reload failed (Timeout): systemd did not answer Reload within 2s")
    const settled = new Systemd.SystemdError({
      reason: new Systemd.NotSettled({
        detail: "k.service did not stay active for 1s after its restart (seen down after 100 ms)",
        status: { activeState: "failed", subState: "failed", result: "exit-code", execMainCode: 1, execMainStatus: 3 }
      }),
      verb: "restart",
      unit: "k.service"
    })
    assert.strictEqual(
      settled.message,
      "k.service did not settle after its restart (NotSettled): k.service did not stay active for 1s after its restart (seen down after 100 ms); the unit is failed (failed), result exit-code, main process exited with status 3"
    )
  })

  it("classify gives each reason from systemctl's exit code and stderr", () => {
    const cases: ReadonlyArray<readonly [number, string, Systemd.SystemdError["reason"]["_tag"]]> = [
      [5, "Failed to restart x.service: Unit x.service not found.", "UnitNotFound"],
      [1, "Failed to stop x.service: Unit x.service not loaded.", "UnitNotFound"],
      [1, "System has not been booted with systemd as init system (PID 1). Can't operate.", "NotBooted"],
      [4, "Failed to restart x.service: Access denied", "AccessDenied"],
      [1, "Job for x.service timed out.", "Timeout"],
      [1, "Job for x.service failed.", "JobFailed"],
      [1, "something else", "Other"]
    ]
    for (const [exitCode, stderr, tag] of cases) {
      const reason = Systemd.Failure.classify(exitCode, stderr)
      assert.strictEqual(reason._tag, tag, stderr)
      assert.strictEqual("exitCode" in reason && reason.exitCode, exitCode, stderr)
    }
  })

  it.effect("catchReason reaches each reason", () =>
    Effect.gen(function* () {
      const failing = (reason: Systemd.SystemdError["reason"]) =>
        Effect.fail(new Systemd.SystemdError({ reason, verb: "restart", unit: "x.service" }))
      const notFound = yield* failing(new Systemd.Failure({ _tag: "UnitNotFound", exitCode: 5, stderr: "gone" })).pipe(
        Effect.catchReason("SystemdError", "UnitNotFound", (reason, error) =>
          Effect.succeed(`${error.unit} ${reason.exitCode} ${reason.stderr}`)
        )
      )
      assert.strictEqual(notFound, "x.service 5 gone")
      const spawn = yield* failing(new Systemd.Failure({ _tag: "CommandUnavailable", detail: "no systemctl" })).pipe(
        Effect.catchReason("SystemdError", "CommandUnavailable", (reason) => Effect.succeed(reason.detail))
      )
      assert.strictEqual(spawn, "no systemctl")
      const settled = yield* failing(
        new Systemd.NotSettled({
          detail: "x.service did not stay active",
          status: { activeState: "failed", subState: "failed", result: "exit-code", execMainCode: 1, execMainStatus: 3 }
        })
      ).pipe(Effect.catchReason("SystemdError", "NotSettled", (reason) => Effect.succeed(reason.status.execMainStatus)))
      assert.strictEqual(settled, 3)
      // Another reason passes through untouched.
      const other = yield* Effect.flip(
        failing(new Systemd.Failure({ _tag: "JobFailed", exitCode: 1, stderr: "Job for x.service failed." })).pipe(
          Effect.catchReason("SystemdError", "UnitNotFound", () => Effect.succeed("caught"))
        )
      )
      assert.strictEqual(other.reason._tag, "JobFailed")
      yield* failing(new Systemd.Failure({ _tag: "Other", stderr: "x" })).pipe(
        // @ts-expect-error: SystemdError has no reason "NoSuchReason"
        Effect.catchReason("SystemdError", "NoSuchReason", () => Effect.void),
        Effect.ignore
      )
    })
  )
})
