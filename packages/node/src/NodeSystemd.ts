/**
 * The real `Systemd`, two ways. Over D-Bus (`layerDbus`, `layerDbusIn`):
 * calls go straight to systemd's manager on one connection kept for the
 * layer's lifetime, and a restart's outcome is its job's result from systemd
 * itself. Over `systemctl` run through the spawner in context
 * (`layerCommand`, see {@link makeCommand} for how calls and errors work):
 * `layer` drives this host's systemd, `layerIn(pid)` the systemd of another
 * machine (a container, a test machine) through `nsenter`, and the `Session`
 * variants run every `systemctl` in one long-lived shell (`ShellSession`)
 * instead of a process spawned per call. `layerWithFallback` is D-Bus where a
 * socket answers and `systemctl` elsewhere.
 *
 * @since 0.1.0
 */
import { NodeServices } from "@effect/platform-node"
import { HostCommand, Systemd } from "@hostnode/core"
import { Duration, Effect, Layer } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import type * as DbusConnection from "./internal/DbusConnection.ts"
import * as SystemdDbus from "./internal/SystemdDbus.ts"
import * as ShellSession from "./ShellSession.ts"

/**
 * Options of {@link makeCommand} (and every layer over `systemctl`).
 *
 * @since 0.3.0
 */
export interface CommandOptions {
  /**
   * How long one systemctl call may take (default 3 minutes). A job that never
   * finishes (a unit that never signals readiness) would otherwise block the
   * agent until systemd's own timeout, if it has one.
   */
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

/**
 * The `Systemd` service that runs `systemctl` through the `ChildProcessSpawner`
 * in context: argv arrays, `--` before unit names, stdout, stderr and the exit
 * code read together, a non-zero exit classified with `Systemd.classify`, a
 * `systemctl` that cannot be run at all a `CommandUnavailable` reason. Because
 * the spawner comes from context, a spawner wrapped with `nsenter` drives
 * another machine's systemd unchanged (moved here from `Systemd.makeCommand`
 * in @hostnode/core).
 *
 * @since 0.3.0
 */
export const makeCommand = (
  options?: CommandOptions
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

/**
 * {@link makeCommand} as a layer; requires the spawner the commands run through
 * (as `NodeMounter.layerCommand` does for `umount`).
 *
 * @since 0.3.0
 */
export const layerCommand = (
  options?: CommandOptions
): Layer.Layer<Systemd.Systemd, never, ChildProcessSpawner.ChildProcessSpawner> =>
  Layer.effect(Systemd.Systemd, makeCommand(options))

/**
 * This host's systemd.
 *
 * @since 0.1.0
 */
export const layer = (options?: CommandOptions): Layer.Layer<Systemd.Systemd> =>
  layerCommand(options).pipe(Layer.provide(NodeServices.layer))

/**
 * The systemd whose PID 1 is host process `pid`, reached with `nsenter -t pid -m -p`.
 *
 * @since 0.1.0
 */
export const layerIn = (pid: number, options?: CommandOptions): Layer.Layer<Systemd.Systemd> =>
  layerCommand(options).pipe(Layer.provide(HostCommand.layerNsenter(pid)), Layer.provide(NodeServices.layer))

/**
 * This host's systemd, every `systemctl` run by one shell kept for the
 * layer's lifetime: a call costs a fork and exec instead of a Node spawn.
 *
 * @since 0.1.0
 */
export const layerSession = (options?: CommandOptions): Layer.Layer<Systemd.Systemd> =>
  layerCommand(options).pipe(Layer.provide(ShellSession.layer), Layer.provide(NodeServices.layer))

/**
 * The systemd whose PID 1 is host process `pid`, every `systemctl` run by
 * one shell entered once with `nsenter -t pid -m -p` and kept for the
 * layer's lifetime.
 *
 * @since 0.1.0
 */
export const layerSessionIn = (pid: number, options?: CommandOptions): Layer.Layer<Systemd.Systemd> =>
  layerCommand(options).pipe(
    Layer.provide(ShellSession.layer),
    Layer.provide(HostCommand.layerNsenter(pid)),
    Layer.provide(NodeServices.layer)
  )

/**
 * Options of {@link layerDbus} and {@link layerDbusIn}.
 *
 * @since 0.2.0
 */
export interface DbusOptions {
  /**
   * Which socket: systemd's private socket (`/run/systemd/private`, what
   * systemctl uses as root; no bus daemon needed, root only), the system bus
   * (`/run/dbus/system_bus_socket`), or `auto` (default): the private socket
   * when it answers, else the bus.
   */
  readonly via?: "private" | "bus" | "auto" | undefined
  /** How long one call may take, a job until systemd reports it finished included (default 3 minutes). */
  readonly timeout?: Duration.Input | undefined
  /** How long opening a connection may take (default 10 seconds). */
  readonly connectTimeout?: Duration.Input | undefined
}

const targetsBelow = (root: string, via: DbusOptions["via"], pid: number | undefined) => {
  const privateSocket: DbusConnection.Target = {
    socket: `${root}/run/systemd/private`,
    kind: "peer",
    pidNamespaceOf: pid
  }
  const bus: DbusConnection.Target = { socket: `${root}/run/dbus/system_bus_socket`, kind: "bus", pidNamespaceOf: pid }
  return via === "private" ? [privateSocket] : via === "bus" ? [bus] : [privateSocket, bus]
}

const dbus = (root: string, pid: number | undefined, options: DbusOptions | undefined) =>
  Layer.effect(
    Systemd.Systemd,
    SystemdDbus.make({
      targets: targetsBelow(root, options?.via, pid),
      timeout: Duration.fromInputUnsafe(options?.timeout ?? Duration.minutes(3)),
      connectTimeout: Duration.fromInputUnsafe(options?.connectTimeout ?? Duration.seconds(10))
    }).pipe(Effect.map(Systemd.make))
  )

/**
 * This host's systemd over D-Bus. The connection is made when the layer is
 * built (a failure to connect fails the build with a `NotBooted`
 * `SystemdError`), kept for its scope, and reopened by the next call after it
 * dropped (systemd closes every connection when it re-executes). A call whose
 * connection dropped before the answer is sent once more on the new one.
 *
 * @since 0.2.0
 */
export const layerDbus = (options?: DbusOptions): Layer.Layer<Systemd.Systemd, Systemd.SystemdError> =>
  dbus("", undefined, options)

/**
 * The systemd whose PID 1 is host process `pid`, over D-Bus through its
 * sockets below `/proc/<pid>/root`. systemd refuses a connection from a pid it
 * cannot see, so the connection is made by a short-lived connector (this
 * Node, `nsenter -t pid -p`) inside that machine's pid namespace and handed
 * over; after that every call goes straight to the socket.
 *
 * @since 0.2.0
 */
export const layerDbusIn = (pid: number, options?: DbusOptions): Layer.Layer<Systemd.Systemd, Systemd.SystemdError> =>
  dbus(`/proc/${pid}/root`, pid, options)

/**
 * Options of {@link layerWithFallback}.
 *
 * @since 0.2.0
 */
export interface FallbackOptions extends DbusOptions, CommandOptions {
  /** The host pid of another machine's systemd (as for {@link layerDbusIn} and {@link layerIn}); default this host's. */
  readonly pid?: number | undefined
}

/**
 * systemd over D-Bus where one of its sockets answers when the layer is
 * built, else over `systemctl` (a host without systemd's sockets, an agent
 * that is not root and has no system bus). The choice is logged at debug.
 *
 * @since 0.2.0
 */
export const layerWithFallback = (options?: FallbackOptions): Layer.Layer<Systemd.Systemd> => {
  const pid = options?.pid
  return (pid === undefined ? layerDbus(options) : layerDbusIn(pid, options)).pipe(
    Layer.catch((e) =>
      Layer.unwrap(
        Effect.as(
          Effect.logDebug("systemd's D-Bus sockets do not answer; using systemctl").pipe(
            Effect.annotateLogs({ reason: "stderr" in e.reason ? e.reason.stderr : e.reason.message })
          ),
          pid === undefined ? layer(options) : layerIn(pid, options)
        )
      )
    )
  )
}
