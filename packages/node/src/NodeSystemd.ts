/**
 * The real `Systemd`, the ways a user chooses between:
 * - `layerDbus`: D-Bus straight to systemd's manager on one connection kept
 *   for the layer's lifetime; a restart's outcome is its job's result from
 *   systemd itself. `layerDbusIn(pid)`: the same for another machine's
 *   systemd (a container's), running nothing of it.
 * - `layer`: `systemctl` (core's `Systemd.layerCommand` on Node's spawner),
 *   on this host, or in a trusted machine through `nsenter`, a process per
 *   call or one long-lived shell (`ShellSession`).
 * - `layerWithFallback`: D-Bus where a socket answers, `systemctl` elsewhere.
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
 * Options of {@link layer}: the call timeout, and where and how `systemctl` runs.
 *
 * @category models
 * @since 0.4.0
 */
export interface Options {
  /**
   * How long one call may take (default 3 minutes; `Layers.SystemdCallTimeout`
   * replaces it where provided), as `Systemd.layerCommand`'s `timeout`.
   */
  readonly timeout?: Duration.Input | undefined
  /**
   * The host pid of another machine's PID 1, reached with `nsenter -t pid -m
   * -p` (default: this host's systemd). This runs the machine's own
   * `systemctl` with this process's privileges, and looks the pid up again
   * for every call: for a machine you trust (a test machine). A container is
   * reached with {@link layerDbusIn}, which runs nothing of its image.
   */
  readonly pid?: number | undefined
  /**
   * Run every `systemctl` in one shell kept for the layer's lifetime
   * (`ShellSession`; entered once with `nsenter` for a `pid`): a call costs a
   * fork and exec instead of a Node spawn (default false).
   */
  readonly session?: boolean | undefined
}

/**
 * systemd over `systemctl`, run through Node's spawner: this host's, or the
 * machine's of `options.pid`, a process per call or, with `session`, one
 * long-lived shell.
 *
 * @example
 * ```ts
 * import { NodeRuntime } from "@effect/platform-node"
 * import { Systemd } from "@hostnode/core"
 * import { NodeSystemd } from "@hostnode/node"
 * import { Effect } from "effect"
 *
 * // Restart the kubelet of the test machine whose PID 1 is host process 4242, every systemctl in one shell.
 * const program = Effect.gen(function* () {
 *   const systemd = yield* Systemd.Systemd
 *   yield* systemd.restart("kubelet.service")
 * }).pipe(Effect.provide(NodeSystemd.layer({ pid: 4242, session: true })))
 * export const main = () => NodeRuntime.runMain(program)
 * ```
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options?: Options): Layer.Layer<Systemd.Systemd> => {
  const pid = options?.pid
  const spawner =
    pid === undefined ? NodeServices.layer : HostCommand.layerNsenter(pid).pipe(Layer.provide(NodeServices.layer))
  return Systemd.layerCommand(options).pipe(
    Layer.provide(options?.session === true ? ShellSession.layer.pipe(Layer.provide(spawner)) : spawner)
  )
}

/**
 * Options of {@link layerDbus} and {@link layerDbusIn}.
 *
 * @category models
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
 * @category layers
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
 * @category layers
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
 * Options of {@link layerWithFallback}: those of {@link layerDbus} and of
 * {@link layer}; a `pid` names another machine's systemd for both.
 *
 * @category models
 * @since 0.2.0
 */
export interface FallbackOptions extends DbusOptions, Options {}

/**
 * systemd over D-Bus where one of its sockets answers when the layer is
 * built, else over `systemctl` (a host without systemd's sockets, an agent
 * that is not root and has no system bus). The choice is logged at debug.
 *
 * @category layers
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
          layer(options)
        )
      )
    )
  )
}
