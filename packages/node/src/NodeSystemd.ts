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
import type * as DbusConnection from "./internal/DbusConnection.ts"
import * as SystemdDbus from "./internal/SystemdDbus.ts"
import * as ShellSession from "./ShellSession.ts"

/**
 * Options of the layers over `systemctl` (`Systemd.CommandOptions`).
 *
 * @since 0.3.0
 */
export type CommandOptions = Systemd.CommandOptions

/**
 * `Systemd.makeCommand`: the service over `systemctl` through the spawner in
 * context. Named here too so this module's layers read as one family.
 *
 * @since 0.3.0
 */
export const makeCommand = Systemd.makeCommand

/**
 * `Systemd.layerCommand`: {@link makeCommand} as a layer, requiring the
 * spawner the commands run through.
 *
 * @since 0.3.0
 */
export const layerCommand = Systemd.layerCommand

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
