/**
 * `hostnode restart-changed`'s work, loaded only when that subcommand runs.
 * Boundary: the operation and its output; the arguments are declared (and
 * `UNIT[=changed]` parsed) in `commands.ts`.
 */
import { RestartChanged } from "@hostnode/core"
import { Duration, Effect } from "effect"
import { operate, type Work } from "../operate.ts"

/** Restarts the changed units in order, when the node was running. */
export const restartChanged = ({
  wasRunning,
  units,
  settle,
  jobTimeout,
  reload
}: {
  readonly wasRunning: boolean
  readonly units: RestartChanged.Options["units"]
  readonly settle: number
  readonly jobTimeout: number
  readonly reload: "always" | "auto" | "never"
}): Work =>
  operate(
    "restart-changed",
    RestartChanged.restartChanged({
      wasRunning,
      units,
      reload,
      ...(settle === 0 ? {} : { settle: Duration.seconds(settle) }),
      ...(jobTimeout === 0 ? {} : { jobTimeout: Duration.seconds(jobTimeout) })
    }).pipe(
      Effect.as({
        wasRunning,
        restarted: wasRunning ? units.filter((u) => u.changed).map((u) => u.unit) : [],
        reload
      })
    ),
    (r) =>
      !r.wasRunning
        ? "the node was not running (no --was-running): nothing restarted; pass --was-running to restart the changed units"
        : r.restarted.length === 0
          ? "no unit's configuration changed: nothing restarted"
          : `restarted, in order: ${r.restarted.join(", ")}`
  )
