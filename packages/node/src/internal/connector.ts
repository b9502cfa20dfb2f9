/**
 * A socket made inside another process's namespaces and handed back here: a
 * short Node script run under `nsenter` (a process with threads cannot enter
 * another namespace itself) makes the socket and sends it over the IPC
 * channel. The namespaces are given as descriptors this process holds
 * (pinned once, see `container/pin.ts`), never as a pid to look up again. Shared by the D-Bus connection (a Unix socket in another pid and
 * mount namespace) and the DNS queries (a UDP socket in another network
 * namespace); each says how its socket is made and what it must be.
 *
 * Internal to `@hostnode/node`.
 *
 * @since 0.2.0
 */
import * as ChildProcess from "node:child_process"
import { Duration, Effect } from "effect"

/**
 * Runs `script` (with `arg`) under `nsenter` with `enter` (the namespaces to
 * enter: `--net=/proc/self/fd/4` for a namespace descriptor of ours given
 * in `fds`, which the connector inherits as descriptors 4, 5, ... in order)
 * and resolves with the handle it sends, when `isHandle` accepts it. Fails
 * with why (the connector's stderr appended) when nsenter cannot run, the
 * connector exits or sends something else, or nothing comes within
 * `timeout`. The connector is killed when the effect is interrupted.
 */
export const receive = <H>(options: {
  readonly enter: ReadonlyArray<string>
  readonly fds?: ReadonlyArray<number> | undefined
  readonly script: string
  readonly arg: string
  readonly isHandle: (handle: unknown) => handle is H
  readonly timeout: Duration.Duration
}): Effect.Effect<H, string> =>
  Effect.callback<H, string>((resume) => {
    const stderr: Array<string> = []
    const child = ChildProcess.spawn(
      "nsenter",
      [...options.enter, "--", process.execPath, "-e", options.script, options.arg],
      { stdio: ["ignore", "ignore", "pipe", "ipc", ...(options.fds ?? [])] }
    )
    child.stderr?.on("data", (d: Buffer) => stderr.push(d.toString()))
    const fail = (why: string) => {
      const said = stderr.join("").trim()
      resume(Effect.fail(said === "" ? why : `${why}: ${said}`))
    }
    child.once("error", (e) => fail(`cannot run the connector (nsenter): ${e.message}`))
    child.once("exit", (code, signal) => fail(`the connector exited (${signal ?? `code ${code}`})`))
    child.once("message", (_msg, handle) => {
      child.removeAllListeners("exit")
      if (options.isHandle(handle)) {
        // The connector exits once the channel closes; the handle stays ours.
        child.disconnect()
        resume(Effect.succeed(handle))
      } else {
        child.kill("SIGKILL")
        fail("the connector sent no socket")
      }
    })
    return Effect.sync(() => {
      if (child.exitCode === null) child.kill("SIGKILL")
    })
  }).pipe(
    Effect.timeoutOrElse({
      duration: options.timeout,
      orElse: () => Effect.fail(`nothing from the connector within ${Duration.format(options.timeout)}`)
    })
  )
