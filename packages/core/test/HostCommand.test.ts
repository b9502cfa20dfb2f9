import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { HostCommand } from "@hostnode/core"
import { Effect, Layer, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import { nsenterPrefix } from "../src/internal/hostCommand.ts"

describe("HostCommand", () => {
  it.effect("run returns stdout, stderr and the exit code together; a non-zero exit is a result", () =>
    Effect.gen(function* () {
      const out = yield* HostCommand.run("sh", ["-c", "echo out; echo err >&2; exit 3"])
      assert.deepStrictEqual(out, { stdout: "out\n", stderr: "err\n", exitCode: 3 })
      const missing = yield* Effect.flip(HostCommand.run("/nonexistent/hostnode-cmd", ["a b"]))
      assert.strictEqual(missing._tag, "CommandError")
      assert.deepStrictEqual(missing.args, ["a b"])
      // A missing executable is its own reason; catchReason reaches it.
      assert.strictEqual(missing.reason._tag, "NotFound")
      const detail = yield* HostCommand.run("/nonexistent/hostnode-cmd", []).pipe(
        Effect.as(""),
        Effect.catchReason("CommandError", "NotFound", (reason, error) =>
          Effect.succeed(`${error.command}: ${reason.detail}`)
        )
      )
      assert.include(detail, "/nonexistent/hostnode-cmd: ")
      yield* HostCommand.run("true", []).pipe(
        // @ts-expect-error: CommandError has no reason "Exited"
        Effect.catchReason("CommandError", "Exited", () => Effect.void),
        Effect.ignore
      )
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("a wrapped spawner runs each command, piped ones on both sides, behind the prefix", () =>
    Effect.gen(function* () {
      // The real spawner, wrapped with `env` as the prefix: argv words survive
      // unchanged (no shell), and both sides of a pipe go through the prefix.
      const wrapped = Layer.provide(HostCommand.layerWrapped(["env", "HOSTNODE_WRAPPED=yes"]), NodeServices.layer)
      const direct = yield* HostCommand.run("sh", ["-c", 'echo "w=$HOSTNODE_WRAPPED $1"', "sh", "a b;c"]).pipe(
        Effect.provide(wrapped)
      )
      assert.strictEqual(direct.stdout, "w=yes a b;c\n")
      const piped = yield* Effect.gen(function* () {
        const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
        const left = ChildProcess.make("sh", ["-c", 'echo "left:$HOSTNODE_WRAPPED"'])
        const right = ChildProcess.make("sh", ["-c", 'read l; echo "$l right:$HOSTNODE_WRAPPED"'])
        const handle = yield* spawner.spawn(ChildProcess.pipeTo(right)(left))
        return yield* handle.stdout.pipe(Stream.decodeText(), Stream.mkString)
      }).pipe(Effect.scoped, Effect.provide(wrapped))
      assert.strictEqual(piped, "left:yes right:yes\n")
    })
  )

  it("nsenterPrefix ends nsenter's options with --", () => {
    assert.deepStrictEqual(nsenterPrefix(42), ["nsenter", "-t", "42", "-m", "-p", "--"])
    assert.deepStrictEqual(nsenterPrefix(7, ["n"]), ["nsenter", "-t", "7", "-n", "--"])
  })
})
