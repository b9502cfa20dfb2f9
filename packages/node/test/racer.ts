/**
 * The attack tests' concurrent writer (`fixtures/racer.c`): built once per
 * test file with the system C compiler into a temporary directory, started
 * as a process of its own (so it really runs beside the code under test, on
 * the other core), and stopped by its pid when its scope closes.
 */
import { fileURLToPath } from "node:url"
import { HostCommand } from "@hostnode/core"
import { Effect, Fiber, FileSystem, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"

const source = fileURLToPath(new URL("./fixtures/racer.c", import.meta.url))

/** Compiles the racer; a failure to compile is a defect of the test setup. */
export const build = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-racer-" }).pipe(Effect.orDie)
  const binary = `${dir}/racer`
  const out = yield* HostCommand.run("cc", ["-O2", "-Wall", "-o", binary, source]).pipe(Effect.orDie)
  if (out.exitCode !== 0) return yield* Effect.die(new Error(`cc failed: ${out.stderr}`))
  return binary
})

/** A running racer: how many changes it made, once stopped. */
export interface Running {
  readonly stop: Effect.Effect<number>
}

/**
 * Starts `binary mode a b` and waits until it says it is ready; it is
 * terminated (SIGTERM, by its own pid) when `stop` runs or the scope closes.
 */
export const start = (binary: string, mode: "exchange" | "bind", a: string, b: string) =>
  Effect.gen(function* () {
    const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
    const handle = yield* spawner.spawn(ChildProcess.make(binary, [mode, a, b])).pipe(Effect.orDie)
    const lines = handle.stdout.pipe(Stream.decodeText(), Stream.splitLines)
    const output: Array<string> = []
    const reader = yield* Stream.runForEach(lines, (line) => Effect.sync(() => output.push(line))).pipe(
      Effect.ignore,
      Effect.forkScoped
    )
    // Ready: its first line.
    yield* Effect.sleep("5 millis").pipe(Effect.repeat({ until: () => output.length > 0 }))
    const stop = Effect.gen(function* () {
      yield* handle.kill({ killSignal: "SIGTERM" }).pipe(Effect.ignore)
      yield* handle.exitCode.pipe(Effect.ignore)
      yield* Fiber.await(reader)
      return Number(output[1] ?? "0")
    })
    yield* Effect.addFinalizer(() => Effect.asVoid(stop))
    return { stop } satisfies Running
  })
