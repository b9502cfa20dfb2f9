/**
 * Time as systemd writes and prints it: timespans (`RestartSec=90s`,
 * `1min 30s`) parsed and formatted, and timestamps as `systemctl show`
 * prints them. Part of the simulated systemd (`MemorySystemd`).
 */

export const USEC_PER_MS = 1000
export const MS_PER_SEC = 1000

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
 */
export const formatTimestamp = (epochMillis: number): string => {
  const d = new Date(epochMillis)
  return `${weekdays[d.getUTCDay()]} ${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(
    d.getUTCHours()
  )}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} UTC`
}
