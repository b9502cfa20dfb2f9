/**
 * The limit of one call to systemd in context, which every `Systemd` layer
 * reads. Re-exported by `@hostnode/core/Layers`.
 *
 * @since 0.4.0
 */
import { Context, type Duration, Effect } from "effect"
import { boundedByDeadline } from "../timeLeft.ts"

/**
 * How long one call to systemd may take, a job until systemd reports it
 * finished included, for the calls made where it is provided: it replaces the
 * layer's own `timeout` (default 3 minutes) there. A call that runs out fails
 * with a `Timeout` reason saying which limit ran out (over D-Bus, naming the
 * job systemd queued; the job itself is left to systemd). `undefined` (the
 * default) keeps each layer's own limit. The layers of this library read it on
 * every call; an implementation of `Systemd` of your own should too.
 * `RestartChanged.restartChanged`'s `jobTimeout` provides it around its
 * calls.
 *
 * @example
 * ```ts
 * import { Systemd } from "@hostnode/core"
 * import * as Layers from "@hostnode/core/Layers"
 * import { Duration, Effect } from "effect"
 *
 * // A restart that may take 10 seconds at most, whatever the layer's default.
 * const quick = Effect.flatMap(Effect.service(Systemd.Systemd), (s) => s.restart("kubelet.service")).pipe(
 *   Effect.provideService(Layers.SystemdCallTimeout, Duration.seconds(10))
 * )
 * ```
 *
 * @category services
 * @since 0.4.0
 */
export const SystemdCallTimeout = Context.Reference<Duration.Duration | undefined>(
  "@hostnode/core/Systemd/CallTimeout",
  {
    defaultValue: () => undefined
  }
)

/**
 * How long the next call to systemd may take: {@link SystemdCallTimeout}
 * where provided, else `fallback` (the layer's own limit), and never past
 * the operation's `Deadline` (the CLI's `--timeout`): a call that would run
 * past it fails at the deadline with its `Timeout` reason, and the operation
 * reports it, instead of being cut off from outside. Every `Systemd` layer
 * of this library bounds its calls by it; one of your own should too.
 *
 * @category services
 * @since 0.4.0
 */
export const systemdCallLimit = (fallback: Duration.Duration): Effect.Effect<Duration.Duration> =>
  Effect.flatMap(SystemdCallTimeout, (own) => boundedByDeadline(own ?? fallback))
