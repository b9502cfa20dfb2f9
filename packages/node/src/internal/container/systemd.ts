/**
 * A container's systemd over D-Bus, reached only through what was pinned
 * (`./pin.ts`). Each time a connection is made: the pinned process is asked
 * whether it lives (`Gone` otherwise, nothing connected to); the socket is
 * resolved below the pinned root as the container itself would (an absolute
 * link starts again at its root, `..` never leaves it, no magic link of
 * `/proc` is followed) and held as a descriptor, checked to be a socket; a
 * connector in the pinned pid namespace (systemd refuses a peer whose pid it
 * cannot see) connects through `/proc/self/fd/N` and hands the socket over.
 * So a link to another machine's socket is never reached, and no program of
 * the container's image runs.
 *
 * Internal: `NodeContainer.layer` and `NodeSystemd.layerDbusIn` use it.
 */
import { closeSync } from "node:fs"
import * as Net from "node:net"
import { type Directory, Systemd } from "@hostnode/core"
import { Duration, Effect, type Scope } from "effect"
import * as Connector from "../connector.ts"
import { connectError, type DbusError, type Target } from "../DbusConnection.ts"
import * as Io from "../io/client.ts"
import * as SystemdDbus from "../SystemdDbus.ts"
import type { Pinned } from "./pin.ts"

// Runs in the container's pid namespace: connects to the socket descriptor it
// inherited, hands the connection to the parent, exits when the parent lets go.
const connectorScript = `const net = require("node:net")
const s = net.createConnection(process.argv[1])
s.on("connect", () => process.send("connected", s, (e) => { if (e) { process.stderr.write(String(e)); process.exit(2) } }))
s.on("error", (e) => { process.stderr.write(e.message); process.exit(1) })
process.on("disconnect", () => process.exit(0))`

/** The sockets of a systemd, below its root. */
export const Sockets = { peer: "/run/systemd/private", bus: "/run/dbus/system_bus_socket" } as const

/**
 * The D-Bus targets of the systemd of `pinned`: its private socket, its bus,
 * or both in that order. `dirs` and `client` resolve below its root (any
 * `Directories` of this host's helper: the root is opened by its pinned name).
 */
export const targets = (
  pinned: Pinned,
  dirs: Directory.Directories,
  client: Io.Client,
  via: "private" | "bus" | "any" | undefined
): ReadonlyArray<Target> => {
  const target = (kind: "peer" | "bus"): Target => {
    const path = Sockets[kind]
    const socket = `${path} in ${pinned.name}`
    return {
      socket,
      kind,
      connect: (timeout) => connect(pinned, dirs, client, path, socket, timeout),
      gone: pinned.gone
    }
  }
  return via === "private" ? [target("peer")] : via === "bus" ? [target("bus")] : [target("peer"), target("bus")]
}

const connect = (
  pinned: Pinned,
  dirs: Directory.Directories,
  client: Io.Client,
  path: string,
  socket: string,
  timeout: Duration.Duration
): Effect.Effect<Net.Socket, DbusError> =>
  Effect.scoped(
    Effect.gen(function* () {
      const gone = pinned.gone()
      if (gone !== undefined) return yield* connectError(socket, gone.detail, gone)
      const fd = yield* descriptorOf(pinned, dirs, client, path, socket)
      return yield* Connector.receive({
        enter: ["--pid=/proc/self/fd/4"],
        fds: [pinned.fds.pid, fd],
        script: connectorScript,
        arg: "/proc/self/fd/5",
        isHandle: (h): h is Net.Socket => h instanceof Net.Socket,
        timeout
      }).pipe(Effect.mapError((reason) => connectError(socket, reason)))
    })
  ).pipe(
    Effect.timeoutOrElse({
      duration: timeout,
      orElse: () => Effect.fail(connectError(socket, `no connection within ${Duration.format(timeout)}`))
    })
  )

/** The socket at `path` below the container's root, held as a descriptor of this process for the scope. */
const descriptorOf = (pinned: Pinned, dirs: Directory.Directories, client: Io.Client, path: string, socket: string) =>
  Effect.gen(function* () {
    const root = yield* dirs.openRoot(pinned.rootPath)
    const resolved = yield* dirs.resolve(root, path, { followFinal: true })
    if (resolved.name === undefined) {
      return yield* connectError(socket, `${resolved.path} is a directory, not a socket`)
    }
    const held = yield* dirs.openPath(resolved.parent, resolved.name)
    const stat = yield* dirs.stat(held)
    if (stat.type !== "Socket") {
      return yield* connectError(socket, `${resolved.path} in the container is a ${stat.type}, not a socket`)
    }
    const io = Io.ioHandleOf(held)
    const fd = io === undefined ? undefined : yield* client.descriptor(io)
    if (fd === undefined) return yield* connectError(socket, "the socket could not be held")
    yield* Effect.addFinalizer(() => Effect.ignore(Effect.try(() => closeSync(fd))))
    return fd
  }).pipe(
    Effect.catchTag("DirectoryError", (e) =>
      Effect.fail(
        connectError(
          socket,
          e.reason._tag === "Gone" ? e.reason.detail : `${path} below the container's root: ${e.message}`,
          e.reason._tag === "Gone" ? e.reason : undefined
        )
      )
    )
  )

/** Options of {@link make}: `NodeSystemd.DbusOptions`. */
export interface Options {
  readonly via?: "private" | "bus" | "auto" | undefined
  readonly timeout?: Duration.Input | undefined
  readonly connectTimeout?: Duration.Input | undefined
  /** Connect at the first call (the container composition), not when made. */
  readonly lazy?: boolean | undefined
}

/** The `Systemd` of `pinned` over D-Bus (see the module comment), for the scope. */
export const make = (
  pinned: Pinned,
  dirs: Directory.Directories,
  client: Io.Client,
  options: Options | undefined
): Effect.Effect<Systemd.Systemd, Systemd.SystemdError, Scope.Scope> =>
  SystemdDbus.make({
    targets: targets(pinned, dirs, client, options?.via === "auto" ? undefined : options?.via),
    timeout: Duration.fromInputUnsafe(options?.timeout ?? Duration.minutes(3)),
    connectTimeout: Duration.fromInputUnsafe(options?.connectTimeout ?? Duration.seconds(10)),
    lazy: options?.lazy
  }).pipe(Effect.map(Systemd.make))
