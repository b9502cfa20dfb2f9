/**
 * The recording `Systemd` that `MemoryHost.layer` provides: every call is
 * recorded and succeeds, names are decoded as by every `Systemd`, and
 * `MemoryNode.layer`'s simulated systemd takes its place there.
 */
import { assert, describe, it } from "@effect/vitest"
import { Snapshot, Systemd } from "@hostnode/core"
import { MemoryHost, MemoryNode, MemorySystemd, RecordingSystemd } from "@hostnode/sim"
import { Effect, FileSystem } from "effect"

describe("RecordingSystemd", () => {
  it.effect("records every call in order and keeps which units it started", () =>
    Effect.gen(function* () {
      const systemd = yield* Systemd.Systemd
      const recorder = yield* RecordingSystemd.RecordingSystemd
      yield* systemd.start("a.service")
      yield* systemd.restart("b.service")
      yield* systemd.reload("b.service")
      yield* systemd.stop("a.service")
      yield* systemd.daemonReload
      assert.strictEqual(yield* systemd.isActive("b.service"), "active")
      assert.strictEqual(yield* systemd.isActive("a.service"), "inactive")
      assert.deepStrictEqual(yield* systemd.show("b.service", ["ActiveState", "SubState"]), {
        ActiveState: "active",
        SubState: ""
      })
      assert.deepStrictEqual(yield* recorder.calls, [
        { verb: "start", unit: "a.service" },
        { verb: "restart", unit: "b.service" },
        { verb: "reload", unit: "b.service" },
        { verb: "stop", unit: "a.service" },
        { verb: "daemon-reload" },
        { verb: "show", unit: "b.service", properties: ["ActiveState"] },
        { verb: "show", unit: "a.service", properties: ["ActiveState"] },
        { verb: "show", unit: "b.service", properties: ["ActiveState", "SubState"] }
      ])
      assert.deepStrictEqual(yield* recorder.activeUnits, ["b.service"])
      yield* recorder.clearCalls
      assert.deepStrictEqual(yield* recorder.calls, [])
      assert.deepStrictEqual(yield* recorder.activeUnits, ["b.service"])
    }).pipe(Effect.provide(RecordingSystemd.layer))
  )

  it.effect("an invalid unit name fails as with every Systemd and is not recorded", () =>
    Effect.gen(function* () {
      const systemd = yield* Systemd.Systemd
      const error = yield* Effect.flip(systemd.restart("../etc/passwd"))
      assert.strictEqual(error._tag, "UnitNameError")
      assert.deepStrictEqual(yield* RecordingSystemd.RecordingSystemd.use((r) => r.calls), [])
    }).pipe(Effect.provide(RecordingSystemd.layer))
  )

  it.effect("MemoryHost.layer provides it: a restore on the real root records its daemon-reload", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const snapshot = yield* Snapshot.takeOf({ dir: "/snapshots/s", paths: ["/etc/kubernetes"] })
      yield* fs.writeFileString("/etc/kubernetes/kubelet.conf", "changed")
      yield* snapshot.restore
      assert.strictEqual(yield* fs.readFileString("/etc/kubernetes/kubelet.conf"), "original")
      assert.deepStrictEqual(yield* RecordingSystemd.RecordingSystemd.use((r) => r.calls), [{ verb: "daemon-reload" }])
    }).pipe(
      Effect.provide(
        MemoryHost.layer({
          files: { "/etc/kubernetes/kubelet.conf": "original", "/snapshots": { directory: true } }
        })
      )
    )
  )

  it.effect("each build of MemoryHost.layer has its own recorder", () =>
    Effect.gen(function* () {
      const calls = RecordingSystemd.RecordingSystemd.use((r) => r.calls)
      const first = yield* Effect.gen(function* () {
        yield* (yield* Systemd.Systemd).start("a.service")
        return yield* calls
      }).pipe(Effect.provide(MemoryHost.layer()))
      const second = yield* calls.pipe(Effect.provide(MemoryHost.layer()))
      assert.strictEqual(first.length, 1)
      assert.deepStrictEqual(second, [])
    })
  )

  it.effect("MemoryNode.layer's Systemd is the simulated one, not the recorder", () =>
    Effect.gen(function* () {
      const systemd = yield* Systemd.Systemd
      const error = yield* Effect.flip(systemd.start("missing.service"))
      assert.strictEqual(error._tag === "SystemdError" && error.reason._tag, "UnitNotFound")
      assert.isDefined(yield* MemorySystemd.MemorySystemd)
    }).pipe(Effect.provide(MemoryNode.layer()))
  )
})
