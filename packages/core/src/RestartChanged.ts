/**
 * Restarting, in order, the systemd units whose configuration changed (the Go
 * package's `RestartChanged` and `ChangedUnit`). An upgrade rewrites unit
 * files, drop-ins and the configuration they read; a running unit only picks
 * those up when restarted, and a stopped node reads them at its next start.
 *
 * @since 0.1.0
 */
import { Cause, Clock, Context, Duration, Effect, Schema } from "effect"
import {
  describeStatus,
  NotSettled as NotSettledReason,
  Systemd,
  SystemdError,
  UnitStatusProperties,
  unitStatusOf
} from "./Systemd.ts"
import * as UnitName from "./UnitName.ts"

/**
 * A unit and whether its configuration changed.
 *
 * @since 0.1.0
 */
export const ChangedUnit = Schema.Struct({
  unit: Schema.String,
  changed: Schema.Boolean
})

/**
 * A unit and whether its configuration changed.
 *
 * @since 0.1.0
 */
export type ChangedUnit = typeof ChangedUnit.Type

/**
 * Why a restart failed: the restart itself (`Systemd.restart` failed: the
 * job failed, the unit is missing, systemd did not answer).
 *
 * @since 0.3.0
 */
export class RestartFailed extends Schema.TaggedError<RestartFailed>()("RestartFailed", {
  /** What the restart failed with. */
  cause: Schema.Union([SystemdError, UnitName.UnitNameError])
}) {
  override get message(): string {
    return this.cause.message
  }
}

/**
 * Why a restart failed: the unit was restarted, but it did not stay active
 * for the settle window (see {@link awaitSettled}), or systemd could not be
 * asked whether it did.
 *
 * @since 0.3.0
 */
export class NotSettled extends Schema.TaggedError<NotSettled>()("NotSettled", {
  /** What the settle check failed with: a `NotSettled` `SystemdError` when the unit was seen down. */
  cause: Schema.Union([SystemdError, UnitName.UnitNameError])
}) {
  override get message(): string {
    return this.cause.message
  }
}

/**
 * Why a restart failed.
 *
 * @since 0.3.0
 */
export const RestartErrorReason = Schema.Union([RestartFailed, NotSettled])

/**
 * Why a restart failed.
 *
 * @since 0.3.0
 */
export type RestartErrorReason = typeof RestartErrorReason.Type

/**
 * A restart failed. It names the unit that failed, the units restarted before
 * it (they run the new configuration) and those never tried (they still run
 * the old one), so a caller can tell exactly what state the node is in; the
 * reason says whether the restart failed or the unit did not stay up after it.
 *
 * @since 0.1.0
 */
export class RestartError extends Schema.TaggedError<RestartError>()("RestartError", {
  reason: RestartErrorReason,
  unit: Schema.String,
  restarted: Schema.Array(Schema.String),
  notAttempted: Schema.Array(Schema.String)
}) {
  override get message(): string {
    const before = this.restarted.length === 0 ? "none" : this.restarted.join(", ")
    return `restart of ${this.unit} failed (already restarted: ${before}): ${this.reason.message}`
  }
}

/**
 * Where a run of restarts stopped: the unit whose restart failed, those restarted before it, those never tried.
 *
 * @since 0.2.0
 */
export interface Progress {
  readonly unit: string
  readonly restarted: ReadonlyArray<string>
  readonly notAttempted: ReadonlyArray<string>
}

/**
 * The annotation a failure of a caller's `restart` carries: its error is kept
 * exactly as it is (tag, fields, message: the caller owns its wording), and
 * the cause is annotated with where the run stopped. Read it with
 * {@link progressOf}.
 *
 * @since 0.2.0
 */
export interface RestartProgress extends Progress {}

/**
 * The key of the {@link RestartProgress} annotation.
 *
 * @since 0.2.0
 */
export const RestartProgress = Context.Service<RestartProgress>("@hostnode/core/RestartChanged/RestartProgress")

/**
 * Where the restarts stopped, when `cause` is the failure of a {@link restartChanged} with a caller's `restart`.
 *
 * @since 0.2.0
 */
export const progressOf = (cause: Cause.Cause<unknown>): Progress | undefined =>
  Context.getOrUndefined(Cause.annotations(cause), RestartProgress)

/**
 * Options of {@link restartChanged}.
 *
 * @since 0.1.0
 */
export interface Options {
  /** Whether the node's stack was running before the configuration was written. */
  readonly wasRunning: boolean
  /** The units in the order they must be restarted (dependencies first). */
  readonly units: ReadonlyArray<ChangedUnit>
  /** Added to the log line of each restart (the caller's phase, slot, ...). */
  readonly annotations?: Readonly<Record<string, unknown>> | undefined
  /**
   * How long each unit must stay active after its restart before the next one
   * is restarted (see {@link awaitSettled}). A restart job finishes as soon as
   * a `Type=simple` unit's program was started, so without this a program
   * that dies right after exec counts as restarted. Default: no check.
   */
  readonly settle?: Duration.Input | undefined
}

// How often a settling unit is looked at; the window's end is always looked at.
const settlePoll = Duration.millis(100)

/**
 * Succeeds when `unit` is active now and stays active, without leaving and
 * re-entering that state (an automatic restart), for `window`; otherwise
 * fails with a `NotSettled` {@link SystemdError} carrying what systemd
 * reports about the unit when it was seen down. A unit that is `reloading`
 * counts as up. Meant for long-running units: a `Type=oneshot` unit without
 * `RemainAfterExit=` is inactive once its job is done and never settles.
 *
 * @since 0.2.0
 */
export const awaitSettled: (
  unit: string,
  window: Duration.Input
) => Effect.Effect<void, SystemdError | UnitName.UnitNameError, Systemd> = Effect.fn("RestartChanged.awaitSettled")(
  function* (unit: string, window: Duration.Input) {
    yield* Effect.annotateCurrentSpan("unit", unit)
    const systemd = yield* Systemd
    const span = Duration.fromInputUnsafe(window)
    const look = systemd.show(unit, [...UnitStatusProperties, "ActiveEnterTimestampMonotonic", "NRestarts"])
    const first = yield* look
    const up = (p: Readonly<Record<string, string>>) =>
      (p.ActiveState === "active" || p.ActiveState === "reloading") &&
      p.ActiveEnterTimestampMonotonic === first.ActiveEnterTimestampMonotonic
    const notSettled = (p: Readonly<Record<string, string>>, after: number) => {
      const status = unitStatusOf(p)
      const restarts = p.NRestarts !== undefined && p.NRestarts !== first.NRestarts ? `, restarted by systemd` : ""
      return new SystemdError({
        verb: "restart",
        unit,
        reason: new NotSettledReason({
          detail: `${unit} did not stay active for ${Duration.format(span)} after its restart (seen down after ${after} ms${restarts}): ${describeStatus(status)}`,
          status
        })
      })
    }
    const start = yield* Clock.currentTimeMillis
    const end = start + Duration.toMillis(span)
    if (!up(first)) return yield* notSettled(first, 0)
    let now = start
    while (now < end) {
      yield* Effect.sleep(Duration.millis(Math.min(Duration.toMillis(settlePoll), end - now)))
      now = yield* Clock.currentTimeMillis
      const seen = yield* look
      if (!up(seen)) return yield* notSettled(seen, now - start)
    }
  }
)

/**
 * Restarts, in order, the units whose configuration changed. Does nothing when
 * the node was not already running: a start reads the configuration written
 * before it, and starting units here would start a node that should stay down.
 *
 * Every unit name, changed or not, is decoded first (`UnitName`): one invalid
 * name fails the call with a `UnitNameError` before any unit is restarted,
 * whether the node was running or not.
 *
 * Restarts go through `Systemd.restart` unless `restart` is given; the first
 * failure stops the run. Through `Systemd.restart` it is a
 * {@link RestartError}. A caller that restarts through something else (a
 * container's systemd, a supervisor) passes its own `restart`, which owns the
 * wording of its error: that error is what the call fails with, unchanged,
 * its cause annotated with the {@link Progress} (read with {@link progressOf})
 * and the same facts logged as an error.
 *
 * With `settle` each restart is followed by {@link awaitSettled} on the
 * `Systemd` in context; a caller with its own `restart` composes that check
 * into it instead.
 *
 * @example
 * ```ts
 * import { RestartChanged, type Systemd, type UnitName } from "@hostnode/core"
 * import type { Effect } from "effect"
 *
 * // After an upgrade rewrote containerd's configuration but not the kubelet's:
 * // containerd is restarted, the kubelet is not, and every name was checked first.
 * const afterUpgrade: Effect.Effect<
 *   void,
 *   RestartChanged.RestartError | UnitName.UnitNameError,
 *   Systemd.Systemd
 * > = RestartChanged.restartChanged({
 *   wasRunning: true,
 *   units: [
 *     { unit: "containerd.service", changed: true },
 *     { unit: "kubelet.service", changed: false }
 *   ],
 *   settle: "2 seconds"
 * })
 * ```
 *
 * @since 0.1.0
 */
export function restartChanged(
  options: Options & { readonly restart?: undefined }
): Effect.Effect<void, RestartError | UnitName.UnitNameError, Systemd>
export function restartChanged<E, R>(
  options: Options & {
    readonly restart: (unit: string) => Effect.Effect<void, E, R>
    readonly settle?: undefined
  }
): Effect.Effect<void, E | UnitName.UnitNameError, R>
export function restartChanged<E, R>(
  options: Options & { readonly restart?: ((unit: string) => Effect.Effect<void, E, R>) | undefined }
): Effect.Effect<void, E | RestartError | UnitName.UnitNameError, R | Systemd> {
  return run(options) as Effect.Effect<void, E | RestartError | UnitName.UnitNameError, R | Systemd>
}

// The one implementation behind the overloads of restartChanged.
const run = Effect.fn("RestartChanged.restartChanged")(function* (
  options: Options & { readonly restart?: ((unit: string) => Effect.Effect<void, unknown, unknown>) | undefined }
) {
  // Decode first, then act: a bad name in the middle must not leave the
  // node half-restarted.
  for (const u of options.units) yield* UnitName.decode(u.unit)
  if (!options.wasRunning) {
    yield* Effect.logDebug("node was not running; nothing to restart").pipe(
      Effect.annotateLogs({ ...options.annotations })
    )
    return
  }
  const changed = options.units.filter((u) => u.changed).map((u) => u.unit)
  const own = options.restart
  const settle = options.settle
  const restarted: Array<string> = []
  for (const [i, unit] of changed.entries()) {
    const progress = (): Progress => ({ unit, restarted: [...restarted], notAttempted: changed.slice(i + 1) })
    if (own === undefined) {
      const systemd = yield* Systemd
      yield* systemd
        .restart(unit)
        .pipe(Effect.mapError((cause) => new RestartError({ ...progress(), reason: new RestartFailed({ cause }) })))
      if (settle !== undefined) {
        yield* awaitSettled(unit, settle).pipe(
          Effect.mapError((cause) => new RestartError({ ...progress(), reason: new NotSettled({ cause }) }))
        )
      }
    } else {
      yield* own(unit).pipe(
        Effect.catchCause((cause) => {
          const p = progress()
          return Effect.logError(
            `restart of ${unit} failed (already restarted: ${p.restarted.length === 0 ? "none" : p.restarted.join(", ")}; not attempted: ${p.notAttempted.length === 0 ? "none" : p.notAttempted.join(", ")})`
          ).pipe(
            Effect.annotateLogs({ ...options.annotations, unit }),
            Effect.andThen(Effect.failCause(Cause.annotate(cause, Context.make(RestartProgress, p))))
          )
        })
      )
    }
    restarted.push(unit)
    yield* Effect.logInfo("restarted unit whose configuration changed").pipe(
      Effect.annotateLogs({ ...options.annotations, unit })
    )
  }
})
