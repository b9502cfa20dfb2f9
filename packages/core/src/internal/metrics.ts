/**
 * How the operations update `Metrics` and annotate their spans: one helper
 * per operation, applied where the operation is defined (as an `Effect.fn`
 * pipeable or one call at its end), deriving the counts from the operation's
 * report (or the error that carries it) rather than from its internals. The
 * boundary: what is recorded, from what; the definitions are `Metrics.ts`'s.
 *
 * Span attributes are what an operator filters traces by: the host root, the
 * prefixes or paths, the units, the snapshot directory, and the counts of
 * the run (set when it ends).
 */
import { Cause, Clock, Context, Effect, Exit, Metric, type Scope } from "effect"
import type * as HostPath from "../HostPath.ts"
import { Metrics } from "../Metrics.ts"
import { rootLabel } from "./hostPath/root.ts"

/** How a run ended, as the `outcome` label says it. */
type Outcome = "success" | "failure" | "interrupted"

const outcomeOf = (exit: Exit.Exit<unknown, unknown>): Outcome =>
  Exit.isSuccess(exit) ? "success" : Cause.hasInterruptsOnly(exit.cause) ? "interrupted" : "failure"

/**
 * The operation being run, for a step several operations share (the unmount
 * loop) to label its counts with. Set by {@link track}.
 */
export const CurrentOperation = Context.Reference<string>("@hostnode/core/internal/metrics/CurrentOperation", {
  defaultValue: () => "unknown"
})

/** How many tracked operations the current one runs inside, itself included (0 outside any). */
const OperationDepth = Context.Reference<number>("@hostnode/core/internal/metrics/OperationDepth", {
  defaultValue: () => 0
})

/**
 * An operation's one summary line: at `Info` for an operation a caller ran,
 * at `Debug` for one another operation runs (the teardown's unmount), so a
 * run logs one line per operation at `Info`.
 */
export const logSummary = (...message: ReadonlyArray<unknown>): Effect.Effect<void> =>
  Effect.gen(function* () {
    const depth = yield* OperationDepth
    yield* depth > 1 ? Effect.logDebug(...message) : Effect.logInfo(...message)
  })

const add = (metric: Metric.Counter<number>, attributes: Record<string, string>, n: number) =>
  Metric.update(Metric.withAttributes(metric, attributes), n)

/**
 * One run of `operation`: its span gets `attributes` at the start, its
 * duration goes into `Metrics.operationDuration` with its outcome, and
 * `onExit` records what the run's result (or error) says.
 */
export const track =
  <A, E>(
    operation: string,
    options: {
      readonly attributes?: Readonly<Record<string, unknown>> | undefined
      readonly onExit?: ((exit: Exit.Exit<A, E>) => Effect.Effect<void>) | undefined
    } = {}
  ) =>
  <R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.flatMap(Clock.currentTimeMillis, (start) =>
      (options.attributes === undefined
        ? self
        : Effect.andThen(Effect.annotateCurrentSpan(options.attributes), self)
      ).pipe(
        Effect.provideService(CurrentOperation, operation),
        Effect.updateService(OperationDepth, (depth) => depth + 1),
        Effect.onExit((exit) =>
          Effect.gen(function* () {
            const seconds = ((yield* Clock.currentTimeMillis) - start) / 1000
            yield* Metric.update(
              Metric.withAttributes(Metrics.operationDuration, { operation, outcome: outcomeOf(exit) }),
              seconds
            )
            if (options.onExit !== undefined) yield* options.onExit(exit)
          })
        )
      )
    )

// ---------------------------------------------------------------------------
// unmounts

/** An unmount operation (`Unmount.unmountBelow` and its two siblings), as an `Effect.fn` pipeable. */
export const unmount =
  (operation: string) =>
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    prefixes: ReadonlyArray<string>,
    options?: { readonly hostRoot?: string | HostPath.HostRoot | undefined }
  ): Effect.Effect<A, E, R> =>
    track<A, E>(operation, { attributes: { hostRoot: rootLabel(options?.hostRoot), prefixes: [...prefixes] } })(self)

/**
 * The counts of one pass of the unmount loop every unmount operation runs
 * once: the mounts it detached and those that remain, under the operation
 * being run (the loop itself puts them on the span).
 */
export const recordUnmounts = (
  report: { readonly unmounted: ReadonlyArray<unknown> },
  remaining: ReadonlyArray<unknown>
): Effect.Effect<void> =>
  Effect.gen(function* () {
    const operation = yield* CurrentOperation
    yield* add(Metrics.mountsDetached, { operation }, report.unmounted.length)
    yield* add(Metrics.mountsRemaining, { operation }, remaining.length)
  })

// ---------------------------------------------------------------------------
// removals

/** What a removal reports: `SafeRemove.Report`, and the part of a `Repave.ResetError` that says the same. */
interface Removal {
  readonly removed: ReadonlyArray<string>
  readonly kept: ReadonlyArray<{ readonly reason: string }>
  /** The count, where the list holds only the first paths (`SafeRemove.Report`). */
  readonly removedCount?: number
}

/** How many paths a removal removed. The one place that reads it off a report. */
const removedCount = (r: Removal): number => r.removedCount ?? r.removed.length

const recordRemoval = (operation: string, r: Removal): Effect.Effect<void> =>
  Effect.gen(function* () {
    yield* add(Metrics.pathsRemoved, { operation }, removedCount(r))
    const byReason = new Map<string, number>()
    for (const k of r.kept) byReason.set(k.reason, (byReason.get(k.reason) ?? 0) + 1)
    for (const [reason, n] of byReason) yield* add(Metrics.pathsKept, { operation, reason }, n)
    yield* Effect.annotateCurrentSpan({ removed: removedCount(r), kept: r.kept.length })
  })

/** A reset's error carries what it removed and kept before it failed. */
const isRemovalError = (e: unknown): e is Removal & { readonly _tag: "ResetError" } =>
  typeof e === "object" && e !== null && "_tag" in e && e._tag === "ResetError"

type RootOption = { readonly hostRoot?: string | HostPath.HostRoot | undefined } | undefined

/** The span attributes of each removal, from its arguments: the host root, and the paths or directory given. */
const removalAttributes = {
  "SafeRemove.remove": (paths: ReadonlyArray<string>, options?: RootOption) => ({
    hostRoot: rootLabel(options?.hostRoot),
    paths: [...paths]
  }),
  "SafeRemove.empty": (dir: string, options?: RootOption) => ({ hostRoot: rootLabel(options?.hostRoot), dir }),
  "Repave.resetCniState": (options?: RootOption) => ({ hostRoot: rootLabel(options?.hostRoot) }),
  "Repave.resetKubeletIdentity": (_: unknown, options?: RootOption) => ({ hostRoot: rootLabel(options?.hostRoot) }),
  "Repave.teardownKubeletDir": (options?: RootOption) => ({ hostRoot: rootLabel(options?.hostRoot) })
} as const

/** The removals. */
type RemovalOperation = keyof typeof removalAttributes

const recordRemovalExit = (operation: string, exit: Exit.Exit<Removal, unknown>): Effect.Effect<void> => {
  if (Exit.isSuccess(exit)) return recordRemoval(operation, exit.value)
  const error = Cause.findErrorOption(exit.cause)
  return error._tag === "Some" && isRemovalError(error.value) ? recordRemoval(operation, error.value) : Effect.void
}

/**
 * A removal (`SafeRemove.remove`, `SafeRemove.empty`, the `Repave`
 * operations), as an `Effect.fn` pipeable: its span attributes from its
 * arguments, the counts from its report, or from the `ResetError` that
 * carries one.
 */
export const removal =
  <Op extends RemovalOperation>(operation: Op) =>
  <A extends Removal, E, R>(
    self: Effect.Effect<A, E, R>,
    ...args: Parameters<(typeof removalAttributes)[Op]>
  ): Effect.Effect<A, E, R> =>
    track<A, E>(operation, {
      attributes: (removalAttributes[operation] as (...a: ReadonlyArray<unknown>) => Record<string, unknown>)(...args),
      onExit: (exit) => recordRemovalExit(operation, exit)
    })(self)

/** {@link removal} of an operation whose body needs its own scope closed first (its `Effect.scoped`). */
export const scopedRemoval =
  <Op extends RemovalOperation>(operation: Op) =>
  <A extends Removal, E, R>(
    self: Effect.Effect<A, E, R>,
    ...args: Parameters<(typeof removalAttributes)[Op]>
  ): Effect.Effect<A, E, Exclude<R, Scope.Scope>> =>
    removal(operation)(Effect.scoped(self), ...args)

// ---------------------------------------------------------------------------
// restarts

/** What became of a unit `restartChanged` was to restart, as `Metrics.unitRestarts` labels it. */
export type RestartResult = "restarted" | "failed" | "not_settled" | "not_attempted"

/** One unit's restart: its result and, for one that was tried, how long it took. */
export const recordRestart = (unit: string, result: RestartResult, seconds?: number): Effect.Effect<void> =>
  Effect.gen(function* () {
    yield* add(Metrics.unitRestarts, { systemd_unit: unit, result }, 1)
    if (seconds !== undefined) {
      yield* Metric.update(Metric.withAttributes(Metrics.unitRestartDuration, { systemd_unit: unit }), seconds)
    }
  })

/** A daemon-reload `restartChanged` made, by the policy that asked for it. */
export const recordReload = (policy: "always" | "auto"): Effect.Effect<void> =>
  add(Metrics.daemonReloads, { policy }, 1)

// ---------------------------------------------------------------------------
// snapshots

/** A snapshot action, as `Metrics.snapshots` labels it. */
export type SnapshotAction = "take" | "restore" | "recover" | "discard" | "rollback"

/** One snapshot action and its outcome. */
export const recordSnapshot = (action: SnapshotAction, outcome: string): Effect.Effect<void> =>
  add(Metrics.snapshots, { action, outcome }, 1)

const recordSnapshotExit = <A>(action: SnapshotAction, succeeded: (a: A) => string, exit: Exit.Exit<A, unknown>) =>
  Exit.isSuccess(exit)
    ? recordSnapshot(action, succeeded(exit.value))
    : Cause.hasInterruptsOnly(exit.cause)
      ? Effect.void
      : recordSnapshot(action, "failed")

/**
 * A snapshot operation: its duration, span attributes (the snapshot
 * directory and host root), and the action's outcome: `succeeded` of its
 * result on success, `failed` on failure (an interruption is neither).
 */
export const snapshot =
  <A>(
    operation: string,
    action: SnapshotAction,
    succeeded: (a: A) => string,
    attributes?: Readonly<Record<string, unknown>>
  ) =>
  <E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    track<A, E>(operation, { attributes, onExit: (exit) => recordSnapshotExit(action, succeeded, exit) })(self)

/** A snapshot action inside another operation (the take of `Snapshot.scoped`, a rollback): its outcome only. */
export const snapshotAction =
  <A>(action: SnapshotAction, succeeded: (a: A) => string) =>
  <E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.onExit(self, (exit) => recordSnapshotExit(action, succeeded, exit))

/** The attributes of a snapshot operation's span. */
export const snapshotAttributes = (options: {
  readonly dir: string
  readonly hostRoot?: string | HostPath.HostRoot | undefined
}): Readonly<Record<string, unknown>> => ({ dir: options.dir, hostRoot: rootLabel(options.hostRoot) })
