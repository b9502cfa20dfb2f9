/**
 * The JobRemoved signals of one connection to systemd, delivered to the job
 * waiting for each: how a job's outcome is learnt. The boundary: one
 * connection's signals; sending the job is `SystemdDbus`'s.
 */
import { Effect } from "effect"
import * as DbusConnection from "../DbusConnection.ts"
import { ManagerInterface } from "./names.ts"

// The JobRemoved signals of one connection, delivered to the job waiting for
// each. A job's signal can come before the reply that names the job, so while
// a job on a unit is being queued every signal for that unit is kept.
export interface Jobs {
  readonly expect: (unit: string) => () => void
  readonly result: (job: string) => Effect.Effect<string, DbusConnection.DbusError>
}

/** Starts listening to `connection`'s JobRemoved signals. */
export const trackJobs = (connection: DbusConnection.Connection): Jobs => {
  const interest = new Map<string, number>()
  const early = new Map<string, { readonly unit: string; readonly result: string }>()
  const waiters = new Map<string, (result: string) => void>()
  connection.listen((s) => {
    if (s.member !== "JobRemoved" || s.interface !== ManagerInterface) return
    const [, job, unit, result] = s.body as [unknown, string, string, string]
    const waiter = waiters.get(job)
    if (waiter !== undefined) {
      waiters.delete(job)
      waiter(result)
    } else if (interest.has(unit)) early.set(job, { unit, result })
  })
  return {
    expect: (unit) => {
      interest.set(unit, (interest.get(unit) ?? 0) + 1)
      return () => {
        const n = (interest.get(unit) ?? 1) - 1
        if (n > 0) interest.set(unit, n)
        else {
          interest.delete(unit)
          for (const [job, e] of early) if (e.unit === unit) early.delete(job)
        }
      }
    },
    result: (job) =>
      Effect.callback<string, DbusConnection.DbusError>((resume) => {
        const seen = early.get(job)
        if (seen !== undefined) {
          early.delete(job)
          resume(Effect.succeed(seen.result))
          return
        }
        const stop = connection.onClose((reason) =>
          resume(Effect.fail(DbusConnection.disconnected("JobRemoved", reason)))
        )
        waiters.set(job, (result) => {
          stop()
          resume(Effect.succeed(result))
        })
        return Effect.sync(() => {
          stop()
          waiters.delete(job)
        })
      })
  }
}
