/**
 * `Systemd.Primitives` over D-Bus to systemd's manager
 * (`org.freedesktop.systemd1`): a job is the manager's `StartUnit`,
 * `StopUnit`, `RestartUnit` or `ReloadUnit` with mode `replace` followed by
 * that job's `JobRemoved` signal, whose result becomes the outcome; a
 * daemon-reload is the manager's `Reload` (answered once the reload is done);
 * `show` reads properties of the unit's object. Errors carry the exit code
 * and sentence systemctl gives for the same answer from systemd, plus the job
 * result and the unit's states after a failed job.
 *
 * One connection at a time, held for the layer's scope and reopened by the
 * next call once it dropped (systemd closes every connection when it
 * re-executes). The boundary: how connections are made is `DbusConnection`'s;
 * the service (validation, the derived methods) is `Systemd.make`'s.
 *
 * @since 0.1.0
 */
import { Systemd, type UnitName } from "@hostnode/core"
import { Duration, Effect, Exit, Scope, Semaphore } from "effect"
import * as DbusConnection from "./DbusConnection.ts"

const Destination = "org.freedesktop.systemd1"
const ManagerPath = "/org/freedesktop/systemd1"
const ManagerInterface = "org.freedesktop.systemd1.Manager"
const PropertiesInterface = "org.freedesktop.DBus.Properties"
const UnitInterface = "org.freedesktop.systemd1.Unit"

/** Options of {@link make}. */
export interface Options {
  /** Sockets to try, in order, when (re)connecting. */
  readonly targets: ReadonlyArray<DbusConnection.Target>
  /** How long one call may take, a job until its `JobRemoved` included. */
  readonly timeout: Duration.Duration
  /** How long opening a connection may take. */
  readonly connectTimeout: Duration.Duration
}

/** systemd's object path of a unit: `/org/freedesktop/systemd1/unit/` and the name escaped as a bus label. */
export const unitPath = (unit: string): string => {
  let label = ""
  for (const [i, ch] of [...unit].entries()) {
    const alnum = /^[A-Za-z]$/.test(ch) || (i > 0 && /^[0-9]$/.test(ch))
    label += alnum ? ch : `_${ch.charCodeAt(0).toString(16).padStart(2, "0")}`
  }
  return `${ManagerPath}/unit/${label === "" ? "_" : label}`
}

// ---------------------------------------------------------------------------
// property values as systemctl show prints them

interface SignatureTree {
  readonly type: string
  readonly child: ReadonlyArray<SignatureTree>
}

const isLong = (v: unknown): v is { toString(): string } =>
  typeof v === "object" && v !== null && "low" in v && "high" in v && "unsigned" in v

const uint64Max = "18446744073709551615"

// format_timespan with accuracy 0, the way systemctl show prints `*USec`.
const timespan = (usec: bigint): string => {
  if (usec === 0n) return "0"
  const table: ReadonlyArray<readonly [string, bigint]> = [
    ["y", 31557600n * 1000000n],
    ["month", 2629800n * 1000000n],
    ["w", 604800n * 1000000n],
    ["d", 86400n * 1000000n],
    ["h", 3600n * 1000000n],
    ["min", 60n * 1000000n],
    ["s", 1000000n],
    ["ms", 1000n],
    ["us", 1n]
  ]
  const parts: Array<string> = []
  let t = usec
  for (const [suffix, unit] of table) {
    if (t <= 0n) break
    if (t < unit) continue
    const a = t / unit
    const b = t % unit
    if (t < 60n * 1000000n && b > 0n) {
      const digits = unit.toString().length - 1
      if (digits > 0) {
        parts.push(`${a}.${b.toString().padStart(digits, "0")}${suffix}`)
        t = 0n
        continue
      }
    }
    parts.push(`${a}${suffix}`)
    t = b
  }
  return parts.join(" ")
}

const two = (n: number) => String(n).padStart(2, "0")
const weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"] as const

// format_timestamp: "Mon 2026-11-30 17:19:00 UTC" in this process's time zone.
const timestamp = (usec: bigint): string => {
  const d = new Date(Number(usec / 1000n))
  const zone =
    new Intl.DateTimeFormat("en-US", { timeZoneName: "short" }).formatToParts(d).find((p) => p.type === "timeZoneName")
      ?.value ?? ""
  const day = weekdays[d.getDay()] ?? ""
  return `${day} ${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}${zone === "" ? "" : ` ${zone}`}`
}

const plain = (v: unknown): unknown => {
  if (isLong(v)) return v.toString()
  if (Buffer.isBuffer(v)) return [...v]
  if (Array.isArray(v)) return (v as ReadonlyArray<unknown>).map(plain)
  return v
}

/**
 * A property value as `systemctl show` prints it: booleans as yes/no,
 * numbers in decimal (64-bit ones exactly), string arrays space-separated,
 * `*USec` as timespans and `*Timestamp` as local times (empty when unset).
 * Structured values (command lines, lists of pairs) are given as JSON, where
 * systemctl has a layout of its own for each.
 */
export const formatProperty = (name: string, tree: SignatureTree, value: unknown): string => {
  switch (tree.type) {
    case "b":
      return value === true ? "yes" : "no"
    case "s":
    case "o":
    case "g":
      return String(value)
    case "t":
    case "x": {
      const text = isLong(value) ? value.toString() : String(value)
      if (tree.type === "t" && name.endsWith("USec")) return text === uint64Max ? "infinity" : timespan(BigInt(text))
      if (tree.type === "t" && name.endsWith("Timestamp")) {
        return text === "0" || text === uint64Max ? "" : timestamp(BigInt(text))
      }
      return text
    }
    case "y":
    case "n":
    case "q":
    case "u":
    case "i":
    case "d":
      return String(value)
    case "a":
      if (tree.child[0]?.type === "s" && Array.isArray(value)) return value.join(" ")
      return JSON.stringify(plain(value))
    default:
      return JSON.stringify(plain(value))
  }
}

// A variant as @homebridge/dbus-native decodes it: [signature trees, [value]].
const variant = (v: unknown): { readonly tree: SignatureTree; readonly value: unknown } | undefined => {
  if (!Array.isArray(v) || v.length !== 2) return undefined
  const [trees, values] = v as [ReadonlyArray<SignatureTree>, ReadonlyArray<unknown>]
  const tree = trees[0]
  return tree === undefined ? undefined : { tree, value: values[0] }
}

// Properties on org.freedesktop.systemd1.Unit, read one by one; anything else is
// read with one GetAll over every interface of the unit, as systemctl show does.
const unitProperties = new Set([
  "Id",
  "Names",
  "Description",
  "LoadState",
  "ActiveState",
  "FreezerState",
  "SubState",
  "FragmentPath",
  "SourcePath",
  "DropInPaths",
  "UnitFileState",
  "UnitFilePreset",
  "StateChangeTimestamp",
  "StateChangeTimestampMonotonic",
  "InactiveExitTimestamp",
  "InactiveExitTimestampMonotonic",
  "ActiveEnterTimestamp",
  "ActiveEnterTimestampMonotonic",
  "ActiveExitTimestamp",
  "ActiveExitTimestampMonotonic",
  "InactiveEnterTimestamp",
  "InactiveEnterTimestampMonotonic",
  "CanStart",
  "CanStop",
  "CanReload",
  "NeedDaemonReload",
  "InvocationID",
  "Transient"
])
// The same for org.freedesktop.systemd1.Service, on .service units.
const serviceProperties = new Set([
  "Type",
  "Restart",
  "RemainAfterExit",
  "MainPID",
  "ControlPID",
  "StatusText",
  "Result",
  "ReloadResult",
  "NRestarts",
  "ExecMainStartTimestamp",
  "ExecMainStartTimestampMonotonic",
  "ExecMainExitTimestamp",
  "ExecMainExitTimestampMonotonic",
  "ExecMainPID",
  "ExecMainCode",
  "ExecMainStatus",
  "TimeoutStartUSec",
  "TimeoutStopUSec",
  "RestartUSec"
])

// ---------------------------------------------------------------------------
// errors as systemctl reports them

// translate_bus_error_to_exit_status in systemctl.
const exitCodeOf = (errorName: string): number => {
  switch (errorName) {
    case "org.freedesktop.DBus.Error.AccessDenied":
    case "org.freedesktop.systemd1.OnlyByDependency":
    case "org.freedesktop.systemd1.NoIsolation":
    case "org.freedesktop.systemd1.TransactionIsDestructive":
      return 4
    case "org.freedesktop.systemd1.NoSuchUnit":
      return 5
    case "org.freedesktop.systemd1.JobTypeNotApplicable":
    case "org.freedesktop.DBus.Error.NotSupported":
      return 3
    case "org.freedesktop.systemd1.LoadFailed":
      return 6
    default:
      return 1
  }
}

/** The error of a call on `unit` (none for daemon-reload, or the connection made when the layer is built). */
const systemdError = (verb: Systemd.Verb, unit: string | undefined, reason: Systemd.SystemdErrorReason) =>
  new Systemd.SystemdError({ reason, verb, ...(unit === undefined ? {} : { unit }) })

const callFailed = (
  verb: Systemd.Verb,
  unit: string | undefined,
  e: DbusConnection.CallError
): Systemd.SystemdError => {
  const what = verb === "daemon-reload" ? "reload daemon" : verb === "show" ? "get properties" : `${verb} ${unit}`
  const exitCode = exitCodeOf(e.name)
  return systemdError(verb, unit, Systemd.classify(exitCode, `Failed to ${what}: ${e.text}`))
}

const disconnected = (
  verb: Systemd.Verb,
  unit: string | undefined,
  e: DbusConnection.Disconnected
): Systemd.SystemdError =>
  systemdError(
    verb,
    unit,
    new Systemd.Other({
      stderr: `the connection to systemd closed before it answered ${e.member}, twice (${e.reason})`
    })
  )

const serviceExplanations: Readonly<Record<string, string>> = {
  resources: "of unavailable resources or another system error",
  protocol: "the service did not take the steps required by its unit configuration",
  timeout: "a timeout was exceeded",
  "exit-code": "the control process exited with error code",
  signal: "a fatal signal was delivered to the control process",
  "core-dump": "a fatal signal was delivered causing the control process to dump core",
  watchdog: "the service failed to send watchdog ping",
  "start-limit-hit": "start of the service was attempted too often"
}

// What systemctl prints for a job that finished with `result` (check_wait_response).
const jobFailedText = (unit: string, result: string, serviceResult: string): string => {
  switch (result) {
    case "canceled":
      return `Job for ${unit} canceled.`
    case "timeout":
      return `Job for ${unit} timed out.`
    case "dependency":
      return `A dependency job for ${unit} failed. See 'journalctl -xe' for details.`
    case "invalid":
      return `${unit} is not active, cannot reload.`
    case "assert":
      return `Assertion failed on job for ${unit}.`
    case "unsupported":
      return `Operation on or unit type of ${unit} not supported on this system.`
    case "collected":
      return `Queued job for ${unit} was garbage collected.`
    case "once":
      return `Unit ${unit} was started already once and can't be started again.`
    default: {
      if (!unit.endsWith(".service")) return `Job failed. See "journalctl -xe" for details.`
      const see = `See "systemctl status ${unit}" and "journalctl -xeu ${unit}" for details.`
      const why = serviceExplanations[serviceResult]
      return why === undefined ? `Job for ${unit} failed.\n${see}` : `Job for ${unit} failed because ${why}.\n${see}`
    }
  }
}

// ---------------------------------------------------------------------------
// connections and jobs

// The JobRemoved signals of one connection, delivered to the job waiting for
// each. A job's signal can come before the reply that names the job, so while
// a job on a unit is being queued every signal for that unit is kept.
interface Jobs {
  readonly expect: (unit: string) => () => void
  readonly result: (job: string) => Effect.Effect<string, DbusConnection.Disconnected>
}

const trackJobs = (connection: DbusConnection.Connection): Jobs => {
  const interest = new Map<string, number>()
  const early = new Map<string, { readonly unit: string; readonly result: string }>()
  const waiters = new Map<string, (result: string) => void>()
  connection.listen((s) => {
    if (s.member !== "JobRemoved" || s.interface !== ManagerInterface) return
    const [, job, unit, result] = s.body as [unknown, string, string, string]
    const waiter = waiters.get(job)
    if (waiter !== undefined) {
      waiters.delete(job)
      waiter(result)
    } else if (interest.has(unit)) early.set(job, { unit, result })
  })
  return {
    expect: (unit) => {
      interest.set(unit, (interest.get(unit) ?? 0) + 1)
      return () => {
        const n = (interest.get(unit) ?? 1) - 1
        if (n > 0) interest.set(unit, n)
        else {
          interest.delete(unit)
          for (const [job, e] of early) if (e.unit === unit) early.delete(job)
        }
      }
    },
    result: (job) =>
      Effect.callback<string, DbusConnection.Disconnected>((resume) => {
        const seen = early.get(job)
        if (seen !== undefined) {
          early.delete(job)
          resume(Effect.succeed(seen.result))
          return
        }
        const stop = connection.onClose((reason) =>
          resume(Effect.fail(new DbusConnection.Disconnected({ member: "JobRemoved", reason })))
        )
        waiters.set(job, (result) => {
          stop()
          resume(Effect.succeed(result))
        })
        return Effect.sync(() => {
          stop()
          waiters.delete(job)
        })
      })
  }
}

interface Session {
  readonly connection: DbusConnection.Connection
  readonly jobs: Jobs
  readonly scope: Scope.Closeable
}

const connectError = (
  verb: Systemd.Verb,
  unit: string | undefined,
  e: DbusConnection.ConnectError
): Systemd.SystemdError =>
  systemdError(
    verb,
    unit,
    new Systemd.NotBooted({ exitCode: 1, stderr: `Failed to connect to bus: ${e.socket}: ${e.reason}` })
  )

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
          Effect.mapError(
            (e) =>
              new DbusConnection.ConnectError({
                socket: target.socket,
                reason: `cannot subscribe to systemd's signals: ${"text" in e ? e.text : e.message}`
              })
          ),
          Effect.tapError(() => Scope.close(scope, Exit.void))
        )
        return { connection, jobs: trackJobs(connection), scope } satisfies Session
      })

    const reconnect = Effect.gen(function* () {
      if (current !== undefined) yield* Scope.close(current.scope, Exit.void)
      current = undefined
      if (finished) {
        return yield* Effect.fail(
          new DbusConnection.ConnectError({ socket: "", reason: "the layer that held the connection was closed" })
        )
      }
      let failure: DbusConnection.ConnectError | undefined
      for (const target of options.targets) {
        const opened = yield* Effect.result(openOne(target))
        if (opened._tag === "Success") {
          current = opened.success
          return opened.success
        }
        failure = opened.failure
      }
      return yield* Effect.fail(
        failure ?? new DbusConnection.ConnectError({ socket: "", reason: "no socket to connect to" })
      )
    })

    const session = Semaphore.withPermit(lock)(
      Effect.suspend(() => (current?.connection.isOpen() ? Effect.succeed(current) : reconnect))
    )

    // Runs `f` on the open connection; when the connection drops before the
    // answer, once more on a new one. Every call here has the same outcome
    // when repeated (a restart restarts, a start of an active unit does
    // nothing), and whether systemd received the first is unknown.
    const withSession = <A>(
      verb: Systemd.Verb,
      unit: string | undefined,
      f: (s: Session) => Effect.Effect<A, Systemd.SystemdError | DbusConnection.Disconnected>
    ): Effect.Effect<A, Systemd.SystemdError> =>
      Effect.flatMap(session, f).pipe(
        Effect.catchTag("Disconnected", () => Effect.flatMap(session, f)),
        Effect.catchTag("ConnectError", (e) => Effect.fail(connectError(verb, unit, e))),
        Effect.catchTag("Disconnected", (e) => Effect.fail(disconnected(verb, unit, e))),
        Effect.timeoutOrElse({
          duration: options.timeout,
          orElse: () =>
            Effect.fail(
              systemdError(
                verb,
                unit,
                new Systemd.Timeout({
                  stderr: `systemd did not finish ${verb}${unit === undefined ? "" : ` of ${unit}`} within ${Duration.format(options.timeout)}`
                })
              )
            )
        })
      )

    const call = (verb: Systemd.Verb, unit: string | undefined, s: Session, c: DbusConnection.Call) =>
      s.connection
        .call({ destination: Destination, ...c })
        .pipe(Effect.catchTag("CallError", (e) => Effect.fail(callFailed(verb, unit, e))))

    const getAll = (verb: Systemd.Verb, unit: string, s: Session) =>
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

    const interfaceOf = (unit: string, property: string): string | undefined =>
      unitProperties.has(property)
        ? UnitInterface
        : unit.endsWith(".service") && serviceProperties.has(property)
          ? "org.freedesktop.systemd1.Service"
          : undefined

    // The properties, each with a Get where its interface is known (sent
    // together, answered in one round trip), else with one GetAll.
    const read = (verb: Systemd.Verb, unit: string, properties: ReadonlyArray<string>, s: Session) => {
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

    const job = (verb: keyof typeof methods, unit: UnitName.UnitName) =>
      withSession(verb, unit, (s) =>
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
              const result = yield* s.jobs.result(String(reply[0]))
              if (result === "done" || result === "skipped") return
              const props = yield* read(verb, unit, Systemd.UnitStatusProperties, s)
              const status = Systemd.unitStatusOf(props)
              const stderr = jobFailedText(unit, result, status.result)
              return yield* systemdError(verb, unit, Systemd.classify(1, stderr, { jobResult: result, status }))
            }),
          (release) => Effect.sync(release)
        )
      ).pipe(Effect.annotateLogs({ unit }))

    yield* Effect.mapError(session, (e) => connectError("show", undefined, e))
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
