/**
 * Restarting, in order, the systemd units whose configuration changed (the Go
 * package's `RestartChanged` and `ChangedUnit`). An upgrade rewrites unit
 * files, drop-ins and the configuration they read; a running unit only picks
 * those up when restarted, and a stopped node reads them at its next start.
 *
 * @since 0.1.0
 */
import { Cause, Clock, Context, Duration, Effect, Schema } from "effect"
import * as Track from "./internal/metrics.ts"
import { SystemdCallTimeout as CallTimeout } from "./internal/systemd/callTimeout.ts"
import { describeStatus, UnitStatusProperties, unitStatusOf } from "./internal/systemd/status.ts"
import { NotSettled as NotSettledReason, Systemd, SystemdError } from "./Systemd.ts"
import * as UnitName from "./UnitName.ts"

/**
 * Why a restart failed, told by its `_tag`; `cause` is what systemd's call
 * failed with:
 * - `RestartFailed`: `Systemd.restart` failed (the job failed, the unit is
 *   missing, systemd did not answer);
 * - `NotSettled`: the unit was restarted but did not stay active for the
 *   settle window (see {@link awaitSettled}; `cause` is then a `NotSettled`
 *   `SystemdError`), or systemd could not be asked whether it did;
 * - `ReloadFailed`: the daemon-reload before the first restart (see
 *   `Options.reload`), or the `NeedDaemonReload` query, failed; nothing
 *   was restarted.
 *
 * @category errors
 * @since 0.4.0
 */
export class Failure extends Schema.Error<Failure>("@hostnode/core/RestartChanged/Failure")({
  _tag: Schema.Literals(["RestartFailed", "NotSettled", "ReloadFailed"]),
  cause: Schema.Union([SystemdError, UnitName.UnitNameError])
}) {
  override get message(): string {
    return this._tag === "ReloadFailed"
      ? `the daemon-reload before the restarts failed: ${this.cause.message}`
      : this.cause.message
  }
}

/**
 * A restart failed. It names the unit that failed, the units restarted before
 * it (they run the new configuration) and those never tried (they still run
 * the old one), so a caller can tell exactly what state the node is in; the
 * reason says whether the restart failed or the unit did not stay up after it.
 *
 * @category errors
 * @since 0.1.0
 */
export class RestartError extends Schema.TaggedError<RestartError>()("RestartError", {
  reason: Failure,
  unit: Schema.String,
  restarted: Schema.Array(Schema.String),
  notAttempted: Schema.Array(Schema.String)
}) {
  override get message(): string {
    const before = this.restarted.length === 0 ? "none" : this.restarted.join(", ")
    return `restart of ${this.unit} failed (already restarted: ${before}): ${this.reason.message}`
  }
}

/** Where a run of restarts stopped: the unit whose restart failed, those restarted before it, those never tried. */
type Progress = Pick<RestartError, "unit" | "restarted" | "notAttempted">

// The annotation a failure of a caller's `restart` carries: its error is kept
// exactly as it is (the caller owns its wording); the cause says where the run stopped.
const RestartProgress = Context.Service<Progress>("@hostnode/core/RestartChanged/RestartProgress")

/**
 * Where the restarts stopped, when `cause` is the failure of a {@link restartChanged} with a caller's `restart`:
 * the unit whose restart failed, those restarted before it, those never tried (as a {@link RestartError} says).
 *
 * @example
 * ```ts
 * import { RestartChanged } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // Restarts through the node container's own systemd (its error is kept as it is);
 * // where the run stopped goes into the node's condition.
 * const restartInContainer = (
 *   restart: (unit: string) => Effect.Effect<void, Error>,
 *   setCondition: (message: string) => Effect.Effect<void>
 * ) =>
 *   RestartChanged.restartChanged({
 *     wasRunning: true,
 *     units: [
 *       { unit: "containerd.service", changed: true },
 *       { unit: "kubelet.service", changed: true }
 *     ],
 *     restart
 *   }).pipe(
 *     Effect.tapCause((cause) => {
 *       const progress = RestartChanged.progressOf(cause)
 *       if (progress === undefined) return Effect.void
 *       const notTried = progress.notAttempted.length === 0 ? "none" : progress.notAttempted.join(", ")
 *       return setCondition(`restart of ${progress.unit} failed; not tried: ${notTried}`)
 *     })
 *   )
 * ```
 *
 * @category operations
 * @since 0.2.0
 */
export const progressOf = (
  cause: Cause.Cause<unknown>
): Pick<RestartError, "unit" | "restarted" | "notAttempted"> | undefined =>
  Context.getOrUndefined(Cause.annotations(cause), RestartProgress)

/**
 * Options of {@link restartChanged}.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** Whether the node's stack was running before the configuration was written. */
  readonly wasRunning: boolean
  /**
   * The units in the order they must be restarted (dependencies first), each
   * with whether its configuration changed (the Go package's `ChangedUnit`).
   */
  readonly units: ReadonlyArray<{ readonly unit: string; readonly changed: boolean }>
  /** Added to the log line of each restart (the caller's phase, slot, ...). */
  readonly annotations?: Readonly<Record<string, unknown>> | undefined
  /**
   * How long each unit must stay active after its restart before the next one
   * is restarted (see {@link awaitSettled}). A restart job finishes as soon as
   * a `Type=simple` unit's program was started, so without this a program
   * that dies right after exec counts as restarted. Default: no check.
   */
  readonly settle?: Duration.Input | undefined
  /**
   * Whether systemd re-reads unit files before the restarts (default
   * `"always"`). A running unit keeps the definition systemd loaded until a
   * daemon-reload: a restart without one runs the old `ExecStart=`,
   * `Environment=` and drop-ins, whatever the files say now. The reload comes
   * before the first restart and only when something is to be restarted:
   *
   * - `"always"` (the default): one daemon-reload, whatever the units report.
   * - `"auto"`: one daemon-reload when a unit to restart reports
   *   `NeedDaemonReload=yes`. systemd 252 does not report every change: a
   *   drop-in in a drop-in directory created after systemd last read its unit
   *   directories (`kubelet.service.d/` made by the upgrade), a unit file put
   *   in a directory of higher precedence (`/etc/systemd/system` over
   *   `/lib/systemd/system`), and a file whose modification time is not newer
   *   than when it was loaded (a restore that keeps recorded times, `touch -r`)
   *   all read `no`, and the restart then runs the old definition. The first
   *   reads `yes` only once systemd happens to load some unit it did not hold.
   * - `"never"`: no reload; for a caller that reloaded itself.
   *
   * The configuration files a unit reads itself (`EnvironmentFile=`, its own
   * config) need no reload: they are read when it starts.
   *
   * @since 0.4.0
   */
  readonly reload?: "always" | "auto" | "never" | undefined
  /**
   * How long each call to systemd may take, a restart job until systemd
   * reports it finished included (`Layers.SystemdCallTimeout` for the calls of
   * this run; default: the layer's own limit, 3 minutes). A job that does
   * not finish in time fails the run with a `Timeout` reason; the job itself
   * is left to systemd.
   *
   * @since 0.4.0
   */
  readonly jobTimeout?: Duration.Input | undefined
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
 * @example
 * ```ts
 * import { RestartChanged, Systemd } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // A start counts once the kubelet stays up for 10 seconds, not when a crash-looping kubelet's job succeeds.
 * const startKubelet = Effect.gen(function* () {
 *   const systemd = yield* Systemd.Systemd
 *   yield* systemd.start("kubelet.service")
 *   yield* RestartChanged.awaitSettled("kubelet.service", "10 seconds")
 * })
 * ```
 *
 * @category operations
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
 * its cause annotated with where the run stopped (read with {@link progressOf})
 * and the same facts logged as an error.
 *
 * Before the first restart, systemd re-reads its unit files as `reload` says
 * (see `Options.reload`: by default one daemon-reload whenever anything
 * is to be restarted, so the restarts run the definitions on disk); a reload
 * that fails is a {@link RestartError} with reason `ReloadFailed`, and
 * nothing was restarted. With `settle` each restart is followed by
 * {@link awaitSettled} on the `Systemd` in context. A caller with its own
 * `restart` composes those into it instead: it reloads its systemd itself
 * (`reload` does not apply) and checks that the units settle.
 *
 * Each unit's outcome is counted in `Metrics.Metrics.unitRestarts` (and how long its
 * restart took in `Metrics.Metrics.unitRestartDuration`), each reload in
 * `Metrics.Metrics.daemonReloads`; the run's span carries the units to restart, the
 * policy, whether it reloaded and how many were restarted. At `Info` the run
 * logs one line; each restart is logged at `Debug`.
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
 *   settle: "2 seconds",
 *   reload: "always"
 * })
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export function restartChanged(
  options: Options & { readonly restart?: undefined }
): Effect.Effect<void, RestartError | UnitName.UnitNameError, Systemd>
export function restartChanged<E, R>(
  options: Options & {
    readonly restart: (unit: string) => Effect.Effect<void, E, R>
    readonly settle?: undefined
    readonly reload?: undefined
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
  const policy: NonNullable<Options["reload"]> = own === undefined ? (options.reload ?? "always") : "never"
  yield* Effect.annotateCurrentSpan({ units: changed, reload: policy })
  if (changed.length === 0) {
    yield* Effect.logDebug("no unit's configuration changed; nothing to restart").pipe(
      Effect.annotateLogs({ ...options.annotations })
    )
    return
  }
  const restarted: Array<string> = []
  const progress = (i: number): Progress => ({
    unit: changed[i] as string,
    restarted: [...restarted],
    notAttempted: changed.slice(i + 1)
  })
  // Every unit after a failed one still runs the old configuration.
  const notAttempted = (i: number) =>
    Effect.forEach(changed.slice(i + 1), (u) => Track.recordRestart(u, "not_attempted"))
  const reloaded = policy === "never" ? false : yield* reloadFirst(policy, changed, progress(0))
  for (const [i, unit] of changed.entries()) {
    const start = yield* Clock.currentTimeMillis
    const took = Effect.map(Clock.currentTimeMillis, (now) => (now - start) / 1000)
    if (own === undefined) {
      const systemd = yield* Systemd
      yield* systemd.restart(unit).pipe(
        Effect.tapError(() =>
          Effect.flatMap(took, (s) => Effect.andThen(Track.recordRestart(unit, "failed", s), notAttempted(i)))
        ),
        Effect.mapError(
          (cause) => new RestartError({ ...progress(i), reason: new Failure({ _tag: "RestartFailed", cause }) })
        )
      )
      if (settle !== undefined) {
        yield* awaitSettled(unit, settle).pipe(
          Effect.tapError(() =>
            Effect.flatMap(took, (s) => Effect.andThen(Track.recordRestart(unit, "not_settled", s), notAttempted(i)))
          ),
          Effect.mapError(
            (cause) => new RestartError({ ...progress(i), reason: new Failure({ _tag: "NotSettled", cause }) })
          )
        )
      }
    } else {
      yield* own(unit).pipe(
        Effect.catchCause((cause) => {
          const p = progress(i)
          return Effect.logError(
            `restart of ${unit} failed (already restarted: ${p.restarted.length === 0 ? "none" : p.restarted.join(", ")}; not attempted: ${p.notAttempted.length === 0 ? "none" : p.notAttempted.join(", ")})`
          ).pipe(
            Effect.annotateLogs({ ...options.annotations, unit }),
            Effect.andThen(Effect.flatMap(took, (s) => Track.recordRestart(unit, "failed", s))),
            Effect.andThen(notAttempted(i)),
            Effect.andThen(Effect.failCause(Cause.annotate(cause, Context.make(RestartProgress, p))))
          )
        })
      )
    }
    restarted.push(unit)
    yield* Track.recordRestart(unit, "restarted", yield* took)
    yield* Effect.logDebug("restarted unit whose configuration changed").pipe(
      Effect.annotateLogs({ ...options.annotations, unit })
    )
  }
  yield* Effect.annotateCurrentSpan({ reloaded, restarted: restarted.length })
  yield* Effect.logInfo(
    `restarted ${restarted.length} unit(s) whose configuration changed: ${restarted.join(", ")}`
  ).pipe(Effect.annotateLogs({ ...options.annotations, reload: policy, reloaded }))
}, measured)

// The run's duration and outcome (`Metrics.Metrics.operationDuration`), and `jobTimeout`: the time limit of every systemd call of the run.
function measured<A, E, R>(self: Effect.Effect<A, E, R>, options: Options): Effect.Effect<A, E, R> {
  const tracked = Track.track<A, E>("RestartChanged.restartChanged")(self)
  return options.jobTimeout === undefined
    ? tracked
    : Effect.provideService(tracked, CallTimeout, Duration.fromInputUnsafe(options.jobTimeout))
}

/**
 * The daemon-reload before the first restart, as `policy` says: whether it
 * reloaded. With `"auto"`, each unit to restart is asked for
 * `NeedDaemonReload` first (in order, up to the first that says yes).
 */
const reloadFirst = (
  policy: "always" | "auto",
  changed: ReadonlyArray<string>,
  progress: Progress
): Effect.Effect<boolean, RestartError, Systemd> =>
  Effect.gen(function* () {
    const systemd = yield* Systemd
    if (policy === "auto") {
      let needed: string | undefined
      for (const unit of changed) {
        const p = yield* systemd.show(unit, ["NeedDaemonReload"])
        if (p.NeedDaemonReload === "yes") {
          needed = unit
          break
        }
      }
      if (needed === undefined) {
        yield* Effect.logDebug("no unit to restart reports NeedDaemonReload; not reloading (reload: auto)")
        return false
      }
      yield* Effect.logDebug(`${needed} reports NeedDaemonReload; reloading before the restarts`)
    }
    yield* systemd.daemonReload
    yield* Track.recordReload(policy)
    return true
  }).pipe(
    Effect.mapError((cause) => new RestartError({ ...progress, reason: new Failure({ _tag: "ReloadFailed", cause }) })),
    Effect.tapError(() => Effect.forEach(changed, (u) => Track.recordRestart(u, "not_attempted")))
  )
