/**
 * The shape of a failed goal state resolution: one `GoalStateError` per
 * slot, its reason a tagged class that `Effect.catchReason` reaches. What
 * the resolution does is the conformance suite's (GoalStateConformance, on
 * the real and the simulated file system).
 */
import { assert, describe, it } from "@effect/vitest"
import { AgentConfig, ConfigFile, GoalState } from "@hostnode/core"
import * as GoalStateDocument from "@hostnode/test/internal/goalStateDocument"
import { Effect, FileSystem } from "effect"

describe("GoalStateError", () => {
  it.effect("catchReason reaches each reason, with its own fields", () =>
    Effect.gen(function* () {
      const config = yield* AgentConfig.decode({})
      // The slot is decoded before anything is looked up.
      const issues = yield* GoalState.makeSource({ config })
        .for("Not/A/Slot")
        .pipe(
          Effect.as([]),
          Effect.catchReason("GoalStateError", "InvalidSlot", (reason) => Effect.succeed(reason.issues))
        )
      assert.isAbove(issues.length, 0)
      assert.include(issues[0]?.message, "slot")

      const missing = GoalState.makeSource({
        config,
        resolve: (slot) =>
          Effect.fail(
            new GoalState.GoalStateError({
              slot,
              reason: new ConfigFile.Unavailable({ _tag: "NotFound", file: "/x/a.json" })
            })
          )
      })
      const file = yield* missing.for("a").pipe(
        Effect.as(""),
        Effect.catchReason("GoalStateError", "NotFound", (reason, error) =>
          Effect.succeed(`${error.slot} ${reason.file}: ${error.message}`)
        )
      )
      assert.strictEqual(file, 'a /x/a.json: no goal state for slot "a": /x/a.json does not exist')

      const given = yield* GoalState.decodeMachineGoalState(GoalStateDocument.goalStateDocument("b"))
      const mismatch = yield* GoalState.makeSource({ config, goalState: given })
        .for("a")
        .pipe(
          Effect.as(undefined),
          Effect.catchReason("GoalStateError", "SlotMismatch", (reason) => Effect.succeed(reason))
        )
      assert.isDefined(mismatch)
      // a given goal state came from no file
      assert.notProperty(mismatch, "file")
      assert.deepStrictEqual(
        mismatch?.issues.map((i) => i.field),
        ["slot"]
      )

      const refused = missing.for("a").pipe(
        // @ts-expect-error: no reason "GoalStateNotFound" (the old class is the reason NotFound)
        Effect.catchReason("GoalStateError", "GoalStateNotFound", () => Effect.void)
      )
      assert.isTrue(Effect.isEffect(refused))
      // no file is read here: the override and the given goal state stand in for the files
    }).pipe(Effect.provide(FileSystem.layerNoop({})))
  )

  it("messages read as before: the slot, the file, the reason and what was wrong", () => {
    const error = (reason: GoalState.GoalStateError["reason"]) => new GoalState.GoalStateError({ slot: "a", reason })
    assert.strictEqual(
      error(new ConfigFile.Unavailable({ _tag: "Unreadable", file: "/c/a.json", detail: "EACCES" })).message,
      'cannot read the goal state for slot "a" from /c/a.json: EACCES'
    )
    assert.strictEqual(
      error(new ConfigFile.InvalidJson({ file: "/c/a.json", issues: [{ field: "", message: "not JSON: oops" }] }))
        .message,
      'invalid goal state for slot "a" in /c/a.json (InvalidJson): not JSON: oops'
    )
    assert.strictEqual(
      error(new GoalState.Failure({ _tag: "SlotMismatch", issues: [{ field: "slot", message: 'is "b", not "a"' }] }))
        .message,
      'invalid goal state for slot "a" (SlotMismatch): slot: is "b", not "a"'
    )
  })
})
