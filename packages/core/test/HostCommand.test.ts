import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Deadline, HostCommand } from "@hostnode/core"
import { Effect, FileSystem, Layer, Option, Schedule, Stream } from "effect"
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

  it.live("a command that outlives the deadline fails TimedOut without being waited for, and is killed", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-command-" })
      // A child that ignores SIGTERM: only the SIGKILL two seconds after the deadline ends it.
      const e = yield* HostCommand.run("sh", ["-c", `trap "" TERM; echo $$ > ${dir}/pid; exec sleep 60`]).pipe(
        Effect.flip,
        Deadline.within("1 second")
      )
      assert.strictEqual(e.reason._tag, "TimedOut")
      assert.include(e.message, "at the operation's deadline")
      const pid = (yield* fs.readFileString(`${dir}/pid`)).trim()
      // Returned while the child still ran (its SIGKILL comes two seconds after the SIGTERM) ...
      assert.isTrue(yield* fs.exists(`/proc/${pid}`), "the run returned before the child was gone")
      // ... and the child is gone after it: killed, not left behind.
      const gone = yield* fs
        .exists(`/proc/${pid}`)
        .pipe(
          Effect.repeat({ while: (there) => there, schedule: Schedule.spaced("100 millis") }),
          Effect.timeoutOption("30 seconds")
        )
      assert.deepStrictEqual(gone, Option.some(false))
      // Past the deadline nothing is started.
      const late = yield* HostCommand.run("sh", ["-c", `echo started > ${dir}/late`]).pipe(
        Effect.flip,
        Deadline.within("0 millis")
      )
      assert.strictEqual(late.reason._tag, "TimedOut")
      assert.isFalse(yield* fs.exists(`${dir}/late`))
      // Without a deadline, or within it, a command runs to its end as before.
      const done = yield* HostCommand.run("sh", ["-c", "sleep 0.2; echo done"]).pipe(Deadline.within("30 seconds"))
      assert.strictEqual(done.stdout, "done\n")
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer))
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
