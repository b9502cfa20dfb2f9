/**
 * Progress of long work: counted through the wrapped services and shown on
 * the `Progress` service, never in a `--json` run.
 */
import { assert, describe, it } from "@effect/vitest"
import { Progress } from "@hostnode/cli"
import { MemoryHost, MemoryNode } from "@hostnode/test"
import { Effect, Layer, Ref } from "effect"
import { cliEnvironment, runCli } from "./harness.ts"

const Mounts = 200

const files = Object.fromEntries(Array.from({ length: Mounts }, (_, i) => [`/k/pods/p${i}/.keep`, ""]))

/** A node with `Mounts` tmpfs below /k, and a Progress service that keeps what it was asked to show. */
const withNode = <A, E, R>(
  body: (shown: Ref.Ref<ReadonlyArray<string>>, cleared: { readonly count: number }) => Effect.Effect<A, E, R>
) =>
  Effect.gen(function* () {
    const shown = yield* Ref.make<ReadonlyArray<string>>([])
    const cleared = { count: 0 }
    const host = yield* MemoryHost.MemoryHost
    for (let i = 0; i < Mounts; i++) yield* Effect.orDie(host.tmpfs(`/k/pods/p${i}`))
    const recorder = Layer.succeed(
      Progress.Progress,
      Progress.Progress.of({
        show: (line) => Ref.update(shown, (s) => [...s, line]),
        clear: Ref.update(shown, (s) => [...s, "<clear>"]),
        beforeLog: () => {
          cleared.count++
        }
      })
    )
    return yield* body(shown, cleared).pipe(Effect.provide(recorder))
  }).pipe(Effect.provide(Layer.mergeAll(MemoryNode.layer({ files }), cliEnvironment)))

describe("Progress", () => {
  it.effect("a long unmount shows its count, then clears the line before the result", () =>
    withNode((shown, cleared) =>
      Effect.gen(function* () {
        const out = yield* runCli(["unmount-below", "/k"])
        assert.strictEqual(out.code, 0)
        const lines = yield* Ref.get(shown)
        assert.isAbove(lines.length, 1)
        assert.match(lines[0] ?? "", /^hostnode unmount-below: \d+ unmounted$/)
        assert.strictEqual(lines.at(-1), "<clear>")
        // The operation's summary is logged: the line was cleared right before it.
        assert.isAbove(cleared.count, 0)
        // Nothing of it reaches stdout.
        assert.isFalse(out.stdout.some((l) => l.includes("unmounted,") || l.includes(": 1 unmounted")))
      })
    )
  )

  it.effect("a --json run shows no progress", () =>
    withNode((shown, cleared) =>
      Effect.gen(function* () {
        const out = yield* runCli(["--json", "unmount-below", "/k"])
        assert.strictEqual(out.code, 0)
        assert.strictEqual(out.stdout.length, 1)
        assert.deepStrictEqual(yield* Ref.get(shown), [])
        assert.strictEqual(cleared.count, 0)
      })
    )
  )
})
