/**
 * ShellSession against the real spawner: each command's output, error output
 * and exit status are what a process of its own gives, whatever its words;
 * one shell serves many commands; a shell that dies or a command abandoned
 * midway ends the session and the next command gets a new shell.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { HostCommand } from "@hostnode/core"
import { ShellSession } from "@hostnode/node"
import { Duration, Effect, Layer, Ref, Schema } from "effect"
import { ChildProcessSpawner } from "effect/process"

/** The real spawner, counting the processes it starts, with the session over it. */
const counted = Effect.gen(function* () {
  const spawns = yield* Ref.make(0)
  const inner = yield* ChildProcessSpawner.ChildProcessSpawner
  const counting = ChildProcessSpawner.make((command) =>
    Ref.update(spawns, (n) => n + 1).pipe(Effect.andThen(inner.spawn(command)))
  )
  // Built once in the caller's scope: every use of `session` shares its shell.
  const session = yield* Layer.build(
    ShellSession.layer.pipe(Layer.provide(Layer.succeed(ChildProcessSpawner.ChildProcessSpawner, counting)))
  )
  return { spawns, session: Layer.succeedContext(session) }
}).pipe(Effect.provide(NodeServices.layer))

const run = (command: string, args: ReadonlyArray<string>) => HostCommand.run(command, args)

/** Words a shell would mangle if they were not quoted right. */
const Words = Schema.Array(
  Schema.Array(
    Schema.Literals(["a", " ", "'", '"', "\\", "$", "`", "\n", "\t", "*", ";", "&", "|", "é", "\u{1F600}", "-"])
  ).check(Schema.isMaxLength(12))
).check(Schema.isMaxLength(6))

describe("ShellSession", () => {
  it.live("gives each command's stdout, stderr and exit status as a process of its own would", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { session } = yield* counted
        const cases: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
          ["sh", ["-c", "echo out; echo err >&2; exit 3"]],
          ["sh", ["-c", "printf 'no final newline'; printf 'e' >&2"]],
          ["sh", ["-c", "printf '\\n\\n'; exit 0"]],
          ["true", []],
          ["sh", ["-c", "head -c 100000 /dev/zero | tr '\\0' x"]]
        ]
        for (const [command, args] of cases) {
          const direct = yield* run(command, args).pipe(Effect.provide(NodeServices.layer))
          const viaSession = yield* run(command, args).pipe(Effect.provide(session))
          assert.deepStrictEqual(viaSession, direct, `${command} ${args.join(" ")}`)
        }
      })
    )
  )

  it.effect.prop(
    "passes every word through unchanged (quotes, $, backslashes, newlines, unicode)",
    { words: Words },
    ({ words }) =>
      Effect.scoped(
        Effect.gen(function* () {
          const { session } = yield* counted
          const w = words.map((chars) => chars.join(""))
          const out = yield* run("printf", ["%s|", ...w]).pipe(Effect.provide(session))
          assert.strictEqual(out.stdout, w.length === 0 ? "|" : w.map((x) => `${x}|`).join(""), JSON.stringify(w))
          assert.strictEqual(out.exitCode, 0)
        })
      ),
    { arbitrary: { runs: 60 } }
  )

  it.live("runs many commands in one shell", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { spawns, session } = yield* counted
        for (let i = 0; i < 50; i++) {
          const out = yield* run("echo", [String(i)]).pipe(Effect.provide(session))
          assert.strictEqual(out.stdout, `${i}\n`)
          // A command that reads its stdin gets /dev/null, not the shell's script.
          if (i === 25) assert.strictEqual((yield* run("cat", []).pipe(Effect.provide(session))).stdout, "")
        }
        assert.strictEqual(yield* Ref.get(spawns), 1)
      })
    )
  )

  it.live("a missing command is exit status 127 with the shell's message, and the session goes on", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { session } = yield* counted
        const missing = yield* run("/nonexistent/hostnode-cmd", []).pipe(Effect.provide(session))
        assert.strictEqual(missing.exitCode, 127)
        assert.include(missing.stderr, "/nonexistent/hostnode-cmd")
        assert.strictEqual((yield* run("echo", ["ok"]).pipe(Effect.provide(session))).stdout, "ok\n")
      })
    )
  )

  it.live("a command abandoned midway ends the shell; the next command gets a new one", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { spawns, session } = yield* counted
        const shellPid = (yield* run("sh", ["-c", "echo $PPID"]).pipe(Effect.provide(session))).stdout.trim()
        const timedOut = yield* run("sleep", ["31.25"]).pipe(
          Effect.timeoutOrElse({ duration: Duration.millis(200), orElse: () => Effect.succeed("timed out") }),
          Effect.provide(session)
        )
        assert.strictEqual(timedOut, "timed out")
        // The abandoned shell is gone.
        const alive = yield* run("kill", ["-0", shellPid]).pipe(Effect.provide(NodeServices.layer))
        assert.notStrictEqual(alive.exitCode, 0)
        // And so is the command it was running, as it would be without a session.
        const orphans = yield* run("pgrep", ["-f", "^sleep 31.25$"]).pipe(Effect.provide(NodeServices.layer))
        assert.strictEqual(orphans.stdout, "")
        assert.strictEqual((yield* run("echo", ["again"]).pipe(Effect.provide(session))).stdout, "again\n")
        assert.strictEqual(yield* Ref.get(spawns), 2)
      })
    )
  )

  it.live("a shell that dies fails the command it was running; the next command gets a new shell", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { session } = yield* counted
        const failed = yield* Effect.flip(run("sh", ["-c", "kill -9 $PPID; sleep 5"]).pipe(Effect.provide(session)))
        assert.strictEqual(failed._tag, "CommandError")
        assert.include(failed.reason.detail, "exited")
        assert.strictEqual((yield* run("echo", ["again"]).pipe(Effect.provide(session))).stdout, "again\n")
      })
    )
  )

  it.live("closing the scope ends the shell", () =>
    Effect.gen(function* () {
      const shellPid = yield* Effect.scoped(
        Effect.gen(function* () {
          const { session } = yield* counted
          return (yield* run("sh", ["-c", "echo $PPID"]).pipe(Effect.provide(session))).stdout.trim()
        })
      )
      const alive = yield* run("kill", ["-0", shellPid]).pipe(Effect.provide(NodeServices.layer))
      assert.notStrictEqual(alive.exitCode, 0)
    })
  )
})
