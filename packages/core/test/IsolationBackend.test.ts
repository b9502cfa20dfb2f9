/**
 * `IsolationError` has the library's one error shape: `catchReason` reaches
 * each of its reasons, and tsc refuses one it does not have.
 */
import { assert, describe, it } from "@effect/vitest"
import { IsolationBackend } from "@hostnode/core"
import { Effect } from "effect"

describe("IsolationBackend", () => {
  it.effect("catchReason reaches each reason of IsolationError", () =>
    Effect.gen(function* () {
      const failing = Effect.fail(
        new IsolationBackend.IsolationError({
          slot: "a",
          reason: new IsolationBackend.ResolverFailed({ detail: "the runtime did not answer" })
        })
      )
      const detail = yield* failing.pipe(
        Effect.catchReason("IsolationError", "ResolverFailed", (reason, error) =>
          Effect.succeed(`${error.slot}: ${reason.detail}`)
        )
      )
      assert.strictEqual(detail, "a: the runtime did not answer")
      const passed = yield* failing.pipe(
        Effect.catchReason("IsolationError", "SystemdFailed", () => Effect.succeed("caught")),
        Effect.flip
      )
      assert.strictEqual(passed.reason._tag, "ResolverFailed")
      // @ts-expect-error: IsolationError has no reason tagged "Timeout"
      void failing.pipe(Effect.catchReason("IsolationError", "Timeout", () => Effect.void))
    })
  )
})
