/**
 * The command-based `Systemd` (`NodeSystemd.layerCommand`, `systemctl`
 * through the spawner) against the simulated host's `systemctl`: the same
 * conformance suite passes as against a real systemd, and for the same calls
 * it has the same outcomes as `MemoryNode`'s own `Systemd` (the client of
 * `systemctl` @hostnode/test carries, which cannot depend on this package).
 */
import { assert, describe, it } from "@effect/vitest"
import { Systemd, type UnitName } from "@hostnode/core"
import { NodeSystemd } from "@hostnode/node"
import { MemoryNode } from "@hostnode/test"
import { SystemdConformance } from "@hostnode/test/conformance"
import { Cause, Effect, Exit, FileSystem, Layer } from "effect"

// The command Systemd replaces the one MemoryNode.layer provides.
const host = NodeSystemd.layerCommand().pipe(Layer.provideMerge(MemoryNode.layer()))

describe("NodeSystemd.layerCommand over MemoryNode's systemctl", () => {
  SystemdConformance.suite("NodeSystemd.layerCommand over MemoryNode", host, Effect.succeed("/"))

  it.effect("has the outcomes of MemoryNode's own Systemd, call for call", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      yield* fs.makeDirectory("/etc/systemd/system", { recursive: true })
      yield* fs.writeFileString(
        "/etc/systemd/system/run.service",
        "[Service]\nExecStart=/bin/sleep infinity\nExecReload=/bin/kill -HUP $MAINPID\n"
      )
      yield* fs.writeFileString("/etc/systemd/system/fails.service", "[Service]\nType=oneshot\nExecStart=/bin/false\n")
      const theirs = yield* Systemd.Systemd
      const ours = yield* NodeSystemd.makeCommand()
      // What a call ended with, as a value both can be compared by.
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
        const a = yield* call(theirs)
        const b = yield* call(ours)
        assert.deepStrictEqual(b, a, label)
        seen.push("reason" in a ? String(a.reason) : "ok")
      }
      // The calls reach the outcomes that matter, not only successes.
      assert.deepStrictEqual(seen, [
        "ok",
        "UnitNotFound",
        "JobFailed",
        "ok",
        "ok",
        "ok",
        "ok",
        "UnitNotFound",
        "NoTypeSuffix",
        "ok"
      ])
    }).pipe(Effect.provide(MemoryNode.layer()))
  )
})
