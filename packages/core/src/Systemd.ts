/**
 * The `Systemd` service: what a node agent asks of the host's service manager.
 * This module holds the contract (interface, key, errors) and `make`, which
 * derives the service from a few primitives; the real implementation runs
 * `systemctl` (@hostnode/node), the simulated one lives in @hostnode/test.
 *
 * @since 0.1.0
 */
import { Context, Effect, Schema } from "effect"
import type { UnitName, UnitNameError } from "./UnitName.ts"
import * as UnitNameModule from "./UnitName.ts"

/** A unit's ActiveState as systemd reports it. */
export const ActiveState = Schema.Literals(["active", "inactive", "failed", "activating", "deactivating", "reloading"])

/** A unit's ActiveState as systemd reports it. */
export type ActiveState = typeof ActiveState.Type

/** The systemctl verbs this library runs; errors name the one that failed. */
export const Verb = Schema.Literals(["start", "stop", "restart", "reload", "daemon-reload", "is-active", "show"])

/** The systemctl verbs this library runs. */
export type Verb = typeof Verb.Type

/**
 * Why a systemd call failed, classified from systemctl's exit code and stderr
 * so callers can act on it (retry a timeout, report a missing unit) without
 * parsing text.
 */
export const SystemdErrorReason = Schema.Literals([
  "UnitNotFound",
  "JobFailed",
  "AccessDenied",
  "NotBooted",
  "Timeout",
  "Other"
])

/** Why a systemd call failed. */
export type SystemdErrorReason = typeof SystemdErrorReason.Type

/**
 * A systemd call that failed: the verb, the unit (empty for daemon-reload),
 * systemctl's exit code and its own stderr, so the person reading it sees
 * exactly what systemd said.
 */
export class SystemdError extends Schema.TaggedError<SystemdError>()("SystemdError", {
  reason: SystemdErrorReason,
  verb: Verb,
  unit: Schema.String,
  exitCode: Schema.Number,
  stderr: Schema.String
}) {
  override get message(): string {
    const what = this.unit === "" ? `systemctl ${this.verb}` : `systemctl ${this.verb} ${this.unit}`
    const said = this.stderr.trim()
    return `${what} failed (${this.reason}, exit ${this.exitCode})${said === "" ? "" : `: ${said}`}`
  }
}

/**
 * The service manager. Every method that takes a unit decodes it with
 * `UnitName` first: an invalid name fails with `UnitNameError` and no command
 * runs. Job methods (`start`, `stop`, `restart`, `reload`) wait for the job to
 * finish, so success means the unit reached the requested state.
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

/** The key of the {@link Systemd} service. */
export const Systemd = Context.Service<Systemd>("@hostnode/core/Systemd")

/**
 * What an implementation writes: a job on one valid unit, a daemon reload and
 * a property query. {@link make} derives the rest and does the validation, so
 * every implementation validates the same way.
 */
export interface Primitives {
  readonly job: (verb: "start" | "stop" | "restart" | "reload", unit: UnitName) => Effect.Effect<void, SystemdError>
  readonly daemonReload: Effect.Effect<void, SystemdError>
  readonly show: (
    unit: UnitName,
    properties: ReadonlyArray<string>
  ) => Effect.Effect<Readonly<Record<string, string>>, SystemdError>
}

/** Builds the {@link Systemd} service from its {@link Primitives}. */
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
