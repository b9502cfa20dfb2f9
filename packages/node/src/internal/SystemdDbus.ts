/**
 * `Systemd.Primitives` over D-Bus to systemd's manager: a job is the
 * manager's `StartUnit`, `StopUnit`, `RestartUnit` or `ReloadUnit` (mode
 * `replace`) followed by that job's `JobRemoved` signal, whose result is the
 * outcome; a daemon-reload is `Reload`; `show` reads the unit's properties.
 * Errors carry what systemctl says for the same answer. One connection at a
 * time, held for the layer's scope and reopened by the next call once it
 * dropped (systemd closes every connection when it re-executes).
 *
 * The boundary: connections are `DbusConnection`'s, the service is
 * `Systemd.make`'s, names, properties, errors and jobs are in `systemdDbus/`.
 *
 * @since 0.1.0
 */
import { Systemd, type UnitName } from "@hostnode/core"
import * as Layers from "@hostnode/core/Layers"
import { Duration, Effect, Exit, Scope, Semaphore } from "effect"
import * as DbusConnection from "./DbusConnection.ts"
import { callFailed, dbusFailed, jobFailedText, methodOf, systemdError } from "./systemdDbus/errors.ts"
import { type Jobs, trackJobs } from "./systemdDbus/jobs.ts"
import { Destination, ManagerInterface, ManagerPath, PropertiesInterface, unitPath } from "./systemdDbus/names.ts"
import { formatProperty, interfaceOf, variant } from "./systemdDbus/properties.ts"
import { UnitStatusProperties, unitStatusOf } from "./systemdDbus/status.ts"

/** Options of {@link make}. */
export interface Options {
  /** Sockets to try, in order, when (re)connecting. */
  readonly targets: ReadonlyArray<DbusConnection.Target>
  /** How long one call may take, a job until its `JobRemoved` included. */
  readonly timeout: Duration.Duration
  /** How long opening a connection may take. */
  readonly connectTimeout: Duration.Duration
  /**
   * Connect at the first call, not now (default false): another machine's
   * systemd (a container's), which may not have booted yet when the
   * composition is built, and must not fail its build.
   */
  readonly lazy?: boolean | undefined
}

interface Session {
  readonly connection: DbusConnection.Connection
  readonly jobs: Jobs
  readonly scope: Scope.Closeable
}

// On a bus systemd sends its signals only to subscribed clients, and the bus
// delivers them only to matching ones; on its private socket it sends them to
// every connection.
const subscribe = (connection: DbusConnection.Connection, target: DbusConnection.Target) =>
  target.kind === "peer"
    ? Effect.void
    : Effect.all([
        connection.call({
          destination: "org.freedesktop.DBus",
          path: "/org/freedesktop/DBus",
          interface: "org.freedesktop.DBus",
          member: "AddMatch",
          signature: "s",
          body: [
            `type='signal',sender='${Destination}',path='${ManagerPath}',interface='${ManagerInterface}',member='JobRemoved'`
          ]
        }),
        connection.call({
          destination: Destination,
          path: ManagerPath,
          interface: ManagerInterface,
          member: "Subscribe"
        })
      ])

/**
 * The primitives, connected once now (so a caller learns at once that no
 * socket answers) and again by the first call after the connection dropped.
 * The scope closes the connection.
 */
export const make = (options: Options): Effect.Effect<Systemd.Primitives, Systemd.SystemdError, Scope.Scope> =>
  Effect.gen(function* () {
    let current: Session | undefined
    const lock = yield* Semaphore.make(1)
    // Once the layer's scope closed, a call fails instead of opening a connection nobody would close.
    let finished = false
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        finished = true
        return current === undefined ? Effect.void : Scope.close(current.scope, Exit.void)
      })
    )

    const openOne = (target: DbusConnection.Target) =>
      Effect.gen(function* () {
        const scope = yield* Scope.make()
        const connection = yield* DbusConnection.open(target, {
          timeout: options.connectTimeout,
          signals: ["JobRemoved"]
        }).pipe(
          Scope.provide(scope),
          Effect.tapError(() => Scope.close(scope, Exit.void))
        )
        yield* subscribe(connection, target).pipe(
          Effect.timeout(options.connectTimeout),
          Effect.mapError((e) =>
            DbusConnection.connectError(
              target.socket,
              `cannot subscribe to systemd's signals: ${e._tag === "DbusError" ? e.reason.detail : e.message}`
            )
          ),
          Effect.tapError(() => Scope.close(scope, Exit.void))
        )
        return { connection, jobs: trackJobs(connection), scope } satisfies Session
      })

    const reconnect = Effect.gen(function* () {
      if (current !== undefined) yield* Scope.close(current.scope, Exit.void)
      current = undefined
      if (finished) {
        return yield* Effect.fail(DbusConnection.connectError("", "the layer that held the connection was closed"))
      }
      let failure: DbusConnection.DbusError | undefined
      for (const target of options.targets) {
        const opened = yield* Effect.result(openOne(target))
        if (opened._tag === "Success") {
          current = opened.success
          return opened.success
        }
        failure = opened.failure
      }
      return yield* Effect.fail(failure ?? DbusConnection.connectError("", "no socket to connect to"))
    })

    const session = Semaphore.withPermit(lock)(
      Effect.suspend(() => (current?.connection.isOpen() ? Effect.succeed(current) : reconnect))
    )

    // Runs `f` on the open connection; when the connection drops before the
    // answer, once more on a new one. Every call here has the same outcome
    // when repeated (a restart restarts, a start of an active unit does
    // nothing), and whether systemd received the first is unknown. The time
    // limit is `Layers.SystemdCallTimeout` where provided, else the layer's, never past the
    // operation's deadline (`Layers.systemdCallLimit`); `job`
    // names the job systemd queued, once it answered with one, for the
    // message of a call that ran out of time.
    const withSession = <A>(
      verb: Systemd.SystemdError["verb"],
      unit: string | undefined,
      f: (s: Session) => Effect.Effect<A, Systemd.SystemdError | DbusConnection.DbusError>,
      job: () => string | undefined = () => undefined
    ): Effect.Effect<A, Systemd.SystemdError> =>
      Effect.gen(function* () {
        const limit = yield* Layers.systemdCallLimit(options.timeout)
        return yield* Effect.flatMap(session, f).pipe(
          Effect.catchReason("DbusError", "Disconnected", () => Effect.flatMap(session, f)),
          Effect.catchTag("DbusError", (e) => Effect.fail(dbusFailed(verb, unit, e))),
          Effect.timeoutOrElse({
            duration: limit,
            orElse: () => {
              const queued = job()
              const what = `${methodOf(verb)}${unit === undefined ? "" : ` ${unit}`}`
              return Effect.fail(
                systemdError(
                  verb,
                  unit,
                  new Systemd.Failure({
                    _tag: "Timeout",
                    stderr:
                      queued === undefined
                        ? `systemd did not answer ${what} within ${Duration.format(limit)}`
                        : `job ${queued} did not finish within ${Duration.format(limit)}; it is left to systemd`
                  }),
                  queued === undefined ? {} : { job: queued }
                )
              )
            }
          })
        )
      })

    const call = (verb: Systemd.SystemdError["verb"], unit: string | undefined, s: Session, c: DbusConnection.Call) =>
      s.connection
        .call({ destination: Destination, ...c })
        .pipe(Effect.catchReason("DbusError", "CallError", (r) => Effect.fail(callFailed(verb, unit, r))))

    const getAll = (verb: Systemd.SystemdError["verb"], unit: string, s: Session) =>
      call(verb, unit, s, {
        path: unitPath(unit),
        interface: PropertiesInterface,
        member: "GetAll",
        signature: "s",
        body: [""]
      }).pipe(
        Effect.map((body) => {
          const out: Record<string, string> = {}
          for (const entry of (body[0] ?? []) as ReadonlyArray<[string, unknown]>) {
            const v = variant(entry[1])
            if (v !== undefined) out[entry[0]] = formatProperty(entry[0], v.tree, v.value)
          }
          return out
        })
      )

    // The properties, each with a Get where its interface is known (sent
    // together, answered in one round trip), else with one GetAll.
    const read = (verb: Systemd.SystemdError["verb"], unit: string, properties: ReadonlyArray<string>, s: Session) => {
      const known = properties.map((p) => [p, interfaceOf(unit, p)] as const)
      if (known.some(([, i]) => i === undefined)) {
        return getAll(verb, unit, s).pipe(
          Effect.map((all) => {
            const out: Record<string, string> = {}
            for (const p of properties) {
              const v = all[p]
              if (v !== undefined) out[p] = v
            }
            return out
          })
        )
      }
      return Effect.forEach(
        known,
        ([property, iface]) =>
          call(verb, unit, s, {
            path: unitPath(unit),
            interface: PropertiesInterface,
            member: "Get",
            signature: "ss",
            body: [iface, property]
          }).pipe(
            Effect.map((body) => {
              const v = variant(body[0])
              return [property, v === undefined ? undefined : formatProperty(property, v.tree, v.value)] as const
            })
          ),
        { concurrency: "unbounded" }
      ).pipe(
        Effect.map((pairs) => {
          const out: Record<string, string> = {}
          for (const [p, v] of pairs) if (v !== undefined) out[p] = v
          return out
        })
      )
    }

    const methods = { start: "StartUnit", stop: "StopUnit", restart: "RestartUnit", reload: "ReloadUnit" } as const

    const job = (verb: keyof typeof methods, unit: UnitName.UnitName) => {
      // The job's object path, once systemd queued it: named by a failure or a timeout.
      let queued: string | undefined
      return withSession(
        verb,
        unit,
        (s) =>
          Effect.acquireUseRelease(
            Effect.sync(() => s.jobs.expect(unit)),
            () =>
              Effect.gen(function* () {
                const reply = yield* call(verb, unit, s, {
                  path: ManagerPath,
                  interface: ManagerInterface,
                  member: methods[verb],
                  signature: "ss",
                  body: [unit, "replace"]
                })
                queued = String(reply[0])
                const result = yield* s.jobs.result(queued)
                if (result === "done" || result === "skipped") return
                const props = yield* read(verb, unit, UnitStatusProperties, s)
                const status = unitStatusOf(props)
                const stderr = jobFailedText(unit, result, status.result)
                return yield* systemdError(
                  verb,
                  unit,
                  Systemd.Failure.classify(1, stderr, { jobResult: result, status }),
                  {
                    job: queued
                  }
                )
              }),
            (release) => Effect.sync(release)
          ),
        () => queued
      ).pipe(Effect.annotateLogs({ unit }))
    }

    if (options.lazy !== true) yield* Effect.mapError(session, (e) => dbusFailed("show", undefined, e))
    return {
      job,
      daemonReload: withSession("daemon-reload", undefined, (s) =>
        Effect.asVoid(
          call("daemon-reload", undefined, s, { path: ManagerPath, interface: ManagerInterface, member: "Reload" })
        )
      ),
      show: (unit, properties) => withSession("show", unit, (s) => read("show", unit, properties, s))
    } satisfies Systemd.Primitives
  })
