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
import { Context, Effect, FileSystem, Layer, Schema } from "effect"
import { ChildProcessSpawner } from "effect/process"
import { DefaultUnits } from "./AgentConfig.ts"
import * as HostCommand from "./HostCommand.ts"
import { makeCommand, Systemd, SystemdError } from "./Systemd.ts"
import { UnitNameError } from "./UnitName.ts"

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
 * Why the backend could not tell: the systemd that runs the stack could not
 * be asked about its units (this host's, or with `pid` the one of the
 * container whose init is that host process), or a unit name it was given is
 * not one.
 *
 * @since 0.3.0
 */
export class SystemdFailed extends Schema.TaggedError<SystemdFailed>()("SystemdFailed", {
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
 * Why the backend could not tell: a {@link ContainerResolver} could not say
 * which container is the slot's (its own state unreadable).
 *
 * @since 0.3.0
 */
export class ResolverFailed extends Schema.TaggedError<ResolverFailed>()("ResolverFailed", {
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
 *
 * @since 0.3.0
 */
export const IsolationErrorReason = Schema.Union([SystemdFailed, ResolverFailed])

/**
 * Why the backend could not tell whether the stack is up.
 *
 * @since 0.3.0
 */
export type IsolationErrorReason = typeof IsolationErrorReason.Type

/**
 * The backend could not tell whether the stack is up: which slot, and why
 * (an {@link IsolationErrorReason} that keeps the underlying error).
 *
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
export const running: (root: SlotRef) => Effect.Effect<boolean, IsolationError, IsolationBackend> = Effect.fn(
  "IsolationBackend.running"
)(function* (root: SlotRef) {
  yield* Effect.annotateCurrentSpan("slot", root)
  const backend = yield* IsolationBackend
  return yield* backend.running(root)
})

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
          Effect.mapError((cause) => new IsolationError({ slot: root, reason: new SystemdFailed({ cause }) }))
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

// ---------------------------------------------------------------------------
// The container mode

/**
 * A process as the kernel reports it in `/proc/<pid>/stat`: its state letter
 * and its start time (clock ticks after boot). The pair (pid, start time)
 * names one process for its whole life: a pid the kernel reused for another
 * process has another start time.
 *
 * @since 0.2.0
 */
export interface ProcessStat {
  readonly pid: number
  readonly state: string
  readonly startTime: string
}

/**
 * Host process `pid` as `/proc/<pid>/stat` says it is, or `undefined` when
 * there is no such process (or only its zombie, which has no namespaces
 * left to run anything in). How the container mode tells a gone container
 * from a live one without asking anything inside it.
 *
 * @since 0.2.0
 */
export const processStat: (pid: number) => Effect.Effect<ProcessStat | undefined, never, FileSystem.FileSystem> =
  Effect.fn("IsolationBackend.processStat")(function* (pid: number) {
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs.readFileString(`/proc/${pid}/stat`).pipe(Effect.orElseSucceed(() => ""))
    // `pid (comm) state ppid ...`: comm may hold blanks and parentheses, so fields count from the last `)`.
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ")
    const [state, startTime] = [fields[0], fields[19]]
    if (state === undefined || startTime === undefined || state === "" || state === "Z" || state === "X") {
      return undefined
    }
    return { pid, state, startTime } satisfies ProcessStat
  })

/**
 * How the container mode finds a slot's container: the host pid of its init
 * (the process whose namespaces the node stack runs in), or `undefined` when
 * the slot has no container now. A failure is for a resolver that cannot
 * tell (its own state unreadable), not for a container that is gone.
 *
 * @since 0.2.0
 */
export type ContainerResolver = (slot: SlotRef) => Effect.Effect<number | undefined, IsolationError>

/**
 * Options of {@link makeContainer}.
 *
 * @since 0.2.0
 */
export interface ContainerOptions {
  /** The slot's container (see {@link ContainerResolver}). */
  readonly resolve: ContainerResolver
  /** The units that must all be active inside the container (default {@link DefaultHostUnits}). */
  readonly units?: ReadonlyArray<string> | undefined
}

/**
 * The backend of the mode that runs the node stack in a container: a slot's
 * stack is up when its container's init is alive and every node unit is
 * active in the container's own systemd (asked with `systemctl` through
 * `nsenter -t <pid> -m -p` on the spawner in context: `Systemd.makeCommand`
 * on a wrapped spawner; `/proc` is read through the FileSystem in context,
 * which must see this host's). A slot whose container is gone, before the question or while it
 * is asked, is `false`, not an error: that is the answer a caller deciding
 * whether to start it needs. A live container whose systemd cannot be asked
 * is an {@link IsolationError} naming the slot and the pid.
 *
 * @since 0.2.0
 */
export const makeContainer = (options: ContainerOptions) =>
  Effect.gen(function* () {
    const context = yield* Effect.context<FileSystem.FileSystem | ChildProcessSpawner.ChildProcessSpawner>()
    const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
    const units = options.units ?? DefaultHostUnits
    const running = (slot: SlotRef) =>
      Effect.gen(function* () {
        const pid = yield* options.resolve(slot)
        if (pid === undefined) return false
        const before = yield* processStat(pid)
        if (before === undefined) return false
        const systemd = yield* makeCommand().pipe(
          Effect.provideService(
            ChildProcessSpawner.ChildProcessSpawner,
            HostCommand.wrapSpawner(spawner, HostCommand.nsenterPrefix(pid))
          )
        )
        const states = yield* Effect.result(Effect.forEach(units, (u) => systemd.isActive(u)))
        if (states._tag === "Success") return states.success.every((s) => s === "active")
        // Gone while it was asked (the same process no longer there): not up, not an error.
        const after = yield* processStat(pid)
        if (after === undefined || after.startTime !== before.startTime) return false
        return yield* new IsolationError({ slot, reason: new SystemdFailed({ pid, cause: states.failure }) })
      }).pipe(Effect.provide(context))
    return IsolationBackend.of({ name: "container", running })
  })

/**
 * The container-mode backend as a layer (see {@link makeContainer});
 * requires a FileSystem that sees this host's `/proc` and the spawner the
 * container's `systemctl` runs through (wrapped with `nsenter`).
 *
 * @since 0.2.0
 */
export const layerContainer = (
  options: ContainerOptions
): Layer.Layer<IsolationBackend, never, FileSystem.FileSystem | ChildProcessSpawner.ChildProcessSpawner> =>
  Layer.effect(IsolationBackend, makeContainer(options))
