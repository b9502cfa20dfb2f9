/**
 * The simulated host's systemd: units loaded from the host's unit files, their
 * states and processes, and a `systemctl` interpreter (for `MemoryCommands`)
 * that prints what systemctl 252 prints and exits with its codes. The
 * simulated host's `Systemd` service is `Systemd.layerCommand()` running over
 * that interpreter, so the service and the command line agree by construction;
 * the `MemorySystemd` service adds inspection (unit states, job history,
 * restart and daemon-reload counters) and fault injection.
 *
 * What is simulated, after real systemd 252:
 * - Loading: a unit's fragment is the first `<dir>/<name>` of the unit search
 *   path (`/etc/systemd/system`, `/run/systemd/system`, `/usr/local/lib/...`,
 *   `/lib/...`, `/usr/lib/...`; a template `foo@.service` serves
 *   `foo@x.service`), with drop-ins from `<dir>/<name>.d/*.conf`. A symlink to
 *   `/dev/null` or an empty file masks the unit. Units are loaded on demand:
 *   a unit that is inactive (not failed) and has no job is unloaded after each
 *   call, so it is read afresh when next referenced; a unit that is active,
 *   activating or failed keeps the definition it was loaded with
 *   (`NeedDaemonReload=yes` once its files changed) until `daemon-reload`.
 * - Services: `Type=` simple, exec, forking, notify, dbus, idle and oneshot,
 *   `Restart=`, `RestartSec=`, `RemainAfterExit=`, `TimeoutStartSec=`,
 *   `ExecStartPre=`/`ExecStart=`/`ExecStartPost=`/`ExecReload=`/`ExecStop=`,
 *   the start rate limit (`StartLimitBurst=` 5 in `StartLimitIntervalSec=` 10s
 *   by default; manual starts count, as in real systemd), `NRestarts`
 *   (automatic restarts only; flushed at the next start after the unit fully
 *   stopped), MainPID, the ExecMain status and the state-change timestamps.
 * - Programs: `/bin/true` exits 0, `/bin/false` exits 1, `sleep N|infinity`
 *   runs that long and never notifies readiness, `sh -c "exit N"` exits N. Any
 *   other program is a well-behaved daemon: as a main process it runs until
 *   killed (and notifies readiness for `Type=notify`); as a oneshot or
 *   control command it succeeds at once.
 * - Time: timers (`RestartSec=`, finite sleeps, start timeouts) run on the
 *   Effect `Clock`, evaluated lazily whenever systemd is asked anything.
 *
 * Not simulated: dependencies between units (`Wants=`, `Requires=`, ordering;
 * a unit referenced by a running unit is unloaded like any other inactive
 * unit here), `[Install]`/enabling, sockets, timers and other unit types
 * beyond start/stop bookkeeping, cgroups, and `systemctl status`.
 *
 * @since 0.1.0
 */
import type { Systemd } from "@hostnode/core"
import { Clock, Context, Deferred, Effect, type FileSystem, Semaphore } from "effect"
import { makeJournal } from "./internal/journal.ts"
import * as MemoryCommands from "./MemoryCommands.ts"
import * as MemoryFileSystem from "./MemoryFileSystem.ts"
import { MemoryHost } from "./MemoryHost.ts"

// ---------------------------------------------------------------------------
// vocabulary

/**
 * A unit's LoadState as systemd reports it.
 *
 * @since 0.1.0
 */
export type LoadState = "loaded" | "not-found" | "masked" | "bad-setting"

/**
 * A service's `Result` (why it last stopped or failed).
 *
 * @since 0.1.0
 */
export type ServiceResult =
  | "success"
  | "exit-code"
  | "signal"
  | "core-dump"
  | "timeout"
  | "start-limit-hit"
  | "protocol"

/**
 * The job verbs of systemctl that the simulation runs.
 *
 * @since 0.1.0
 */
export type JobVerb = "start" | "stop" | "restart" | "reload"

/**
 * What became of a job: still `pending`, `done`, `failed` (the unit's
 * processes failed it), `canceled` (replaced by a later job), or `rejected`
 * before it ran (missing or masked unit, reload not applicable, ...).
 *
 * @since 0.1.0
 */
export type JobOutcome = "pending" | "done" | "failed" | "canceled" | "rejected"

/**
 * One job systemd was asked for, in order. `reason` says why it failed or was rejected.
 *
 * @since 0.1.0
 */
export interface JobRecord {
  readonly seq: number
  readonly verb: JobVerb
  readonly unit: string
  readonly outcome: JobOutcome
  readonly reason?: string | undefined
}

/**
 * A loaded unit as systemd holds it now.
 *
 * @since 0.1.0
 */
export interface UnitView {
  readonly name: string
  readonly loadState: LoadState
  readonly activeState: Systemd.ActiveState
  readonly subState: string
  readonly description: string
  readonly fragmentPath: string
  readonly dropInPaths: ReadonlyArray<string>
  readonly mainPid: number
  /** Automatic restarts (`Restart=`) since the unit last fully stopped. */
  readonly nRestarts: number
  readonly result: ServiceResult
  /** Microseconds since the simulated boot; 0 when the unit never became active. */
  readonly activeEnterTimestampMonotonic: number
  /** True when the unit's files changed since it was loaded. */
  readonly needDaemonReload: boolean
  /** The verb of a job still running on the unit (a hung or slow one). */
  readonly pendingJob: JobVerb | undefined
}

/**
 * A failure to inject into the next job(s) on `unit`:
 * - `JobFailed`: the job fails as if the unit's control process exited with
 *   an error (start/restart leave the unit `failed`, Result `exit-code`; a
 *   failed reload leaves it active with ReloadResult `exit-code`);
 * - `NotFound`: the call is refused as for a unit that does not exist
 *   (exit 5);
 * - `Hang`: the job never finishes on its own (the unit stays activating,
 *   deactivating or reloading) until a later job on the unit replaces it.
 *
 * @since 0.1.0
 */
export interface JobFault {
  readonly unit: string
  readonly kind: "JobFailed" | "NotFound" | "Hang"
  /** The verbs it applies to (default start and restart). */
  readonly verbs?: ReadonlyArray<JobVerb> | undefined
  /** How many jobs it affects (default 1; `Infinity` for every one). */
  readonly times?: number | undefined
}

/**
 * How a main process dies in {@link MemorySystemdService.killMain}.
 *
 * @since 0.1.0
 */
export type Death = { readonly exitCode: number } | { readonly signal: string }

/**
 * Inspection and fault injection of the simulated systemd.
 *
 * @since 0.1.0
 */
export interface MemorySystemdService {
  /** The loaded unit `name`, or `undefined` when systemd has not loaded it (never referenced, or unloaded). */
  readonly unit: (name: string) => Effect.Effect<UnitView | undefined>
  /** Every loaded unit, by name. */
  readonly units: Effect.Effect<ReadonlyArray<UnitView>>
  /** Every job asked for so far, oldest first (including rejected ones). */
  readonly jobs: Effect.Effect<ReadonlyArray<JobRecord>>
  /** Manual restart jobs that completed, per unit. */
  readonly restarts: Effect.Effect<Readonly<Record<string, number>>>
  /** How many times `daemon-reload` ran. */
  readonly daemonReloads: Effect.Effect<number>
  /** Forgets the job history and the counters (units keep their states). */
  readonly clearHistory: Effect.Effect<void>
  /** Arms a fault for the next job(s) on a unit (see {@link JobFault}). */
  readonly injectFault: (fault: JobFault) => Effect.Effect<void>
  /** Disarms every fault that has not fired. */
  readonly clearFaults: Effect.Effect<void>
  /**
   * The unit's main process dies now (default: exit code 1), as a crash of
   * the daemon would: `Restart=` decides whether systemd restarts it (after
   * `RestartSec=`, counting in `NRestarts`) or leaves it failed or inactive.
   * False when the unit has no main process.
   */
  readonly killMain: (unit: string, death?: Death) => Effect.Effect<boolean>
}

/**
 * The key of the inspection service.
 *
 * @since 0.1.0
 */
export class MemorySystemd extends Context.Service<MemorySystemd, MemorySystemdService>()(
  "@hostnode/test/MemorySystemd"
) {}

/**
 * Options of {@link make}.
 *
 * @since 0.1.0
 */
export interface Options {
  /** The unit search path, highest precedence first (default {@link UnitPath}). */
  readonly unitPath?: ReadonlyArray<string> | undefined
  /** The pid of the first process systemd starts (default 1000); later ones count up. */
  readonly firstPid?: number | undefined
}

/**
 * systemd 252's system unit search path (without generator and transient directories).
 *
 * @since 0.1.0
 */
export const UnitPath: ReadonlyArray<string> = [
  "/etc/systemd/system",
  "/run/systemd/system",
  "/usr/local/lib/systemd/system",
  "/lib/systemd/system",
  "/usr/lib/systemd/system"
]

const UnitTypes = [
  "service",
  "socket",
  "target",
  "device",
  "mount",
  "automount",
  "swap",
  "path",
  "timer",
  "slice",
  "scope"
]

// ---------------------------------------------------------------------------
// time

const USEC_PER_MS = 1000
const MS_PER_SEC = 1000

const timeUnits: ReadonlyArray<readonly [string, number]> = [
  ["us", 1],
  ["usec", 1],
  ["ms", 1e3],
  ["msec", 1e3],
  ["s", 1e6],
  ["sec", 1e6],
  ["second", 1e6],
  ["seconds", 1e6],
  ["m", 60e6],
  ["min", 60e6],
  ["minute", 60e6],
  ["minutes", 60e6],
  ["h", 3600e6],
  ["hr", 3600e6],
  ["hour", 3600e6],
  ["hours", 3600e6],
  ["d", 86400e6],
  ["day", 86400e6],
  ["days", 86400e6],
  ["w", 604800e6],
  ["week", 604800e6],
  ["weeks", 604800e6]
]

/**
 * systemd's `parse_sec`: "90", "90s", "1min 30s", "100ms", "infinity"; microseconds, or undefined when invalid.
 *
 * @since 0.1.0
 */
export const parseTimespan = (text: string, defaultUnitUsec = 1e6): number | undefined => {
  const t = text.trim()
  if (t === "infinity") return Number.POSITIVE_INFINITY
  if (t === "") return undefined
  let total = 0
  let rest = t
  while (rest.length > 0) {
    const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)\s*/.exec(rest)
    if (m === null) return undefined
    const [whole, num = "", unit = ""] = m
    const factor = unit === "" ? defaultUnitUsec : timeUnits.find(([u]) => u === unit)?.[1]
    if (factor === undefined) return undefined
    total += Number(num) * factor
    rest = rest.slice(whole.length)
  }
  return Math.round(total)
}

/**
 * systemd's `format_timespan` as `systemctl show` prints `...USec` properties: "100ms", "1min 30s", "infinity".
 *
 * @since 0.1.0
 */
export const formatTimespan = (usec: number): string => {
  if (usec === Number.POSITIVE_INFINITY) return "infinity"
  if (usec <= 0) return "0"
  const table: ReadonlyArray<readonly [string, number]> = [
    ["y", 31557600e6],
    ["month", 2629800e6],
    ["w", 604800e6],
    ["d", 86400e6],
    ["h", 3600e6],
    ["min", 60e6],
    ["s", 1e6],
    ["ms", 1e3],
    ["us", 1]
  ]
  const parts: Array<string> = []
  let rest = Math.round(usec)
  for (const [unit, size] of table) {
    if (rest < size) continue
    const n = Math.floor(rest / size)
    rest -= n * size
    parts.push(`${n}${unit}`)
  }
  return parts.join(" ")
}

const weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
const pad = (n: number, width = 2) => String(n).padStart(width, "0")

/**
 * A realtime timestamp as `systemctl show` prints it: "Mon 2026-11-30 14:25:27 UTC" (the simulated host runs in UTC).
 *
 * @since 0.1.0
 */
export const formatTimestamp = (epochMillis: number): string => {
  const d = new Date(epochMillis)
  return `${weekdays[d.getUTCDay()]} ${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(
    d.getUTCHours()
  )}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} UTC`
}

// ---------------------------------------------------------------------------
// unit files

/** One `Key=Value` line of a unit file (or drop-in), in order. */
interface Assignment {
  readonly section: string
  readonly key: string
  readonly value: string
}

const parseUnitText = (text: string): ReadonlyArray<Assignment> => {
  const out: Array<Assignment> = []
  let section = ""
  const lines = text.split("\n")
  for (let i = 0; i < lines.length; i++) {
    let line = (lines[i] ?? "").trim()
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue
    while (line.endsWith("\\") && i + 1 < lines.length) {
      line = `${line.slice(0, -1)} ${(lines[++i] ?? "").trim()}`
    }
    if (line.startsWith("[") && line.endsWith("]")) {
      section = line.slice(1, -1)
      continue
    }
    const eq = line.indexOf("=")
    if (eq <= 0) continue
    out.push({ section, key: line.slice(0, eq).trim(), value: line.slice(eq + 1).trim() })
  }
  return out
}

/** Splits an Exec line into words the way systemd does (double and single quotes, backslash escapes). */
const splitWords = (line: string): Array<string> => {
  const words: Array<string> = []
  let current = ""
  let inWord = false
  let quote: string | undefined
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string
    if (c === "\\" && i + 1 < line.length) {
      const n = line[++i] as string
      current += n === "n" ? "\n" : n === "t" ? "\t" : n
      inWord = true
    } else if (quote !== undefined) {
      if (c === quote) quote = undefined
      else current += c
    } else if (c === '"' || c === "'") {
      quote = c
      inWord = true
    } else if (c === " " || c === "\t") {
      if (inWord) words.push(current)
      current = ""
      inWord = false
    } else {
      current += c
      inWord = true
    }
  }
  if (inWord) words.push(current)
  return words
}

/** A command line of an `Exec*=` setting. */
interface Command {
  readonly argv: ReadonlyArray<string>
  /** The `-` prefix: a failure of this command is ignored. */
  readonly ignoreFailure: boolean
}

const parseCommand = (value: string, specifiers: (s: string) => string): Command | undefined => {
  let words = splitWords(value).map(specifiers)
  let ignoreFailure = false
  let first = words[0]
  if (first === undefined) return undefined
  // Prefixes: "-" ignore failure, "@" argv[0] follows, "+", "!", "!!", ":" privileges and expansion.
  let argv0Given = false
  for (;;) {
    if (first.startsWith("-")) ignoreFailure = true
    else if (first.startsWith("@")) argv0Given = true
    else if (!first.startsWith("+") && !first.startsWith("!") && !first.startsWith(":")) break
    first = first.slice(1)
  }
  words = [first, ...words.slice(argv0Given ? 2 : 1)]
  return first === "" ? undefined : { argv: words, ignoreFailure }
}

type ServiceType = "simple" | "exec" | "forking" | "oneshot" | "dbus" | "notify" | "idle"
type RestartPolicy = "no" | "always" | "on-success" | "on-failure" | "on-abnormal" | "on-abort" | "on-watchdog"

const serviceTypes: ReadonlyArray<ServiceType> = ["simple", "exec", "forking", "oneshot", "dbus", "notify", "idle"]
const restartPolicies: ReadonlyArray<RestartPolicy> = [
  "no",
  "always",
  "on-success",
  "on-failure",
  "on-abnormal",
  "on-abort",
  "on-watchdog"
]

/** What a unit's files say, after the fragment and its drop-ins are applied in order. */
interface UnitDef {
  readonly description: string | undefined
  readonly type: ServiceType
  readonly restart: RestartPolicy
  readonly remainAfterExit: boolean
  readonly restartUsec: number
  /** Explicit TimeoutStartSec=/TimeoutSec=; undefined means the default for the type. */
  readonly timeoutStartUsec: number | undefined
  readonly startLimitBurst: number
  readonly startLimitIntervalUsec: number
  readonly execStartPre: ReadonlyArray<Command>
  readonly execStart: ReadonlyArray<Command>
  readonly execStartPost: ReadonlyArray<Command>
  readonly execReload: ReadonlyArray<Command>
  readonly execStop: ReadonlyArray<Command>
}

const parseBool = (v: string): boolean | undefined => {
  const t = v.toLowerCase()
  if (["1", "yes", "y", "true", "t", "on"].includes(t)) return true
  if (["0", "no", "n", "false", "f", "off"].includes(t)) return false
  return undefined
}

const buildDef = (assignments: ReadonlyArray<Assignment>, specifiers: (s: string) => string): UnitDef => {
  let def: {
    -readonly [K in keyof UnitDef]: UnitDef[K] extends ReadonlyArray<Command> ? Array<Command> : UnitDef[K]
  } = {
    description: undefined,
    type: "simple",
    restart: "no",
    remainAfterExit: false,
    restartUsec: 100_000,
    timeoutStartUsec: undefined,
    startLimitBurst: 5,
    startLimitIntervalUsec: 10_000_000,
    execStartPre: [],
    execStart: [],
    execStartPost: [],
    execReload: [],
    execStop: []
  }
  const execKeys: Record<string, "execStartPre" | "execStart" | "execStartPost" | "execReload" | "execStop"> = {
    ExecStartPre: "execStartPre",
    ExecStart: "execStart",
    ExecStartPost: "execStartPost",
    ExecReload: "execReload",
    ExecStop: "execStop"
  }
  for (const { section, key, value } of assignments) {
    if (section === "Unit") {
      if (key === "Description") def = { ...def, description: value === "" ? undefined : specifiers(value) }
      else if (key === "StartLimitBurst") {
        const n = Number.parseInt(value, 10)
        if (Number.isInteger(n) && n >= 0) def = { ...def, startLimitBurst: n }
      } else if (key === "StartLimitIntervalSec") {
        const u = parseTimespan(value)
        if (u !== undefined) def = { ...def, startLimitIntervalUsec: u }
      }
    } else if (section === "Service") {
      const execKey = execKeys[key]
      if (execKey !== undefined) {
        if (value === "") def[execKey] = []
        else {
          const command = parseCommand(value, specifiers)
          if (command !== undefined) def[execKey] = [...def[execKey], command]
        }
      } else if (key === "Type") {
        const t = serviceTypes.find((s) => s === value)
        if (t !== undefined) def = { ...def, type: t }
      } else if (key === "Restart") {
        const r = restartPolicies.find((s) => s === value)
        if (r !== undefined) def = { ...def, restart: r }
      } else if (key === "RemainAfterExit") {
        const b = parseBool(value)
        if (b !== undefined) def = { ...def, remainAfterExit: b }
      } else if (key === "RestartSec") {
        const u = parseTimespan(value)
        if (u !== undefined) def = { ...def, restartUsec: u }
      } else if (key === "TimeoutStartSec" || key === "TimeoutSec") {
        const u = parseTimespan(value)
        if (u !== undefined) def = { ...def, timeoutStartUsec: u === 0 ? Number.POSITIVE_INFINITY : u }
      } else if (key === "StartLimitBurst") {
        const n = Number.parseInt(value, 10)
        if (Number.isInteger(n) && n >= 0) def = { ...def, startLimitBurst: n }
      } else if (key === "StartLimitInterval") {
        const u = parseTimespan(value)
        if (u !== undefined) def = { ...def, startLimitIntervalUsec: u }
      }
    }
  }
  return def
}

/** Why systemd refuses a service definition (service_verify), or undefined. */
const badSetting = (def: UnitDef): string | undefined => {
  if (def.execStart.length === 0 && def.execStop.length === 0)
    return "Service has no ExecStart=, ExecStop=, or SuccessAction=. Refusing."
  if (def.type !== "oneshot" && def.execStart.length === 0)
    return "Service has no ExecStart= setting, which is only allowed for Type=oneshot services. Refusing."
  if (def.execStart.length === 0 && !def.remainAfterExit)
    return "Service has no ExecStart= and no SuccessAction= settings and does not have RemainAfterExit=yes set. Refusing."
  if (def.type !== "oneshot" && def.execStart.length > 1)
    return "Service has more than one ExecStart= setting, which is only allowed for Type=oneshot services. Refusing."
  if (def.type === "oneshot" && (def.restart === "always" || def.restart === "on-success"))
    return "Service has Restart= set to either always or on-success, which isn't allowed for Type=oneshot services. Refusing."
  return undefined
}

// ---------------------------------------------------------------------------
// programs

/** What a simulated program does when run. */
type Behaviour =
  | { readonly _tag: "Exit"; readonly code: number }
  /** Runs `ms` milliseconds (forever when undefined), then exits 0; never notifies readiness. */
  | { readonly _tag: "Sleep"; readonly ms: number | undefined }
  /** A program the simulation does not know: a daemon that runs until killed, or a command that succeeds. */
  | { readonly _tag: "Program" }

const exit = (code: number): Behaviour => ({ _tag: "Exit", code })

const sleepFor = (args: ReadonlyArray<string>): Behaviour => {
  if (args.length === 0) return exit(1)
  let total = 0
  for (const a of args) {
    if (a === "infinity" || a === "inf") return { _tag: "Sleep", ms: undefined }
    const m = /^(\d+(?:\.\d+)?)([smhd]?)$/.exec(a)
    if (m === null) return exit(1)
    const factor = { "": 1, s: 1, m: 60, h: 3600, d: 86400 }[m[2] ?? ""] ?? 1
    total += Number(m[1]) * factor * MS_PER_SEC
  }
  return { _tag: "Sleep", ms: total }
}

const behaviour = (argv: ReadonlyArray<string>): Behaviour => {
  const [path = "", ...args] = argv
  const name = path.slice(path.lastIndexOf("/") + 1)
  if (name === "true") return exit(0)
  if (name === "false") return exit(1)
  if (name === "sleep") return sleepFor(args)
  if ((name === "sh" || name === "bash" || name === "dash") && args[0] === "-c" && args[1] !== undefined) {
    const script = args[1].trim().replace(/;$/, "").trim()
    const exitN = /^exit(?:\s+(\d+))?$/.exec(script)
    if (exitN !== null) return exit(Number(exitN[1] ?? "0") & 0xff)
    if (script === "true" || script === ":") return exit(0)
    if (script === "false") return exit(1)
    const sleep = /^(?:exec\s+)?sleep\s+(.+)$/.exec(script)
    if (sleep !== null) return sleepFor((sleep[1] ?? "").trim().split(/\s+/))
  }
  return { _tag: "Program" }
}

// Signals whose death counts as a clean exit for a daemon (systemd's EXIT_CLEAN_DAEMON).
const cleanSignals = ["SIGHUP", "SIGINT", "SIGTERM", "SIGPIPE"]
const coreSignals = ["SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE", "SIGSEGV", "SIGSYS"]
const signalNumbers: Record<string, number> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGILL: 4,
  SIGTRAP: 5,
  SIGABRT: 6,
  SIGBUS: 7,
  SIGFPE: 8,
  SIGKILL: 9,
  SIGUSR1: 10,
  SIGSEGV: 11,
  SIGUSR2: 12,
  SIGPIPE: 13,
  SIGALRM: 14,
  SIGTERM: 15,
  SIGSYS: 31
}

// ---------------------------------------------------------------------------
// state

interface Stamp {
  readonly realtime: number
  readonly monotonic: number
}

interface FileSnapshot {
  readonly path: string
  readonly text: string
  readonly mtime: number
}

/** A unit's definition as loaded from its files. */
interface Loaded {
  readonly loadState: LoadState
  readonly fragmentPath: string
  readonly fragment: FileSnapshot | undefined
  readonly dropIns: ReadonlyArray<FileSnapshot>
  readonly def: UnitDef
  readonly problem: string | undefined
}

interface MutableJobRecord {
  readonly seq: number
  readonly verb: JobVerb
  readonly unit: string
  outcome: JobOutcome
  reason: string | undefined
}

/** How a job ended, for the systemctl that waits on it. */
interface JobEnd {
  readonly result: "done" | "failed" | "canceled" | "timeout"
  /** The service Result systemctl reads to explain a failure. */
  readonly serviceResult: ServiceResult
}

interface PendingJob {
  readonly verb: JobVerb
  readonly record: MutableJobRecord
  readonly done: Deferred.Deferred<JobEnd>
  /** When the job times out (epoch ms). */
  deadline: number | undefined
  /** When the job's work finishes (epoch ms), e.g. a oneshot's finite sleep. */
  completesAt: number | undefined
  readonly onComplete: (at: number) => JobEnd
  readonly onTimeout: (at: number) => JobEnd
}

interface UnitState {
  readonly id: string
  loaded: Loaded
  active: Systemd.ActiveState
  sub: string
  mainPid: number
  /** When the main process exits on its own (epoch ms), for a finite sleep. */
  mainUntil: number | undefined
  /** The main process never signals readiness (a sleep): a notify start waits for the timeout. */
  mainNotifies: boolean
  result: ServiceResult
  reloadResult: ServiceResult
  nRestarts: number
  flushNRestarts: boolean
  /** A pending automatic restart (epoch ms). */
  restartAt: number | undefined
  /** The start rate limit window (ratelimit_below): its start (epoch ms) and the starts in it. */
  rateBegin: number | undefined
  rateNum: number
  execMain: { pid: number; code: number; status: number; start: Stamp | undefined; exit: Stamp | undefined }
  ts: {
    stateChange: Stamp | undefined
    inactiveExit: Stamp | undefined
    activeEnter: Stamp | undefined
    activeExit: Stamp | undefined
    inactiveEnter: Stamp | undefined
  }
  job: PendingJob | undefined
}

interface State {
  readonly fs: FileSystem.FileSystem
  readonly unitPath: ReadonlyArray<string>
  readonly units: Map<string, UnitState>
  readonly lock: Semaphore.Semaphore
  readonly bootMillis: number
  nextPid: number
  lastMonotonic: number
  readonly jobs: Array<MutableJobRecord>
  jobSeq: number
  readonly restarts: Map<string, number>
  daemonReloads: number
  readonly faults: Array<{ fault: JobFault; left: number }>
}

const isService = (id: string) => id.endsWith(".service")

const isActiveish = (s: Systemd.ActiveState) => s === "active" || s === "reloading"
const isInactiveish = (s: Systemd.ActiveState) => s === "inactive" || s === "failed"

const stamp = (state: State, at: number): Stamp => {
  // Monotonic microseconds since the simulated boot (one second before the
  // simulation was made); strictly increasing, as real state changes take time.
  const mono = Math.max(state.lastMonotonic + 1, 1_000_000 + (at - state.bootMillis) * USEC_PER_MS)
  state.lastMonotonic = mono
  return { realtime: at, monotonic: mono }
}

/** unit_notify's bookkeeping of a state change. */
const transition = (state: State, u: UnitState, active: Systemd.ActiveState, sub: string, at: number) => {
  const old = u.active
  u.sub = sub
  if (old === active) return
  const t = stamp(state, at)
  u.active = active
  u.ts.stateChange = t
  if (isInactiveish(old) && !isInactiveish(active)) u.ts.inactiveExit = t
  if (!isActiveish(old) && isActiveish(active)) u.ts.activeEnter = t
  if (isActiveish(old) && !isActiveish(active)) u.ts.activeExit = t
  if (!isInactiveish(old) && isInactiveish(active)) u.ts.inactiveEnter = t
}

const newPid = (state: State) => state.nextPid++

const emptyDef = (): UnitDef => buildDef([], (s) => s)

const newUnit = (id: string, loaded: Loaded): UnitState => ({
  id,
  loaded,
  active: "inactive",
  sub: "dead",
  mainPid: 0,
  mainUntil: undefined,
  mainNotifies: true,
  result: "success",
  reloadResult: "success",
  nRestarts: 0,
  flushNRestarts: false,
  restartAt: undefined,
  rateBegin: undefined,
  rateNum: 0,
  execMain: { pid: 0, code: 0, status: 0, start: undefined, exit: undefined },
  ts: {
    stateChange: undefined,
    inactiveExit: undefined,
    activeEnter: undefined,
    activeExit: undefined,
    inactiveEnter: undefined
  },
  job: undefined
})

// ---------------------------------------------------------------------------
// loading from the file system

const readSnapshot = (fs: FileSystem.FileSystem, path: string) =>
  Effect.gen(function* () {
    const link = yield* fs.readLink(path).pipe(Effect.option)
    if (link._tag === "Some" && link.value === "/dev/null") return "masked" as const
    const info = yield* fs.stat(path).pipe(Effect.option)
    if (info._tag === "None" || info.value.type !== "File") return undefined
    const text = yield* fs.readFileString(path).pipe(Effect.option)
    if (text._tag === "None") return undefined
    const mtime = info.value.mtime._tag === "Some" ? info.value.mtime.value.getTime() : 0
    return { path, text: text.value, mtime } satisfies FileSnapshot
  })

const templateOf = (id: string): string | undefined => {
  const at = id.indexOf("@")
  const dot = id.lastIndexOf(".")
  if (at <= 0 || at + 1 >= dot) return undefined
  return `${id.slice(0, at + 1)}${id.slice(dot)}`
}

const specifiersFor = (id: string) => {
  const dot = id.lastIndexOf(".")
  const stem = id.slice(0, dot)
  const at = stem.indexOf("@")
  const prefix = at === -1 ? stem : stem.slice(0, at)
  const instance = at === -1 ? "" : stem.slice(at + 1)
  const values: Record<string, string> = { n: id, N: stem, p: prefix, P: prefix, i: instance, I: instance, "%": "%" }
  return (s: string) => s.replace(/%([nNpPiI%])/g, (_m, c: string) => values[c] ?? "")
}

/** The fragment (or mask) of `id`: the first match along the search path, then the template's. */
const findFragment = (state: State, id: string) =>
  Effect.gen(function* () {
    const names = [id, ...(templateOf(id) === undefined ? [] : [templateOf(id) as string])]
    for (const name of names) {
      for (const dir of state.unitPath) {
        const found = yield* readSnapshot(state.fs, `${dir}/${name}`)
        if (found !== undefined) return found
      }
    }
    return undefined
  })

const findDropIns = (state: State, id: string) =>
  Effect.gen(function* () {
    const dirNames = [`${id}.d`, ...(templateOf(id) === undefined ? [] : [`${templateOf(id)}.d`])]
    const byName = new Map<string, string | "masked">()
    for (const dirName of dirNames) {
      for (const dir of state.unitPath) {
        const entries = yield* state.fs.readDirectory(`${dir}/${dirName}`).pipe(Effect.orElseSucceed(() => []))
        for (const entry of [...entries].sort()) {
          if (!entry.endsWith(".conf") || byName.has(entry)) continue
          byName.set(entry, `${dir}/${dirName}/${entry}`)
        }
      }
    }
    const out: Array<FileSnapshot> = []
    for (const name of [...byName.keys()].sort()) {
      const path = byName.get(name) as string
      const snap = yield* readSnapshot(state.fs, path)
      if (snap !== undefined && snap !== "masked") out.push(snap)
    }
    return out
  })

const loadFromDisk = (state: State, id: string) =>
  Effect.gen(function* () {
    const fragment = yield* findFragment(state, id)
    const specifiers = specifiersFor(id)
    if (fragment === "masked" || (fragment !== undefined && fragment.text.trim() === "")) {
      const path = fragment === "masked" ? "" : fragment.path
      return {
        loadState: "masked",
        fragmentPath: path,
        fragment: fragment === "masked" ? undefined : fragment,
        dropIns: [],
        def: emptyDef(),
        problem: undefined
      } satisfies Loaded
    }
    const dropIns = yield* findDropIns(state, id)
    if (fragment === undefined) {
      return {
        loadState: "not-found",
        fragmentPath: "",
        fragment: undefined,
        dropIns: [],
        def: emptyDef(),
        problem: undefined
      } satisfies Loaded
    }
    const assignments = [fragment, ...dropIns].flatMap((f) => parseUnitText(f.text))
    const def = buildDef(assignments, specifiers)
    const problem = isService(id) ? badSetting(def) : undefined
    return {
      loadState: problem === undefined ? "loaded" : "bad-setting",
      fragmentPath: fragment.path,
      fragment,
      dropIns,
      def,
      problem
    } satisfies Loaded
  })

/** unit_need_daemon_reload: the fragment or a drop-in changed (mtime or content), appeared or went away. */
const needsReload = (state: State, u: UnitState) =>
  Effect.gen(function* () {
    const now = yield* loadFromDisk(state, u.id)
    const was = u.loaded
    if (now.loadState !== was.loadState && !(was.loadState === "bad-setting" && now.loadState === "loaded")) {
      return true
    }
    const same = (a: FileSnapshot | undefined, b: FileSnapshot | undefined) =>
      a === undefined || b === undefined ? a === b : a.path === b.path && a.text === b.text && a.mtime <= b.mtime
    if (!same(now.fragment, was.fragment)) return true
    if (now.dropIns.length !== was.dropIns.length) return true
    return now.dropIns.some((d, i) => !same(d, was.dropIns[i]))
  })

/**
 * The unit, loading it from disk when systemd does not hold it (as a bus
 * call's LoadUnit does). `fresh`: it was just read from disk, so it cannot
 * differ from the disk (no need to read it again to ask).
 */
const getOrLoad = (state: State, id: string) =>
  Effect.gen(function* () {
    const existing = state.units.get(id)
    if (existing !== undefined) return { u: existing, fresh: false }
    const u = newUnit(id, yield* loadFromDisk(state, id))
    state.units.set(id, u)
    return { u, fresh: true }
  })

/** Unloads every unit that is inactive (not failed) with no job: the next reference reads it afresh. */
const collect = (state: State) => {
  for (const [id, u] of state.units) {
    if (u.active === "inactive" && u.job === undefined && u.restartAt === undefined) state.units.delete(id)
  }
}

// ---------------------------------------------------------------------------
// the service state machine

const resultOf = (death: Death): ServiceResult => {
  if ("exitCode" in death) return death.exitCode === 0 ? "success" : "exit-code"
  if (cleanSignals.includes(death.signal)) return "success"
  return coreSignals.includes(death.signal) ? "core-dump" : "signal"
}

const shallRestart = (policy: RestartPolicy, result: ServiceResult): boolean => {
  switch (policy) {
    case "always":
      return true
    case "on-success":
      return result === "success"
    case "on-failure":
      return result !== "success"
    case "on-abnormal":
      return result === "signal" || result === "core-dump" || result === "timeout"
    case "on-abort":
      return result === "signal" || result === "core-dump"
    default:
      return false
  }
}

/** service_enter_dead: the unit ends inactive or failed, or schedules an automatic restart. */
const enterDead = (state: State, u: UnitState, result: ServiceResult, at: number, allowRestart: boolean) => {
  if (u.result === "success") u.result = result
  u.mainPid = 0
  u.mainUntil = undefined
  if (allowRestart && shallRestart(u.loaded.def.restart, u.result)) {
    transition(state, u, "activating", "auto-restart", at)
    u.restartAt = at + u.loaded.def.restartUsec / USEC_PER_MS
    return
  }
  u.restartAt = undefined
  if (u.result === "success") transition(state, u, "inactive", "dead", at)
  else transition(state, u, "failed", "failed", at)
  // "If we shan't restart, then flush out the restart counter. But don't do
  // that immediately, so that the user can still introspect the counter."
  u.flushNRestarts = true
}

/** Records how the main process ended (ExecMainCode is CLD_EXITED 1, CLD_KILLED 2 or CLD_DUMPED 3). */
const recordExit = (state: State, u: UnitState, death: Death, at: number) => {
  u.execMain.code = "exitCode" in death ? 1 : coreSignals.includes(death.signal) ? 3 : 2
  u.execMain.status = "exitCode" in death ? death.exitCode : (signalNumbers[death.signal] ?? 0)
  u.execMain.exit = stamp(state, at)
}

/** The start job ran out of TimeoutStartSec=: the main process is killed (SIGTERM) and the unit fails with `timeout`. */
const startTimedOut = (state: State, u: UnitState, end: number): JobEnd => {
  recordExit(state, u, { signal: "SIGTERM" }, end)
  enterDead(state, u, "timeout", end, true)
  return { result: "failed", serviceResult: "timeout" }
}

/** The main process died while the unit ran (service_sigchld_event). */
const mainExited = (state: State, u: UnitState, death: Death, at: number) => {
  recordExit(state, u, death, at)
  const result = resultOf(death)
  const def = u.loaded.def
  if (result === "success" && def.remainAfterExit) {
    u.mainPid = 0
    u.mainUntil = undefined
    transition(state, u, "active", "exited", at)
    return
  }
  enterDead(state, u, result, at, true)
}

/** ratelimit_below on the unit's start limit; false when this start is one too many. */
const rateAllows = (u: UnitState, at: number): boolean => {
  const def = u.loaded.def
  if (def.startLimitIntervalUsec === 0 || def.startLimitBurst === 0) return true
  const intervalMs = def.startLimitIntervalUsec / USEC_PER_MS
  if (u.rateBegin === undefined || at - u.rateBegin > intervalMs) {
    u.rateBegin = at
    u.rateNum = 1
    return true
  }
  if (u.rateNum < def.startLimitBurst) {
    u.rateNum++
    return true
  }
  return false
}

type StartOutcome =
  | { readonly _tag: "Done" }
  | { readonly _tag: "Failed"; readonly result: ServiceResult }
  | {
      readonly _tag: "Pending"
      readonly deadline: number | undefined
      readonly completesAt: number | undefined
      readonly onComplete: (at: number) => JobEnd
      readonly onTimeout: (at: number) => JobEnd
    }

const DefaultTimeoutStartUsec = 90_000_000

/** Runs control commands (ExecStartPre/Post, ExecReload, ExecStop) to completion; the first failure's exit code. */
const runControl = (state: State, commands: ReadonlyArray<Command>): number | undefined => {
  for (const c of commands) {
    newPid(state)
    const b = behaviour(c.argv)
    if (b._tag === "Exit" && b.code !== 0 && !c.ignoreFailure) return b.code
  }
  return undefined
}

const failStart = (state: State, u: UnitState, result: ServiceResult, at: number): StartOutcome => {
  enterDead(state, u, result, at, result !== "start-limit-hit")
  return { _tag: "Failed", result }
}

/** service_start and what follows it, up to the job's end (or a pending job). */
const startUnit = (state: State, u: UnitState, at: number, auto: boolean): StartOutcome => {
  if (!isService(u.id)) {
    transition(state, u, "active", "active", at)
    return { _tag: "Done" }
  }
  if (!rateAllows(u, at)) {
    // unit_start_limit_hit: the unit fails without running anything.
    u.result = "start-limit-hit"
    transition(state, u, "failed", "failed", at)
    u.restartAt = undefined
    u.flushNRestarts = true
    return { _tag: "Failed", result: "start-limit-hit" }
  }
  if (!auto && u.flushNRestarts) {
    u.nRestarts = 0
    u.flushNRestarts = false
  }
  const def = u.loaded.def
  u.result = "success"
  u.restartAt = undefined
  u.execMain = { pid: 0, code: 0, status: 0, start: undefined, exit: undefined }
  transition(state, u, "activating", "start-pre", at)
  if (runControl(state, def.execStartPre) !== undefined) return failStart(state, u, "exit-code", at)
  transition(state, u, "activating", "start", at)

  if (def.type === "oneshot") {
    // Runs every ExecStart= in turn; the job waits for all of them.
    let duration: number | undefined = 0
    let failedCode: number | undefined
    for (const c of def.execStart) {
      const pid = newPid(state)
      u.execMain.pid = pid
      u.execMain.start = stamp(state, at)
      const b = behaviour(c.argv)
      if (b._tag === "Sleep") duration = b.ms === undefined || duration === undefined ? undefined : duration + b.ms
      if (b._tag === "Exit" && b.code !== 0 && !c.ignoreFailure && failedCode === undefined) {
        failedCode = b.code
        break
      }
    }
    const finish = (end: number): JobEnd => {
      u.execMain.code = 1
      u.execMain.status = failedCode ?? 0
      u.execMain.exit = stamp(state, end)
      if (failedCode !== undefined) {
        enterDead(state, u, "exit-code", end, true)
        return { result: "failed", serviceResult: "exit-code" }
      }
      if (runControl(state, def.execStartPost) !== undefined) {
        enterDead(state, u, "exit-code", end, true)
        return { result: "failed", serviceResult: "exit-code" }
      }
      if (def.remainAfterExit) transition(state, u, "active", "exited", end)
      else enterDead(state, u, "success", end, true)
      return { result: "done", serviceResult: "success" }
    }
    // A oneshot's start timeout is off unless set explicitly.
    const timeout = def.timeoutStartUsec
    const deadline =
      timeout === undefined || timeout === Number.POSITIVE_INFINITY ? undefined : at + timeout / USEC_PER_MS
    const timedOut = (end: number) => startTimedOut(state, u, end)
    if (duration === 0) {
      const end = finish(at)
      return end.result === "done" ? { _tag: "Done" } : { _tag: "Failed", result: end.serviceResult }
    }
    return {
      _tag: "Pending",
      deadline,
      completesAt: duration === undefined ? undefined : at + duration,
      onComplete: finish,
      onTimeout: timedOut
    }
  }

  const main = def.execStart[0]
  const b = main === undefined ? exit(0) : behaviour(main.argv)
  const pid = newPid(state)
  u.mainPid = pid
  u.execMain.pid = pid
  u.execMain.start = stamp(state, at)
  u.mainUntil = b._tag === "Sleep" && b.ms !== undefined ? at + b.ms : undefined
  u.mainNotifies = b._tag === "Program"
  const running = (end: number): JobEnd => {
    if (runControl(state, def.execStartPost) !== undefined) {
      recordExit(state, u, { signal: "SIGTERM" }, end)
      enterDead(state, u, "exit-code", end, true)
      return { result: "failed", serviceResult: "exit-code" }
    }
    transition(state, u, "active", "running", end)
    return { result: "done", serviceResult: "success" }
  }
  if (b._tag === "Exit") {
    if (def.type === "notify" || def.type === "forking") {
      // The job waits for readiness (or the fork): an early exit fails it.
      if (def.type === "forking" && b.code === 0) {
        running(at)
        mainExited(state, u, { exitCode: 0 }, at)
        return { _tag: "Done" }
      }
      const result: ServiceResult = b.code === 0 ? "protocol" : "exit-code"
      recordExit(state, u, { exitCode: b.code }, at)
      enterDead(state, u, result, at, true)
      return { _tag: "Failed", result }
    }
    // simple, exec, idle, dbus: the job is done once the process runs; it exits right after.
    running(at)
    mainExited(state, u, { exitCode: b.code }, at)
    return { _tag: "Done" }
  }
  if (def.type === "notify" && b._tag === "Sleep") {
    // Never notifies READY=1: the job waits for TimeoutStartSec=.
    const timeout = def.timeoutStartUsec ?? DefaultTimeoutStartUsec
    return {
      _tag: "Pending",
      deadline: timeout === Number.POSITIVE_INFINITY ? undefined : at + timeout / USEC_PER_MS,
      completesAt: undefined,
      onComplete: running,
      onTimeout: (end) => startTimedOut(state, u, end)
    }
  }
  const end = running(at)
  return end.result === "done" ? { _tag: "Done" } : { _tag: "Failed", result: end.serviceResult }
}

/** service_stop: kills the main process (SIGTERM, a clean death) and ends inactive; a failed unit stays failed. */
const stopUnit = (state: State, u: UnitState, at: number) => {
  u.restartAt = undefined
  if (u.active === "failed") return
  if (u.active === "inactive") return
  if (u.sub === "auto-restart") {
    transition(state, u, "inactive", "dead", at)
    u.flushNRestarts = true
    return
  }
  transition(state, u, "deactivating", "stop", at)
  runControl(state, u.loaded.def.execStop)
  if (u.mainPid !== 0) recordExit(state, u, { signal: "SIGTERM" }, at)
  enterDead(state, u, "success", at, false)
}

/** Resolves the pending job of `u` with `end`, if any. */
const endJob = (state: State, u: UnitState, end: JobEnd) => {
  const job = u.job
  if (job === undefined) return
  u.job = undefined
  job.record.outcome = end.result === "done" ? "done" : end.result === "canceled" ? "canceled" : "failed"
  job.record.reason = end.result === "done" ? undefined : end.result === "canceled" ? "canceled" : end.serviceResult
  if (end.result === "done" && job.verb === "restart") {
    state.restarts.set(u.id, (state.restarts.get(u.id) ?? 0) + 1)
  }
  Deferred.doneUnsafe(job.done, Effect.succeed(end))
}

/** Runs every timer of `u` that is due by `now`, oldest first. */
const settleUnit = (state: State, u: UnitState, now: number) => {
  for (let guard = 0; guard < 10_000; guard++) {
    const events: Array<readonly [number, () => void]> = []
    const job = u.job
    if (job?.completesAt !== undefined) {
      const at = job.completesAt
      events.push([at, () => endJob(state, u, job.onComplete(at))])
    }
    if (job?.deadline !== undefined) {
      const at = job.deadline
      events.push([at, () => endJob(state, u, job.onTimeout(at))])
    }
    if (u.mainUntil !== undefined && u.mainPid !== 0) {
      const at = u.mainUntil
      events.push([
        at,
        () => {
          if (job !== undefined && job.completesAt === undefined && u.active === "activating") {
            // A notify main process that exited before READY=1.
            recordExit(state, u, { exitCode: 0 }, at)
            enterDead(state, u, "protocol", at, true)
            endJob(state, u, { result: "failed", serviceResult: "protocol" })
          } else mainExited(state, u, { exitCode: 0 }, at)
        }
      ])
    }
    if (u.restartAt !== undefined) {
      const at = u.restartAt
      events.push([
        at,
        () => {
          u.restartAt = undefined
          u.nRestarts++
          const outcome = startUnit(state, u, at, true)
          if (outcome._tag === "Pending") u.job = pendingJob(state, u, "start", outcome, undefined)
        }
      ])
    }
    const due = events.filter(([at]) => at <= now).sort((a, b) => a[0] - b[0])
    const first = due[0]
    if (first === undefined) return
    first[1]()
  }
}

/** The earliest time something of `u` happens by itself, if anything will. */
const nextEvent = (u: UnitState): number | undefined => {
  const times = [u.job?.completesAt, u.job?.deadline, u.mainPid !== 0 ? u.mainUntil : undefined, u.restartAt].filter(
    (t): t is number => t !== undefined
  )
  return times.length === 0 ? undefined : Math.min(...times)
}

const settleAll = (state: State, now: number) => {
  for (const u of state.units.values()) settleUnit(state, u, now)
}

const pendingJob = (
  state: State,
  u: UnitState,
  verb: JobVerb,
  outcome: Extract<StartOutcome, { _tag: "Pending" }>,
  record: MutableJobRecord | undefined
): PendingJob => ({
  verb,
  record: record ?? newRecord(state, verb, u.id),
  done: Deferred.makeUnsafe<JobEnd>(),
  deadline: outcome.deadline,
  completesAt: outcome.completesAt,
  onComplete: outcome.onComplete,
  onTimeout: outcome.onTimeout
})

const newRecord = (state: State, verb: JobVerb, unit: string): MutableJobRecord => {
  const record: MutableJobRecord = { seq: ++state.jobSeq, verb, unit, outcome: "pending", reason: undefined }
  state.jobs.push(record)
  return record
}

const takeFault = (state: State, unit: string, verb: JobVerb): JobFault["kind"] | undefined => {
  for (let i = 0; i < state.faults.length; i++) {
    const slot = state.faults[i] as { fault: JobFault; left: number }
    if (slot.fault.unit !== unit || !(slot.fault.verbs ?? ["start", "restart"]).includes(verb)) continue
    slot.left--
    if (slot.left <= 0) state.faults.splice(i, 1)
    return slot.fault.kind
  }
  return undefined
}

// ---------------------------------------------------------------------------
// systemctl

const ok = MemoryCommands.ok
const fail = MemoryCommands.fail

const notFoundMessage = (verb: JobVerb, id: string) =>
  verb === "stop" ? `Failed to stop ${id}: Unit ${id} not loaded.` : `Failed to ${verb} ${id}: Unit ${id} not found.`

const jobFailedMessage = (id: string, result: ServiceResult | undefined): string => {
  const explanations: Partial<Record<ServiceResult, string>> = {
    protocol: "the service did not take the steps required by its unit configuration",
    timeout: "a timeout was exceeded",
    "exit-code": "the control process exited with error code",
    signal: "a fatal signal was delivered to the control process",
    "core-dump": "a fatal signal was delivered causing the control process to dump core",
    "start-limit-hit": "start of the service was attempted too often"
  }
  const explanation = result === undefined ? undefined : explanations[result]
  const see = `See "systemctl status ${id}" and "journalctl -xeu ${id}" for details.`
  const head = explanation === undefined ? `Job for ${id} failed.` : `Job for ${id} failed because ${explanation}.`
  const tail =
    result === "start-limit-hit"
      ? `\nTo force a start use "systemctl reset-failed ${id}"\nfollowed by "systemctl start ${id}" again.`
      : ""
  return `${head}\n${see}${tail}\n`
}

const validUnitChar = /^[A-Za-z0-9:\-_.\\@]$/

/** unit_name_mangle: appends ".service" to a name without a type, escapes what a unit name cannot hold. */
const mangle = (name: string): { readonly id: string; readonly warning: string } => {
  const dot = name.lastIndexOf(".")
  const hasType = dot > 0 && UnitTypes.includes(name.slice(dot + 1))
  const valid = [...name].every((c) => validUnitChar.test(c))
  if (valid && hasType) return { id: name, warning: "" }
  let escaped = ""
  for (const c of name) {
    escaped += validUnitChar.test(c) ? c : `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`
  }
  const id = hasType ? escaped : `${escaped}.service`
  const warning = valid
    ? ""
    : `Invalid unit name "${name}" escaped as "${id}" (maybe you should use systemd-escape?).\n`
  return { id, warning }
}

/** What one job call decided under the lock: a finished result, or a job to wait for. */
type JobStep =
  | { readonly _tag: "Finished"; readonly exitCode: number; readonly stderr: string }
  | { readonly _tag: "Wait"; readonly unit: UnitState; readonly job: PendingJob; readonly stderr: string }

const changedWarning = (id: string) =>
  `Warning: The unit file, source configuration file or drop-ins of ${id} changed on disk. Run 'systemctl daemon-reload' to reload units.\n`

const finished = (exitCode: number, stderr = ""): JobStep => ({ _tag: "Finished", exitCode, stderr })

const loadError = (verb: JobVerb, u: UnitState): string | undefined => {
  const id = u.id
  switch (u.loaded.loadState) {
    case "not-found":
      return notFoundMessage(verb, id)
    case "masked":
      return `Failed to ${verb} ${id}: Unit ${id} is masked.`
    case "bad-setting":
      return `Failed to ${verb} ${id}: Unit ${id} has a bad unit file setting.\nSee system logs and 'systemctl status ${id}' for details.`
    default:
      return undefined
  }
}

/** Decides and performs one job verb on one unit (under the lock). */
const enqueue = (state: State, verb: JobVerb, id: string, now: number) =>
  Effect.gen(function* () {
    const { u, fresh } = yield* getOrLoad(state, id)
    settleUnit(state, u, now)
    const fault = takeFault(state, id, verb)
    const reject = (exitCode: number, stderr: string, reason: string): JobStep => {
      const record = newRecord(state, verb, id)
      record.outcome = "rejected"
      record.reason = reason
      return finished(exitCode, `${stderr}\n`)
    }
    if (fault === "NotFound") return reject(5, notFoundMessage(verb, id), "not-found")
    // A stop of a unit that failed to load and is not running is refused; other
    // verbs are refused for every load error.
    if (verb === "stop") {
      if (u.loaded.loadState !== "loaded" && u.loaded.loadState !== "masked" && u.active === "inactive") {
        return reject(5, notFoundMessage("stop", id), "not-loaded")
      }
    } else {
      const why = loadError(verb, u)
      if (why !== undefined) {
        return reject(u.loaded.loadState === "not-found" ? 5 : 1, why, u.loaded.loadState)
      }
    }
    if (verb === "reload" && (!isService(id) || u.loaded.def.execReload.length === 0)) {
      return reject(3, `Failed to reload ${id}: Job type reload is not applicable for unit ${id}.`, "not-applicable")
    }
    const warning =
      u.loaded.loadState === "loaded" && !fresh && (yield* needsReload(state, u)) ? changedWarning(id) : ""

    // A start while a start is pending joins it (job merging); any other job replaces it.
    if (u.job !== undefined) {
      if (verb === "start" && u.job.verb !== "stop" && u.job.verb !== "reload") {
        return { _tag: "Wait", unit: u, job: u.job, stderr: warning } satisfies JobStep
      }
      endJob(state, u, { result: "canceled", serviceResult: u.result })
    }
    const record = newRecord(state, verb, id)
    const hang = (active: Systemd.ActiveState, sub: string): JobStep => {
      transition(state, u, active, sub, now)
      const job: PendingJob = {
        verb,
        record,
        done: Deferred.makeUnsafe<JobEnd>(),
        deadline: undefined,
        completesAt: undefined,
        onComplete: () => ({ result: "done", serviceResult: u.result }),
        onTimeout: () => ({ result: "failed", serviceResult: "timeout" })
      }
      u.job = job
      return { _tag: "Wait", unit: u, job, stderr: warning }
    }
    const ended = (end: JobEnd): JobStep => {
      record.outcome = end.result === "done" ? "done" : "failed"
      record.reason = end.result === "done" ? undefined : end.serviceResult
      if (end.result === "done" && verb === "restart") state.restarts.set(id, (state.restarts.get(id) ?? 0) + 1)
      if (end.result === "done") return finished(0, warning)
      return finished(1, warning + jobFailedMessage(id, isService(id) ? end.serviceResult : undefined))
    }
    const startStep = (): JobStep => {
      if (fault === "Hang") return hang("activating", "start")
      if (fault === "JobFailed") {
        const pid = newPid(state)
        u.execMain = { pid, code: 1, status: 1, start: stamp(state, now), exit: stamp(state, now) }
        if (u.flushNRestarts) {
          u.nRestarts = 0
          u.flushNRestarts = false
        }
        u.result = "success"
        transition(state, u, "activating", "start", now)
        // As for a real failed start, Restart= may schedule another attempt; the job failed either way.
        enterDead(state, u, "exit-code", now, true)
        return ended({ result: "failed", serviceResult: "exit-code" })
      }
      const outcome = startUnit(state, u, now, false)
      if (outcome._tag === "Done") return ended({ result: "done", serviceResult: "success" })
      if (outcome._tag === "Failed") return ended({ result: "failed", serviceResult: outcome.result })
      const job = pendingJob(state, u, verb, outcome, record)
      u.job = job
      return { _tag: "Wait", unit: u, job, stderr: warning }
    }
    switch (verb) {
      case "start":
        if (u.active === "active" || u.active === "reloading")
          return ended({ result: "done", serviceResult: "success" })
        return startStep()
      case "stop":
        if (fault === "Hang" && !isInactiveish(u.active)) return hang("deactivating", "stop-sigterm")
        stopUnit(state, u, now)
        if (fault === "JobFailed" && u.active === "inactive") {
          u.result = "exit-code"
          transition(state, u, "failed", "failed", now)
          return ended({ result: "failed", serviceResult: "exit-code" })
        }
        return ended({ result: "done", serviceResult: "success" })
      case "restart":
        stopUnit(state, u, now)
        return startStep()
      case "reload": {
        if (u.active !== "active") {
          record.outcome = "failed"
          record.reason = "invalid"
          return finished(1, `${warning}${id} is not active, cannot reload.\n`)
        }
        if (fault === "Hang") return hang("reloading", "reload")
        transition(state, u, "reloading", "reload", now)
        const code = fault === "JobFailed" ? 1 : runControl(state, u.loaded.def.execReload)
        transition(state, u, "active", u.mainPid === 0 ? "exited" : "running", now)
        if (code !== undefined) {
          u.reloadResult = "exit-code"
          // systemctl explains with the unit's Result, which a failed reload leaves "success".
          return ended({ result: "failed", serviceResult: u.result })
        }
        u.reloadResult = "success"
        return ended({ result: "done", serviceResult: "success" })
      }
    }
  })

/** Waits for a pending job, running the unit's timers as their times come. */
const waitFor = (state: State, unit: UnitState, job: PendingJob): Effect.Effect<JobEnd> =>
  Effect.gen(function* () {
    for (;;) {
      if (Deferred.isDoneUnsafe(job.done)) return yield* Deferred.await(job.done)
      const next = nextEvent(unit)
      if (next === undefined) return yield* Deferred.await(job.done)
      const now = yield* Clock.currentTimeMillis
      if (next > now) {
        yield* Effect.raceFirst(Deferred.await(job.done).pipe(Effect.asVoid), Effect.sleep(next - now))
      }
      yield* locked(
        state,
        Effect.flatMap(Clock.currentTimeMillis, (t) =>
          Effect.sync(() => {
            settleUnit(state, unit, t)
            collect(state)
          })
        )
      )
    }
  })

const locked = <A, E, R>(state: State, effect: Effect.Effect<A, E, R>) => state.lock.withPermit(effect)

interface ParsedArgs {
  readonly verb: string | undefined
  readonly units: ReadonlyArray<string>
  readonly properties: ReadonlyArray<string> | undefined
  readonly value: boolean
  readonly all: boolean
  readonly quiet: boolean
  readonly noBlock: boolean
  readonly error: string | undefined
}

const parseArgs = (args: ReadonlyArray<string>): ParsedArgs => {
  const positional: Array<string> = []
  const properties: Array<string> = []
  let sawProperty = false
  let value = false
  let all = false
  let quiet = false
  let noBlock = false
  const ignored = ["--no-pager", "--no-ask-password", "--system", "--no-legend", "--full", "-l", "--plain"]
  const addProperties = (list: string) => {
    sawProperty = true
    properties.push(...list.split(",").filter((p) => p !== ""))
  }
  const usage = (error: string): ParsedArgs => ({
    verb: undefined,
    units: [],
    properties: undefined,
    value,
    all,
    quiet,
    noBlock,
    error
  })
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string
    if (a === "--") {
      positional.push(...args.slice(i + 1))
      break
    }
    if (a === "-p" || a === "--property") addProperties(args[++i] ?? "")
    else if (a.startsWith("--property=")) addProperties(a.slice("--property=".length))
    else if (a.startsWith("-p") && a.length > 2 && !a.startsWith("--")) addProperties(a.slice(2))
    else if (a === "--value") value = true
    else if (a === "--all" || a === "-a") all = true
    else if (a === "--quiet" || a === "-q") quiet = true
    else if (a === "--no-block") noBlock = true
    else if (ignored.includes(a)) continue
    else if (a.startsWith("--")) return usage(`systemctl: unrecognized option '${a}'`)
    else if (a.startsWith("-") && a.length > 1) return usage(`systemctl: invalid option -- '${a.slice(1, 2)}'`)
    else positional.push(a)
  }
  const [verb, ...units] = positional
  return {
    verb,
    units,
    properties: sawProperty ? properties : undefined,
    value,
    all,
    quiet,
    noBlock,
    error: undefined
  }
}

// ---------------------------------------------------------------------------
// show

const yesNo = (b: boolean) => (b ? "yes" : "no")

const props = (u: UnitState, needReload: boolean): ReadonlyArray<readonly [string, string]> => {
  const def = u.loaded.def
  const ts = (name: string, t: Stamp | undefined): ReadonlyArray<readonly [string, string]> => [
    [name, t === undefined ? "" : formatTimestamp(t.realtime)],
    [`${name}Monotonic`, String(t?.monotonic ?? 0)]
  ]
  const loaded = u.loaded.loadState === "loaded"
  // The Service interface's properties come first in `systemctl show`, then the Unit interface's.
  const service: ReadonlyArray<readonly [string, string]> = isService(u.id)
    ? [
        ["Type", def.type],
        ["ExitType", "main"],
        ["Restart", def.restart],
        ["NotifyAccess", def.type === "notify" ? "main" : "none"],
        ["RestartUSec", formatTimespan(def.restartUsec)],
        [
          "TimeoutStartUSec",
          formatTimespan(
            def.timeoutStartUsec ?? (def.type === "oneshot" ? Number.POSITIVE_INFINITY : DefaultTimeoutStartUsec)
          )
        ],
        ["RemainAfterExit", yesNo(def.remainAfterExit)],
        ["MainPID", String(u.mainPid)],
        ["ControlPID", "0"],
        ["Result", u.result],
        ["ReloadResult", u.reloadResult],
        ["NRestarts", String(u.nRestarts)],
        ...ts("ExecMainStartTimestamp", u.execMain.start),
        ...ts("ExecMainExitTimestamp", u.execMain.exit),
        ["ExecMainPID", String(u.execMain.pid)],
        ["ExecMainCode", String(u.execMain.code)],
        ["ExecMainStatus", String(u.execMain.status)]
      ]
    : []
  const unit: ReadonlyArray<readonly [string, string]> = [
    ["Id", u.id],
    ["Names", u.id],
    ["Description", def.description ?? u.id],
    ["LoadState", u.loaded.loadState],
    ["ActiveState", u.active],
    ["FreezerState", "running"],
    ["SubState", u.sub],
    ["FragmentPath", u.loaded.loadState === "masked" ? "" : u.loaded.fragmentPath],
    ["DropInPaths", u.loaded.dropIns.map((d) => d.path).join(" ")],
    ...ts("StateChangeTimestamp", u.ts.stateChange),
    ...ts("InactiveExitTimestamp", u.ts.inactiveExit),
    ...ts("ActiveEnterTimestamp", u.ts.activeEnter),
    ...ts("ActiveExitTimestamp", u.ts.activeExit),
    ...ts("InactiveEnterTimestamp", u.ts.inactiveEnter),
    ["CanStart", yesNo(loaded)],
    ["CanStop", yesNo(loaded)],
    ["CanReload", yesNo(loaded && def.execReload.length > 0)],
    ["NeedDaemonReload", yesNo(needReload)],
    ["StartLimitIntervalUSec", formatTimespan(def.startLimitIntervalUsec)],
    ["StartLimitBurst", String(def.startLimitBurst)]
  ]
  return [...service, ...unit]
}

// ---------------------------------------------------------------------------
// the simulation

/**
 * The simulated systemd: its `systemctl` interpreter and its inspection service.
 *
 * @since 0.1.0
 */
export interface Simulation {
  readonly service: MemorySystemdService
  readonly systemctl: MemoryCommands.Interpreter
}

/**
 * A simulated systemd reading unit files through `fs`, which should be its
 * own view of the host's files (see {@link makeOnHost}) so that its reads are
 * not the operations of the process under test.
 *
 * @since 0.1.0
 */
export const make = (fs: FileSystem.FileSystem, options?: Options): Effect.Effect<Simulation> =>
  Effect.gen(function* () {
    const bootMillis = yield* Clock.currentTimeMillis
    const state: State = {
      fs,
      unitPath: options?.unitPath ?? UnitPath,
      units: new Map(),
      lock: Semaphore.makeUnsafe(1),
      bootMillis,
      nextPid: options?.firstPid ?? 1000,
      lastMonotonic: 0,
      jobs: [],
      jobSeq: 0,
      restarts: new Map(),
      daemonReloads: 0,
      faults: []
    }
    const underLock = <A>(f: (now: number) => Effect.Effect<A>) =>
      locked(
        state,
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          settleAll(state, now)
          const a = yield* f(now)
          collect(state)
          return a
        })
      )

    const runJobs = (verb: JobVerb, names: ReadonlyArray<string>, noBlock: boolean) =>
      Effect.gen(function* () {
        if (names.length === 0) return fail(1, "Too few arguments.")
        let stderr = ""
        let exitCode = 0
        for (const name of names) {
          const { id, warning } = mangle(name)
          stderr += warning
          const step = yield* underLock((now) => enqueue(state, verb, id, now))
          stderr += step.stderr
          let code = step._tag === "Finished" ? step.exitCode : 0
          if (step._tag === "Wait" && !noBlock) {
            const end = yield* waitFor(state, step.unit, step.job)
            if (end.result === "canceled") {
              stderr += `Job for ${id} canceled.\n`
              code = 1
            } else if (end.result !== "done") {
              stderr += jobFailedMessage(id, isService(id) ? end.serviceResult : undefined)
              code = 1
            }
          }
          if (exitCode === 0) exitCode = code
        }
        return { stdout: "", stderr, exitCode }
      })

    const show = (names: ReadonlyArray<string>, parsed: ParsedArgs) =>
      underLock(() =>
        Effect.gen(function* () {
          if (names.length === 0) return fail(1, "Showing the manager's properties is not simulated.")
          const blocks: Array<string> = []
          let stderr = ""
          for (const name of names) {
            const { id, warning } = mangle(name)
            stderr += warning
            const { u, fresh } = yield* getOrLoad(state, id)
            const needReload =
              !fresh && (u.loaded.loadState === "loaded" || u.active !== "inactive")
                ? yield* needsReload(state, u)
                : false
            const wanted = parsed.properties
            const lines: Array<string> = []
            for (const [key, value] of props(u, needReload)) {
              if (wanted !== undefined && !wanted.includes(key)) continue
              if (wanted === undefined && !parsed.all && value === "") continue
              lines.push(parsed.value ? value : `${key}=${value}`)
            }
            blocks.push(lines.map((l) => `${l}\n`).join(""))
          }
          return { stdout: blocks.join("\n"), stderr, exitCode: 0 }
        })
      )

    const isActive = (names: ReadonlyArray<string>, quiet: boolean) =>
      underLock(() =>
        Effect.gen(function* () {
          if (names.length === 0) return fail(1, "Too few arguments.")
          let stdout = ""
          let stderr = ""
          let any = false
          for (const name of names) {
            const { id, warning } = mangle(name)
            stderr += warning
            const { u } = yield* getOrLoad(state, id)
            if (isActiveish(u.active)) any = true
            stdout += `${u.active}\n`
          }
          return { stdout: quiet ? "" : stdout, stderr, exitCode: any ? 0 : 3 }
        })
      )

    const daemonReload = underLock(() =>
      Effect.gen(function* () {
        for (const u of state.units.values()) u.loaded = yield* loadFromDisk(state, u.id)
        state.daemonReloads++
        return ok()
      })
    )

    const resetFailed = (names: ReadonlyArray<string>) =>
      underLock((now) =>
        Effect.sync(() => {
          const targets =
            names.length === 0
              ? [...state.units.values()]
              : names.flatMap((n) => {
                  const u = state.units.get(mangle(n).id)
                  return u === undefined ? [] : [u]
                })
          for (const u of targets) {
            u.rateBegin = undefined
            u.rateNum = 0
            if (u.active === "failed") {
              u.result = "success"
              transition(state, u, "inactive", "dead", now)
            }
          }
          return ok()
        })
      )

    const systemctl: MemoryCommands.Interpreter = (args) =>
      Effect.gen(function* () {
        const parsed = parseArgs(args)
        if (parsed.error !== undefined) return fail(1, parsed.error)
        switch (parsed.verb) {
          case "start":
          case "stop":
          case "restart":
          case "reload":
            return yield* runJobs(parsed.verb, parsed.units, parsed.noBlock)
          case "daemon-reload":
            return yield* daemonReload
          case "show":
            return yield* show(parsed.units, parsed)
          case "is-active":
            return yield* isActive(parsed.units, parsed.quiet)
          case "reset-failed":
            return yield* resetFailed(parsed.units)
          case undefined:
            return fail(1, "Listing units is not simulated.")
          default:
            return fail(1, `Unknown command verb ${parsed.verb}.`)
        }
      })

    const view = (u: UnitState) =>
      Effect.map(needsReload(state, u), (needReload) => ({
        name: u.id,
        loadState: u.loaded.loadState,
        activeState: u.active,
        subState: u.sub,
        description: u.loaded.def.description ?? u.id,
        fragmentPath: u.loaded.fragmentPath,
        dropInPaths: u.loaded.dropIns.map((d) => d.path),
        mainPid: u.mainPid,
        nRestarts: u.nRestarts,
        result: u.result,
        activeEnterTimestampMonotonic: u.ts.activeEnter?.monotonic ?? 0,
        needDaemonReload: needReload,
        pendingJob: u.job?.verb
      }))

    const service: MemorySystemdService = {
      unit: (name) =>
        underLock(() => {
          const u = state.units.get(mangle(name).id)
          return u === undefined ? Effect.succeed(undefined) : view(u)
        }),
      units: underLock(() =>
        Effect.forEach(
          [...state.units.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
          view
        )
      ),
      jobs: Effect.sync(() => state.jobs.map((r) => ({ ...r }))),
      restarts: Effect.sync(() => Object.fromEntries(state.restarts)),
      daemonReloads: Effect.sync(() => state.daemonReloads),
      clearHistory: Effect.sync(() => {
        state.jobs.length = 0
        state.restarts.clear()
        state.daemonReloads = 0
      }),
      injectFault: (fault) =>
        Effect.sync(() => {
          state.faults.push({ fault, left: fault.times ?? 1 })
        }),
      clearFaults: Effect.sync(() => {
        state.faults.length = 0
      }),
      killMain: (name, death) =>
        underLock((now) =>
          Effect.sync(() => {
            const u = state.units.get(mangle(name).id)
            if (u === undefined || u.mainPid === 0) return false
            mainExited(state, u, death ?? { exitCode: 1 }, now)
            return true
          })
        )
    }
    return { service, systemctl }
  })

/**
 * The simulated systemd of a `MemoryHost`: it reads the host's unit files
 * through its own view of the host's file system (its reads are systemd's,
 * not the operations of the process under test: they are not logged, faults
 * do not hit them and a crash of the process does not stop them).
 *
 * @since 0.1.0
 */
export const makeOnHost = (options?: Options): Effect.Effect<Simulation, never, MemoryHost> =>
  Effect.flatMap(Effect.service(MemoryHost), (host) =>
    make(MemoryFileSystem.make({ fs: host.state.fs, journal: makeJournal({ keeps: false }) }), options)
  )
