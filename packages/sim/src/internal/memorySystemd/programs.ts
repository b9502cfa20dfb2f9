/**
 * What a program does when the simulated systemd runs it (`/bin/true`,
 * `/bin/false`, `sleep`, `sh -c "exit N"`, any other program a well-behaved
 * daemon), and the signals systemd counts as a clean exit or a core dump.
 */
import { MS_PER_SEC } from "./time.ts"

/** What a simulated program does when run. */
type Behaviour =
  | { readonly _tag: "Exit"; readonly code: number }
  /** Runs `ms` milliseconds (forever when undefined), then exits 0; never notifies readiness. */
  | { readonly _tag: "Sleep"; readonly ms: number | undefined }
  /** A program the simulation does not know: a daemon that runs until killed, or a command that succeeds. */
  | { readonly _tag: "Program" }

export const exit = (code: number): Behaviour => ({ _tag: "Exit", code })

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

export const behaviour = (argv: ReadonlyArray<string>): Behaviour => {
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
export const cleanSignals = ["SIGHUP", "SIGINT", "SIGTERM", "SIGPIPE"]
export const coreSignals = ["SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE", "SIGSEGV", "SIGSYS"]
export const signalNumbers: Record<string, number> = {
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
