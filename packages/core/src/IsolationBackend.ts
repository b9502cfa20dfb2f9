/**
 * The `IsolationBackend` service: how a node root's stack is run and asked
 * about. Isolation modes differ in where the node stack runs (directly on the
 * host, in a container, in a machine); operations that only need to know
 * whether it is up ask this service, not systemd, so they work in every mode.
 * Two modes are here: the host (`layerHost`: the units of this host's
 * systemd) and the container (`layerContainer`: a container's init alive and
 * the units of its own systemd active).
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Schema, type Scope } from "effect"
import { Defaults } from "./AgentConfig.ts"
import { Systemd, SystemdError } from "./Systemd.ts"
import { UnitNameError } from "./UnitName.ts"

/**
 * Names the node root (the slot) whose stack is asked about. A mode with one
 * root per host has one slot; modes that alternate roots across upgrades
 * have several.
 *
 * @category models
 * @since 0.1.0
 */
export const SlotRef = Schema.String.pipe(Schema.brand("SlotRef"))

/**
 * Names a node root.
 *
 * @category models
 * @since 0.1.0
 */
export type SlotRef = typeof SlotRef.Type

/**
 * Why the backend could not tell: the systemd that runs the stack could not
 * be asked about its units (this host's, or with `pid` the one of the
 * container whose init is that host process), or a unit name it was given is
 * not one.
 *
 * @category errors
 * @since 0.3.0
 */
export class SystemdFailed extends Schema.Error<SystemdFailed>("@hostnode/core/IsolationBackend/SystemdFailed")({
  _tag: Schema.tag("SystemdFailed"),
  /** The host pid of the container's init, for the container mode. */
  pid: Schema.optionalKey(Schema.Number),
  /** What asking failed with. */
  cause: Schema.Union([SystemdError, UnitNameError])
}) {
  override get message(): string {
    return this.pid === undefined
      ? this.cause.message
      : `the systemd of container process ${this.pid} cannot be asked: ${this.cause.message}`
  }
}

/**
 * Why the backend could not tell: a container resolver (`ContainerOptions.resolve`) could not say
 * which container is the slot's (its own state unreadable).
 *
 * @category errors
 * @since 0.3.0
 */
export class ResolverFailed extends Schema.Error<ResolverFailed>("@hostnode/core/IsolationBackend/ResolverFailed")({
  _tag: Schema.tag("ResolverFailed"),
  /** What the resolver could not do, for a person to read. */
  detail: Schema.String,
  /** The underlying error, where there is one. */
  cause: Schema.optionalKey(Schema.Defect())
}) {
  override get message(): string {
    return this.detail
  }
}

/**
 * Why the backend could not tell whether the stack is up.
 */
const IsolationErrorReason = Schema.Union([SystemdFailed, ResolverFailed])

/**
 * The backend could not tell whether the stack is up: which slot, and why
 * (`SystemdFailed` or `ResolverFailed`, keeping the underlying error).
 *
 * @category errors
 * @since 0.1.0
 */
export class IsolationError extends Schema.TaggedError<IsolationError>()("IsolationError", {
  reason: IsolationErrorReason,
  slot: Schema.String
}) {
  override get message(): string {
    return `cannot tell whether the node stack of slot ${JSON.stringify(this.slot)} is up: ${this.reason.message}`
  }
}

/**
 * An isolation mode's view of its node roots. `running` is true when the
 * root's node stack is up (for the host mode: its units are active).
 *
 * @category services
 * @since 0.1.0
 */
export interface IsolationBackend {
  readonly name: string
  readonly running: (root: SlotRef) => Effect.Effect<boolean, IsolationError>
}

/**
 * The key of the {@link IsolationBackend} service.
 *
 * @category services
 * @since 0.1.0
 */
export const IsolationBackend = Context.Service<IsolationBackend>("@hostnode/core/IsolationBackend")

/**
 * Whether the node root's stack is up (the Go package's `Running`), asked of
 * the isolation backend in context, so the same call works in every mode.
 *
 * @example
 * ```ts
 * import { IsolationBackend } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // Whether the host's node stack (containerd and the kubelet) is up; needs a Systemd layer.
 * const wasRunning = IsolationBackend.running(IsolationBackend.SlotRef.make("host")).pipe(
 *   Effect.provide(IsolationBackend.layerHost())
 * )
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const running: (root: SlotRef) => Effect.Effect<boolean, IsolationError, IsolationBackend> = Effect.fn(
  "IsolationBackend.running"
)(function* (root: SlotRef) {
  yield* Effect.annotateCurrentSpan("slot", root)
  const backend = yield* IsolationBackend
  return yield* backend.running(root)
})

/** The host mode's backend (see {@link layerHost}). */
const makeHost = (options?: { readonly units?: ReadonlyArray<string> | undefined }) =>
  Effect.map(Effect.service(Systemd), (systemd) => {
    const units = options?.units ?? Defaults.units
    return IsolationBackend.of({
      name: "host",
      running: (root) =>
        Effect.forEach(units, (u) => systemd.isActive(u)).pipe(
          Effect.map((states) => states.every((s) => s === "active")),
          Effect.mapError((cause) => new IsolationError({ slot: root, reason: new SystemdFailed({ cause }) }))
        )
    })
  })

/**
 * The backend of the mode that runs the node stack directly on the host, with
 * a single root, as a layer (requires `Systemd`): the stack is up when all
 * its units are active. A unit that is activating, reloading or failed is not up.
 * `units`: the units that must all be active (default
 * `AgentConfig.Defaults.units`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layerHost = (options?: {
  readonly units?: ReadonlyArray<string> | undefined
}): Layer.Layer<IsolationBackend, never, Systemd> => Layer.effect(IsolationBackend, makeHost(options))

// ---------------------------------------------------------------------------
// The container mode

/**
 * Options of {@link layerContainer}.
 *
 * @category models
 * @since 0.2.0
 */
export interface ContainerOptions {
  /**
   * How the container mode finds a slot's container: the host pid of its init
   * (the process whose namespaces the node stack runs in), or `undefined` when
   * the slot has no container now. A failure is for a resolver that cannot
   * tell (its own state unreadable), not for a container that is gone.
   */
  readonly resolve: (slot: SlotRef) => Effect.Effect<number | undefined, IsolationError>
  /** The units that must all be active inside the container (default `AgentConfig.Defaults.units`). */
  readonly units?: ReadonlyArray<string> | undefined
  /**
   * The systemd of the container whose init is host process `pid`, for the
   * scope: the composition's own way in (`NodeContainer` pins the process
   * first and speaks D-Bus through its sockets). Once that process has
   * exited, it, or any of its calls, fails with the `Gone` reason: a pid the
   * kernel gave another process is never asked.
   */
  readonly systemdOf: (pid: number) => Effect.Effect<Systemd, SystemdError, Scope.Scope>
}

/** The container mode's backend (see {@link layerContainer}). */
const makeContainer = (options: ContainerOptions): IsolationBackend => {
  const units = options.units ?? Defaults.units
  const running = (slot: SlotRef) =>
    Effect.gen(function* () {
      const pid = yield* options.resolve(slot)
      if (pid === undefined) return false
      const states = yield* Effect.result(
        Effect.scoped(
          Effect.flatMap(options.systemdOf(pid), (systemd) => Effect.forEach(units, (u) => systemd.isActive(u)))
        )
      )
      if (states._tag === "Success") return states.success.every((s) => s === "active")
      const cause = states.failure
      // Gone before or while it was asked: not up, not an error.
      if (cause._tag === "SystemdError" && cause.reason._tag === "Gone") return false
      return yield* new IsolationError({ slot, reason: new SystemdFailed({ pid, cause }) })
    })
  return IsolationBackend.of({ name: "container", running })
}

/**
 * The backend of the mode that runs the node stack in a container, as a
 * layer: a slot's stack is up when its container's init is alive and every
 * node unit is active in the container's own systemd (asked through
 * `systemdOf`). A slot whose container is gone, before the question or while
 * it is asked (a `Gone` failure), is `false`, not an error: that is the
 * answer a caller deciding whether to start it needs. A live container whose
 * systemd cannot be asked is an {@link IsolationError} naming the slot and the pid.
 *
 * @category layers
 * @since 0.2.0
 */
export const layerContainer = (options: ContainerOptions): Layer.Layer<IsolationBackend> =>
  Layer.succeed(IsolationBackend, makeContainer(options))
