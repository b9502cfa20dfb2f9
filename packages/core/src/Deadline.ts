/**
 * When the calls of an operation must be over. A call into a file system
 * can wait forever (a dead NFS server, a FUSE daemon that never answers), so
 * no call is trusted to return: every call a layer makes on a host's files
 * ends by the earlier of its own timeout and the operation's deadline, and
 * one that does not is abandoned and reported `Hung` (which call, where, how
 * long it was waited for). The operations take a `deadline` option and end
 * by then with a report of what they did.
 *
 * Boundary: the current deadline, as a context reference the layers read for
 * each call and the operations narrow. How a layer abandons a call is its own
 * (the real one runs its calls in a helper process it can give up on).
 *
 * @since 0.4.0
 */
import { Clock, Context, Duration, Effect } from "effect"

/**
 * The deadline in effect: when the current operation must be over (`at`,
 * epoch milliseconds of the `Clock`; `undefined` for none), and how long one
 * call may take before it is abandoned (`call`).
 *
 * @since 0.4.0
 * @category models
 */
export interface Deadline {
  readonly at: number | undefined
  readonly call: Duration.Duration
}

// How long one call may take by default: long enough for an `fsync` behind a busy disk; a call on a
// dead file system never returns at all, so a longer wait buys nothing.
const DefaultCallTimeout: Duration.Duration = Duration.seconds(30)

/**
 * The key of the current {@link Deadline}: none for the operation, and
 * 30 seconds per call, unless an operation or a caller says otherwise.
 *
 * @since 0.4.0
 * @category services
 */
export const Deadline = Context.Reference<Deadline>("@hostnode/core/Deadline", {
  defaultValue: () => ({ at: undefined, call: DefaultCallTimeout })
})

/**
 * Options of every operation that calls into a host's files: `deadline`, how
 * long the operation may take from its start. When it passes, calls in
 * flight are abandoned (`Hung`), no further call is made, and the operation
 * ends with what it did.
 *
 * @since 0.4.0
 * @category models
 */
export interface Options {
  readonly deadline?: Duration.Input | undefined
}

/**
 * Runs `self` so that it is over `duration` from now: its deadline is the
 * earlier of that and any deadline already in effect (an outer one is never
 * extended). `undefined` leaves the deadline as it is.
 *
 * @example
 * ```ts
 * import { Deadline, SafeRemove, Unmount } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // Both steps together are over in two minutes; a dead volume is reported Hung, not waited for.
 * const program = Effect.gen(function* () {
 *   yield* Unmount.unmountStrictlyBelow(["/var/lib/kubelet"])
 *   return yield* SafeRemove.remove(["/var/lib/kubelet/pods"])
 * }).pipe(Deadline.within("2 minutes"))
 * ```
 *
 * @since 0.4.0
 * @category operations
 */
export const within =
  (duration: Duration.Input | undefined) =>
  <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    duration === undefined
      ? self
      : Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const current = yield* Deadline
          const at = now + Duration.toMillis(Duration.fromInputUnsafe(duration))
          return yield* Effect.provideService(self, Deadline, {
            ...current,
            at: current.at === undefined ? at : Math.min(current.at, at)
          })
        })
