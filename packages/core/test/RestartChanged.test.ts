/**
 * `restartChanged` with a caller's `restart`: names decoded before anything
 * runs, and the caller's error kept exactly as it is, with where the run
 * stopped on its cause. And the reload before the restarts, by policy, on a
 * scripted systemd (the real one and the simulated one are in the Systemd
 * conformance suite): when it reloads, what a failed reload is, the job
 * timeout, and what is counted.
 */
import { assert, describe, it } from "@effect/vitest"
import { Metrics, RestartChanged, Systemd } from "@hostnode/core"
import * as Layers from "@hostnode/core/Layers"
import { Cause, Data, Duration, Effect, Exit, Metric } from "effect"

class SupervisorError extends Data.TaggedError("SupervisorError")<{ readonly unit: string }> {
  override get message(): string {
    return `the supervisor could not restart ${this.unit}`
  }
}

const units = [
  { unit: "containerd.service", changed: true },
  { unit: "sidecar.service", changed: false },
  { unit: "kubelet.service", changed: true },
  { unit: "agent.service", changed: true }
]

describe("restartChanged with the caller's restart", () => {
  it.effect("the caller's error is what the call fails with, unchanged; its cause says where the run stopped", () =>
    Effect.gen(function* () {
      const ran: Array<string> = []
      const exit = yield* Effect.exit(
        RestartChanged.restartChanged({
          wasRunning: true,
          units,
          restart: (unit) =>
            Effect.sync(() => ran.push(unit)).pipe(
              Effect.andThen(unit === "kubelet.service" ? Effect.fail(new SupervisorError({ unit })) : Effect.void)
            )
        })
      )
      assert.deepStrictEqual(ran, ["containerd.service", "kubelet.service"])
      assert.isTrue(Exit.isFailure(exit))
      if (!Exit.isFailure(exit)) return
      const error = Cause.squash(exit.cause)
      // Its own tag and its own wording, so a caller's catchTag still works.
      assert.instanceOf(error, SupervisorError)
      assert.strictEqual((error as SupervisorError).message, "the supervisor could not restart kubelet.service")
      assert.deepStrictEqual(RestartChanged.progressOf(exit.cause), {
        unit: "kubelet.service",
        restarted: ["containerd.service"],
        notAttempted: ["agent.service"]
      })
    })
  )

  it.effect("catchTag on the caller's error works through restartChanged", () =>
    Effect.gen(function* () {
      const caught = yield* RestartChanged.restartChanged({
        wasRunning: true,
        units,
        restart: (unit) => Effect.fail(new SupervisorError({ unit }))
      }).pipe(
        Effect.as("none"),
        Effect.catchTag("SupervisorError", (e) => Effect.succeed(e.unit))
      )
      assert.strictEqual(caught, "containerd.service")
    })
  )

  it.effect("every name is decoded first: a bad one, changed or not, fails before any restart", () =>
    Effect.gen(function* () {
      for (const wasRunning of [true, false]) {
        const ran: Array<string> = []
        const e = yield* Effect.flip(
          RestartChanged.restartChanged({
            wasRunning,
            units: [...units, { unit: "a;rm -rf /.service", changed: false }],
            restart: (unit) => Effect.sync(() => ran.push(unit))
          })
        )
        assert.strictEqual(e._tag, "UnitNameError")
        assert.deepStrictEqual(ran, [])
      }
    })
  )

  it.effect("catchReason reaches each reason of a RestartError", () =>
    Effect.gen(function* () {
      // systemd refuses the kubelet's restart; the others succeed and stay inactive.
      const systemd = Systemd.make({
        job: (verb, unit) =>
          unit === "kubelet.service"
            ? Effect.fail(
                new Systemd.SystemdError({
                  reason: new Systemd.Failure({
                    _tag: "JobFailed",
                    exitCode: 1,
                    stderr: "Job for kubelet.service failed."
                  }),
                  verb,
                  unit
                })
              )
            : Effect.void,
        daemonReload: Effect.void,
        show: () => Effect.succeed({ ActiveState: "inactive" })
      })
      const failed = yield* RestartChanged.restartChanged({ wasRunning: true, units }).pipe(
        Effect.as("none"),
        Effect.catchReason("RestartError", "RestartFailed", (reason, error) =>
          Effect.succeed(`${error.unit}: ${reason.cause._tag}`)
        ),
        Effect.provideService(Systemd.Systemd, systemd)
      )
      assert.strictEqual(failed, "kubelet.service: SystemdError")
      // With a settle window the first unit, restarted but not active, did not settle.
      const unsettled = yield* RestartChanged.restartChanged({ wasRunning: true, units, settle: "1 second" }).pipe(
        Effect.as("none"),
        Effect.catchReason("RestartError", "NotSettled", (reason, error) =>
          Effect.succeed(
            `${error.unit}: ${reason.cause._tag === "SystemdError" ? reason.cause.reason._tag : reason.cause._tag}`
          )
        ),
        Effect.provideService(Systemd.Systemd, systemd)
      )
      assert.strictEqual(unsettled, "containerd.service: NotSettled")
      yield* RestartChanged.restartChanged({ wasRunning: true, units }).pipe(
        // @ts-expect-error: RestartError has no reason "Skipped"
        Effect.catchReason("RestartError", "Skipped", () => Effect.void),
        Effect.ignore,
        Effect.provideService(Systemd.Systemd, systemd)
      )
    })
  )
})

/** A `Systemd` that records its calls, with units that report `NeedDaemonReload` and a reload that may fail. */
const scripted = (options: {
  readonly needReload?: ReadonlyArray<string>
  readonly reloadFails?: boolean
  readonly calls: Array<string>
}) =>
  Systemd.make({
    job: (verb, unit) =>
      Effect.gen(function* () {
        const limit = yield* Layers.SystemdCallTimeout
        options.calls.push(`${verb} ${unit}${limit === undefined ? "" : ` (limit ${Duration.format(limit)})`}`)
      }),
    daemonReload: Effect.suspend(() => {
      options.calls.push("daemon-reload")
      return options.reloadFails === true
        ? Effect.fail(
            new Systemd.SystemdError({
              verb: "daemon-reload",
              reason: new Systemd.Failure({ _tag: "AccessDenied", exitCode: 4, stderr: "Access denied" })
            })
          )
        : Effect.void
    }),
    show: (unit, properties) =>
      Effect.sync(() => {
        options.calls.push(`show ${unit} ${properties.join(",")}`)
        return { NeedDaemonReload: options.needReload?.includes(unit) === true ? "yes" : "no", ActiveState: "active" }
      })
  })

const changedUnits = [
  { unit: "containerd.service", changed: true },
  { unit: "sidecar.service", changed: false },
  { unit: "kubelet.service", changed: true }
]

/** Runs `restartChanged` on a scripted systemd in a registry of its own: the calls, the outcome and the metrics. */
const runScripted = (
  options: Partial<RestartChanged.Options>,
  script: { readonly needReload?: ReadonlyArray<string>; readonly reloadFails?: boolean } = {}
) =>
  Effect.gen(function* () {
    const calls: Array<string> = []
    const exit = yield* Effect.exit(
      RestartChanged.restartChanged({ wasRunning: true, units: changedUnits, ...options }).pipe(
        Effect.provideService(Systemd.Systemd, scripted({ ...script, calls }))
      )
    )
    const counter = (metric: Metric.Counter<number>, attributes: Record<string, string>) =>
      Effect.map(Metric.value(Metric.withAttributes(metric, attributes)), (s) => s.count)
    const restarts = new Map<string, number>()
    for (const u of changedUnits) {
      for (const result of ["restarted", "failed", "not_settled", "not_attempted"]) {
        restarts.set(
          `${u.unit} ${result}`,
          yield* counter(Metrics.Metrics.unitRestarts, { systemd_unit: u.unit, result })
        )
      }
    }
    return {
      calls,
      exit,
      reloads: {
        always: yield* counter(Metrics.Metrics.daemonReloads, { policy: "always" }),
        auto: yield* counter(Metrics.Metrics.daemonReloads, { policy: "auto" })
      },
      restarts: (unit: string, result: string) => restarts.get(`${unit} ${result}`) ?? 0
    }
  }).pipe(Effect.provideService(Metric.MetricRegistry, new Map()))

describe("restartChanged reloads systemd before its restarts", () => {
  it.effect("by default: one daemon-reload before the first restart, however many units", () =>
    Effect.gen(function* () {
      const r = yield* runScripted({})
      assert.isTrue(Exit.isSuccess(r.exit))
      assert.deepStrictEqual(r.calls, ["daemon-reload", "restart containerd.service", "restart kubelet.service"])
      assert.deepStrictEqual(r.reloads, { always: 1, auto: 0 })
      assert.strictEqual(r.restarts("kubelet.service", "restarted"), 1)
      assert.strictEqual(r.restarts("sidecar.service", "restarted"), 0)
    })
  )

  it.effect("no reload when nothing is to be restarted: the node was down, or no unit changed", () =>
    Effect.gen(function* () {
      const down = yield* runScripted({ wasRunning: false })
      assert.deepStrictEqual(down.calls, [])
      const unchanged = yield* runScripted({ units: changedUnits.map((u) => ({ ...u, changed: false })) })
      assert.deepStrictEqual(unchanged.calls, [])
      assert.deepStrictEqual(unchanged.reloads, { always: 0, auto: 0 })
    })
  )

  it.effect("never: the restarts alone", () =>
    Effect.gen(function* () {
      const r = yield* runScripted({ reload: "never" })
      assert.deepStrictEqual(r.calls, ["restart containerd.service", "restart kubelet.service"])
      assert.deepStrictEqual(r.reloads, { always: 0, auto: 0 })
    })
  )

  it.effect("auto: asks each unit to restart for NeedDaemonReload, reloads once when one says yes", () =>
    Effect.gen(function* () {
      const none = yield* runScripted({ reload: "auto" })
      assert.deepStrictEqual(none.calls, [
        "show containerd.service NeedDaemonReload",
        "show kubelet.service NeedDaemonReload",
        "restart containerd.service",
        "restart kubelet.service"
      ])
      assert.deepStrictEqual(none.reloads, { always: 0, auto: 0 })
      const first = yield* runScripted({ reload: "auto" }, { needReload: ["containerd.service", "kubelet.service"] })
      assert.deepStrictEqual(first.calls, [
        "show containerd.service NeedDaemonReload",
        "daemon-reload",
        "restart containerd.service",
        "restart kubelet.service"
      ])
      assert.deepStrictEqual(first.reloads, { always: 0, auto: 1 })
      // An unchanged unit is not asked.
      const unchanged = yield* runScripted({ reload: "auto" }, { needReload: ["sidecar.service"] })
      assert.notInclude(unchanged.calls, "daemon-reload")
    })
  )

  it.effect("a reload that fails: RestartError ReloadFailed naming the first unit, nothing restarted", () =>
    Effect.gen(function* () {
      const r = yield* runScripted({}, { reloadFails: true })
      assert.deepStrictEqual(r.calls, ["daemon-reload"])
      assert.isTrue(Exit.isFailure(r.exit))
      if (!Exit.isFailure(r.exit)) return
      const e = Cause.squash(r.exit.cause) as RestartChanged.RestartError
      assert.strictEqual(e._tag, "RestartError")
      assert.strictEqual(e.reason._tag, "ReloadFailed")
      assert.strictEqual(e.unit, "containerd.service")
      assert.deepStrictEqual(e.restarted, [])
      assert.deepStrictEqual(e.notAttempted, ["kubelet.service"])
      assert.include(
        e.message,
        "the daemon-reload before the restarts failed: systemctl daemon-reload failed (AccessDenied"
      )
      const caught = yield* Effect.fail(e).pipe(
        Effect.catchReason("RestartError", "ReloadFailed", (reason) => Effect.succeed(reason.cause._tag))
      )
      assert.strictEqual(caught, "SystemdError")
      // Both units still run the old configuration.
      assert.strictEqual(r.restarts("containerd.service", "not_attempted"), 1)
      assert.strictEqual(r.restarts("kubelet.service", "not_attempted"), 1)
    })
  )

  it.effect("jobTimeout is the limit of every systemd call of the run (Layers.SystemdCallTimeout)", () =>
    Effect.gen(function* () {
      const r = yield* runScripted({ jobTimeout: "2 seconds", reload: "never" })
      assert.deepStrictEqual(r.calls, ["restart containerd.service (limit 2s)", "restart kubelet.service (limit 2s)"])
    })
  )
})
