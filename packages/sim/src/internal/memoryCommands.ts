/**
 * The simulated host's command line: a `ChildProcessSpawner` that runs no
 * process but hands each command to an interpreter registered for its name
 * (`umount`, `mount`, `systemctl`, `ip`, `iptables`). The library's command
 * layers (`Systemd.layerCommand`, `NodeMounter.layerCommand`, the LocalDNS
 * phases) then run unchanged against the simulated host, which is how the
 * interpreters and the simulated services are held to agree with each other
 * and with the real tools.
 *
 * `nsenter ... -- command args` is interpreted as `command args`: the simulated
 * host has one set of namespaces. A command without an interpreter fails to
 * spawn with NotFound, as a missing executable does for the real spawner.
 *
 * @since 0.1.0
 */
import { Effect, Sink, Stream } from "effect"
import * as PlatformError from "effect/PlatformError"
import { ChildProcess, ChildProcessSpawner } from "effect/process"

/**
 * What an interpreted command printed and how it exited.
 *
 * @since 0.1.0
 */
export interface Result {
  readonly stdout: string
  readonly stderr: string
  readonly exitCode: number
}

/**
 * Runs one command given its arguments (argv without the command name) and its stdin.
 *
 * @since 0.1.0
 */
export type Interpreter = (args: ReadonlyArray<string>, stdin: string) => Effect.Effect<Result>

/**
 * The result of a command that succeeded with `stdout`.
 *
 * @since 0.1.0
 */
export const ok = (stdout = ""): Result => ({ stdout, stderr: "", exitCode: 0 })

/**
 * The result of a command that failed with `stderr` and `exitCode`.
 *
 * @since 0.1.0
 */
export const fail = (exitCode: number, stderr: string): Result => ({
  stdout: "",
  stderr: stderr.endsWith("\n") ? stderr : `${stderr}\n`,
  exitCode
})

/**
 * One command as the spawner saw it, for inspection.
 *
 * @since 0.1.0
 */
export interface Invocation {
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly result: Result
}

const encoder = new TextEncoder()

const basename = (command: string): string => command.slice(command.lastIndexOf("/") + 1)

/**
 * Strips `nsenter [options] --` (the simulated host has one set of namespaces); other commands pass unchanged.
 *
 * @since 0.1.0
 */
export const unwrapNsenter = (
  command: string,
  args: ReadonlyArray<string>
): readonly [string, ReadonlyArray<string>] => {
  if (basename(command) !== "nsenter") return [command, args]
  // The library always ends nsenter's options with `--` (HostCommand.layerNsenter).
  const dashes = args.indexOf("--")
  if (dashes === -1) return [command, args]
  const [head, ...tail] = args.slice(dashes + 1)
  return head === undefined ? [command, args] : [head, tail]
}

/**
 * A spawner over `interpreters` (keyed by command basename). `record` sees
 * every invocation, in order. Piped commands are not supported (the library
 * never pipes); spawning one is a BadArgument.
 *
 * @since 0.1.0
 */
export const makeSpawner = (
  interpreters: ReadonlyMap<string, Interpreter>,
  record?: (invocation: Invocation) => void
): ChildProcessSpawner.ChildProcessSpawner["Service"] => {
  let nextPid = 4000
  return ChildProcessSpawner.make((command) =>
    Effect.gen(function* () {
      if (!ChildProcess.isStandardCommand(command)) {
        return yield* Effect.fail(
          PlatformError.badArgument({
            module: "ChildProcess",
            method: "spawn",
            description: "MemoryHost does not interpret piped commands"
          })
        )
      }
      const [name, args] = unwrapNsenter(
        command.command,
        command.args.map((a) => String(a))
      )
      const interpreter = interpreters.get(basename(name))
      if (interpreter === undefined) {
        return yield* Effect.fail(
          PlatformError.systemError({
            _tag: "NotFound",
            module: "ChildProcess",
            method: "spawn",
            pathOrDescriptor: name,
            description: `MemoryHost has no interpreter for ${JSON.stringify(name)}`
          })
        )
      }
      const result = yield* interpreter(args, "")
      record?.({ command: basename(name), args, result })
      const pid = nextPid++
      return ChildProcessSpawner.makeHandle({
        pid: ChildProcessSpawner.ProcessId(pid),
        exitCode: Effect.succeed(ChildProcessSpawner.ExitCode(result.exitCode)),
        isRunning: Effect.succeed(false),
        kill: () => Effect.void,
        stdin: Sink.drain,
        stdout: Stream.make(encoder.encode(result.stdout)),
        stderr: Stream.make(encoder.encode(result.stderr)),
        all: Stream.make(encoder.encode(result.stdout + result.stderr)),
        getInputFd: () => Sink.drain,
        getOutputFd: () => Stream.empty,
        unref: Effect.succeed(Effect.void)
      })
    })
  )
}
