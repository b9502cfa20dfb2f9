/**
 * The simulated host's `Systemd` service: `systemctl` run through the spawner
 * in context (on `MemoryNode`, the simulated command line), its answers read
 * the way `NodeSystemd.layerCommand` of @hostnode/node reads them (argv with
 * `--` before unit names, a non-zero exit classified by `Systemd.classify`, a
 * `systemctl` that cannot be run a `CommandUnavailable` reason, the caller's
 * time limit a `Timeout`). This package cannot depend on @hostnode/node, so
 * it carries this client of its own; @hostnode/node's tests run
 * `NodeSystemd.layerCommand` over the same command line and hold the two to
 * the same outcomes.
 *
 * Boundary: the client only. What `systemctl` answers is the simulation's
 * (`MemorySystemd`).
 */
import { HostCommand, Systemd } from "@hostnode/core"
import { Duration, Effect, Layer } from "effect"
import type { ChildProcessSpawner } from "effect/process"

/** Options of {@link layer}. */
export interface Options {
  /** How long one systemctl call may take (default 3 minutes). */
  readonly timeout?: Duration.Input | undefined
}

/** `systemctl show`'s `Key=value` lines, by key. */
const parseShow = (stdout: string): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const line of stdout.split("\n")) {
    const eq = line.indexOf("=")
    if (eq > 0) out[line.slice(0, eq)] = line.slice(eq + 1)
  }
  return out
}

/** The service over the spawner in context. */
export const make = (
  options?: Options
): Effect.Effect<Systemd.Systemd, never, ChildProcessSpawner.ChildProcessSpawner> =>
  Effect.gen(function* () {
    const context = yield* Effect.context<ChildProcessSpawner.ChildProcessSpawner>()
    const timeout = Duration.fromInputUnsafe(options?.timeout ?? Duration.minutes(3))
    const systemctl = (verb: Systemd.Verb, unit: string | undefined, args: ReadonlyArray<string>) => {
      const fail = (reason: Systemd.SystemdErrorReason) =>
        Effect.fail(new Systemd.SystemdError({ reason, verb, ...(unit === undefined ? {} : { unit }) }))
      return HostCommand.run("systemctl", args).pipe(
        Effect.timeoutOrElse({
          duration: timeout,
          orElse: () =>
            fail(new Systemd.Timeout({ stderr: `systemctl did not finish within ${Duration.format(timeout)}` }))
        }),
        Effect.catchTag("CommandError", (e) => fail(new Systemd.CommandUnavailable({ detail: e.message }))),
        Effect.flatMap((o) =>
          o.exitCode === 0 ? Effect.succeed(o.stdout) : fail(Systemd.classify(o.exitCode, o.stderr))
        ),
        Effect.provide(context)
      )
    }
    return Systemd.make({
      job: (verb, unit) => Effect.asVoid(systemctl(verb, unit, [verb, "--", unit])),
      daemonReload: Effect.asVoid(systemctl("daemon-reload", undefined, ["daemon-reload"])),
      show: (unit, properties) =>
        systemctl("show", unit, ["show", `--property=${properties.join(",")}`, "--", unit]).pipe(Effect.map(parseShow))
    })
  })

/** {@link make} as a layer; requires the spawner the commands run through. */
export const layer = (
  options?: Options
): Layer.Layer<Systemd.Systemd, never, ChildProcessSpawner.ChildProcessSpawner> =>
  Layer.effect(Systemd.Systemd, make(options))
