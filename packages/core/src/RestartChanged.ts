/**
 * Restarting, in order, the systemd units whose configuration changed (the Go
 * package's `RestartChanged` and `ChangedUnit`). An upgrade rewrites unit
 * files, drop-ins and the configuration they read; a running unit only picks
 * those up when restarted, and a stopped node reads them at its next start.
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import { Systemd } from "./Systemd.ts"

/** A unit and whether its configuration changed. */
export const ChangedUnit = Schema.Struct({
  unit: Schema.String,
  changed: Schema.Boolean
})

/** A unit and whether its configuration changed. */
export type ChangedUnit = typeof ChangedUnit.Type

/**
 * A restart failed. It names the unit that failed, the units restarted before
 * it (they run the new configuration) and those never tried (they still run
 * the old one), so a caller can tell exactly what state the node is in.
 */
export class RestartError extends Schema.TaggedError<RestartError>()("RestartError", {
  unit: Schema.String,
  restarted: Schema.Array(Schema.String),
  notAttempted: Schema.Array(Schema.String),
  cause: Schema.Defect()
}) {
  override get message(): string {
    const cause = this.cause instanceof Error ? this.cause.message : String(this.cause)
    const before = this.restarted.length === 0 ? "none" : this.restarted.join(", ")
    return `restart of ${this.unit} failed (already restarted: ${before}): ${cause}`
  }
}

/** Options of {@link restartChanged}. */
export interface Options {
  /** Whether the node's stack was running before the configuration was written. */
  readonly wasRunning: boolean
  /** The units in the order they must be restarted (dependencies first). */
  readonly units: ReadonlyArray<ChangedUnit>
  /** Added to the log line of each restart (the caller's phase, slot, ...). */
  readonly annotations?: Readonly<Record<string, unknown>> | undefined
}

/**
 * Restarts, in order, the units whose configuration changed. Does nothing when
 * the node was not already running: a start reads the configuration written
 * before it, and starting units here would start a node that should stay down.
 * Stops at the first failure with a {@link RestartError}.
 *
 * Restarts go through `Systemd.restart` unless `restart` is given: a caller
 * that restarts through something else (a container's systemd, a supervisor)
 * passes its own, and its error is kept as the cause.
 */
export function restartChanged(
  options: Options & { readonly restart?: undefined }
): Effect.Effect<void, RestartError, Systemd>
export function restartChanged<E, R>(
  options: Options & { readonly restart: (unit: string) => Effect.Effect<void, E, R> }
): Effect.Effect<void, RestartError, R>
export function restartChanged<E, R>(
  options: Options & { readonly restart?: ((unit: string) => Effect.Effect<void, E, R>) | undefined }
): Effect.Effect<void, RestartError, R | Systemd> {
  return Effect.gen(function* () {
    if (!options.wasRunning) {
      yield* Effect.logDebug("node was not running; nothing to restart").pipe(
        Effect.annotateLogs({ ...options.annotations })
      )
      return
    }
    const changed = options.units.filter((u) => u.changed).map((u) => u.unit)
    const restart: (unit: string) => Effect.Effect<void, unknown, R | Systemd> =
      options.restart ?? ((unit) => Effect.flatMap(Effect.service(Systemd), (s) => s.restart(unit)))
    const restarted: Array<string> = []
    for (const [i, unit] of changed.entries()) {
      yield* restart(unit).pipe(
        Effect.mapError(
          (cause) => new RestartError({ unit, restarted: [...restarted], notAttempted: changed.slice(i + 1), cause })
        )
      )
      restarted.push(unit)
      yield* Effect.logInfo("restarted unit whose configuration changed").pipe(
        Effect.annotateLogs({ ...options.annotations, unit })
      )
    }
  }).pipe(Effect.withSpan("restartChanged"))
}
