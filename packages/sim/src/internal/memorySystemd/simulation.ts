/** The simulated systemd: the state machine, `systemctl` and the inspection service over one state. */
import { Clock, Effect, type FileSystem, Semaphore } from "effect"
import { MemoryHost } from "../../MemoryHost.ts"
import type { MemorySystemd, Options } from "../../MemorySystemd.ts"
import { makeJournal } from "../journal.ts"
import type * as MemoryCommands from "../memoryCommands.ts"
import * as MemoryFileSystem from "../memoryFileSystem.ts"
import { mainExited, settleAll } from "./lifecycle.ts"
import { collect, getOrLoad, loadFromDisk, needsReload, refreshPathCache } from "./loading.ts"
import { props } from "./properties.ts"
import { isActiveish, isService, type State, transition, type UnitState } from "./state.ts"
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
} from "./systemctl.ts"
import type { JobVerb } from "./vocabulary.ts"

/**
 * systemd 252's system unit search path (without generator and transient directories).
 */
export const UnitPath: ReadonlyArray<string> = [
  "/etc/systemd/system",
  "/run/systemd/system",
  "/usr/local/lib/systemd/system",
  "/lib/systemd/system",
  "/usr/lib/systemd/system"
]

/**
 * The simulated systemd: its `systemctl` interpreter and its inspection service.
 */
export interface Simulation {
  readonly service: MemorySystemd
  readonly systemctl: MemoryCommands.Interpreter
}

/**
 * A simulated systemd reading unit files through `fs`, which should be its
 * own view of the host's files (see {@link makeOnHost}) so that its reads are
 * not the operations of the process under test.
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

    const service: MemorySystemd = {
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
 */
export const makeOnHost = (options?: Options): Effect.Effect<Simulation, never, MemoryHost> =>
  Effect.flatMap(Effect.service(MemoryHost), (host) =>
    make(MemoryFileSystem.make({ fs: host.state.fs, journal: makeJournal({ keeps: false }) }), options)
  )
