/**
 * Who holds a kept mount, through the `Mounter` in context (`SafeRemove`'s
 * reports name them).
 *
 * @since 0.4.0
 */
import { Effect } from "effect"
import { type Holder, Mounter } from "../../Mounter.ts"

/** Who holds `mounts`, through the `Mounter` in context when it can tell; empty otherwise. Never fails. */
export const holdersOf = (
  mounts: Parameters<NonNullable<Mounter["holders"]>>[0]
): Effect.Effect<ReadonlyMap<number, ReadonlyArray<Holder>>> =>
  Effect.flatMap(Effect.serviceOption(Mounter), (m) =>
    m._tag === "Some" && m.value.holders !== undefined && mounts.length > 0
      ? m.value.holders(mounts)
      : Effect.succeed(new Map<number, ReadonlyArray<Holder>>())
  )
