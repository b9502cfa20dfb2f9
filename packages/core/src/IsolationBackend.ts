/**
 * The `IsolationBackend` service: how a node root's stack is run and asked
 * about. Isolation modes differ in where the node stack runs (directly on the
 * host, in a container, in a machine); operations that only need to know
 * whether it is up ask this service, not systemd, so they work in every mode.
 *
 * @since 0.1.0
 */
import { Context, type Effect, Schema } from "effect"

/**
 * Names the node root (the slot) whose stack is asked about. A mode with one
 * root per host has one slot; modes that alternate roots across upgrades
 * have several.
 */
export const SlotRef = Schema.String.pipe(Schema.brand("SlotRef"))

/** Names a node root. */
export type SlotRef = typeof SlotRef.Type

/**
 * The backend could not tell whether the stack is up: which slot, why, and the
 * underlying error for a person to read.
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
 */
export interface IsolationBackend {
  readonly name: string
  readonly running: (root: SlotRef) => Effect.Effect<boolean, IsolationError>
}

/** The key of the {@link IsolationBackend} service. */
export const IsolationBackend = Context.Service<IsolationBackend>("@hostnode/core/IsolationBackend")
