/**
 * The session spawner behind `ShellSession.layer`: one `sh` fed a script line
 * per command, each command's end found by markers carrying a per-session
 * nonce.
 */
import { type Cause, Deferred, Effect, Exit, Queue, Random, Scope, Semaphore, Sink, Stream } from "effect"
import * as PlatformError from "effect/PlatformError"
import { ChildProcess, ChildProcessSpawner } from "effect/process"

/** One word for `sh`: single-quoted, where nothing is special but the quote itself. */
export const quote = (word: string): string => `'${word.replaceAll("'", `'\\''`)}'`

/**
 * The line the shell runs for one command: the command with no stdin, then
 * an end marker on stdout carrying the exit status and one on stderr. Each
 * marker starts with a newline, so it is found even after output without a
 * final newline, and that newline is not part of the output.
 */
export const script = (nonce: string, command: string, args: ReadonlyArray<string>): string =>
  `${[command, ...args].map(quote).join(" ")} </dev/null; printf '\\n%s %d\\n' '${nonce}' "$?"; printf '\\n%s\\n' '${nonce}' >&2\n`

/** What one command left: its exit status and everything it printed. */
interface Result {
  readonly exitCode: number
  readonly stdout: string
  readonly stderr: string
}

/** The command being run: filled in as its markers arrive. */
interface Running {
  readonly done: Deferred.Deferred<Result, PlatformError.PlatformError>
  stdout: string | undefined
  stderr: string | undefined
  exitCode: number
}

interface Session {
  readonly scope: Scope.Closeable
  readonly input: Queue.Queue<string, Cause.Done>
  readonly pid: ChildProcessSpawner.ProcessId
  alive: boolean
  current: Running | undefined
  out: string
  err: string
}

const sessionError = (description: string) =>
  PlatformError.systemError({ _tag: "BadResource", module: "ShellSession", method: "spawn", description })

/** True when the command can go through the shell: a plain argv with no options. */
const isPlain = (command: ChildProcess.Command): command is ChildProcess.StandardCommand =>
  ChildProcess.isStandardCommand(command) &&
  Object.values(command.options).every((v) => v === undefined) &&
  command.args.every((a) => typeof a === "string")

/**
 * Makes the session spawner over the spawner in context; the shell started
 * last is ended when the scope closes.
 */
export const make: Effect.Effect<
  ChildProcessSpawner.ChildProcessSpawner["Service"],
  never,
  ChildProcessSpawner.ChildProcessSpawner | Scope.Scope
> = Effect.gen(function* () {
  const inner = yield* ChildProcessSpawner.ChildProcessSpawner
  const permits = yield* Semaphore.make(1)
  // Markers no command prints by accident: fixed per session layer.
  const nonce = `hostnode-end-${(yield* Random.nextIntBetween(0, 2 ** 31)).toString(36)}${(yield* Random.nextIntBetween(0, 2 ** 31)).toString(36)}`
  const outMarker = new RegExp(`\\n${nonce} (\\d+)\\n`)
  const errMarker = `\n${nonce}\n`
  let session: Session | undefined

  const settle = (s: Session) => {
    const running = s.current
    if (running === undefined || running.stdout === undefined || running.stderr === undefined) return Effect.void
    s.current = undefined
    return Deferred.succeed(running.done, {
      exitCode: running.exitCode,
      stdout: running.stdout,
      stderr: running.stderr
    })
  }

  const onStdout = (s: Session, chunk: string) =>
    Effect.suspend(() => {
      s.out += chunk
      const m = outMarker.exec(s.out)
      if (m === null || s.current === undefined) return Effect.void
      s.current.stdout = s.out.slice(0, m.index)
      s.current.exitCode = Number(m[1])
      s.out = s.out.slice(m.index + m[0].length)
      return settle(s)
    })

  const onStderr = (s: Session, chunk: string) =>
    Effect.suspend(() => {
      s.err += chunk
      const at = s.err.indexOf(errMarker)
      if (at < 0 || s.current === undefined) return Effect.void
      s.current.stderr = s.err.slice(0, at)
      s.err = s.err.slice(at + errMarker.length)
      return settle(s)
    })

  /** Ends a session: the shell is killed (closing its scope) and a command still running fails. */
  const end = (s: Session, why: string, from: "reader" | "caller" = "caller") =>
    Effect.suspend(() => {
      if (!s.alive) return Effect.void
      s.alive = false
      if (session === s) session = undefined
      const running = s.current
      s.current = undefined
      const close = Scope.close(s.scope, Exit.void)
      return Effect.andThen(
        running === undefined ? Effect.void : Deferred.fail(running.done, sessionError(why)),
        // A reader lives in that scope: it closes it from a fiber of its own
        // rather than wait for its own interruption.
        from === "reader" ? Effect.asVoid(Effect.forkDetach(close)) : close
      )
    })

  const start = Effect.gen(function* () {
    const scope = yield* Scope.make()
    const input = yield* Queue.unbounded<string, Cause.Done>()
    const handle = yield* inner
      .spawn(ChildProcess.make("sh", [], { stdin: Stream.encodeText(Stream.fromQueue(input)) }))
      .pipe(
        Scope.provide(scope),
        Effect.onError(() => Scope.close(scope, Exit.void))
      )
    const s: Session = { scope, input, pid: handle.pid, alive: true, current: undefined, out: "", err: "" }
    const read = (stream: Stream.Stream<Uint8Array, PlatformError.PlatformError>, f: typeof onStdout) =>
      stream.pipe(
        Stream.decodeText(),
        Stream.runForEach((chunk) => f(s, chunk)),
        Effect.ignore,
        // The shell's output ended: it exited (or was killed).
        Effect.andThen(Effect.suspend(() => end(s, "the shell running the command exited", "reader"))),
        Effect.forkIn(scope)
      )
    yield* read(handle.stdout, onStdout)
    yield* read(handle.stderr, onStderr)
    // The shell exited: a child it left may hold its output open, so its exit
    // is what ends the session, not the end of its output.
    yield* handle.exitCode.pipe(
      Effect.ignore,
      Effect.andThen(Effect.suspend(() => end(s, "the shell running the command exited", "reader"))),
      Effect.forkIn(scope)
    )
    yield* Scope.addFinalizer(scope, Queue.end(input))
    session = s
    return s
  })

  yield* Effect.addFinalizer(() => Effect.suspend(() => (session === undefined ? Effect.void : end(session, "closed"))))

  return ChildProcessSpawner.make((command) =>
    Effect.gen(function* () {
      if (!isPlain(command)) return yield* inner.spawn(command)
      // One command at a time, held until the caller is done with the handle.
      yield* Effect.acquireRelease(permits.take(1), () => permits.release(1))
      const s = session?.alive === true ? session : yield* start
      const done = yield* Deferred.make<Result, PlatformError.PlatformError>()
      s.current = { done, stdout: undefined, stderr: undefined, exitCode: -1 }
      yield* Queue.offer(s.input, script(nonce, command.command, command.args as Array<string>))
      // Abandoned before it finished: the shell may still be running it, so
      // the session cannot be trusted with the next command.
      yield* Effect.addFinalizer(() =>
        Effect.flatMap(Deferred.isDone(done), (finished) =>
          finished ? Effect.void : end(s, "the command was abandoned before it finished")
        )
      )
      const result = Deferred.await(done)
      const bytes = (pick: (r: Result) => string) =>
        Stream.unwrap(Effect.map(result, (r) => Stream.encodeText(Stream.make(pick(r)))))
      return ChildProcessSpawner.makeHandle({
        pid: s.pid,
        exitCode: Effect.map(result, (r) => ChildProcessSpawner.ExitCode(r.exitCode)),
        isRunning: Effect.map(Deferred.isDone(done), (finished) => !finished),
        kill: () => end(s, "killed"),
        stdin: Sink.drain,
        stdout: bytes((r) => r.stdout),
        stderr: bytes((r) => r.stderr),
        all: bytes((r) => r.stdout + r.stderr),
        getInputFd: () => Sink.drain,
        getOutputFd: () => Stream.empty,
        unref: Effect.succeed(Effect.void)
      })
    })
  )
})
