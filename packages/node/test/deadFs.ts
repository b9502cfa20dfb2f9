/**
 * A real stalled peer for the dead-storage tests: the FUSE daemon of
 * `fixtures/deadfs.c`, built at test time with the system C compiler against
 * libfuse3, mounted in the test's private mount namespace. It answers until
 * `stall` (so a test can mount something below it), then never answers
 * (`"dead"`) or answers after a delay (`seconds`). It is killed by its pid
 * when its scope closes, which aborts the connection and releases every call
 * still waiting on it.
 */
import { fileURLToPath } from "node:url"
import { HostCommand } from "@hostnode/core"
import { Effect, FileSystem, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"

const source = fileURLToPath(new URL("./fixtures/deadfs.c", import.meta.url))

/** Compiles the daemon; a failure to compile is a defect of the test setup. */
export const build = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-deadfs-" }).pipe(Effect.orDie)
  const binary = `${dir}/deadfs`
  const out = yield* HostCommand.run("cc", [
    "-O2",
    "-Wall",
    "-I/usr/include/fuse3",
    "-o",
    binary,
    source,
    "-lfuse3",
    "-lpthread"
  ]).pipe(Effect.orDie)
  if (out.exitCode !== 0) return yield* Effect.die(new Error(`cc failed: ${out.stderr}`))
  return binary
})

/** A mounted daemon. */
export interface DeadFs {
  readonly pid: number
  /** From now on it does not answer (or answers late). */
  readonly stall: Effect.Effect<void>
}

/** Mounts the daemon at `mountPoint` (a directory) and waits until it is mounted; killed when the scope closes. */
export const mount = (binary: string, mountPoint: string, mode: "dead" | number) =>
  Effect.gen(function* () {
    const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
    const handle = yield* spawner
      .spawn(ChildProcess.make(binary, [mountPoint, mode === "dead" ? "dead" : String(mode)]))
      .pipe(Effect.orDie)
    const lines: Array<string> = []
    yield* Stream.runForEach(handle.stdout.pipe(Stream.decodeText(), Stream.splitLines), (line) =>
      Effect.sync(() => lines.push(line))
    ).pipe(Effect.ignore, Effect.forkScoped)
    yield* Effect.sleep("10 millis").pipe(Effect.repeat({ until: () => lines.includes("ready"), times: 1000 }))
    if (!lines.includes("ready")) return yield* Effect.die(new Error("deadfs did not mount"))
    const pid = Number(handle.pid)
    // Signalled by its own pid. Killed, the kernel aborts the connection and every waiter gets ENOTCONN.
    const signal = (name: NodeJS.Signals) => Effect.try(() => process.kill(pid, name)).pipe(Effect.ignore)
    yield* Effect.addFinalizer(() => signal("SIGKILL"))
    return { pid, stall: signal("SIGUSR1") } satisfies DeadFs
  })
