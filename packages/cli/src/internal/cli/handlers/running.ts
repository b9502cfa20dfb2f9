/**
 * `hostnode running`'s work, loaded only when that subcommand runs.
 * Boundary: the question and its output; the argument is declared in
 * `commands.ts`.
 */
import { IsolationBackend } from "@hostnode/core"
import { Effect, Schema } from "effect"
import { UnknownSlot, UsageError } from "../errors.ts"
import { operate, type Work } from "../operate.ts"

/** Whether the node stack of `slot` is up; `known` is the one slot the node has. */
export const running = ({ slot, known }: { readonly slot: string; readonly known: string }): Work =>
  operate(
    "running",
    // The host and the container compositions have one node root each: any other slot would be
    // answered about that one root, under a name that is not its own.
    slot !== known
      ? Effect.fail<UsageError | IsolationBackend.IsolationError>(
          new UsageError({
            reason: new UnknownSlot({ slot, known }),
            fix: "leave SLOT out: `hostnode running`"
          })
        )
      : Effect.suspend(() => IsolationBackend.running(Schema.decodeSync(IsolationBackend.SlotRef)(slot))).pipe(
          Effect.map((up) => ({ slot, running: up }))
        ),
    (r) => (r.running ? `the node stack of ${r.slot} is running` : `the node stack of ${r.slot} is not running`)
  )
