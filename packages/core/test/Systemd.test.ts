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
      reason: "UnitNotFound",
      verb: "restart",
      unit: "x.service",
      exitCode: 5,
      stderr: "Failed to restart x.service: Unit x.service not found.\n"
    })
    assert.strictEqual(
      e.message,
      "systemctl restart x.service failed (UnitNotFound, exit 5): Failed to restart x.service: Unit x.service not found."
    )
  })
})
