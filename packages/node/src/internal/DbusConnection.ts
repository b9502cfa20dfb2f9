/**
 * One D-Bus connection as Effects: open it (a socket path, or a socket of
 * another machine whose credentials check needs a connector inside that
 * machine's pid namespace), call methods, hear signals, notice that it
 * closed. The wire format (marshalling, the SASL handshake) is
 * `@homebridge/dbus-native`'s; this module owns what that package leaves to
 * its caller: replies as Effects with a timeout of the caller's, every call
 * still waiting failed when the connection drops, and no `Hello` on a
 * peer-to-peer connection (systemd's private socket has no bus daemon).
 *
 * The boundary: nothing here knows systemd; `SystemdDbus` builds on it.
 *
 * @since 0.1.0
 */
import { createRequire } from "node:module"
import * as Net from "node:net"
import { Duplex } from "node:stream"
import type { HostPath } from "@hostnode/core"
import { Data, Duration, Effect, Fiber, type Scope } from "effect"

// The part of @homebridge/dbus-native this module uses. The package ships no
// types for createClient and the message objects, so they are stated here.
interface WireMessage {
  readonly type: number
  readonly path?: string
  readonly interface?: string
  readonly member?: string
  readonly signature?: string
  readonly body?: ReadonlyArray<unknown>
}
interface WireBus {
  readonly connection: {
    readonly stream: Duplex
    on(event: "connect" | "end", f: () => void): void
    on(event: "error", f: (e: unknown) => void): void
    on(event: "message", f: (m: WireMessage) => void): void
    end(): void
  }
  invoke(
    msg: {
      readonly destination?: string
      readonly path: string
      readonly interface: string
      readonly member: string
      readonly signature?: string
      readonly body?: ReadonlyArray<unknown>
    },
    callback: (error: { readonly name?: string; readonly message?: unknown } | null, ...body: Array<unknown>) => void
  ): void
}
interface DbusNative {
  createClient(options: {
    readonly stream: Duplex
    readonly direct: true
    readonly authMethods: ReadonlyArray<string>
    readonly ReturnLongjs: true
  }): WireBus
}
const dbusNative = createRequire(import.meta.url)("@homebridge/dbus-native") as DbusNative

/** The D-Bus signal message type. */
const SignalType = 4

/**
 * Why a step on a connection failed, by `_tag`:
 * - `ConnectError`: the connection to `socket` could not be opened; `gone` is
 *   set when the machine the socket belongs to has exited (a container's):
 *   nothing was connected to;
 * - `CallError`: the peer answered `member` with a D-Bus error, its `name`
 *   (`org.freedesktop.systemd1.NoSuchUnit`) and text;
 * - `Disconnected`: the connection closed before `member` was answered (the
 *   peer closed it, systemd re-executed, or the socket failed): whether the
 *   peer received the call is unknown.
 */
export type Failure =
  | {
      readonly _tag: "ConnectError"
      readonly socket: string
      readonly detail: string
      readonly gone?: HostPath.Gone | undefined
    }
  | { readonly _tag: "CallError"; readonly member: string; readonly name: string; readonly detail: string }
  | { readonly _tag: "Disconnected"; readonly member: string; readonly detail: string }

/** A step on a D-Bus connection failed: {@link Failure} says which and why. */
export class DbusError extends Data.TaggedError("DbusError")<{ readonly reason: Failure }> {
  override get message(): string {
    return `${this.reason._tag}: ${this.reason.detail}`
  }
}

/** The connection to `socket` could not be opened. */
export const connectError = (socket: string, detail: string, gone?: HostPath.Gone | undefined): DbusError =>
  new DbusError({ reason: { _tag: "ConnectError", socket, detail, ...(gone === undefined ? {} : { gone }) } })

/** The peer answered `member` with the D-Bus error `name`. */
export const callError = (member: string, name: string, detail: string): DbusError =>
  new DbusError({ reason: { _tag: "CallError", member, name, detail } })

/** The connection closed before `member` was answered. */
export const disconnected = (member: string, detail: string): DbusError =>
  new DbusError({ reason: { _tag: "Disconnected", member, detail } })

/** A signal as received: where it came from, what it is, and its arguments. */
export interface Signal {
  readonly path: string
  readonly interface: string
  readonly member: string
  readonly body: ReadonlyArray<unknown>
}

/** A method call. */
export interface Call {
  readonly destination?: string | undefined
  readonly path: string
  readonly interface: string
  readonly member: string
  readonly signature?: string | undefined
  readonly body?: ReadonlyArray<unknown> | undefined
}

/** An open connection. */
export interface Connection {
  /** The method's reply body; fails with the peer's error or when the connection drops first. */
  readonly call: (call: Call) => Effect.Effect<ReadonlyArray<unknown>, DbusError>
  /** Registers a signal listener (synchronously, so it hears everything after this point); returns its removal. */
  readonly listen: (f: (signal: Signal) => void) => () => void
  /** Registers a listener for the connection's close; called at once if it is closed already. */
  readonly onClose: (f: (reason: string) => void) => () => void
  /** Whether the connection has closed. */
  readonly isOpen: () => boolean
  /** Closes the connection; calls still waiting fail `Disconnected`. */
  readonly close: Effect.Effect<void>
}

/** Where to connect, and whether the socket is a bus (then `Hello` comes first) or a peer (systemd's private socket). */
export interface Target {
  /** The socket's path from here, or how messages name it (`/run/systemd/private in container process 42`). */
  readonly socket: string
  readonly kind: "bus" | "peer"
  /**
   * How the socket is made when it is not a connection to `socket` from
   * here: another machine's systemd refuses a private connection whose peer
   * pid it cannot see (the kernel reports pid 0 across pid namespaces), and
   * its socket must be found below its own root, so the container
   * composition resolves it there and has a connector in that pid namespace
   * connect to what it found (see `container/systemd.ts`).
   */
  readonly connect?: ((timeout: Duration.Duration) => Effect.Effect<Net.Socket, DbusError>) | undefined
  /**
   * Why the machine the socket belongs to is gone, or `undefined` while it
   * is there (a container's pinned init). Asked while the connection is
   * being opened: a peer that holds the socket open without answering after
   * its machine exited does not keep the opening waiting for its timeout.
   */
  readonly gone?: (() => HostPath.Gone | undefined) | undefined
}

/** How often an opening asks {@link Target.gone}. */
const goneEvery = Duration.millis(50)

const directSocket = (path: string, timeout: Duration.Duration): Effect.Effect<Net.Socket, DbusError> =>
  Effect.callback<Net.Socket, DbusError>((resume) => {
    const socket = Net.createConnection(path)
    const onError = (e: Error) => resume(Effect.fail(connectError(path, e.message)))
    socket.once("error", onError)
    socket.once("connect", () => {
      socket.off("error", onError)
      resume(Effect.succeed(socket))
    })
    return Effect.sync(() => socket.destroy())
  }).pipe(
    Effect.timeoutOrElse({
      duration: timeout,
      orElse: () => Effect.fail(connectError(path, `no connection within ${Duration.format(timeout)}`))
    })
  )

/**
 * Opens a connection to `target` and authenticates (EXTERNAL, as this
 * process's uid); on a bus it then says `Hello`. The scope closes it.
 */
export const open = (
  target: Target,
  options: {
    readonly timeout: Duration.Duration
    /**
     * The members of the signals to hear. The peer may send many more (on
     * systemd's private socket every unit change, unasked); the others are
     * dropped unread, before their bodies cost anything to decode.
     */
    readonly signals: ReadonlyArray<string>
  }
): Effect.Effect<Connection, DbusError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.gen(function* () {
      const socket = yield* target.connect !== undefined
        ? target.connect(options.timeout)
        : directSocket(target.socket, options.timeout)
      // The machine exiting ends the opening at once: the socket is destroyed under the handshake.
      const gone = target.gone
      const watch =
        gone === undefined
          ? undefined
          : yield* Effect.forkDetach(
              Effect.interruptible(
                Effect.sleep(goneEvery).pipe(
                  Effect.repeat({ until: () => gone() !== undefined }),
                  Effect.andThen(Effect.sync(() => socket.destroy()))
                )
              )
            )
      const connection = yield* opened(target, socket, options).pipe(
        Effect.mapError((e) => {
          const why = gone?.()
          return why === undefined ? e : connectError(target.socket, why.detail, why)
        }),
        Effect.ensuring(watch === undefined ? Effect.void : Fiber.interrupt(watch))
      )
      return connection
    }),
    (c) => c.close
  )

/** The handshake on `socket`, then a bus's `Hello` or a peer's `Ping` answered. */
const opened = (
  target: Target,
  socket: Net.Socket,
  options: { readonly timeout: Duration.Duration; readonly signals: ReadonlyArray<string> }
): Effect.Effect<Connection, DbusError> =>
  Effect.gen(function* () {
    const connection = yield* handshake(target.socket, socket, options.timeout, options.signals)
    if (target.kind === "peer") {
      yield* answering(connection).pipe(
        Effect.timeoutOrElse({
          duration: options.timeout,
          orElse: () =>
            Effect.fail(connectError(target.socket, `no answer to Ping within ${Duration.format(options.timeout)}`))
        }),
        Effect.mapError((e) => (e.reason._tag === "ConnectError" ? e : connectError(target.socket, e.reason.detail))),
        Effect.tapError(() => connection.close)
      )
    }
    if (target.kind === "bus") {
      yield* connection
        .call({
          destination: "org.freedesktop.DBus",
          path: "/org/freedesktop/DBus",
          interface: "org.freedesktop.DBus",
          member: "Hello"
        })
        .pipe(
          Effect.timeout(options.timeout),
          Effect.mapError((e) =>
            connectError(
              target.socket,
              `the bus refused Hello: ${e._tag === "DbusError" ? e.reason.detail : e.message}`
            )
          ),
          Effect.tapError(() => connection.close)
        )
    }
    return connection
  })

// The socket as the stream dbus-native reads: the handshake's lines pass
// unchanged; after the server's OK every message is framed from its fixed
// header, and a signal whose header fields name none of `keep` is dropped.
const filtered = (socket: Net.Socket, keep: ReadonlyArray<string>): Duplex => {
  const wanted = keep.map((m) => Buffer.from(m))
  let authenticated = false
  let pending: Buffer = Buffer.alloc(0)
  const stream = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, callback) {
      socket.write(chunk, callback)
    },
    final(callback) {
      socket.end(callback)
    },
    destroy(error, callback) {
      socket.destroy()
      callback(error)
    }
  })
  const frame = () => {
    while (true) {
      if (!authenticated) {
        const eol = pending.indexOf("\r\n")
        if (eol === -1) return
        const line = pending.subarray(0, eol + 2)
        pending = pending.subarray(eol + 2)
        stream.push(line)
        if (line.subarray(0, 3).toString("latin1") === "OK ") authenticated = true
        continue
      }
      if (pending.length < 16) return
      const le = pending[0] === 0x6c
      const bodyLength = le ? pending.readUInt32LE(4) : pending.readUInt32BE(4)
      const fieldsLength = le ? pending.readUInt32LE(12) : pending.readUInt32BE(12)
      const total = 16 + (((fieldsLength + 7) >> 3) << 3) + bodyLength
      if (pending.length < total) return
      const message = pending.subarray(0, total)
      pending = pending.subarray(total)
      const fields = message.subarray(16, 16 + fieldsLength)
      if (message[1] !== SignalType || wanted.some((w) => fields.includes(w))) stream.push(message)
    }
  }
  socket.on("data", (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
    frame()
  })
  socket.on("end", () => stream.push(null))
  socket.on("error", (e) => stream.destroy(e))
  // dbus-native sets this on its stream; the socket is the one that has it.
  Object.assign(stream, { setNoDelay: () => socket.setNoDelay(true) })
  return stream
}

// A peer that read our first message together with the handshake's BEGIN
// may leave it unprocessed until more bytes arrive: systemd 252 did so with
// a call sent right after connecting while it was re-executing, and answered
// it 30 s later, when the next call came. So a new peer connection is pinged
// until it answers (an error reply counts), a new Ping every 200 ms waking
// the ones before, and only then used.
const answering = (connection: Connection): Effect.Effect<void, DbusError> => {
  const ping = connection.call({ path: "/", interface: "org.freedesktop.DBus.Peer", member: "Ping" }).pipe(
    Effect.catchReason("DbusError", "CallError", () => Effect.void),
    Effect.asVoid
  )
  const kick: Effect.Effect<void, DbusError> = Effect.raceFirst(
    ping,
    Effect.andThen(
      Effect.sleep(Duration.millis(200)),
      Effect.suspend(() => kick)
    )
  )
  return kick
}

// Authenticates on a connected socket and wires replies, signals and the close.
const handshake = (
  path: string,
  socket: Net.Socket,
  timeout: Duration.Duration,
  signals: ReadonlyArray<string>
): Effect.Effect<Connection, DbusError> =>
  Effect.callback<Connection, DbusError>((resume) => {
    const bus = dbusNative.createClient({
      stream: filtered(socket, signals),
      direct: true,
      authMethods: ["EXTERNAL"],
      ReturnLongjs: true
    })
    let open = false
    let closedBecause: string | undefined
    const closeListeners = new Set<(reason: string) => void>()
    const signalListeners = new Set<(signal: Signal) => void>()
    const pending = new Set<(reason: string) => void>()
    const closed = (reason: string) => {
      if (closedBecause !== undefined) return
      closedBecause = reason
      socket.destroy()
      for (const f of [...pending]) f(reason)
      pending.clear()
      for (const f of [...closeListeners]) f(reason)
      closeListeners.clear()
      if (!open) resume(Effect.fail(connectError(path, reason)))
    }
    bus.connection.on("error", (e) => closed(e instanceof Error ? e.message : String(e)))
    bus.connection.on("end", () => closed("the peer closed the connection"))
    socket.on("close", () => closed("the connection closed"))
    bus.connection.on("message", (m) => {
      if (m.type !== SignalType || signalListeners.size === 0) return
      const signal: Signal = {
        path: m.path ?? "",
        interface: m.interface ?? "",
        member: m.member ?? "",
        body: m.body ?? []
      }
      for (const f of [...signalListeners]) f(signal)
    })
    const connection: Connection = {
      call: (call) =>
        Effect.callback<ReadonlyArray<unknown>, DbusError>((resumeCall) => {
          if (closedBecause !== undefined) {
            resumeCall(Effect.fail(disconnected(call.member, closedBecause)))
            return
          }
          let done = false
          const onClose = (reason: string) => {
            done = true
            resumeCall(Effect.fail(disconnected(call.member, reason)))
          }
          pending.add(onClose)
          bus.invoke(
            {
              ...(call.destination === undefined ? {} : { destination: call.destination }),
              path: call.path,
              interface: call.interface,
              member: call.member,
              ...(call.signature === undefined || call.signature === ""
                ? {}
                : { signature: call.signature, body: call.body ?? [] })
            },
            (error, ...body) => {
              if (done) return
              done = true
              pending.delete(onClose)
              if (error === null || error === undefined) resumeCall(Effect.succeed(body))
              else {
                const text = typeof error.message === "string" ? error.message : ""
                resumeCall(Effect.fail(callError(call.member, error.name ?? "unknown", text)))
              }
            }
          )
          return Effect.sync(() => {
            done = true
            pending.delete(onClose)
          })
        }),
      listen: (f) => {
        signalListeners.add(f)
        return () => {
          signalListeners.delete(f)
        }
      },
      onClose: (f) => {
        if (closedBecause !== undefined) {
          f(closedBecause)
          return () => {}
        }
        closeListeners.add(f)
        return () => {
          closeListeners.delete(f)
        }
      },
      isOpen: () => closedBecause === undefined,
      close: Effect.sync(() => closed("closed by this process"))
    }
    bus.connection.on("connect", () => {
      open = true
      resume(Effect.succeed(connection))
    })
    return Effect.sync(() => closed("interrupted while connecting"))
  }).pipe(
    Effect.timeoutOrElse({
      duration: timeout,
      orElse: () => Effect.fail(connectError(path, `no answer to authentication within ${Duration.format(timeout)}`))
    })
  )
