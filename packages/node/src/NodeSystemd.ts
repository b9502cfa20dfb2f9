/**
 * The real `Systemd`, two ways. Over D-Bus (`layerDbus`, `layerDbusIn`):
 * calls go straight to systemd's manager on one connection kept for the
 * layer's lifetime, and a restart's outcome is its job's result from systemd
 * itself. Over `systemctl` run through the spawner in context
 * (`layerCommand`, see {@link makeCommand} for how calls and errors work):
 * `layer` drives this host's systemd, `layerIn(pid)` the systemd of a
 * trusted machine (a test machine) through `nsenter`, and the `Session`
 * variants run every `systemctl` in one long-lived shell (`ShellSession`)
 * instead of a process spawned per call. `layerWithFallback` is D-Bus where a
 * socket answers and `systemctl` elsewhere.
 *
 * @since 0.1.0
 */
import { NodeServices } from "@effect/platform-node"
import { HostCommand, HostPath, Systemd } from "@hostnode/core"
import { Duration, Effect, Layer } from "effect"
import { pin } from "./internal/container/pin.ts"
import * as ContainerSystemd from "./internal/container/systemd.ts"
import * as Io from "./internal/io/client.ts"
import * as Directories from "./internal/io/directories.ts"
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
 * The systemd whose PID 1 is host process `pid`, reached with `nsenter -t pid -m -p`:
 * this runs the machine's own `systemctl` binary with this process's
 * privileges, and looks the pid up again for every call. For a machine you
 * trust (a test machine); a container is reached with {@link layerDbusIn},
 * which runs nothing of its image.
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
 * layer's lifetime: the machine's own shell and `systemctl`, as for
 * {@link layerIn}.
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

const dbus = (options: DbusOptions | undefined) =>
  Layer.effect(
    Systemd.Systemd,
    SystemdDbus.make({
      targets: [
        { socket: "/run/systemd/private", kind: "peer" as const },
        { socket: "/run/dbus/system_bus_socket", kind: "bus" as const }
      ].filter((t) =>
        options?.via === "private" ? t.kind === "peer" : options?.via === "bus" ? t.kind === "bus" : true
      ),
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
export const layerDbus = (options?: DbusOptions): Layer.Layer<Systemd.Systemd, Systemd.SystemdError> => dbus(options)

/**
 * The systemd whose PID 1 is host process `pid` (a container's, a test
 * machine's), over D-Bus through its own sockets. The process is pinned when
 * the layer is built (a pidfd, then its root and pid namespace as
 * descriptors, then the pidfd asked that it still lives). Each connection
 * resolves the socket below that root as the machine itself would (a link
 * the machine made to a path that means another machine's socket on this
 * side leads nowhere here) and is made by a short-lived connector (this
 * Node, under `nsenter --pid` on the pinned namespace: systemd refuses a
 * connection from a pid it cannot see) through the descriptor it found, and
 * handed over; after that every call goes straight to the socket. Once the
 * machine has exited, a call fails with the `Gone` reason and nothing is
 * connected to, whatever process has its pid by then. No program of the
 * machine's runs.
 *
 * @since 0.2.0
 */
export const layerDbusIn = (pid: number, options?: DbusOptions): Layer.Layer<Systemd.Systemd, Systemd.SystemdError> =>
  Layer.effect(
    Systemd.Systemd,
    Effect.gen(function* () {
      const pinned = yield* pin(pid).pipe(
        Effect.mapError(
          (f) =>
            new Systemd.SystemdError({
              verb: "show",
              reason:
                f._tag === "NotFound"
                  ? new HostPath.Gone({ pid, detail: `process ${pid}: ${f.detail}` })
                  : new Systemd.Failure({ _tag: "NotBooted", exitCode: 1, stderr: `process ${pid}: ${f.detail}` })
            })
        )
      )
      const client = yield* Effect.acquireRelease(Io.make({ name: pinned.name }), (c) => c.shutdown)
      return yield* ContainerSystemd.make(pinned, Directories.build(client), client, options)
    })
  )

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
