/**
 * Unit files and drop-ins as the simulated systemd reads them: their
 * `Key=Value` lines (sections, continuations, comments), command lines
 * (`ExecStart=` with its prefixes and specifiers) and the unit definition
 * built from them, with the settings systemd would refuse. Boundary: text to
 * definition; finding the files is `loading.ts`'s.
 */
import { parseTimespan } from "./time.ts"

/** One `Key=Value` line of a unit file (or drop-in), in order. */
interface Assignment {
  readonly section: string
  readonly key: string
  readonly value: string
}

export const parseUnitText = (text: string): ReadonlyArray<Assignment> => {
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
export interface Command {
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
export type RestartPolicy = "no" | "always" | "on-success" | "on-failure" | "on-abnormal" | "on-abort" | "on-watchdog"

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
export interface UnitDef {
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
  /** `Environment=`: `NAME=value` in order of first assignment, a later one of a name replacing it in place. */
  readonly environment: ReadonlyArray<string>
}

const parseBool = (v: string): boolean | undefined => {
  const t = v.toLowerCase()
  if (["1", "yes", "y", "true", "t", "on"].includes(t)) return true
  if (["0", "no", "n", "false", "f", "off"].includes(t)) return false
  return undefined
}

export const buildDef = (assignments: ReadonlyArray<Assignment>, specifiers: (s: string) => string): UnitDef => {
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
    execStop: [],
    environment: []
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
      } else if (key === "Environment") {
        def = { ...def, environment: value === "" ? [] : assignEnvironment(def.environment, value, specifiers) }
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

// An environment variable name systemd accepts (env_name_is_valid, as far as a unit file goes).
const envName = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * config_parse_environ: the words of one `Environment=` line (quoted as in
 * Exec lines, specifiers expanded), each `NAME=value` replacing an earlier
 * assignment of the name in place (strv_env_replace); invalid ones are
 * ignored, as systemd does with a warning.
 */
const assignEnvironment = (
  current: ReadonlyArray<string>,
  value: string,
  specifiers: (s: string) => string
): ReadonlyArray<string> => {
  const out = [...current]
  for (const word of splitWords(value).map(specifiers)) {
    const eq = word.indexOf("=")
    if (eq <= 0 || !envName.test(word.slice(0, eq))) continue
    const name = word.slice(0, eq + 1)
    const at = out.findIndex((e) => e.startsWith(name))
    if (at === -1) out.push(word)
    else out[at] = word
  }
  return out
}

/** Why systemd refuses a service definition (service_verify), or undefined. */
export const badSetting = (def: UnitDef): string | undefined => {
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
