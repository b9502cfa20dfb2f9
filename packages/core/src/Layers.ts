/**
 * The `@hostnode/core/Layers` entry, for implementers of a layer, a simulated
 * host or a composition: what a layer reads from the context and provides to
 * it, with Effect (the Effect-free programs are in `@hostnode/core/Programs`).
 * - the call budget ({@link forCall}, {@link withCallTimeout});
 * - the node's root in context ({@link NodeRoot}, {@link RootInput},
 *   {@link rootOf}) that a composition in another mount namespace provides;
 * - the verification every `Mounter` runs first ({@link verifyTarget});
 * - the limit of one call to systemd ({@link SystemdCallTimeout});
 * - a mount table parsed and rendered ({@link parseMountInfo},
 *   {@link renderMountInfo}).
 *
 * @since 0.4.0
 */
import { Duration, Effect } from "effect"
import * as Deadline from "./Deadline.ts"
import { timeLeft } from "./internal/timeLeft.ts"

/**
 * What a host root is decoded from (`RootInput`), and the node's root in context (`NodeRoot`, which a
 * composition in another mount namespace provides).
 *
 * @category services
 * @since 0.4.0
 */
export * from "./internal/hostPath/nodeRoot.ts"

/**
 * `rootOf`, which decodes an operation's `HostPath.RootOptions` against the node's root in context.
 *
 * @category constructors
 * @since 0.4.0
 */
export * from "./internal/hostPath/rootOf.ts"

/**
 * `verifyTarget`: the verification every `Mounter` runs before it detaches a target, for a `Mounter`
 * that detaches by other means (a command) and for the simulated and dry-run hosts.
 *
 * @category operations
 * @since 0.4.0
 */
export * from "./internal/mounter/verify.ts"

/**
 * `parseMountInfo`: a mount table's text parsed into its entries, as `MountInfo.read` does after it
 * read the table.
 *
 * @category operations
 * @since 0.4.0
 */
export * from "./internal/mountinfo/parse.ts"

/**
 * `renderMountInfo`: a mount table written back in the kernel's format, as a simulated host shows
 * its `/proc/<pid>/mountinfo`.
 *
 * @category operations
 * @since 0.4.0
 */
export * from "./internal/mountinfo/render.ts"

/**
 * `SystemdCallTimeout`: the limit of one call to systemd in context, which every `Systemd` layer
 * reads and `RestartChanged.restartChanged`'s `jobTimeout` provides.
 *
 * @category services
 * @since 0.4.0
 */
export * from "./internal/systemd/callTimeout.ts"

/*
 */

/**
 * Runs `self` with `duration` as the timeout of each call (how long one call
 * may go without an answer before it is abandoned as hung).
 *
 * @example
 * ```ts
 * import { SafeRemove } from "@hostnode/core"
 * import * as Layers from "@hostnode/core/Layers"
 *
 * // Pod volumes on a slow NFS server: one call may take 2 minutes before it is reported Hung, the removal 10.
 * const removePods = SafeRemove.remove(["/var/lib/kubelet/pods"], { deadline: "10 minutes" }).pipe(
 *   Layers.withCallTimeout("2 minutes")
 * )
 * ```
 *
 * @since 0.4.0
 * @category operations
 */
export const withCallTimeout =
  (duration: Duration.Input) =>
  <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.gen(function* () {
      const current = yield* Deadline.Deadline
      return yield* Effect.provideService(self, Deadline.Deadline, {
        ...current,
        call: Duration.fromInputUnsafe(duration)
      })
    })

/**
 * How long a call starting now may take: the call timeout, or less when the
 * operation's deadline comes first (`byDeadline`); zero or less when it has
 * passed.
 *
 * @example
 * ```ts
 * import * as Layers from "@hostnode/core/Layers"
 * import { Effect } from "effect"
 *
 * // In a layer of your own: a call into the host gets what is left of its budget, and none once the deadline passed.
 * const bounded = <A, E>(call: Effect.Effect<A, E>) =>
 *   Effect.gen(function* () {
 *     const budget = yield* Layers.forCall
 *     if (budget.millis <= 0) return yield* Effect.fail("Hung: the operation's deadline has passed" as const)
 *     return yield* Effect.timeout(call, budget.millis)
 *   })
 * ```
 *
 * @since 0.4.0
 * @category operations
 */
export const forCall: Effect.Effect<{ readonly millis: number; readonly byDeadline: boolean }> = Effect.gen(
  function* () {
    const call = Duration.toMillis((yield* Deadline.Deadline).call)
    const left = yield* timeLeft
    return left === undefined || Duration.toMillis(left) >= call
      ? { millis: call, byDeadline: false }
      : { millis: Duration.toMillis(left), byDeadline: true }
  }
)
