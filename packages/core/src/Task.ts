/**
 * Named steps of a node's lifecycle (the Go package's `phases.Task` and
 * `Func`). A composition root runs its steps in order with {@link run}; the
 * step that fails is named in {@link TaskFailed}, and {@link conditionReason}
 * turns that name into the reason of the Machine condition a controller shows.
 *
 * @since 0.1.0
 */
import { Data, Effect } from "effect"

/**
 * One named step. The name is what a failure carries and what the condition
 * reason is classified from, so keep it stable: it is part of what operators
 * see and alert on.
 *
 * @category models
 * @since 0.1.0
 */
export interface Task<out E = never, out R = never> {
  readonly name: string
  readonly effect: Effect.Effect<unknown, E, R>
}

/**
 * A step from a name and the effect that does it (the Go package's `Func`).
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = <E, R>(name: string, effect: Effect.Effect<unknown, E, R>): Task<E, R> => ({ name, effect })

/**
 * The failure of a step run by {@link run}: which task failed and why. The
 * cause keeps the step's own typed error, so a caller can still match on it.
 *
 * @category errors
 * @since 0.1.0
 */
export class TaskFailed<out E = unknown> extends Data.TaggedError("TaskFailed")<{
  readonly task: string
  readonly cause: E
}> {
  override get message(): string {
    const inner = this.cause instanceof Error ? this.cause.message : String(this.cause)
    return `task ${this.task} failed: ${inner}`
  }
}

type TaskError<T> = T extends Task<infer E, infer _R> ? E : never
type TaskContext<T> = T extends Task<infer _E, infer R> ? R : never

/**
 * Runs `tasks` in order, each in a `Task.run` span and a log annotation naming it, and
 * stops at the first failure, which becomes a {@link TaskFailed} naming that
 * task. Later tasks do not run: a node half-configured by a failed step is not
 * made worse by the steps that assumed it succeeded.
 *
 * @example
 * ```ts
 * import { Task } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // Steps in order; a failure names its step, and the condition reason is classified from it.
 * const upgrade = (snapshot: Effect.Effect<void, Error>, restart: Effect.Effect<void, Error>) =>
 *   Task.run([Task.make("snapshot", snapshot), Task.make("restart-changed", restart)]).pipe(
 *     Effect.tapError((e) => Effect.logError(`condition reason: ${Task.conditionReason(e)}`))
 *   )
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const run = <const Tasks extends ReadonlyArray<Task<unknown, unknown>>>(
  tasks: Tasks
): Effect.Effect<void, TaskFailed<TaskError<Tasks[number]>>, TaskContext<Tasks[number]>> =>
  Effect.forEach(
    tasks,
    (task) =>
      task.effect.pipe(
        Effect.mapError((cause) => new TaskFailed({ task: task.name, cause })),
        Effect.tap(() => Effect.logDebug("task done")),
        Effect.annotateLogs({ task: task.name }),
        Effect.withSpan("Task.run", { attributes: { task: task.name } })
      ),
    { discard: true }
  ) as Effect.Effect<void, TaskFailed<TaskError<Tasks[number]>>, TaskContext<Tasks[number]>>

/** Task names to condition reasons (see {@link conditionReason}). */
type ReasonTable = Readonly<Record<string, string>>

/**
 * The reason of a failed task whose name no table entry matches.
 */
const DefaultReason = "TaskFailed"

/**
 * The reason of an error that is not a `TaskFailed` (a defect, an interruption, an error outside any task).
 */
const UnknownReason = "Unknown"

/**
 * The reasons of the steps this library provides. A composition root extends
 * it for its own steps (`{ ...Task.defaultReasons, "my-step": "MyReason" }`)
 * rather than replacing it, so the library's steps keep their reasons.
 *
 * @category models
 * @since 0.1.0
 */
export const defaultReasons: Readonly<Record<string, string>> = {
  "unmount-pod-volumes": "PodVolumeUnmountFailed",
  "teardown-kubelet-dir": "PodVolumeUnmountFailed",
  snapshot: "ConfigSnapshotFailed",
  "restore-snapshot": "ConfigRollbackFailed",
  "restart-changed": "ServiceRestartFailed",
  "daemon-reload": "ServiceRestartFailed",
  "reset-cni-state": "RepaveResetFailed",
  "reset-kubelet-identity": "RepaveResetFailed",
  "setup-localdns-network": "LocalDNSNetworkFailed",
  "cleanup-host-network": "LocalDNSNetworkFailed",
  "await-localdns": "LocalDNSNotReady",
  "resolve-goal-state": "GoalStateUnavailable"
}

/**
 * The condition reason for the task `name`: the longest key of `table` that is
 * `name` or a `/`-prefix of it, else `TaskFailed`.
 */
const reasonForTask = (name: string, table: ReasonTable = defaultReasons): string => {
  let best: string | undefined
  for (const key of Object.keys(table)) {
    if ((name === key || name.startsWith(`${key}/`)) && (best === undefined || key.length > best.length)) best = key
  }
  return best === undefined ? DefaultReason : (table[best] ?? DefaultReason)
}

/**
 * The Machine condition reason for an error from {@link run}: classified from
 * the failed task's name through `table`, which maps task names to reasons. A
 * key matches a task of that exact name, or any task below it on a `/`
 * boundary (`snapshot` covers `snapshot/restore`); the longest matching key
 * wins. Anything that is not a {@link TaskFailed} is `Unknown`; a task no key
 * matches is `TaskFailed`.
 *
 * @example
 * ```ts
 * import { Task } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // The agent's own step gets its own reason; the library's steps keep theirs.
 * const reasons = { ...Task.defaultReasons, "drain-node": "DrainFailed" }
 *
 * const upgrade = (drain: Effect.Effect<void, Error>, restart: Effect.Effect<void, Error>) =>
 *   Task.run([Task.make("drain-node", drain), Task.make("restart-changed", restart)]).pipe(
 *     Effect.tapError((e) => Effect.logError(`Ready=False reason=${Task.conditionReason(e, reasons)}: ${e.message}`))
 *   )
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const conditionReason = (error: unknown, table: Readonly<Record<string, string>> = defaultReasons): string =>
  error instanceof TaskFailed ? reasonForTask(error.task, table) : UnknownReason
