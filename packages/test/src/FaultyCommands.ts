/**
 * Fault injection for any `ChildProcessSpawner`: a layer that wraps the one
 * in context and makes chosen commands fail as a real tool would (an exit
 * code and what it prints on stderr) without running them; every other
 * command runs on the inner spawner. Works on the real host as on the
 * simulated one, so "what does a step that fails half-way leave behind" is
 * testable against real `ip` and `iptables`.
 *
 * @since 0.2.0
 */
import { Effect, Layer, Sink, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"

/**
 * How a refused command ends: its exit code and its stderr.
 *
 * @since 0.2.0
 */
interface Refusal {
  readonly exitCode: number
  readonly stderr: string
}

/**
 * Decides, from the command's name and arguments, whether it fails (and how).
 *
 * @category models
 * @since 0.2.0
 */
export type Refuse = (command: string, args: ReadonlyArray<string>) => Refusal | undefined

const encoder = new TextEncoder()

const failed = (pid: number, refusal: Refusal): ChildProcessSpawner.ChildProcessHandle => {
  const stderr = Stream.make(encoder.encode(refusal.stderr))
  return ChildProcessSpawner.makeHandle({
    pid: ChildProcessSpawner.ProcessId(pid),
    exitCode: Effect.succeed(ChildProcessSpawner.ExitCode(refusal.exitCode)),
    isRunning: Effect.succeed(false),
    kill: () => Effect.void,
    stdin: Sink.drain,
    stdout: Stream.empty,
    stderr,
    all: stderr,
    getInputFd: () => Sink.drain,
    getOutputFd: () => Stream.empty,
    unref: Effect.succeed(Effect.void)
  })
}

/**
 * Wraps `inner` so that the commands `refuse` selects fail without running.
 *
 * @since 0.2.0
 */
const wrap = (
  inner: ChildProcessSpawner.ChildProcessSpawner["Service"],
  refuse: Refuse
): ChildProcessSpawner.ChildProcessSpawner["Service"] => {
  let pid = 1_000_000
  return ChildProcessSpawner.make((command) => {
    if (ChildProcess.isStandardCommand(command)) {
      const args = command.args.map(String)
      const refusal = refuse(command.command.split("/").pop() ?? command.command, args)
      if (refusal !== undefined) return Effect.sync(() => failed(++pid, refusal))
    }
    return inner.spawn(command)
  })
}

/**
 * A layer that wraps the spawner in context so that the commands `refuse` selects fail.
 *
 * @category layers
 * @since 0.2.0
 */
export const layer = (
  refuse: Refuse
): Layer.Layer<ChildProcessSpawner.ChildProcessSpawner, never, ChildProcessSpawner.ChildProcessSpawner> =>
  Layer.effect(
    ChildProcessSpawner.ChildProcessSpawner,
    Effect.map(Effect.service(ChildProcessSpawner.ChildProcessSpawner), (inner) => wrap(inner, refuse))
  )

/**
 * A {@link Refuse} that fails the `nth` (1-based) command `matches` selects,
 * and only that one: the step after which a failure is most telling.
 *
 * @category constructors
 * @since 0.2.0
 */
export const nth = (
  n: number,
  matches: (command: string, args: ReadonlyArray<string>) => boolean,
  refusal: Refusal
): Refuse => {
  let seen = 0
  return (command, args) => {
    if (!matches(command, args)) return undefined
    seen++
    return seen === n ? refusal : undefined
  }
}
