/**
 * The metrics of hostnode's operations, as Effect `Metric`s: what a fleet
 * scrapes from a node agent. Every operation updates them as it runs, in the
 * `Metric.MetricRegistry` in context, so an agent that provides Effect's
 * exporters (`PrometheusMetrics`, `OtlpMetrics`) exports them as they are.
 *
 * - Labels are bounded sets only (the operation, fixed reasons and results,
 *   the systemd unit as `systemd_unit`), never a path.
 * - The table of names, labels and outcomes is in docs/observability.md.
 *
 * Boundary: the definitions; which operation updates which metric is in
 * `internal/metrics.ts`.
 *
 * @since 0.4.0
 */
import { Metric } from "effect"

/**
 * The histogram buckets of durations, in seconds: from a few milliseconds (an
 * unmount of nothing) to five minutes (a teardown of thousands of mounts, a
 * restart waiting for a slow unit).
 */
const DurationBuckets: ReadonlyArray<number> = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300
]

/**
 * hostnode's metrics, one record: read one with `Metric.value`, or find it in
 * the exporters' output by its name (`hostnode_..._total`, `..._seconds`).
 *
 * @example
 * ```ts
 * import { Metrics } from "@hostnode/core"
 * import { Effect, Metric } from "effect"
 *
 * // How many restarts of the kubelet failed in this process.
 * const failedKubeletRestarts = Metric.value(
 *   Metric.withAttributes(Metrics.Metrics.unitRestarts, { systemd_unit: "kubelet.service", result: "failed" })
 * ).pipe(Effect.map((state) => state.count))
 * ```
 *
 * @category models
 * @since 0.4.0
 */
export const Metrics: {
  /**
   * How long each run of an operation took, in seconds, by `operation`
   * (`Unmount.unmountBelow`, `Repave.teardownKubeletDir`,
   * `RestartChanged.restartChanged`, `Snapshot.takeOf`, ...) and `outcome`
   * (`success`, `failure`, `interrupted`). Its `_count` is how many runs there
   * were.
   */
  readonly operationDuration: Metric.Histogram<number>
  /**
   * Mounts the unmount operations detached (each verified, then unmounted), by
   * `operation`. A lazy unmount of a parent also takes the mounts below it;
   * those are not counted, as the report does not list them. A teardown's
   * unmounts count under `Unmount.unmountBelowByPrefix`, the operation it
   * detaches them with.
   */
  readonly mountsDetached: Metric.Counter<number>
  /**
   * Mounts an unmount operation had to leave in place (busy beyond a lazy
   * unmount, not verifiable), by `operation`; each at most once per run.
   */
  readonly mountsRemaining: Metric.Counter<number>
  /**
   * Paths a removal removed, by `operation` (`SafeRemove.remove`,
   * `SafeRemove.empty`, `Repave.resetCniState`, `Repave.resetKubeletIdentity`,
   * `Repave.teardownKubeletDir`): the count of the report's `removed`.
   */
  readonly pathsRemoved: Metric.Counter<number>
  /**
   * Paths a removal had to keep, by `operation` and `reason` (a
   * `SafeRemove.Kept["reason"]`: `MountBelow`, `MountSourceBelow`,
   * `OtherFileSystem`, `NotADirectory`, `UnmountFailed`, `Failed`): the
   * report's `kept`, counted by reason. A reset that fails for them counts them
   * too.
   */
  readonly pathsKept: Metric.Counter<number>
  /**
   * What became of each unit `RestartChanged.restartChanged` was to restart,
   * by `systemd_unit` and `result`: `restarted`, `failed` (its restart
   * failed), `not_settled` (restarted, but it did not stay active for the
   * settle window) or `not_attempted` (an earlier unit failed, so it still runs
   * the old configuration).
   */
  readonly unitRestarts: Metric.Counter<number>
  /**
   * How long each restart of `RestartChanged.restartChanged` took, its settle
   * check included, in seconds, by `systemd_unit`.
   */
  readonly unitRestartDuration: Metric.Histogram<number>
  /**
   * The daemon-reloads `RestartChanged.restartChanged` made before its
   * restarts, by the reload `policy` that asked for it (`always`, `auto`).
   */
  readonly daemonReloads: Metric.Counter<number>
  /**
   * What became of each snapshot action, by `action` and `outcome` (see the
   * module's table): a take, a restore, a recover, a discard, and the rollback
   * of `Snapshot.scoped` and `guarded` (a rollback's restore counts as a
   * restore too).
   */
  readonly snapshots: Metric.Counter<number>
} = {
  operationDuration: Metric.histogram("hostnode_operation_duration_seconds", {
    description: "How long each run of a hostnode operation took, in seconds, by operation and outcome",
    boundaries: DurationBuckets
  }),
  mountsDetached: Metric.counter("hostnode_mounts_detached_total", {
    description: "Mounts hostnode's unmount operations detached, by operation",
    incremental: true
  }),
  mountsRemaining: Metric.counter("hostnode_mounts_remaining_total", {
    description: "Mounts hostnode's unmount operations had to leave in place, by operation",
    incremental: true
  }),
  pathsRemoved: Metric.counter("hostnode_paths_removed_total", {
    description: "Paths hostnode's removals removed, by operation",
    incremental: true
  }),
  pathsKept: Metric.counter("hostnode_paths_kept_total", {
    description: "Paths hostnode's removals had to keep, by operation and reason",
    incremental: true
  }),
  unitRestarts: Metric.counter("hostnode_unit_restarts_total", {
    description: "Units restartChanged was to restart, by unit and result",
    incremental: true
  }),
  unitRestartDuration: Metric.histogram("hostnode_unit_restart_duration_seconds", {
    description: "How long each restart of a changed unit took, its settle check included, in seconds, by unit",
    boundaries: DurationBuckets
  }),
  daemonReloads: Metric.counter("hostnode_daemon_reloads_total", {
    description: "Daemon-reloads restartChanged made before restarting units, by reload policy",
    incremental: true
  }),
  snapshots: Metric.counter("hostnode_snapshots_total", {
    description: "Snapshot actions, by action and outcome",
    incremental: true
  })
}
