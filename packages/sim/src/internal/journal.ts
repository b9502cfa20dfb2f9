/**
 * The simulated process's journal: every operation the simulated host
 * performs passes through `admit` and `complete`, which keep the operation
 * log, fire injected faults and implement the crash seam. Internal: the file
 * system uses it today; later the mounter, systemd and network simulations go
 * through the same gate, so one crash stops the whole simulated process.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import type { Fault, Operation } from "../MemoryHost.ts"

/**
 * Why `MemoryHostCrashed`: the simulated process had crashed (see
 * `MemoryHost.crashAfter`) when the operation was asked for.
 */
export class ProcessCrashed extends Schema.Error<ProcessCrashed>("@hostnode/sim/MemoryHost/ProcessCrashed")({
  _tag: Schema.tag("ProcessCrashed")
}) {
  override get message(): string {
    return "the simulated process crashed"
  }
}

/**
 * Why `MemoryHostCrashed`: the operation used an open file of a process that
 * crashed; after `MemoryHost.restart` its descriptors belong to a dead process.
 */
export class StaleHandle extends Schema.Error<StaleHandle>("@hostnode/sim/MemoryHost/StaleHandle")({
  _tag: Schema.tag("StaleHandle"),
  /** The descriptor, opened by the crashed process. */
  fd: Schema.Number
}) {
  override get message(): string {
    return `the simulated process that opened descriptor ${this.fd} crashed`
  }
}

/** Why a simulated operation died with `MemoryHostCrashed`. */
export const MemoryHostCrashedReason = Schema.Union([ProcessCrashed, StaleHandle])

/** Why a simulated operation died with `MemoryHostCrashed`. */
export type MemoryHostCrashedReason = typeof MemoryHostCrashedReason.Type

/**
 * The defect every operation dies with once the simulated process has crashed
 * (see `MemoryHost.crashAfter`). A test recognises it with `isCrash` and
 * then "starts a new process" with `MemoryHost.restart`.
 */
export class MemoryHostCrashed extends Schema.TaggedError<MemoryHostCrashed>()("MemoryHostCrashed", {
  reason: MemoryHostCrashedReason,
  /** The operation that was refused (journal kind, e.g. "rename"). */
  operation: Schema.String,
  paths: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return `MemoryHost: ${this.reason.message}; ${this.operation}(${this.paths.join(", ")}) was not performed`
  }
}

/** The defect of an operation refused for `reason`. */
export const crashed = (
  reason: MemoryHostCrashedReason,
  operation: string,
  paths: ReadonlyArray<string>
): MemoryHostCrashed => new MemoryHostCrashed({ reason, operation, paths })

/** What the adversary is told before an operation runs: its sequence number (the next one) and what it is. */
export interface Upcoming {
  readonly seq: number
  readonly kind: string
  readonly paths: ReadonlyArray<string>
}

/** The mutable journal state. One per host. */
export interface Journal {
  /**
   * Runs before each operation of the simulated process, as a concurrent
   * writer would between two system calls (see `MemoryHost.adversary`).
   */
  adversary: ((upcoming: Upcoming) => void) | undefined
  readonly operations: Array<Operation>
  /** False for a journal nobody reads (another process's view of the host): nothing is kept. */
  readonly keeps: boolean
  seq: number
  readonly faults: Array<{ readonly fault: Fault; seen: number }>
  /** Operations left before the crash, or undefined when no crash is armed. */
  crashCountdown: number | undefined
  crashed: boolean
  /** Incremented by a restart; open files of an older generation belong to a dead process. */
  generation: number
}

/**
 * A fresh journal: nothing logged, no faults, not crashed. `keeps: false`
 * for one whose operations nobody reads, so it does not grow with every call.
 */
export const makeJournal = (options?: { readonly keeps?: boolean }): Journal => ({
  operations: [],
  keeps: options?.keeps ?? true,
  seq: 0,
  faults: [],
  crashCountdown: undefined,
  crashed: false,
  generation: 0,
  adversary: undefined
})

/** What `admit` decided for an operation about to run. */
export type Admission =
  | { readonly _tag: "Run" }
  | { readonly _tag: "Crashed"; readonly defect: MemoryHostCrashed }
  | { readonly _tag: "Inject"; readonly fault: Fault }

const touches = (paths: ReadonlyArray<string>, path: string | undefined): boolean =>
  path === undefined || paths.includes(path)

const record = (j: Journal, kind: string, paths: ReadonlyArray<string>, outcome: string, injected: boolean) => {
  j.seq += 1
  if (j.keeps) j.operations.push({ seq: j.seq, kind, paths, outcome, injected })
}

/**
 * Decides whether an operation runs: a crashed process refuses it (and logs
 * it as `"crashed"`), a matching fault replaces it by an injected error.
 */
export const admit = (j: Journal, kind: string, paths: ReadonlyArray<string>): Admission => {
  if (j.crashed) {
    record(j, kind, paths, "crashed", false)
    return { _tag: "Crashed", defect: crashed(new ProcessCrashed(), kind, paths) }
  }
  // The concurrent writer acts between the previous operation and this one.
  if (j.adversary !== undefined) j.adversary({ seq: j.seq + 1, kind, paths })
  for (let i = 0; i < j.faults.length; i++) {
    const slot = j.faults[i]!
    if (slot.fault.kind !== kind || !touches(paths, slot.fault.path)) continue
    slot.seen += 1
    if (slot.seen >= (slot.fault.nth ?? 1)) {
      j.faults.splice(i, 1)
      return { _tag: "Inject", fault: slot.fault }
    }
  }
  return { _tag: "Run" }
}

/**
 * Logs a finished (or injected-failed) operation and advances the crash
 * countdown: the operation that brings it to zero still completes, every
 * later one is refused.
 */
export const complete = (j: Journal, kind: string, paths: ReadonlyArray<string>, outcome: string, injected = false) => {
  record(j, kind, paths, outcome, injected)
  if (j.crashCountdown !== undefined) {
    j.crashCountdown -= 1
    if (j.crashCountdown <= 0) {
      j.crashCountdown = undefined
      j.crashed = true
    }
  }
}
