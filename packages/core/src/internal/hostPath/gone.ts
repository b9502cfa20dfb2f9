/**
 * A root whose process may exit (a container's): a call through it that
 * fails after that process exited failed because it exited, whatever the
 * call itself said (a mount table that can no longer be read, a root that
 * can no longer be opened). This says so, with the root's `Gone`.
 *
 * Internal: the operations that read a root's table or open it use it.
 *
 * @since 0.4.0
 */
import { Effect } from "effect"
import type { HostRoot } from "../../HostPath.ts"
import type { HostPathError } from "../../HostPathError.ts"
import { refusal } from "./errors.ts"

/** `effect`, its failure replaced by the root's `Gone` when the root's process has exited. */
export const whileThere = <A, E, R>(
  root: HostRoot,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E | HostPathError, R> => {
  const gone = root.gone
  return gone === undefined
    ? effect
    : Effect.catch(effect, (e) =>
        Effect.flatMap(
          gone,
          (g): Effect.Effect<never, E | HostPathError> =>
            g === undefined ? Effect.fail(e) : Effect.fail(refusal(g, root.given))
        )
      )
}
