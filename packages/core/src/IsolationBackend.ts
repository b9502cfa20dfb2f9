/**
 * The `IsolationBackend` service: how a node root's stack is run and asked
 * about. Isolation modes differ in where the node stack runs (directly on the
 * host, in a container, in a machine); operations that only need to know
 * whether it is up ask this service, not systemd, so they work in every mode.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Schema } from "effect"
import { DefaultUnits } from "./AgentConfig.ts"
import { Systemd } from "./Systemd.ts"

/**
 * Names the node root (the slot) whose stack is asked about. A mode with one
 * root per host has one slot; modes that alternate roots across upgrades
 * have several.
 *
 * @since 0.1.0
 */
export const SlotRef = Schema.String.pipe(Schema.brand("SlotRef"))

/**
 * Names a node root.
 *
 * @since 0.1.0
 */
export type SlotRef = typeof SlotRef.Type

/**
 * The backend could not tell whether the stack is up: which slot, why, and the
 * underlying error for a person to read.
 *
 * @since 0.1.0
 */
export class IsolationError extends Schema.TaggedError<IsolationError>()("IsolationError", {
  slot: Schema.String,
  reason: Schema.String,
  cause: Schema.optionalKey(Schema.Defect())
}) {
  override get message(): string {
    return `cannot tell whether the node stack of slot ${JSON.stringify(this.slot)} is up: ${this.reason}`
  }
}

/**
 * An isolation mode's view of its node roots. `running` is true when the
 * root's node stack is up (for the host mode: its units are active).
 *
 * @since 0.1.0
 */
export interface IsolationBackend {
  readonly name: string
  readonly running: (root: SlotRef) => Effect.Effect<boolean, IsolationError>
}

/**
 * The key of the {@link IsolationBackend} service.
 *
 * @since 0.1.0
 */
export const IsolationBackend = Context.Service<IsolationBackend>("@hostnode/core/IsolationBackend")

/**
 * Whether the node root's stack is up (the Go package's `Running`), asked of
 * the isolation backend in context, so the same call works in every mode.
 *
 * @since 0.1.0
 */
export const running = (root: SlotRef): Effect.Effect<boolean, IsolationError, IsolationBackend> =>
  Effect.flatMap(Effect.service(IsolationBackend), (b) => b.running(root)).pipe(
    Effect.withSpan("running", { attributes: { slot: root } })
  )

/**
 * The units whose activity means the host mode's stack is up, by default.
 *
 * @since 0.1.0
 */
export const DefaultHostUnits: ReadonlyArray<string> = DefaultUnits

/**
 * Options of {@link makeHost}.
 *
 * @since 0.1.0
 */
export interface HostOptions {
  /** The units that must all be active for the stack to be up (default {@link DefaultHostUnits}). */
  readonly units?: ReadonlyArray<string> | undefined
}

/**
 * The backend of the mode that runs the node stack directly on the host, with
 * a single root: the stack is up when all its units are active. A unit that is
 * activating, reloading or failed is not up.
 *
 * @since 0.1.0
 */
export const makeHost = (options?: HostOptions) =>
  Effect.map(Effect.service(Systemd), (systemd) => {
    const units = options?.units ?? DefaultHostUnits
    return IsolationBackend.of({
      name: "host",
      running: (root) =>
        Effect.forEach(units, (u) => systemd.isActive(u)).pipe(
          Effect.map((states) => states.every((s) => s === "active")),
          Effect.mapError((e) => new IsolationError({ slot: root, reason: e.message, cause: e }))
        )
    })
  })

/**
 * The host-mode backend as a layer; requires `Systemd`.
 *
 * @since 0.1.0
 */
export const layerHost = (options?: HostOptions): Layer.Layer<IsolationBackend, never, Systemd> =>
  Layer.effect(IsolationBackend, makeHost(options))
