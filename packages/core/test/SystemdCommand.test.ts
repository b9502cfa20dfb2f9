/**
 * The command-based `Systemd` (`Systemd.layerCommand`: `systemctl` through
 * the spawner in context) against the simulated host's `systemctl`: the
 * conformance suite a real systemd passes, and each answer of systemctl read
 * as the right outcome (success, or the reason systemctl's exit and words
 * mean). The real-systemd runs are in @hostnode/node's tests.
 */
import { assert, describe, it } from "@effect/vitest"
import { Systemd, type UnitName } from "@hostnode/core"
import { MemoryNode } from "@hostnode/test"
import { SystemdConformance } from "@hostnode/test/conformance"
import { Cause, Effect, Exit, FileSystem, Layer } from "effect"

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
})
