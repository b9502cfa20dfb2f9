/**
 * The spawner wrapping behind `HostCommand.layerWrapped` and `layerNsenter`.
 */
import { ChildProcess, ChildProcessSpawner } from "effect/process"

/**
 * A spawner that runs every standard command as `prefix... command args...`,
 * e.g. `["nsenter", "-t", pid, "-m", "-p", "--"]` to run in another machine's
 * namespaces. Piped commands are wrapped on each side.
 */
export const wrapSpawner = (
  inner: ChildProcessSpawner.ChildProcessSpawner["Service"],
  prefix: ReadonlyArray<string>
): ChildProcessSpawner.ChildProcessSpawner["Service"] => {
  const [head, ...rest] = prefix
  if (head === undefined) return inner
  const wrap = (command: ChildProcess.Command): ChildProcess.Command =>
    ChildProcess.isStandardCommand(command)
      ? ChildProcess.make(head, [...rest, command.command, ...command.args], command.options)
      : ChildProcess.pipeTo(wrap(command.right), command.options)(wrap(command.left))
  return ChildProcessSpawner.make((command) => inner.spawn(wrap(command)))
}

/**
 * The prefix that runs a command in the mount and pid namespaces of process `pid` (e.g. a test systemd).
 */
export const nsenterPrefix = (
  pid: number,
  namespaces: ReadonlyArray<"m" | "p" | "n" | "u" | "i"> = ["m", "p"]
): ReadonlyArray<string> => ["nsenter", "-t", String(pid), ...namespaces.map((n) => `-${n}`), "--"]
