/**
 * The node layers' errors have the library's shape: a tagged class whose
 * `reason` has a `_tag`, so `Effect.catchReason` reaches each reason (and tsc
 * refuses a reason the error does not have); an error with a single cause
 * carries its `detail` itself.
 */
import { assert, describe, it } from "@effect/vitest"
import { NodeContainer, NodeDirectory, NodeMounter } from "@hostnode/node"
import { Effect } from "effect"

describe("the node layers' errors", () => {
  it.effect("catchReason reaches each reason of ContainerError", () =>
    Effect.gen(function* () {
      const gone = Effect.fail(
        new NodeContainer.ContainerError({
          reason: new NodeContainer.ContainerErrorReason({ _tag: "NotFound", pid: 4242, detail: "no process 4242" })
        })
      )
      const pid = yield* gone.pipe(
        Effect.catchReason("ContainerError", "NotFound", (reason) => Effect.succeed(reason.pid))
      )
      assert.strictEqual(pid, 4242)
      // Another reason passes through as the ContainerError it is.
      const other = yield* gone.pipe(
        Effect.catchReason("ContainerError", "Unreachable", () => Effect.succeed(0)),
        Effect.flip
      )
      assert.strictEqual(other.reason._tag, "NotFound")
      // @ts-expect-error: ContainerError has no reason tagged "Timeout"
      void gone.pipe(Effect.catchReason("ContainerError", "Timeout", () => Effect.void))
    })
  )

  it.effect("MounterUnavailable and DirectoryUnavailable carry the loader's words, with no reasons to catch", () =>
    Effect.gen(function* () {
      const mounter = Effect.fail(new NodeMounter.MounterUnavailable({ detail: "no libc.so.6" }))
      const dirs = Effect.fail(new NodeDirectory.DirectoryUnavailable({ detail: "no koffi" }))
      const said = yield* Effect.all([
        mounter.pipe(Effect.catchTag("MounterUnavailable", (e) => Effect.succeed(e.detail))),
        dirs.pipe(Effect.catchTag("DirectoryUnavailable", (e) => Effect.succeed(e.message)))
      ])
      assert.deepStrictEqual(said, ["no libc.so.6", "directory handles through system calls are unavailable: no koffi"])
      // @ts-expect-error: MounterUnavailable has no reasons
      void mounter.pipe(Effect.catchReason("MounterUnavailable", "FfiUnavailable", () => Effect.void))
    })
  )
})
