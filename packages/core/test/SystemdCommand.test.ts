/**
 * The command-based `Systemd` (`Systemd.layerCommand`: `systemctl` through
 * the spawner in context) against the simulated host's `systemctl`: the
 * conformance suite a real systemd passes, and each answer of systemctl read
 * as the right outcome (success, or the reason systemctl's exit and words
 * mean). The real-systemd runs are in @hostnode/node's tests.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Deadline, HostCommand, Systemd, type UnitName } from "@hostnode/core"
import * as Layers from "@hostnode/core/Layers"
import { MemoryNode } from "@hostnode/test"
import { SystemdConformance } from "@hostnode/test/conformance"
import { Cause, Duration, Effect, Exit, FileSystem, Layer } from "effect"
import { TestClock } from "effect/testing"

// Built here over MemoryNode's command line, in place of the one MemoryNode.layer provides.
const host = Systemd.layerCommand().pipe(Layer.provideMerge(MemoryNode.layer()))

describe("Systemd.layerCommand over MemoryNode's systemctl", () => {
  SystemdConformance.suite("Systemd.layerCommand over MemoryNode", host, Effect.succeed("/"))

  it.effect("reads each answer of systemctl as its outcome", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      yield* fs.makeDirectory("/etc/systemd/system", { recursive: true })
      yield* fs.writeFileString(
        "/etc/systemd/system/run.service",
        "[Service]\nExecStart=/bin/sleep infinity\nExecReload=/bin/kill -HUP $MAINPID\n"
      )
      yield* fs.writeFileString("/etc/systemd/system/fails.service", "[Service]\nType=oneshot\nExecStart=/bin/false\n")
      const systemd = yield* Effect.provide(Effect.service(Systemd.Systemd), Systemd.layerCommand())
      // What a call ended with: its value, or the error and its reason.
      const outcome = <A>(effect: Effect.Effect<A, Systemd.SystemdError | UnitName.UnitNameError>) =>
        Effect.map(Effect.exit(effect), (exit) => {
          if (Exit.isSuccess(exit)) return { value: exit.value }
          const e = Cause.squash(exit.cause) as Systemd.SystemdError | UnitName.UnitNameError
          return {
            error: e._tag,
            reason: e.reason._tag,
            message: e.message,
            fields: { ...e.reason }
          }
        })
      type Outcome = { readonly value: unknown } | { readonly reason: string }
      const calls: ReadonlyArray<readonly [string, (s: Systemd.Systemd) => Effect.Effect<Outcome>]> = [
        ["daemon-reload", (s) => outcome(s.daemonReload)],
        ["restart missing.service", (s) => outcome(s.restart("missing.service"))],
        ["start fails.service", (s) => outcome(s.start("fails.service"))],
        ["isActive fails.service", (s) => outcome(s.isActive("fails.service"))],
        ["start run.service", (s) => outcome(s.start("run.service"))],
        ["reload run.service", (s) => outcome(s.reload("run.service"))],
        ["show run.service", (s) => outcome(s.show("run.service", ["ActiveState", "SubState", "Description"]))],
        ["reload missing.service", (s) => outcome(s.reload("missing.service"))],
        ["restart kubelet", (s) => outcome(s.restart("kubelet"))],
        ["stop run.service", (s) => outcome(s.stop("run.service"))]
      ]
      const seen: Array<string> = []
      for (const [label, call] of calls) {
        const a = yield* call(systemd)
        seen.push("reason" in a ? `${label}: ${String(a.reason)}` : `${label}: ok`)
      }
      // The calls reach the outcomes that matter, not only successes.
      assert.deepStrictEqual(seen, [
        "daemon-reload: ok",
        "restart missing.service: UnitNotFound",
        "start fails.service: JobFailed",
        "isActive fails.service: ok",
        "start run.service: ok",
        "reload run.service: ok",
        "show run.service: ok",
        "reload missing.service: UnitNotFound",
        "restart kubelet: NoTypeSuffix",
        "stop run.service: ok"
      ])
    }).pipe(Effect.provide(MemoryNode.layer()))
  )

  it.live(
    "a systemctl that never exits fails Timeout at the operation's deadline, not after the layer's 3 minutes",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-systemctl-" })
        yield* fs.writeFileString(`${dir}/systemctl`, "#!/bin/sh\nexec sleep 60\n")
        yield* fs.chmod(`${dir}/systemctl`, 0o755)
        // A real process that never answers, found first on the PATH.
        const systemd = yield* Effect.service(Systemd.Systemd).pipe(
          Effect.provide(
            Systemd.layerCommand().pipe(Layer.provide(HostCommand.layerWrapped(["env", `PATH=${dir}:/usr/bin:/bin`])))
          )
        )
        const e = yield* systemd.restart("kubelet.service").pipe(Effect.flip, Deadline.within("1 second"))
        assert.strictEqual(e._tag, "SystemdError")
        assert.strictEqual(e.reason._tag, "Timeout")
        assert.include(e.message, "at the operation's deadline")
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer))
  )

  it.effect("a systemd call's limit is the call timeout in effect, else the layer's, never past the deadline", () =>
    Effect.gen(function* () {
      const limit = Effect.map(Layers.systemdCallLimit(Duration.minutes(3)), Duration.toMillis)
      assert.strictEqual(yield* limit, 180_000)
      assert.strictEqual(yield* Effect.provideService(limit, Layers.SystemdCallTimeout, Duration.seconds(10)), 10_000)
      const bounded = yield* Effect.gen(function* () {
        yield* TestClock.adjust("2 seconds")
        return yield* Effect.provideService(limit, Layers.SystemdCallTimeout, Duration.seconds(10))
      }).pipe(Deadline.within("5 seconds"))
      assert.strictEqual(bounded, 3_000)
      const past = yield* Effect.gen(function* () {
        yield* TestClock.adjust("6 seconds")
        return yield* limit
      }).pipe(Deadline.within("5 seconds"))
      assert.strictEqual(past, 0)
    })
  )
})
