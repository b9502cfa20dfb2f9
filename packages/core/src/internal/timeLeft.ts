/**
 * What is left of the operation's `Deadline`, for every wait that must not
 * outlast it (a file-system call's budget, a command, a systemd call, a DNS
 * probe window). Internal: each caller says what it does at the deadline.
 */
import { Clock, Duration, Effect } from "effect"
import { Deadline } from "../Deadline.ts"

/** The time left until the deadline in effect (never below zero), or `undefined` without one. */
export const timeLeft: Effect.Effect<Duration.Duration | undefined> = Effect.gen(function* () {
  const { at } = yield* Deadline
  if (at === undefined) return undefined
  return Duration.millis(Math.max(0, at - (yield* Clock.currentTimeMillis)))
})

/** `limit`, or the time left until the deadline where that is shorter. */
export const boundedByDeadline = (limit: Duration.Duration): Effect.Effect<Duration.Duration> =>
  Effect.map(timeLeft, (left) => (left === undefined ? limit : Duration.min(limit, left)))
