/**
 * The `Systemd` service: what a node agent asks of the host's service manager.
 * This module holds the contract (interface, key, errors, how systemctl's
 * answers are classified), `make`, which derives the service from a few
 * primitives, and the implementation over `systemctl` through the
 * `ChildProcessSpawner` in context (`layerCommand`). D-Bus and the spawners
 * are in @hostnode/node (`NodeSystemd`), the simulated and recording ones in
 * @hostnode/sim.
 *
 * @since 0.1.0
 */
import { Context, Duration, Effect, Layer, Schema } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import * as Deadline from "./Deadline.ts"
import * as HostCommand from "./HostCommand.ts"
import { Gone } from "./HostPathError.ts"
import { systemdCallLimit } from "./internal/systemd/callTimeout.ts"
import { describeStatus } from "./internal/systemd/status.ts"
import type { UnitName, UnitNameError } from "./UnitName.ts"
import * as UnitNameModule from "./UnitName.ts"

// A unit's ActiveState as systemd reports it: what `isActive` answers.
const ActiveState = Schema.Literals(["active", "inactive", "failed", "activating", "deactivating", "reloading"])

type ActiveState = typeof ActiveState.Type

/** The systemctl verbs this library runs; errors name the one that failed. */
const Verb = Schema.Literals(["start", "stop", "restart", "reload", "daemon-reload", "is-active", "show"])

type Verb = typeof Verb.Type

/**
 * What systemd reports about a unit after a job failed or the unit did not
 * stay up: the states `systemctl status` shows and how its main process last
 * ended, so an error says why without a second look at the host.
 *
 * @category models
 * @since 0.2.0
 */
export const UnitStatus = Schema.Struct({
  activeState: Schema.String,
  subState: Schema.String,
  /** The unit type's `Result` (`success`, `exit-code`, `signal`, `timeout`, ...); empty where the type has none. */
  result: Schema.String,
  /** `ExecMainCode`: how the main process ended (0 not yet, 1 exited, 2 killed, 3 dumped core). */
  execMainCode: Schema.Number,
  /** `ExecMainStatus`: its exit status, or the signal that ended it. */
  execMainStatus: Schema.Number
})

/**
 * What systemd reports about a unit.
 *
 * @category models
 * @since 0.2.0
 */
export type UnitStatus = typeof UnitStatus.Type

// What a reason tells, in the order the error's message gives it: facts for
// the parenthesis after the reason's tag, then the text and the unit's status.
interface Told {
  readonly exitCode?: number
  readonly stderr?: string
  readonly detail?: string
  readonly jobResult?: string
  readonly status?: UnitStatus
}

const factsOf = (r: Told): ReadonlyArray<string> => [
  ...(r.jobResult === undefined ? [] : [`job ${r.jobResult}`]),
  ...(r.exitCode === undefined ? [] : [`exit ${r.exitCode}`])
]

const textOf = (r: Told): string => (r.stderr ?? r.detail ?? "").trim()

const statusOf = (r: Told): string => (r.status === undefined ? "" : `; the unit is ${describeStatus(r.status)}`)

/** A reason's own sentence: its facts, then what was said, then the unit's status. */
const sentence = (r: Told): string =>
  `${[factsOf(r).join(", "), textOf(r)].filter((part) => part !== "").join(": ")}${statusOf(r)}`

/**
 * A systemd call that failed, told by its `_tag`, with what the client
 * answered (`exitCode` and `stderr`; over D-Bus the exit code and sentence
 * systemctl gives for the same answer) and, over D-Bus, what systemd said of
 * the job (`jobResult`, and `status`: the unit's states after the failure):
 * - `UnitNotFound`: systemd has no such unit (systemctl exits 5, or says "not
 *   found" or "not loaded");
 * - `JobFailed`: the job ran and failed, or was canceled (the unit's
 *   processes, a dependency, a later job);
 * - `AccessDenied`: systemd refused the caller (not root, or polkit; exit 4);
 * - `NotBooted`: no systemd answers (not booted with systemd, or its bus and
 *   sockets cannot be reached);
 * - `Timeout`: the call did not finish in time: the caller's limit (no exit
 *   code; `stderr` says which limit) or systemd's own job timeout;
 * - `Other`: an answer none of the others matches, or a connection that
 *   closed before systemd answered (no exit code);
 * - `CommandUnavailable`: the client could not be run at all (`systemctl`
 *   missing, the spawn failed): nothing reached systemd; `detail` says why.
 *
 * @category errors
 * @since 0.4.0
 */
export class Failure extends Schema.Error<Failure>("@hostnode/core/Systemd/Failure")({
  _tag: Schema.Literals([
    "UnitNotFound",
    "JobFailed",
    "AccessDenied",
    "NotBooted",
    "Timeout",
    "Other",
    "CommandUnavailable"
  ]),
  exitCode: Schema.optionalKey(Schema.Number),
  stderr: Schema.optionalKey(Schema.String),
  detail: Schema.optionalKey(Schema.String),
  /** The finished job's result (`failed`, `canceled`, `dependency`, `timeout`, ...); over D-Bus only. */
  jobResult: Schema.optionalKey(Schema.String),
  /** The unit's states and how its main process last ended, after the failure; over D-Bus only. */
  status: Schema.optionalKey(UnitStatus)
}) {
  /**
   * The reason for a failed systemctl call, from its exit code and stderr
   * (over D-Bus: the exit code and sentence systemctl gives for systemd's
   * answer), so every implementation of `Systemd` tells the same answer the
   * same way. systemctl's exit codes are coarse (1 for most failures, 5 for a
   * missing unit), so the text decides where the code does not. `job` (over
   * D-Bus: the finished job's result and the unit's status then) is kept on
   * the reasons that can carry it (`JobFailed`, `Timeout`, `Other`).
   *
   * @since 0.4.0
   */
  static classify(
    exitCode: number,
    stderr: string,
    job?: { readonly jobResult?: string | undefined; readonly status?: UnitStatus | undefined }
  ): Failure {
    const t = stderr.toLowerCase()
    const answer = { exitCode, stderr }
    const facts = {
      ...answer,
      ...(job?.jobResult === undefined ? {} : { jobResult: job.jobResult }),
      ...(job?.status === undefined ? {} : { status: job.status })
    }
    if (exitCode === 5 || t.includes("not found") || t.includes("not loaded"))
      return new Failure({ _tag: "UnitNotFound", ...answer })
    if (t.includes("not been booted with systemd") || t.includes("failed to connect to bus")) {
      return new Failure({ _tag: "NotBooted", ...answer })
    }
    if (t.includes("access denied") || t.includes("interactive authentication required") || exitCode === 4) {
      return new Failure({ _tag: "AccessDenied", ...answer })
    }
    if (t.includes("timed out") || t.includes("timeout")) return new Failure({ _tag: "Timeout", ...facts })
    if (t.includes("job for") || t.includes("failed because") || t.includes("dependency failed")) {
      return new Failure({ _tag: "JobFailed", ...facts })
    }
    return new Failure({ _tag: "Other", ...facts })
  }

  override get message(): string {
    return sentence(this)
  }
}

/**
 * A restarted unit did not stay active for the settle window
 * (`RestartChanged.awaitSettled`): its job succeeded, its program did not
 * keep running. `status` is what systemd reported when it was seen down.
 *
 * @category errors
 * @since 0.3.0
 */
export class NotSettled extends Schema.Error<NotSettled>("@hostnode/core/Systemd/NotSettled")({
  _tag: Schema.tag("NotSettled"),
  /** How long the unit had to stay up, when it was seen down, whether systemd restarted it. */
  detail: Schema.String,
  status: UnitStatus
}) {
  override get message(): string {
    return sentence(this)
  }
}

/**
 * Why a systemd call failed: a {@link Failure} classified from the client's
 * answer (`Failure.classify`), `NotSettled`, or `Gone` (`HostPath.Gone`:
 * another machine's systemd, a container's, whose process has exited;
 * nothing was sent).
 */
const SystemdErrorReason = Schema.Union([Gone, Failure, NotSettled])

type SystemdErrorReason = typeof SystemdErrorReason.Type

/*
 * Where a failed call went over D-Bus: the manager's method (`RestartUnit`,
 * `Reload`, `Get`, ...), the job systemd queued for it (its object path, once
 * systemd answered with one) and the D-Bus error systemd answered with. Set
 * by the D-Bus layer (`NodeSystemd.layerDbus`), so that the message names
 * what really ran; absent over `systemctl`.
 */
const DbusCall = Schema.Struct({
  method: Schema.String,
  job: Schema.optionalKey(Schema.String),
  error: Schema.optionalKey(Schema.String)
})

/**
 * A systemd call that failed: the verb, the unit (none for daemon-reload)
 * and why (its `reason`: a {@link Failure}, `NotSettled` or `Gone`). Where systemd's client answered,
 * the reason keeps its exit code and what it printed, so the person reading
 * it sees exactly what systemd said. Over `systemctl` those are its exit code
 * and stderr; over D-Bus (`NodeSystemd.layerDbus`) they are the exit code and
 * the sentence systemctl gives for the same answer from systemd, so callers
 * and the CLI treat both alike, and `dbus` says which method ran, which job
 * systemd queued and the D-Bus error it answered with: the message then names
 * D-Bus and the job, never a `systemctl` that did not run. Where systemd said
 * more, it is kept on the reason: the finished job's result (`jobResult`,
 * D-Bus only) and the unit's states and main process exit after the failure
 * (`status`).
 *
 * @example
 * ```ts
 * import { Systemd } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // A missing unit is not an error here: anything else still is.
 * const restartIfPresent = (unit: string) =>
 *   Effect.flatMap(Effect.service(Systemd.Systemd), (s) => s.restart(unit)).pipe(
 *     Effect.catchReason("SystemdError", "UnitNotFound", () => Effect.void)
 *   )
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class SystemdError extends Schema.TaggedError<SystemdError>()("SystemdError", {
  reason: SystemdErrorReason,
  verb: Verb,
  /** The unit the call was about; absent for daemon-reload. */
  unit: Schema.optionalKey(Schema.String),
  /** The D-Bus method, job and error, when the call went over D-Bus. */
  dbus: Schema.optionalKey(DbusCall)
}) {
  override get message(): string {
    const said = textOf(this.reason)
    const text = `${said === "" ? "" : `: ${said}`}${statusOf(this.reason)}`
    // Our own check after a restart that succeeded: neither systemctl nor D-Bus failed.
    if (this.reason._tag === "NotSettled")
      return `${this.unit ?? "the unit"} did not settle after its ${this.verb} (NotSettled)${text}`
    if (this.dbus !== undefined) {
      const call = `D-Bus ${this.dbus.method}${this.unit === undefined ? "" : ` ${this.unit}`}`
      const job = this.dbus.job === undefined ? "" : `, job ${this.dbus.job}`
      const facts = [
        this.reason._tag,
        ...(this.dbus.error === undefined ? [] : [this.dbus.error]),
        ...("jobResult" in this.reason && this.reason.jobResult !== undefined ? [`job ${this.reason.jobResult}`] : [])
      ]
      return `${call}${job} failed (${facts.join(", ")})${text}`
    }
    const what = this.unit === undefined ? `systemctl ${this.verb}` : `systemctl ${this.verb} ${this.unit}`
    return `${what} failed (${[this.reason._tag, ...factsOf(this.reason)].join(", ")})${text}`
  }
}

/**
 * The service manager. Every method that takes a unit decodes it with
 * `UnitName` first: an invalid name fails with `UnitNameError` and no command
 * runs. Job methods (`start`, `stop`, `restart`, `reload`) wait for the job to
 * finish, so success means the unit reached the requested state.
 *
 * @category services
 * @since 0.1.0
 */
export interface Systemd {
  readonly start: (unit: string) => Effect.Effect<void, SystemdError | UnitNameError>
  readonly stop: (unit: string) => Effect.Effect<void, SystemdError | UnitNameError>
  readonly restart: (unit: string) => Effect.Effect<void, SystemdError | UnitNameError>
  readonly reload: (unit: string) => Effect.Effect<void, SystemdError | UnitNameError>
  /** Has systemd re-read unit files and drop-ins; needed after a restore rewrites them. */
  readonly daemonReload: Effect.Effect<void, SystemdError>
  /** The unit's ActiveState. A unit systemd does not know is `inactive`, as systemctl reports it. */
  readonly isActive: (unit: string) => Effect.Effect<ActiveState, SystemdError | UnitNameError>
  /** The requested properties of the unit (`systemctl show -p`), by name. */
  readonly show: (
    unit: string,
    properties: ReadonlyArray<string>
  ) => Effect.Effect<Readonly<Record<string, string>>, SystemdError | UnitNameError>
}

/**
 * The key of the {@link Systemd} service.
 *
 * @category services
 * @since 0.1.0
 */
export const Systemd = Context.Service<Systemd>("@hostnode/core/Systemd")

/**
 * What an implementation writes: a job on one valid unit, a daemon reload and
 * a property query. {@link make} derives the rest and does the validation, so
 * every implementation validates the same way.
 *
 * @category models
 * @since 0.1.0
 */
export interface Primitives {
  readonly job: (verb: "start" | "stop" | "restart" | "reload", unit: UnitName) => Effect.Effect<void, SystemdError>
  readonly daemonReload: Effect.Effect<void, SystemdError>
  readonly show: (
    unit: UnitName,
    properties: ReadonlyArray<string>
  ) => Effect.Effect<Readonly<Record<string, string>>, SystemdError>
}

/**
 * Builds the {@link Systemd} service from its {@link Primitives}.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (p: Primitives): Systemd => {
  const job = (verb: "start" | "stop" | "restart" | "reload") => (unit: string) =>
    UnitNameModule.decode(unit).pipe(
      Effect.flatMap((u) => p.job(verb, u)),
      Effect.withSpan(`Systemd.${verb}`, { attributes: { unit } })
    )
  const query = (unit: string, properties: ReadonlyArray<string>) =>
    UnitNameModule.decode(unit).pipe(Effect.flatMap((u) => p.show(u, properties)))
  return Systemd.of({
    start: job("start"),
    stop: job("stop"),
    restart: job("restart"),
    reload: job("reload"),
    daemonReload: p.daemonReload.pipe(Effect.withSpan("Systemd.daemonReload")),
    isActive: (unit) =>
      query(unit, ["ActiveState"]).pipe(
        Effect.map((props) => {
          const state = props.ActiveState
          return Schema.is(ActiveState)(state) ? state : "inactive"
        }),
        Effect.withSpan("Systemd.isActive", { attributes: { unit } })
      ),
    show: (unit, properties) => query(unit, properties).pipe(Effect.withSpan("Systemd.show", { attributes: { unit } }))
  })
}

/** `systemctl show`'s `Key=value` lines, by key. */
const parseShow = (stdout: string): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const line of stdout.split("\n")) {
    const eq = line.indexOf("=")
    if (eq > 0) out[line.slice(0, eq)] = line.slice(eq + 1)
  }
  return out
}

/** The `Systemd` service over `systemctl`, for {@link layerCommand}. */
const makeCommand = (options?: {
  readonly timeout?: Duration.Input | undefined
}): Effect.Effect<Systemd, never, ChildProcessSpawner.ChildProcessSpawner> =>
  Effect.gen(function* () {
    const context = yield* Effect.context<ChildProcessSpawner.ChildProcessSpawner>()
    const timeout = Duration.fromInputUnsafe(options?.timeout ?? Duration.minutes(3))
    const systemctl = (verb: Verb, unit: string | undefined, args: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const limit = yield* systemdCallLimit(timeout)
        const fail = (reason: SystemdErrorReason) =>
          Effect.fail(new SystemdError({ reason, verb, ...(unit === undefined ? {} : { unit }) }))
        return yield* HostCommand.run("systemctl", args).pipe(
          Effect.provide(context),
          // The limit is the command's own deadline: past it systemctl is let go (killed), not waited for.
          Deadline.within(limit),
          Effect.catchTag("CommandError", (e) =>
            fail(
              e.reason._tag === "TimedOut"
                ? new Failure({
                    _tag: "Timeout",
                    stderr: `systemctl did not finish within ${Duration.format(limit)}: ${e.reason.detail}`
                  })
                : new Failure({ _tag: "CommandUnavailable", detail: e.message })
            )
          ),
          Effect.flatMap((o) =>
            o.exitCode === 0 ? Effect.succeed(o.stdout) : fail(Failure.classify(o.exitCode, o.stderr))
          )
        )
      })
    return make({
      job: (verb, unit) => Effect.asVoid(systemctl(verb, unit, [verb, "--", unit])),
      daemonReload: Effect.asVoid(systemctl("daemon-reload", undefined, ["daemon-reload"])),
      show: (unit, properties) =>
        systemctl("show", unit, ["show", `--property=${properties.join(",")}`, "--", unit]).pipe(Effect.map(parseShow))
    })
  })

/**
 * The `Systemd` service that runs `systemctl` through the `ChildProcessSpawner`
 * in context: argv arrays, `--` before unit names, stdout, stderr and the exit
 * code read together, a non-zero exit classified with `Failure.classify`, a
 * `systemctl` that cannot be run at all a `CommandUnavailable` reason, the
 * time limit a `Timeout`. It needs only a spawner, so it lives here beside
 * `Mounter.layerCommand`: the spawner decides where the commands run
 * (`NodeSystemd.layer` gives Node's, or one wrapped with `nsenter` for
 * another machine's systemd, `MemoryNode` the simulated command line).
 *
 * `timeout`: how long one systemctl call may take (default 3 minutes;
 * `Layers.SystemdCallTimeout` replaces it where provided). A job that never finishes
 * (a unit that never signals readiness) would otherwise block the agent until
 * systemd's own timeout, if it has one.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerCommand = (options?: {
  readonly timeout?: Duration.Input | undefined
}): Layer.Layer<Systemd, never, ChildProcessSpawner.ChildProcessSpawner> => Layer.effect(Systemd, makeCommand(options))
