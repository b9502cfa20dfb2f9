/**
 * A node agent reduced to its snapshot operations, as a child process
 * (`fixtures/snapshot-child.ts`) the real tests drive one command per line:
 * started ahead of time (a Node process takes a second or two to load), it
 * can be killed with SIGKILL in the middle of a restore, or two of them can
 * recover one snapshot at once.
 */
import { fileURLToPath } from "node:url"
import { type Cause, Duration, Effect, Queue, Ref, type Scope, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"

const childScript = fileURLToPath(new URL("./fixtures/snapshot-child.ts", import.meta.url))

/** A child process waiting for commands, with its stdout as a queue of lines. */
export interface Child {
  readonly pid: number
  readonly send: (line: string) => Effect.Effect<void>
  /** The next stdout line, which must start with `prefix`. */
  readonly expect: (prefix: string) => Effect.Effect<string, Cause.Done | Error>
  /** The next stdout line if one comes within `ms`. */
  readonly poll: (ms: number) => Effect.Effect<string | undefined, Cause.Done>
  readonly kill: Effect.Effect<void>
  readonly stderr: Effect.Effect<string>
}

export const spawnChild = (
  compileCache: string
): Effect.Effect<Child, never, ChildProcessSpawner.ChildProcessSpawner | Scope.Scope> =>
  Effect.gen(function* () {
    const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
    const input = yield* Queue.unbounded<Uint8Array, Cause.Done>()
    const handle = yield* spawner
      .spawn(
        ChildProcess.make(process.execPath, ["--conditions=@hostnode/source", childScript], {
          stdin: Stream.fromQueue(input),
          // Loading effect and the sources takes a Node process about a second;
          // the compile cache the first child fills saves the others some of it.
          env: { NODE_COMPILE_CACHE: compileCache },
          extendEnv: true,
          // Killed by its own pid, not a process group.
          detached: false
        })
      )
      .pipe(Effect.orDie)
    const lines = yield* Queue.unbounded<string, Cause.Done>()
    yield* handle.stdout.pipe(
      Stream.decodeText(),
      Stream.splitLines,
      // Answers start with "@@ "; the rest is the child's log.
      Stream.filter((l) => l.startsWith("@@ ")),
      Stream.runForEach((l) => Queue.offer(lines, l.slice(3))),
      Effect.ensuring(Queue.end(lines)),
      Effect.ignore,
      Effect.forkScoped
    )
    const stderr = yield* Ref.make("")
    yield* handle.stderr.pipe(
      Stream.decodeText(),
      Stream.runForEach((t) => Ref.update(stderr, (s) => (s + t).slice(-4000))),
      Effect.ignore,
      Effect.forkScoped
    )
    const next = Queue.take(lines).pipe(
      Effect.timeoutOrElse({
        duration: Duration.seconds(30),
        orElse: () => Effect.fail(new Error("no answer from the child within 30 s"))
      })
    )
    const child: Child = {
      pid: Number(handle.pid),
      send: (line) => Effect.asVoid(Queue.offer(input, new TextEncoder().encode(`${line}\n`))),
      expect: (prefix) =>
        Effect.flatMap(next, (l) =>
          l.startsWith(prefix)
            ? Effect.succeed(l)
            : Effect.flatMap(Ref.get(stderr), (e) =>
                Effect.fail(
                  new Error(`child ${handle.pid}: expected ${prefix}, got ${JSON.stringify(l)}; stderr: ${e}`)
                )
              )
        ),
      poll: (ms) =>
        Queue.take(lines).pipe(Effect.timeoutOrElse({ duration: Duration.millis(ms), orElse: () => Effect.undefined })),
      kill: handle
        .kill({ killSignal: "SIGKILL" })
        .pipe(Effect.andThen(Effect.exit(handle.exitCode)), Effect.asVoid, Effect.orDie),
      stderr: Ref.get(stderr)
    }
    yield* Effect.orDie(child.expect("up"))
    return child
  })

/** One command line: the verb and its arguments as one JSON array. */
export const cmd = (verb: string, dir: string, root: string) => `${verb} ${JSON.stringify([dir, root])}`

/** The files of a snapshot directory, as the crash and attack tests reach them directly (the format is core's internal). */
export const ManifestName = "manifest.json"
export const DataName = "data"
