/**
 * Fault injection for any `Mounter`: a layer that wraps the one in context and
 * refuses chosen targets, as a mount held busy by a process outside the
 * agent's control would. Works on the real mounters as well as the simulated
 * one, so "what happens when this unmount fails" is testable on real mounts.
 *
 * @since 0.1.0
 */
import { Mounter } from "@hostnode/core"
import type * as Programs from "@hostnode/core/Programs"
import { Effect, Layer } from "effect"

/**
 * Refuses each target whose path `refuse(path)` selects with `errno` (default EBUSY); passes the rest through in order.
 *
 * @since 0.1.0
 */
const wrap = (inner: Mounter.Mounter, refuse: (target: string) => boolean, errno = "EBUSY"): Mounter.Mounter =>
  Mounter.Mounter.of({
    unmount: (root, targets, options) =>
      Effect.gen(function* () {
        const out: Array<Programs.UnmountResult> = []
        // Consecutive targets that are passed through go to the inner mounter
        // in one call, so the inner order and batching are kept.
        let batch: Array<Programs.Target> = []
        const flush = Effect.gen(function* () {
          if (batch.length === 0) return
          out.push(...(yield* inner.unmount(root, batch, options)))
          batch = []
        })
        for (const target of targets) {
          if (refuse(target.path)) {
            yield* flush
            out.push({
              _tag: "Failed",
              target: target.path,
              failure: { target: target.path, errno, message: `refused by FaultyMounter (${errno})` }
            })
          } else {
            batch.push(target)
          }
        }
        yield* flush
        return out
      })
  })

/**
 * A layer that wraps the `Mounter` in context so it refuses the targets `refuse` selects.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (
  refuse: (target: string) => boolean,
  errno?: string
): Layer.Layer<Mounter.Mounter, never, Mounter.Mounter> =>
  Layer.effect(
    Mounter.Mounter,
    Effect.map(Effect.service(Mounter.Mounter), (inner) => wrap(inner, refuse, errno))
  )
