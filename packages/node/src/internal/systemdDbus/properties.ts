/**
 * Property values of systemd's units as `systemctl show` prints them, and
 * which interface holds each property `SystemdDbus` reads one by one. The
 * boundary: values only; the calls that fetch them are `SystemdDbus`'s.
 */
import { ServiceInterface, UnitInterface } from "./names.ts"

/** A D-Bus type signature as @homebridge/dbus-native parses it. */
export interface SignatureTree {
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
      // Environment assignments holding a space or a quote are quoted, as systemctl shows them.
      if (tree.child[0]?.type === "s" && Array.isArray(value) && name.endsWith("Environment")) {
        return value.map((e: string) => (/[\s"'\\]/.test(e) ? JSON.stringify(e) : e)).join(" ")
      }
      if (tree.child[0]?.type === "s" && Array.isArray(value)) return value.join(" ")
      return JSON.stringify(plain(value))
    default:
      return JSON.stringify(plain(value))
  }
}

/** A variant as @homebridge/dbus-native decodes it: [signature trees, [value]]. */
export const variant = (v: unknown): { readonly tree: SignatureTree; readonly value: unknown } | undefined => {
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
  "RestartUSec",
  "Environment"
])

/**
 * The interface that holds `property` on `unit`'s object, where it is one
 * read one by one; `undefined` sends the read to one GetAll instead.
 */
export const interfaceOf = (unit: string, property: string): string | undefined =>
  unitProperties.has(property)
    ? UnitInterface
    : unit.endsWith(".service") && serviceProperties.has(property)
      ? ServiceInterface
      : undefined
