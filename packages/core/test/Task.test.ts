import { assert, describe, it } from "@effect/vitest"
import { Task } from "@hostnode/core"
import { Data, Effect, Ref } from "effect"

class Boom extends Data.TaggedError("Boom")<{ readonly detail: string }> {}

describe("Task", () => {
  it.effect("run runs tasks in order and stops at the first failure, naming it", () =>
    Effect.gen(function* () {
      const ran = yield* Ref.make<Array<string>>([])
      const step = (name: string) =>
        Task.make(
          name,
          Ref.update(ran, (xs) => [...xs, name])
        )
      const failing = Task.make(
        "restart-changed",
        Effect.andThen(
          Ref.update(ran, (xs) => [...xs, "restart-changed"]),
          Effect.fail(new Boom({ detail: "x" }))
        )
      )
      const error = yield* Effect.flip(Task.run([step("snapshot"), failing, step("await-localdns")]))
      assert.deepStrictEqual(yield* Ref.get(ran), ["snapshot", "restart-changed"])
      assert.strictEqual(error._tag, "TaskFailed")
      assert.strictEqual(error.task, "restart-changed")
      assert.strictEqual(error.cause._tag, "Boom")
      assert.include(error.message, "restart-changed")
    })
  )

  it.effect("run succeeds when every task does", () =>
    Effect.gen(function* () {
      const n = yield* Ref.make(0)
      yield* Task.run([
        Task.make(
          "a",
          Ref.update(n, (x) => x + 1)
        ),
        Task.make(
          "b",
          Ref.update(n, (x) => x + 1)
        )
      ])
      assert.strictEqual(yield* Ref.get(n), 2)
    })
  )

  it("conditionReason classifies from the task name, longest /-prefix first", () => {
    const fail = (task: string) => new Task.TaskFailed({ task, cause: "x" })
    assert.strictEqual(Task.conditionReason(fail("restart-changed")), "ServiceRestartFailed")
    assert.strictEqual(Task.conditionReason(fail("await-localdns")), "LocalDNSNotReady")
    assert.strictEqual(Task.conditionReason(fail("snapshot/take")), "ConfigSnapshotFailed")
    // a name that only shares characters, not a path boundary, does not match
    assert.strictEqual(Task.conditionReason(fail("snapshots")), "TaskFailed")
    assert.strictEqual(Task.conditionReason(fail("something-else")), "TaskFailed")
    assert.strictEqual(Task.conditionReason(new Error("not a task")), "Unknown")
  })

  it("a composition root extends the table; its entries win and the library's stay", () => {
    const table = {
      ...Task.defaultReasons,
      "configure-kubelet": "KubeletConfigFailed",
      "snapshot/take": "SnapshotTakeFailed"
    }
    const fail = (task: string) => new Task.TaskFailed({ task, cause: "x" })
    assert.strictEqual(Task.conditionReason(fail("configure-kubelet"), table), "KubeletConfigFailed")
    assert.strictEqual(Task.conditionReason(fail("snapshot/take"), table), "SnapshotTakeFailed")
    assert.strictEqual(Task.conditionReason(fail("snapshot/restore"), table), "ConfigSnapshotFailed")
    assert.strictEqual(Task.conditionReason(fail("reset-cni-state"), table), "RepaveResetFailed")
  })
})
