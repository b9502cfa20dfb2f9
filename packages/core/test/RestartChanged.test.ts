/**
 * `restartChanged` with a caller's `restart`: names decoded before anything
 * runs, and the caller's error kept exactly as it is, with where the run
 * stopped on its cause.
 */
import { assert, describe, it } from "@effect/vitest"
import { RestartChanged, Systemd } from "@hostnode/core"
import { Cause, Data, Effect, Exit } from "effect"

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
                  reason: new Systemd.JobFailed({ exitCode: 1, stderr: "Job for kubelet.service failed." }),
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
