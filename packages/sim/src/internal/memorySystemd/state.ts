/**
 * The simulated systemd's state: units with their loaded definitions,
 * processes, timestamps and jobs, and the few transitions every part shares
 * (a state change with its timestamps, a new pid, a fresh unit).
 */

import type { Deferred, FileSystem, Semaphore } from "effect"
import { USEC_PER_MS } from "./time.ts"
import { buildDef, type UnitDef } from "./unitFile.ts"
import type { ActiveState, JobFault, JobOutcome, JobVerb, LoadState, ServiceResult } from "./vocabulary.ts"

export interface Stamp {
  readonly realtime: number
  readonly monotonic: number
}

export interface FileSnapshot {
  readonly path: string
  readonly text: string
  readonly mtime: number
}

/** A unit's definition as loaded from its files. */
export interface Loaded {
  readonly loadState: LoadState
  readonly fragmentPath: string
  readonly fragment: FileSnapshot | undefined
  readonly dropIns: ReadonlyArray<FileSnapshot>
  readonly def: UnitDef
  readonly problem: string | undefined
}

export interface MutableJobRecord {
  readonly seq: number
  readonly verb: JobVerb
  readonly unit: string
  outcome: JobOutcome
  reason: string | undefined
}

/** How a job ended, for the systemctl that waits on it. */
export interface JobEnd {
  readonly result: "done" | "failed" | "canceled" | "timeout"
  /** The service Result systemctl reads to explain a failure. */
  readonly serviceResult: ServiceResult
}

export interface PendingJob {
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

export interface UnitState {
  readonly id: string
  loaded: Loaded
  active: ActiveState
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

export interface State {
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
  /** The unit path cache: every entry directly in a unit directory when it was last rebuilt (see `loading.ts`). */
  pathCache: ReadonlySet<string>
  /** The environment each main process was started with (its unit's `Environment=`), by pid. */
  readonly environments: Map<number, ReadonlyArray<string>>
  readonly faults: Array<{ fault: JobFault; left: number }>
}

export const isService = (id: string) => id.endsWith(".service")

export const isActiveish = (s: ActiveState) => s === "active" || s === "reloading"
export const isInactiveish = (s: ActiveState) => s === "inactive" || s === "failed"

export const stamp = (state: State, at: number): Stamp => {
  // Monotonic microseconds since the simulated boot (one second before the
  // simulation was made); strictly increasing, as real state changes take time.
  const mono = Math.max(state.lastMonotonic + 1, 1_000_000 + (at - state.bootMillis) * USEC_PER_MS)
  state.lastMonotonic = mono
  return { realtime: at, monotonic: mono }
}

/** unit_notify's bookkeeping of a state change. */
export const transition = (state: State, u: UnitState, active: ActiveState, sub: string, at: number) => {
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

export const newPid = (state: State) => state.nextPid++

export const emptyDef = (): UnitDef => buildDef([], (s) => s)

export const newUnit = (id: string, loaded: Loaded): UnitState => ({
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
