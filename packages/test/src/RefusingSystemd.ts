/**
 * A `Systemd` that must never be asked: every call is a defect naming the
 * call and why nothing should have reached systemd. For code running below a
 * host root that is not the real one (a restore there must not reload the
 * machine's systemd), and for tests that run operations on the real host
 * without letting them near the machine's units.
 *
 * @since 0.1.0
 */
import { Systemd } from "@hostnode/core"
import { Effect, Layer } from "effect"

/**
 * The refusing service; `why` ends each defect's message.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (why: string): Systemd.Systemd => {
  const refuse = (call: string) => Effect.die(new Error(`unexpected systemd call: ${call} (${why})`))
  return Systemd.make({
    job: (verb, unit) => refuse(`${verb} ${unit}`),
    daemonReload: refuse("daemon-reload"),
    show: (unit) => refuse(`show ${unit}`)
  })
}

/**
 * {@link make} as a layer.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (why: string): Layer.Layer<Systemd.Systemd> => Layer.succeed(Systemd.Systemd, make(why))
