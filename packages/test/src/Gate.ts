/**
 * Gates for tests that need the real host: root, private namespaces, tools on
 * PATH. Where a capability is missing a test is skipped with the reason, except
 * under `CI=true`, where a missing capability fails the run: a green CI must mean
 * the real-host tests really ran.
 *
 * This module is for test files only; it reads the process environment at
 * collection time, which library code never does.
 *
 * @since 0.1.0
 */
import { spawnSync } from "node:child_process"

/**
 * A capability a real-host test may need.
 *
 * @since 0.1.0
 */
type Need =
  | "root"
  | "mount-namespace"
  | "net-namespace"
  | "pid-namespace"
  | "private-mount-namespace"
  | "private-net-namespace"
  | { readonly command: string; readonly args?: ReadonlyArray<string> }

const probe = (command: string, args: ReadonlyArray<string>): boolean => {
  const r = spawnSync(command, args, { stdio: "ignore", timeout: 10_000 })
  return r.status === 0
}

// True when this process is in a different namespace of `kind` than the one
// scripts/vitest.mjs started from (it records that one in the environment
// before it unshares). PID 1's namespace cannot serve as the reference: in a
// container or sandbox it is often unreadable.
const ownNamespace = (kind: "mnt" | "net"): boolean => {
  const outer = process.env[`HOSTNODE_OUTER_${kind.toUpperCase()}_NS`]
  const self = safeReadlink(`/proc/${process.pid}/ns/${kind}`)
  return outer !== undefined && outer !== "" && self !== undefined && self !== outer
}

const safeReadlink = (path: string): string | undefined => {
  const r = spawnSync("readlink", [path], { encoding: "utf8" })
  return r.status === 0 ? r.stdout.trim() : undefined
}

const cache = new Map<string, string | undefined>()

/**
 * Why `need` is not available here, or `undefined` when it is. Probed once per process.
 *
 * @since 0.1.0
 */
const missing = (need: Need): string | undefined => {
  const key = typeof need === "string" ? need : `command:${need.command}`
  if (cache.has(key)) return cache.get(key)
  let why: string | undefined
  if (need === "root") {
    why = process.getuid?.() === 0 ? undefined : "needs root (uid 0)"
  } else if (need === "mount-namespace") {
    why = probe("unshare", ["--mount", "--propagation", "private", "true"])
      ? undefined
      : "cannot create a private mount namespace (`unshare --mount` failed)"
  } else if (need === "net-namespace") {
    why = probe("unshare", ["--net", "true"]) ? undefined : "cannot create a network namespace (`unshare --net` failed)"
  } else if (need === "pid-namespace") {
    why = probe("unshare", ["--pid", "--fork", "--mount", "true"])
      ? undefined
      : "cannot create a pid namespace (`unshare --pid --fork` failed)"
  } else if (need === "private-mount-namespace") {
    why = ownNamespace("mnt")
      ? undefined
      : "must run inside a private mount namespace (npm test starts vitest under `unshare --mount` when it can)"
  } else if (need === "private-net-namespace") {
    why = ownNamespace("net")
      ? undefined
      : "must run inside a private network namespace (npm test starts vitest under `unshare --net` when it can)"
  } else {
    why = probe(need.command, need.args ?? ["--version"]) ? undefined : `\`${need.command}\` is not available`
  }
  cache.set(key, why)
  return why
}

/**
 * True when this run is CI, where skipping a real-host test is a failure.
 *
 * @since 0.1.0
 */
const isCi = (): boolean => {
  const v = process.env.CI
  return v !== undefined && v !== "" && v !== "0" && v !== "false"
}

/**
 * Checks `needs` for a block of real-host tests. Returns `{ skip: false }` when
 * all are available and `{ skip: true, reason }` otherwise; under `CI=true` a
 * missing need throws instead, so the test file fails with the reason.
 *
 * @category fixtures
 * @since 0.1.0
 */
export const check = (
  name: string,
  needs: ReadonlyArray<Need>
): { readonly skip: false } | { readonly skip: true; readonly reason: string } => {
  const reasons = needs.map(missing).filter((r): r is string => r !== undefined)
  if (reasons.length === 0) return { skip: false }
  const reason = `${name}: ${reasons.join("; ")}`
  if (isCi()) {
    throw new Error(`${reason}. Under CI=true a real-host test may not be skipped: run CI as root on a Linux host.`)
  }
  // Straight to stderr: the test runner shows console output of failing tests
  // only, and a skip must be seen even when everything else passes.
  process.stderr.write(`skipping ${reason}\n`)
  return { skip: true, reason }
}

/**
 * How many runs a long loop (an attack, a crash or a property loop) makes:
 * the one setting all of them take their counts from. `HOSTNODE_LOOPS` is
 * `full` (the counts the issues ask for: `full` runs), `quick` (a tenth, at
 * least one), or a positive number that scales `full` (`0.5` for half).
 * Unset, it is `full` under `CI=true` and `quick` elsewhere, so a local run
 * stays fast and CI runs every count it claims.
 *
 * @category fixtures
 * @since 0.2.0
 */
export const loops = (full: number): number => {
  const setting = process.env.HOSTNODE_LOOPS ?? (isCi() ? "full" : "quick")
  const factor = setting === "full" ? 1 : setting === "quick" ? 0.1 : Number(setting)
  if (!Number.isFinite(factor) || factor <= 0) {
    throw new Error(`HOSTNODE_LOOPS must be full, quick or a positive number, not ${JSON.stringify(setting)}`)
  }
  return Math.max(1, Math.round(full * factor))
}
