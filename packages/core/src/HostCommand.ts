/**
 * Running a host command (`systemctl`, `umount`, `ip`, `iptables`) through
 * Effect's `ChildProcessSpawner` and collecting what a caller needs to judge
 * it: stdout, stderr and the exit code together. Commands are argv arrays,
 * never shell strings. Because the spawner comes from context, wrapping it
 * (say with `nsenter -t <pid> -m -p`, see {@link layerNsenter}) runs every
 * command of an operation in another namespace with no change to the operation.
 *
 * @since 0.1.0
 */
import { Duration, Effect, Exit, Layer, Option, type PlatformError, Schema, Scope, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import { nsenterPrefix, wrapSpawner } from "./internal/hostCommand.ts"
import { timeLeft } from "./internal/timeLeft.ts"

/**
 * What a finished command printed and how it exited. A non-zero exit is a result, not an error.
 *
 * @category models
 * @since 0.1.0
 */
export interface Output {
  readonly stdout: string
  readonly stderr: string
  readonly exitCode: number
}

/**
 * Why a command could not be run, told by its `_tag`, with what the spawner
 * said (`detail`):
 * - `NotFound`: the executable does not exist (not installed, or not on the PATH);
 * - `SpawnFailed`: it could not be started or its output not read for any
 *   other reason (permissions, resources, a broken pipe);
 * - `TimedOut`: it had not exited by the operation's deadline (`Deadline`),
 *   or the deadline had passed before it was started (then it was not).
 *
 * @category errors
 * @since 0.4.0
 */
export class Failure extends Schema.Error<Failure>("@hostnode/core/HostCommand/Failure")({
  _tag: Schema.Literals(["NotFound", "SpawnFailed", "TimedOut"]),
  detail: Schema.String
}) {
  override get message(): string {
    return this.detail
  }
}

/**
 * A command that could not be run at all (the executable is missing, the
 * spawn failed), or not to its end by the deadline; see {@link Failure}. A
 * command that ran and exited non-zero is not this: callers classify that
 * themselves from its {@link Output}.
 *
 * @category errors
 * @since 0.1.0
 */
export class CommandError extends Schema.TaggedError<CommandError>()("CommandError", {
  reason: Failure,
  command: Schema.String,
  args: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return `cannot run ${[this.command, ...this.args].map((a) => JSON.stringify(a)).join(" ")}: ${this.reason.message}`
  }
}

/** How long a command let go at the deadline has between SIGTERM and SIGKILL. */
const KillGrace = Duration.seconds(2)

/**
 * Runs `command` with `args` and returns its stdout, stderr and exit code,
 * read concurrently so a chatty child never blocks on a full pipe.
 *
 * No command is trusted to exit (an `iptables -w` behind a stuck lock
 * holder, a `umount` or `systemctl` blocked in the kernel): under a
 * `Deadline` it is waited for until the deadline only, then fails
 * `TimedOut` and is sent SIGTERM, and SIGKILL two seconds later, without
 * waiting for it to go (a process blocked in the kernel cannot).
 *
 * @example
 * ```ts
 * import { HostCommand } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // A non-zero exit is an answer to read, not an error.
 * const hasLink = (name: string) =>
 *   HostCommand.run("ip", ["link", "show", "dev", name]).pipe(Effect.map((out) => out.exitCode === 0))
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const run: (
  command: string,
  args: ReadonlyArray<string>
) => Effect.Effect<Output, CommandError, ChildProcessSpawner.ChildProcessSpawner> = Effect.fn("HostCommand.run")(
  function* (command: string, args: ReadonlyArray<string>) {
    const error = (reason: Failure) => new CommandError({ reason, command, args: [...args] })
    const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
    const remaining = yield* timeLeft
    const left = remaining === undefined ? undefined : Duration.toMillis(remaining)
    if (left !== undefined && left <= 0) {
      return yield* error(
        new Failure({ _tag: "TimedOut", detail: "the operation's deadline had passed; it was not started" })
      )
    }
    // The child lives in a scope of its own. Closing it waits for the child to exit, which one blocked
    // in the kernel never does: a child the deadline overtook is killed (SIGTERM, SIGKILL two seconds
    // later) and its scope closed in the background, and the run returns at once.
    const scope = yield* Scope.make()
    const failed = (e: PlatformError.PlatformError) =>
      error(new Failure({ _tag: e.reason._tag === "NotFound" ? "NotFound" : "SpawnFailed", detail: e.message }))
    // The child, once spawned (the spawn is bounded too: a spawner may run the command in it).
    let child: ChildProcessSpawner.ChildProcessHandle | undefined
    const output = Effect.gen(function* () {
      // A plain command (no options): a spawner that runs commands its own way (a kept shell) still can.
      const handle = yield* spawner.spawn(ChildProcess.make(command, args)).pipe(Scope.provide(scope))
      child = handle
      const [stdout, stderr, exitCode] = yield* Effect.all(
        [
          handle.stdout.pipe(Stream.decodeText(), Stream.mkString),
          handle.stderr.pipe(Stream.decodeText(), Stream.mkString),
          handle.exitCode
        ],
        { concurrency: 3 }
      )
      return { stdout, stderr, exitCode: Number(exitCode) }
    }).pipe(Effect.mapError(failed))
    const done = yield* (
      left === undefined ? Effect.asSome(output) : Effect.timeoutOption(output, Duration.millis(left))
    ).pipe(Effect.onError((cause) => Scope.close(scope, Exit.failCause(cause))))
    if (Option.isSome(done)) {
      yield* Scope.close(scope, Exit.void)
      return done.value
    }
    const overtaken = child
    yield* Effect.forkDetach(
      Effect.andThen(
        overtaken === undefined ? Effect.void : Effect.ignore(overtaken.kill({ forceKillAfter: KillGrace })),
        Scope.close(scope, Exit.void)
      )
    )
    return yield* error(
      new Failure({
        _tag: "TimedOut",
        detail: `it had not exited ${((left ?? 0) / 1000).toFixed(1)} s after it started, at the operation's deadline; it was sent SIGTERM, then SIGKILL`
      })
    )
  }
)

/**
 * The spawner in context, wrapped to run every standard command as
 * `prefix... command args...` (piped commands are wrapped on each side), e.g.
 * `["nsenter", "--net=/proc/42/ns/net", "--"]` to run in another network
 * namespace.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerWrapped = (
  prefix: ReadonlyArray<string>
): Layer.Layer<ChildProcessSpawner.ChildProcessSpawner, never, ChildProcessSpawner.ChildProcessSpawner> =>
  Layer.effect(
    ChildProcessSpawner.ChildProcessSpawner,
    Effect.map(Effect.service(ChildProcessSpawner.ChildProcessSpawner), (inner) => wrapSpawner(inner, prefix))
  )

/**
 * The spawner in context, wrapped to run every command in the namespaces of
 * process `pid` (`nsenter -t pid -m -p -- command args...`; `namespaces`
 * defaults to the mount and pid ones): how the library drives a container's
 * or a test machine's systemd, mounts and tools with no change to the
 * operations.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerNsenter = (
  pid: number,
  namespaces?: ReadonlyArray<"m" | "p" | "n" | "u" | "i">
): Layer.Layer<ChildProcessSpawner.ChildProcessSpawner, never, ChildProcessSpawner.ChildProcessSpawner> =>
  layerWrapped(nsenterPrefix(pid, namespaces))
