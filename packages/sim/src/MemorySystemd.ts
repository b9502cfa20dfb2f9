/**
 * The simulated host's systemd (after systemd 252): units loaded from the
 * host's unit files with their drop-ins, masking and `NeedDaemonReload`,
 * service types, `Restart=`, start limits, timers on the Effect `Clock`, and a
 * `systemctl` interpreter that prints what systemctl prints and exits with its
 * codes. `MemoryNode.layer`'s `Systemd` runs `systemctl` over it as
 * `Systemd.layerCommand` does, so the service and the command line agree by
 * construction. The `MemorySystemd` service adds inspection (unit states, job
 * history, restart and daemon-reload counters) and fault injection. What is
 * simulated and what is not: docs/design/simulated-host.md.
 *
 * @since 0.1.0
 */
import { Context, type Effect } from "effect"
import type {
  ActiveState,
  Death,
  JobFault,
  JobRecord,
  JobVerb,
  LoadState,
  ServiceResult
} from "./internal/memorySystemd/vocabulary.ts"

/**
 * A loaded unit as systemd holds it now.
 *
 * @category models
 * @since 0.1.0
 */
export interface UnitView {
  readonly name: string
  readonly loadState: LoadState
  readonly activeState: ActiveState
  readonly subState: string
  readonly description: string
  readonly fragmentPath: string
  readonly dropInPaths: ReadonlyArray<string>
  readonly mainPid: number
  /** Automatic restarts (`Restart=`) since the unit last fully stopped. */
  readonly nRestarts: number
  readonly result: ServiceResult
  /** Microseconds since the simulated boot; 0 when the unit never became active. */
  readonly activeEnterTimestampMonotonic: number
  /** True when the unit's files changed since it was loaded. */
  readonly needDaemonReload: boolean
  /** The verb of a job still running on the unit (a hung or slow one). */
  readonly pendingJob: JobVerb | undefined
}

/**
 * Inspection and fault injection of the simulated systemd.
 *
 * @category services
 * @since 0.1.0
 */
export interface MemorySystemd {
  /** The loaded unit `name`, or `undefined` when systemd has not loaded it (never referenced, or unloaded). */
  readonly unit: (name: string) => Effect.Effect<UnitView | undefined>
  /** Every loaded unit, by name. */
  readonly units: Effect.Effect<ReadonlyArray<UnitView>>
  /** Every job asked for so far, oldest first (including rejected ones). */
  readonly jobs: Effect.Effect<ReadonlyArray<JobRecord>>
  /** Manual restart jobs that completed, per unit. */
  readonly restarts: Effect.Effect<Readonly<Record<string, number>>>
  /** How many times `daemon-reload` ran. */
  readonly daemonReloads: Effect.Effect<number>
  /**
   * The environment main process `pid` was started with: its unit's
   * `Environment=` as loaded when it started (what `/proc/<pid>/environ`
   * holds on a real host, without the manager's own variables such as
   * `PATH`); `undefined` for a pid this systemd never started.
   */
  readonly processEnvironment: (pid: number) => Effect.Effect<ReadonlyArray<string> | undefined>
  /** Forgets the job history and the counters (units keep their states). */
  readonly clearHistory: Effect.Effect<void>
  /** Arms a fault for the next job(s) on a unit (see `JobFault`). */
  readonly injectFault: (fault: JobFault) => Effect.Effect<void>
  /** Disarms every fault that has not fired. */
  readonly clearFaults: Effect.Effect<void>
  /**
   * The unit's main process dies now (default: exit code 1), as a crash of
   * the daemon would: `Restart=` decides whether systemd restarts it (after
   * `RestartSec=`, counting in `NRestarts`) or leaves it failed or inactive.
   * False when the unit has no main process.
   */
  readonly killMain: (unit: string, death?: Death) => Effect.Effect<boolean>
}

/**
 * The key of the inspection service, provided by `MemoryNode.layer`.
 *
 * @category services
 * @since 0.1.0
 */
export const MemorySystemd = Context.Service<MemorySystemd>("@hostnode/sim/MemorySystemd")

/**
 * How to build the simulated systemd (`MemoryNode.Options.systemd`).
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** The unit search path, highest precedence first (default: systemd 252's system unit search path, `/etc/systemd/system` first). */
  readonly unitPath?: ReadonlyArray<string> | undefined
  /** The pid of the first process systemd starts (default 1000); later ones count up. */
  readonly firstPid?: number | undefined
}
