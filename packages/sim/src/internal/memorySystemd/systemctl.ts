/**
 * The `systemctl` side of the simulation: the messages and exit codes of
 * systemctl 252, unit name mangling, queuing a job (what replaces what, what
 * is refused) and waiting for it, and parsing systemctl's arguments.
 * Boundary: one call's job; the interpreter that dispatches calls is
 * `MemorySystemd.make`'s.
 */

import { Clock, Deferred, Effect } from "effect"
import * as MemoryCommands from "../memoryCommands.ts"
import {
  endJob,
  enterDead,
  newRecord,
  nextEvent,
  pendingJob,
  runControl,
  settleUnit,
  startUnit,
  stopUnit,
  takeFault
} from "./lifecycle.ts"
import { collect, getOrLoad, needsReload } from "./loading.ts"
import {
  isInactiveish,
  isService,
  type JobEnd,
  newPid,
  type PendingJob,
  type State,
  stamp,
  transition,
  type UnitState
} from "./state.ts"
import type { ActiveState, JobVerb, ServiceResult } from "./vocabulary.ts"

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

export const ok = MemoryCommands.ok
export const fail = MemoryCommands.fail

const notFoundMessage = (verb: JobVerb, id: string) =>
  verb === "stop" ? `Failed to stop ${id}: Unit ${id} not loaded.` : `Failed to ${verb} ${id}: Unit ${id} not found.`

export const jobFailedMessage = (id: string, result: ServiceResult | undefined): string => {
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
export const mangle = (name: string): { readonly id: string; readonly warning: string } => {
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
export const enqueue = (state: State, verb: JobVerb, id: string, now: number) =>
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
    const hang = (active: ActiveState, sub: string): JobStep => {
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
export const waitFor = (state: State, unit: UnitState, job: PendingJob): Effect.Effect<JobEnd> =>
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

export const locked = <A, E, R>(state: State, effect: Effect.Effect<A, E, R>) => state.lock.withPermit(effect)

export interface ParsedArgs {
  readonly verb: string | undefined
  readonly units: ReadonlyArray<string>
  readonly properties: ReadonlyArray<string> | undefined
  readonly value: boolean
  readonly all: boolean
  readonly quiet: boolean
  readonly noBlock: boolean
  readonly error: string | undefined
}

export const parseArgs = (args: ReadonlyArray<string>): ParsedArgs => {
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
