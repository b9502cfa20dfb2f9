/**
 * The `Systemd` service: what a node agent asks of the host's service manager.
 * This module holds the contract (interface, key, errors) and `make`, which
 * derives the service from a few primitives, and the implementation that runs
 * `systemctl` through the spawner in context. The D-Bus implementation lives
 * in @hostnode/node (`NodeSystemd.layerDbus`, it needs sockets), the simulated
 * one in @hostnode/test.
 *
 * @since 0.1.0
 */
import { Context, Duration, Effect, Layer, Schema } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import * as HostCommand from "./HostCommand.ts"
import type { UnitName, UnitNameError } from "./UnitName.ts"
import * as UnitNameModule from "./UnitName.ts"

/**
 * A unit's ActiveState as systemd reports it.
 *
 * @since 0.1.0
 */
export const ActiveState = Schema.Literals(["active", "inactive", "failed", "activating", "deactivating", "reloading"])

/**
 * A unit's ActiveState as systemd reports it.
 *
 * @since 0.1.0
 */
export type ActiveState = typeof ActiveState.Type

/**
 * The systemctl verbs this library runs; errors name the one that failed.
 *
 * @since 0.1.0
 */
export const Verb = Schema.Literals(["start", "stop", "restart", "reload", "daemon-reload", "is-active", "show"])

/**
 * The systemctl verbs this library runs.
 *
 * @since 0.1.0
 */
export type Verb = typeof Verb.Type

/**
 * Why a systemd call failed, classified from systemctl's exit code and stderr
 * so callers can act on it (retry a timeout, report a missing unit) without
 * parsing text.
 *
 * @since 0.1.0
 */
export const SystemdErrorReason = Schema.Literals([
  "UnitNotFound",
  "JobFailed",
  "AccessDenied",
  "NotBooted",
  "Timeout",
  "NotSettled",
  "Other"
])

/**
 * Why a systemd call failed.
 *
 * @since 0.1.0
 */
export type SystemdErrorReason = typeof SystemdErrorReason.Type

/**
 * What systemd reports about a unit after a job failed or the unit did not
 * stay up: the states `systemctl status` shows and how its main process last
 * ended, so an error says why without a second look at the host.
 *
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
 * @since 0.2.0
 */
export type UnitStatus = typeof UnitStatus.Type

/**
 * The properties {@link UnitStatus} is read from, in `show`'s names.
 *
 * @since 0.2.0
 */
export const UnitStatusProperties = ["ActiveState", "SubState", "Result", "ExecMainCode", "ExecMainStatus"] as const

/**
 * A {@link UnitStatus} from `show`'s answer for {@link UnitStatusProperties}.
 *
 * @since 0.2.0
 */
export const unitStatusOf = (props: Readonly<Record<string, string>>): UnitStatus => ({
  activeState: props.ActiveState ?? "",
  subState: props.SubState ?? "",
  result: props.Result ?? "",
  execMainCode: Number(props.ExecMainCode ?? "0") || 0,
  execMainStatus: Number(props.ExecMainStatus ?? "0") || 0
})

/**
 * A {@link UnitStatus} as a person reads it: `failed (failed), result exit-code, main process exited with status 1`.
 *
 * @since 0.2.0
 */
export const describeStatus = (s: UnitStatus): string => {
  const main =
    s.execMainCode === 1
      ? `main process exited with status ${s.execMainStatus}`
      : s.execMainCode === 2
        ? `main process killed by signal ${s.execMainStatus}`
        : s.execMainCode === 3
          ? `main process dumped core on signal ${s.execMainStatus}`
          : "main process has not exited"
  return `${s.activeState} (${s.subState})${s.result === "" ? "" : `, result ${s.result}`}, ${main}`
}

/**
 * A systemd call that failed: the verb, the unit (empty for daemon-reload),
 * the exit code and the text systemd's client printed, so the person reading
 * it sees exactly what systemd said. Over `systemctl` those are its exit code
 * and stderr; over D-Bus (`NodeSystemd.layerDbus`) they are the exit code and
 * the sentence systemctl gives for the same answer from systemd, so callers
 * and the CLI treat both alike. `-1` means no client exit code applies (a
 * timeout of ours, a unit that did not settle, a lost connection).
 *
 * Where systemd said more, it is kept: `jobResult` is the finished job's
 * result (`failed`, `timeout`, `canceled`, `dependency`, ...; D-Bus only) and
 * `status` the unit's states and main process exit after the failure.
 *
 * @since 0.1.0
 */
export class SystemdError extends Schema.TaggedError<SystemdError>()("SystemdError", {
  reason: SystemdErrorReason,
  verb: Verb,
  unit: Schema.String,
  exitCode: Schema.Number,
  stderr: Schema.String,
  jobResult: Schema.optionalKey(Schema.String),
  status: Schema.optionalKey(UnitStatus)
}) {
  override get message(): string {
    const what = this.unit === "" ? `systemctl ${this.verb}` : `systemctl ${this.verb} ${this.unit}`
    const said = this.stderr.trim()
    const job = this.jobResult === undefined ? "" : `, job ${this.jobResult}`
    const status = this.status === undefined ? "" : `; the unit is ${describeStatus(this.status)}`
    return `${what} failed (${this.reason}${job}, exit ${this.exitCode})${said === "" ? "" : `: ${said}`}${status}`
  }
}

/**
 * The service manager. Every method that takes a unit decodes it with
 * `UnitName` first: an invalid name fails with `UnitNameError` and no command
 * runs. Job methods (`start`, `stop`, `restart`, `reload`) wait for the job to
 * finish, so success means the unit reached the requested state.
 *
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
 * @since 0.1.0
 */
export const Systemd = Context.Service<Systemd>("@hostnode/core/Systemd")

/**
 * What an implementation writes: a job on one valid unit, a daemon reload and
 * a property query. {@link make} derives the rest and does the validation, so
 * every implementation validates the same way.
 *
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
 * @since 0.1.0
 */
export const make = (p: Primitives): Systemd => {
  const job = (verb: "start" | "stop" | "restart" | "reload") => (unit: string) =>
    UnitNameModule.decode(unit).pipe(
      Effect.flatMap((u) => p.job(verb, u)),
      Effect.withSpan(`Systemd.${verb}`, { attributes: { unit } })
    )
  const show = (unit: string, properties: ReadonlyArray<string>) =>
    UnitNameModule.decode(unit).pipe(Effect.flatMap((u) => p.show(u, properties)))
  return Systemd.of({
    start: job("start"),
    stop: job("stop"),
    restart: job("restart"),
    reload: job("reload"),
    daemonReload: p.daemonReload.pipe(Effect.withSpan("Systemd.daemonReload")),
    isActive: (unit) =>
      show(unit, ["ActiveState"]).pipe(
        Effect.map((props) => {
          const state = props.ActiveState
          return Schema.is(ActiveState)(state) ? state : "inactive"
        })
      ),
    show
  })
}

/**
 * The reason for a failed systemctl call, from its exit code and stderr.
 * systemctl's exit codes are coarse (1 for most failures, 5 for a missing
 * unit), so the text decides where the code does not.
 *
 * @since 0.1.0
 */
export const classify = (exitCode: number, stderr: string): SystemdErrorReason => {
  const t = stderr.toLowerCase()
  if (exitCode === 5 || t.includes("not found") || t.includes("not loaded")) return "UnitNotFound"
  if (t.includes("not been booted with systemd") || t.includes("failed to connect to bus")) return "NotBooted"
  if (t.includes("access denied") || t.includes("interactive authentication required") || exitCode === 4) {
    return "AccessDenied"
  }
  if (t.includes("timed out") || t.includes("timeout")) return "Timeout"
  if (t.includes("job for") || t.includes("failed because") || t.includes("dependency failed")) return "JobFailed"
  return "Other"
}

/**
 * Options of {@link makeCommand}.
 *
 * @since 0.1.0
 */
export interface CommandOptions {
  /**
   * How long one systemctl call may take (default 3 minutes). A job that never
   * finishes (a unit that never signals readiness) would otherwise block the
   * agent until systemd's own timeout, if it has one.
   */
  readonly timeout?: Duration.Input | undefined
}

/**
 * The `Systemd` service that runs `systemctl` through the `ChildProcessSpawner`
 * in context: argv arrays, `--` before unit names, stdout, stderr and the exit
 * code read together. Because the spawner comes from context, a spawner
 * wrapped with `nsenter` drives another machine's systemd unchanged.
 *
 * @since 0.1.0
 */
export const makeCommand = (options?: CommandOptions) =>
  Effect.gen(function* () {
    const context = yield* Effect.context<ChildProcessSpawner.ChildProcessSpawner>()
    const timeout = Duration.fromInputUnsafe(options?.timeout ?? Duration.minutes(3))
    const systemctl = (verb: Verb, unit: string, args: ReadonlyArray<string>) =>
      HostCommand.run("systemctl", args).pipe(
        Effect.timeoutOrElse({
          duration: timeout,
          orElse: () =>
            Effect.fail(
              new SystemdError({
                reason: "Timeout",
                verb,
                unit,
                exitCode: -1,
                stderr: `systemctl did not finish within ${Duration.format(timeout)}`
              })
            )
        }),
        Effect.catchTag("CommandError", (e) =>
          Effect.fail(new SystemdError({ reason: "Other", verb, unit, exitCode: -1, stderr: e.message }))
        ),
        Effect.flatMap((o) =>
          o.exitCode === 0
            ? Effect.succeed(o.stdout)
            : Effect.fail(
                new SystemdError({
                  reason: classify(o.exitCode, o.stderr),
                  verb,
                  unit,
                  exitCode: o.exitCode,
                  stderr: o.stderr
                })
              )
        ),
        Effect.provide(context)
      )
    return make({
      job: (verb, unit) => Effect.asVoid(systemctl(verb, unit, [verb, "--", unit])),
      daemonReload: Effect.asVoid(systemctl("daemon-reload", "", ["daemon-reload"])),
      show: (unit, properties) =>
        systemctl("show", unit, ["show", `--property=${properties.join(",")}`, "--", unit]).pipe(
          Effect.map((stdout) => {
            const out: Record<string, string> = {}
            for (const line of stdout.split("\n")) {
              const eq = line.indexOf("=")
              if (eq > 0) out[line.slice(0, eq)] = line.slice(eq + 1)
            }
            return out
          })
        )
    })
  })

/**
 * {@link makeCommand} as a layer; requires the spawner the commands run through.
 *
 * @since 0.1.0
 */
export const layerCommand = (
  options?: CommandOptions
): Layer.Layer<Systemd, never, ChildProcessSpawner.ChildProcessSpawner> => Layer.effect(Systemd, makeCommand(options))
