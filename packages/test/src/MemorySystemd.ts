/**
 * The simulated host's systemd: units loaded from the host's unit files, their
 * states and processes, and a `systemctl` interpreter (for `MemoryCommands`)
 * that prints what systemctl 252 prints and exits with its codes. The
 * simulated host's `Systemd` service (`MemoryNode.layer`) runs `systemctl`
 * over that interpreter as `Systemd.layerCommand` does, so the service
 * and the command line agree by construction (@hostnode/node's tests run
 * `Systemd.layerCommand` itself over it too); the `MemorySystemd` service
 * adds inspection (unit states, job history,
 * restart and daemon-reload counters) and fault injection.
 *
 * What is simulated, after real systemd 252:
 * - Loading: a unit's fragment is the first `<dir>/<name>` of the unit search
 *   path (`/etc/systemd/system`, `/run/systemd/system`, `/usr/local/lib/...`,
 *   `/lib/...`, `/usr/lib/...`; a template `foo@.service` serves
 *   `foo@x.service`), with drop-ins from `<dir>/<name>.d/*.conf` (and the
 *   template's, the dash prefixes' `a-.service.d` and the type's
 *   `service.d`). A symlink to `/dev/null` or an empty file masks the unit.
 *   Units are loaded on demand: a unit that is inactive (not failed) and has
 *   no job is unloaded after each call, so it is read afresh when next
 *   referenced; a unit that is active, activating or failed keeps the
 *   definition it was loaded with until `daemon-reload`, and a restart runs
 *   that definition, whatever its files say now.
 * - `NeedDaemonReload`, as systemd 252 answers it: `yes` once the loaded
 *   fragment or a drop-in is newer than when loaded, or a drop-in appeared in
 *   or went from a drop-in directory systemd knows; `no` for a drop-in
 *   directory created after systemd last read its unit directories (at a
 *   daemon-reload, or when it loads a unit it does not hold), for a file
 *   whose time was set back, and for a fragment added in a unit directory of
 *   higher precedence. A changed file that kept its modification time counts
 *   as changed here (the simulated clock may stand still; see `loading.ts`).
 * - `Environment=`, shown by `show` and given to each main process
 *   (`processEnvironment`).
 * - Services: `Type=` simple, exec, forking, notify, dbus, idle and oneshot,
 *   `Restart=`, `RestartSec=`, `RemainAfterExit=`, `TimeoutStartSec=`,
 *   `ExecStartPre=`/`ExecStart=`/`ExecStartPost=`/`ExecReload=`/`ExecStop=`,
 *   the start rate limit (`StartLimitBurst=` 5 in `StartLimitIntervalSec=` 10s
 *   by default; manual starts count, as in real systemd), `NRestarts`
 *   (automatic restarts only; flushed at the next start after the unit fully
 *   stopped), MainPID, the ExecMain status and the state-change timestamps.
 * - Programs: `/bin/true` exits 0, `/bin/false` exits 1, `sleep N|infinity`
 *   runs that long and never notifies readiness, `sh -c "exit N"` exits N. Any
 *   other program is a well-behaved daemon: as a main process it runs until
 *   killed (and notifies readiness for `Type=notify`); as a oneshot or
 *   control command it succeeds at once.
 * - Time: timers (`RestartSec=`, finite sleeps, start timeouts) run on the
 *   Effect `Clock`, evaluated lazily whenever systemd is asked anything.
 *
 * The parts live in `internal/memorySystemd/`: unit files, programs, state,
 * loading, the service state machine, systemctl's side and `show`'s
 * properties; this module holds the vocabulary, the inspection service and
 * the simulation that ties them together.
 *
 * Not simulated: dependencies between units (`Wants=`, `Requires=`, ordering;
 * a unit referenced by a running unit is unloaded like any other inactive
 * unit here), `[Install]`/enabling, sockets, timers and other unit types
 * beyond start/stop bookkeeping, cgroups, and `systemctl status`.
 *
 * @since 0.1.0
 */
import type { Systemd } from "@hostnode/core"
import { Clock, Context, Effect, type FileSystem, Semaphore } from "effect"
import { makeJournal } from "./internal/journal.ts"
import type * as MemoryCommands from "./internal/memoryCommands.ts"
import * as MemoryFileSystem from "./internal/memoryFileSystem.ts"
import { mainExited, settleAll } from "./internal/memorySystemd/lifecycle.ts"
import { collect, getOrLoad, loadFromDisk, needsReload, refreshPathCache } from "./internal/memorySystemd/loading.ts"
import { props } from "./internal/memorySystemd/properties.ts"
import { isActiveish, isService, type State, transition, type UnitState } from "./internal/memorySystemd/state.ts"
import {
  enqueue,
  fail,
  jobFailedMessage,
  locked,
  mangle,
  ok,
  type ParsedArgs,
  parseArgs,
  waitFor
} from "./internal/memorySystemd/systemctl.ts"
import * as Time from "./internal/memorySystemd/time.ts"
import { MemoryHost } from "./MemoryHost.ts"

// ---------------------------------------------------------------------------
// vocabulary

/**
 * A unit's LoadState as systemd reports it.
 *
 * @since 0.1.0
 */
export type LoadState = "loaded" | "not-found" | "masked" | "bad-setting"

/**
 * A service's `Result` (why it last stopped or failed).
 *
 * @since 0.1.0
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
 *
 * @since 0.1.0
 */
export type JobVerb = "start" | "stop" | "restart" | "reload"

/**
 * What became of a job: still `pending`, `done`, `failed` (the unit's
 * processes failed it), `canceled` (replaced by a later job), or `rejected`
 * before it ran (missing or masked unit, reload not applicable, ...).
 *
 * @since 0.1.0
 */
export type JobOutcome = "pending" | "done" | "failed" | "canceled" | "rejected"

/**
 * One job systemd was asked for, in order. `reason` says why it failed or was rejected.
 *
 * @since 0.1.0
 */
export interface JobRecord {
  readonly seq: number
  readonly verb: JobVerb
  readonly unit: string
  readonly outcome: JobOutcome
  readonly reason?: string | undefined
}

/**
 * A loaded unit as systemd holds it now.
 *
 * @since 0.1.0
 */
export interface UnitView {
  readonly name: string
  readonly loadState: LoadState
  readonly activeState: Systemd.ActiveState
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
 * A failure to inject into the next job(s) on `unit`:
 * - `JobFailed`: the job fails as if the unit's control process exited with
 *   an error (start/restart leave the unit `failed`, Result `exit-code`; a
 *   failed reload leaves it active with ReloadResult `exit-code`);
 * - `NotFound`: the call is refused as for a unit that does not exist
 *   (exit 5);
 * - `Hang`: the job never finishes on its own (the unit stays activating,
 *   deactivating or reloading) until a later job on the unit replaces it.
 *
 * @since 0.1.0
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
 * How a main process dies in {@link MemorySystemdService.killMain}.
 *
 * @since 0.1.0
 */
export type Death = { readonly exitCode: number } | { readonly signal: string }

/**
 * Inspection and fault injection of the simulated systemd.
 *
 * @since 0.1.0
 */
export interface MemorySystemdService {
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
   *
   * @since 0.4.0
   */
  readonly processEnvironment: (pid: number) => Effect.Effect<ReadonlyArray<string> | undefined>
  /** Forgets the job history and the counters (units keep their states). */
  readonly clearHistory: Effect.Effect<void>
  /** Arms a fault for the next job(s) on a unit (see {@link JobFault}). */
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
 * The key of the inspection service.
 *
 * @since 0.1.0
 */
export const MemorySystemd = Context.Service<MemorySystemd>("@hostnode/test/MemorySystemd")

/**
 * The inspection service, as the key {@link MemorySystemd} holds it.
 *
 * @since 0.1.0
 */
export interface MemorySystemd extends MemorySystemdService {}

/**
 * Options of {@link make}.
 *
 * @since 0.1.0
 */
export interface Options {
  /** The unit search path, highest precedence first (default {@link UnitPath}). */
  readonly unitPath?: ReadonlyArray<string> | undefined
  /** The pid of the first process systemd starts (default 1000); later ones count up. */
  readonly firstPid?: number | undefined
}

/**
 * systemd 252's system unit search path (without generator and transient directories).
 *
 * @since 0.1.0
 */
export const UnitPath: ReadonlyArray<string> = [
  "/etc/systemd/system",
  "/run/systemd/system",
  "/usr/local/lib/systemd/system",
  "/lib/systemd/system",
  "/usr/lib/systemd/system"
]

// ---------------------------------------------------------------------------
// time

/**
 * systemd's `parse_sec`: "90", "90s", "1min 30s", "100ms", "infinity"; microseconds, or undefined when invalid.
 *
 * @since 0.1.0
 */
export const parseTimespan: (text: string, defaultUnitUsec?: number) => number | undefined = Time.parseTimespan

/**
 * systemd's `format_timespan` as `systemctl show` prints `...USec` properties: "100ms", "1min 30s", "infinity".
 *
 * @since 0.1.0
 */
export const formatTimespan: (usec: number) => string = Time.formatTimespan

/**
 * A realtime timestamp as `systemctl show` prints it: "Mon 2026-11-30 14:25:27 UTC" (the simulated host runs in UTC).
 *
 * @since 0.1.0
 */
export const formatTimestamp: (epochMillis: number) => string = Time.formatTimestamp

/**
 * The simulated systemd: its `systemctl` interpreter and its inspection service.
 *
 * @since 0.1.0
 */
export interface Simulation {
  readonly service: MemorySystemdService
  readonly systemctl: MemoryCommands.Interpreter
}

/**
 * A simulated systemd reading unit files through `fs`, which should be its
 * own view of the host's files (see {@link makeOnHost}) so that its reads are
 * not the operations of the process under test.
 *
 * @since 0.1.0
 */
export const make = (fs: FileSystem.FileSystem, options?: Options): Effect.Effect<Simulation> =>
  Effect.gen(function* () {
    const bootMillis = yield* Clock.currentTimeMillis
    const state: State = {
      fs,
      unitPath: options?.unitPath ?? UnitPath,
      units: new Map(),
      lock: Semaphore.makeUnsafe(1),
      bootMillis,
      nextPid: options?.firstPid ?? 1000,
      lastMonotonic: 0,
      jobs: [],
      jobSeq: 0,
      restarts: new Map(),
      daemonReloads: 0,
      pathCache: new Set(),
      environments: new Map(),
      faults: []
    }
    // Booted: systemd read its unit directories once.
    yield* refreshPathCache(state)
    const underLock = <A>(f: (now: number) => Effect.Effect<A>) =>
      locked(
        state,
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          settleAll(state, now)
          const a = yield* f(now)
          collect(state)
          return a
        })
      )

    const runJobs = (verb: JobVerb, names: ReadonlyArray<string>, noBlock: boolean) =>
      Effect.gen(function* () {
        if (names.length === 0) return fail(1, "Too few arguments.")
        let stderr = ""
        let exitCode = 0
        for (const name of names) {
          const { id, warning } = mangle(name)
          stderr += warning
          const step = yield* underLock((now) => enqueue(state, verb, id, now))
          stderr += step.stderr
          let code = step._tag === "Finished" ? step.exitCode : 0
          if (step._tag === "Wait" && !noBlock) {
            const end = yield* waitFor(state, step.unit, step.job)
            if (end.result === "canceled") {
              stderr += `Job for ${id} canceled.\n`
              code = 1
            } else if (end.result !== "done") {
              stderr += jobFailedMessage(id, isService(id) ? end.serviceResult : undefined)
              code = 1
            }
          }
          if (exitCode === 0) exitCode = code
        }
        return { stdout: "", stderr, exitCode }
      })

    const show = (names: ReadonlyArray<string>, parsed: ParsedArgs) =>
      underLock(() =>
        Effect.gen(function* () {
          if (names.length === 0) return fail(1, "Showing the manager's properties is not simulated.")
          const blocks: Array<string> = []
          let stderr = ""
          for (const name of names) {
            const { id, warning } = mangle(name)
            stderr += warning
            const { u, fresh } = yield* getOrLoad(state, id)
            const needReload =
              !fresh && (u.loaded.loadState === "loaded" || u.active !== "inactive")
                ? yield* needsReload(state, u)
                : false
            const wanted = parsed.properties
            const lines: Array<string> = []
            for (const [key, value] of props(u, needReload)) {
              if (wanted !== undefined && !wanted.includes(key)) continue
              if (wanted === undefined && !parsed.all && value === "") continue
              lines.push(parsed.value ? value : `${key}=${value}`)
            }
            blocks.push(lines.map((l) => `${l}\n`).join(""))
          }
          return { stdout: blocks.join("\n"), stderr, exitCode: 0 }
        })
      )

    const isActive = (names: ReadonlyArray<string>, quiet: boolean) =>
      underLock(() =>
        Effect.gen(function* () {
          if (names.length === 0) return fail(1, "Too few arguments.")
          let stdout = ""
          let stderr = ""
          let any = false
          for (const name of names) {
            const { id, warning } = mangle(name)
            stderr += warning
            const { u } = yield* getOrLoad(state, id)
            if (isActiveish(u.active)) any = true
            stdout += `${u.active}\n`
          }
          return { stdout: quiet ? "" : stdout, stderr, exitCode: any ? 0 : 3 }
        })
      )

    const daemonReload = underLock(() =>
      Effect.gen(function* () {
        yield* refreshPathCache(state)
        for (const u of state.units.values()) u.loaded = yield* loadFromDisk(state, u.id)
        state.daemonReloads++
        return ok()
      })
    )

    const resetFailed = (names: ReadonlyArray<string>) =>
      underLock((now) =>
        Effect.sync(() => {
          const targets =
            names.length === 0
              ? [...state.units.values()]
              : names.flatMap((n) => {
                  const u = state.units.get(mangle(n).id)
                  return u === undefined ? [] : [u]
                })
          for (const u of targets) {
            u.rateBegin = undefined
            u.rateNum = 0
            if (u.active === "failed") {
              u.result = "success"
              transition(state, u, "inactive", "dead", now)
            }
          }
          return ok()
        })
      )

    const systemctl: MemoryCommands.Interpreter = (args) =>
      Effect.gen(function* () {
        const parsed = parseArgs(args)
        if (parsed.error !== undefined) return fail(1, parsed.error)
        switch (parsed.verb) {
          case "start":
          case "stop":
          case "restart":
          case "reload":
            return yield* runJobs(parsed.verb, parsed.units, parsed.noBlock)
          case "daemon-reload":
            return yield* daemonReload
          case "show":
            return yield* show(parsed.units, parsed)
          case "is-active":
            return yield* isActive(parsed.units, parsed.quiet)
          case "reset-failed":
            return yield* resetFailed(parsed.units)
          case undefined:
            return fail(1, "Listing units is not simulated.")
          default:
            return fail(1, `Unknown command verb ${parsed.verb}.`)
        }
      })

    const view = (u: UnitState) =>
      Effect.map(needsReload(state, u), (needReload) => ({
        name: u.id,
        loadState: u.loaded.loadState,
        activeState: u.active,
        subState: u.sub,
        description: u.loaded.def.description ?? u.id,
        fragmentPath: u.loaded.fragmentPath,
        dropInPaths: u.loaded.dropIns.map((d) => d.path),
        mainPid: u.mainPid,
        nRestarts: u.nRestarts,
        result: u.result,
        activeEnterTimestampMonotonic: u.ts.activeEnter?.monotonic ?? 0,
        needDaemonReload: needReload,
        pendingJob: u.job?.verb
      }))

    const service: MemorySystemdService = {
      unit: (name) =>
        underLock(() => {
          const u = state.units.get(mangle(name).id)
          return u === undefined ? Effect.succeed(undefined) : view(u)
        }),
      units: underLock(() =>
        Effect.forEach(
          [...state.units.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
          view
        )
      ),
      jobs: Effect.sync(() => state.jobs.map((r) => ({ ...r }))),
      restarts: Effect.sync(() => Object.fromEntries(state.restarts)),
      daemonReloads: Effect.sync(() => state.daemonReloads),
      processEnvironment: (pid) => Effect.sync(() => state.environments.get(pid)),
      clearHistory: Effect.sync(() => {
        state.jobs.length = 0
        state.restarts.clear()
        state.daemonReloads = 0
      }),
      injectFault: (fault) =>
        Effect.sync(() => {
          state.faults.push({ fault, left: fault.times ?? 1 })
        }),
      clearFaults: Effect.sync(() => {
        state.faults.length = 0
      }),
      killMain: (name, death) =>
        underLock((now) =>
          Effect.sync(() => {
            const u = state.units.get(mangle(name).id)
            if (u === undefined || u.mainPid === 0) return false
            mainExited(state, u, death ?? { exitCode: 1 }, now)
            return true
          })
        )
    }
    return { service, systemctl }
  })

/**
 * The simulated systemd of a `MemoryHost`: it reads the host's unit files
 * through its own view of the host's file system (its reads are systemd's,
 * not the operations of the process under test: they are not logged, faults
 * do not hit them and a crash of the process does not stop them).
 *
 * @since 0.1.0
 */
export const makeOnHost = (options?: Options): Effect.Effect<Simulation, never, MemoryHost> =>
  Effect.flatMap(Effect.service(MemoryHost), (host) =>
    make(MemoryFileSystem.make({ fs: host.state.fs, journal: makeJournal({ keeps: false }) }), options)
  )
