/**
 * The service state machine: starting a unit (`ExecStartPre=`, the main
 * process by `Type=`, `ExecStartPost=`), stopping it, main processes that
 * exit or are killed, `Restart=` with `RestartSec=`, the start rate limit,
 * start timeouts, faults a test injects, and how a job ends. Boundary: one
 * unit's transitions on the simulated clock; queuing jobs is `systemctl.ts`'s.
 */
import { Deferred, Effect } from "effect"
import { behaviour, cleanSignals, coreSignals, exit, signalNumbers } from "./programs.ts"
import {
  isService,
  type JobEnd,
  type MutableJobRecord,
  newPid,
  type PendingJob,
  type State,
  stamp,
  transition,
  type UnitState
} from "./state.ts"
import { USEC_PER_MS } from "./time.ts"
import type { Command, RestartPolicy } from "./unitFile.ts"
import type { Death, JobFault, JobVerb, ServiceResult } from "./vocabulary.ts"

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
export const enterDead = (state: State, u: UnitState, result: ServiceResult, at: number, allowRestart: boolean) => {
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
export const mainExited = (state: State, u: UnitState, death: Death, at: number) => {
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

export const DefaultTimeoutStartUsec = 90_000_000

/** Runs control commands (ExecStartPre/Post, ExecReload, ExecStop) to completion; the first failure's exit code. */
export const runControl = (state: State, commands: ReadonlyArray<Command>): number | undefined => {
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
export const startUnit = (state: State, u: UnitState, at: number, auto: boolean): StartOutcome => {
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
  state.environments.set(pid, def.environment)
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
export const stopUnit = (state: State, u: UnitState, at: number) => {
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
export const endJob = (state: State, u: UnitState, end: JobEnd) => {
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
export const settleUnit = (state: State, u: UnitState, now: number) => {
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
export const nextEvent = (u: UnitState): number | undefined => {
  const times = [u.job?.completesAt, u.job?.deadline, u.mainPid !== 0 ? u.mainUntil : undefined, u.restartAt].filter(
    (t): t is number => t !== undefined
  )
  return times.length === 0 ? undefined : Math.min(...times)
}

export const settleAll = (state: State, now: number) => {
  for (const u of state.units.values()) settleUnit(state, u, now)
}

export const pendingJob = (
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

export const newRecord = (state: State, verb: JobVerb, unit: string): MutableJobRecord => {
  const record: MutableJobRecord = { seq: ++state.jobSeq, verb, unit, outcome: "pending", reason: undefined }
  state.jobs.push(record)
  return record
}

export const takeFault = (state: State, unit: string, verb: JobVerb): JobFault["kind"] | undefined => {
  for (let i = 0; i < state.faults.length; i++) {
    const slot = state.faults[i] as { fault: JobFault; left: number }
    if (slot.fault.unit !== unit || !(slot.fault.verbs ?? ["start", "restart"]).includes(verb)) continue
    slot.left--
    if (slot.left <= 0) state.faults.splice(i, 1)
    return slot.fault.kind
  }
  return undefined
}
