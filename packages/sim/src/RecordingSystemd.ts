/**
 * A `Systemd` that records every call and asks nothing of a service manager:
 * the one `MemoryHost.layer` provides, so a program that takes a snapshot runs
 * on the simulated host with no extra layer and its test can say which calls it
 * made. Every job and `daemonReload` succeeds and is recorded in order; unit
 * names are decoded as by every `Systemd`, so an invalid one still fails with
 * `UnitNameError`. It keeps one fact per unit (`start`/`restart` make it
 * active, `stop` inactive) for `isActive` and `show`. No unit files, processes
 * or failures: for those use `MemoryNode.layer`; for code that must never reach
 * systemd, `RefusingSystemd`.
 *
 * @since 0.2.0
 */
import { Systemd } from "@hostnode/core"
import { Context, Effect, Layer, Ref } from "effect"

/**
 * One call as the service received it, after its unit name was decoded. `isActive` is
 * recorded as the `show` of `ActiveState` it is made of.
 *
 * @since 0.2.0
 */
type Call =
  | { readonly verb: "start" | "stop" | "restart" | "reload"; readonly unit: string }
  | { readonly verb: "daemon-reload" }
  | { readonly verb: "show"; readonly unit: string; readonly properties: ReadonlyArray<string> }

/**
 * What a test reads back: the calls so far and the units the recorder holds active.
 *
 * @category services
 * @since 0.2.0
 */
export interface RecordingSystemd {
  /** Every call so far, oldest first. */
  readonly calls: Effect.Effect<ReadonlyArray<Call>>
  /** Forgets the calls so far (the units' states stay). */
  readonly clearCalls: Effect.Effect<void>
  /** The units a `start` or `restart` left active, sorted. */
  readonly activeUnits: Effect.Effect<ReadonlyArray<string>>
}

/**
 * The key of the recorder, provided next to `Systemd.Systemd` by {@link layer} (and so by `MemoryHost.layer`).
 *
 * @category services
 * @since 0.2.0
 */
export const RecordingSystemd = Context.Service<RecordingSystemd>("@hostnode/sim/RecordingSystemd")

/**
 * A new recorder and the `Systemd` that feeds it, sharing one state; each run of `make` is independent.
 *
 * @since 0.2.0
 */
const make: Effect.Effect<{ readonly systemd: Systemd.Systemd; readonly recorder: RecordingSystemd }> = Effect.gen(
  function* () {
    const calls = yield* Ref.make<ReadonlyArray<Call>>([])
    const active = yield* Ref.make<ReadonlySet<string>>(new Set())
    const record = (call: Call) => Ref.update(calls, (xs) => [...xs, call])
    const systemd = Systemd.make({
      job: (verb, unit) =>
        Effect.andThen(
          record({ verb, unit }),
          Ref.update(active, (units) => {
            if (verb === "reload") return units
            const next = new Set(units)
            if (verb === "stop") next.delete(unit)
            else next.add(unit)
            return next
          })
        ),
      daemonReload: record({ verb: "daemon-reload" }),
      show: (unit, properties) =>
        Effect.gen(function* () {
          yield* record({ verb: "show", unit, properties: [...properties] })
          const state = (yield* Ref.get(active)).has(unit) ? "active" : "inactive"
          return Object.fromEntries(properties.map((p) => [p, p === "ActiveState" ? state : ""]))
        })
    })
    const recorder: RecordingSystemd = {
      calls: Ref.get(calls),
      clearCalls: Ref.set(calls, []),
      activeUnits: Effect.map(Ref.get(active), (units) => [...units].sort())
    }
    return { systemd, recorder }
  }
)

/**
 * `Systemd.Systemd` and its {@link RecordingSystemd} recorder over one fresh state; each build is independent.
 *
 * @example
 * ```ts
 * import { RestartChanged } from "@hostnode/core"
 * import { RecordingSystemd } from "@hostnode/sim"
 * import { Effect } from "effect"
 *
 * // Which units a program restarted, without a service manager.
 * const restarted = Effect.gen(function* () {
 *   yield* RestartChanged.restartChanged({ wasRunning: true, units: [{ unit: "kubelet.service", changed: true }] })
 *   const recorder = yield* RecordingSystemd.RecordingSystemd
 *   return yield* recorder.calls
 * }).pipe(Effect.provide(RecordingSystemd.layer))
 * ```
 *
 * @category layers
 * @since 0.2.0
 */
export const layer: Layer.Layer<Systemd.Systemd | RecordingSystemd> = Layer.effectContext(
  Effect.map(make, ({ recorder, systemd }) =>
    Context.make(Systemd.Systemd, systemd).pipe(Context.add(RecordingSystemd, recorder))
  )
)
