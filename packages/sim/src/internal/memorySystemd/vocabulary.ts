/** The vocabulary of the simulated systemd: load states, results, jobs and faults, as systemd 252 names them. */
import type { Systemd } from "@hostnode/core"
import type { Effect } from "effect"

/**
 * A unit's ActiveState as systemd reports it (what `Systemd.isActive` answers).
 */
export type ActiveState = Effect.Success<ReturnType<Systemd.Systemd["isActive"]>>

/**
 * A unit's LoadState as systemd reports it.
 */
export type LoadState = "loaded" | "not-found" | "masked" | "bad-setting"

/**
 * A service's `Result` (why it last stopped or failed).
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
 */
export type JobVerb = "start" | "stop" | "restart" | "reload"

/**
 * What became of a job: still `pending`, `done`, `failed` (the unit's
 * processes failed it), `canceled` (replaced by a later job), or `rejected`
 * before it ran (missing or masked unit, reload not applicable, ...).
 */
export type JobOutcome = "pending" | "done" | "failed" | "canceled" | "rejected"

/**
 * One job systemd was asked for, in order. `reason` says why it failed or was rejected.
 */
export interface JobRecord {
  readonly seq: number
  readonly verb: JobVerb
  readonly unit: string
  readonly outcome: JobOutcome
  readonly reason?: string | undefined
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
 * How a main process dies in `MemorySystemd.killMain`.
 */
export type Death = { readonly exitCode: number } | { readonly signal: string }
