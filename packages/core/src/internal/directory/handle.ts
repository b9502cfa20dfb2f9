/**
 * The mark of a `Directory.Handle`, and `handle`, which sets it on a layer's
 * own object. Effect-free, so `@hostnode/core/Programs` (which a helper
 * process loads) can export `handle`.
 *
 * @since 0.4.0
 */
import type { Handle } from "../../Directory.ts"

/** The mark every {@link Handle} carries. */
export const HandleTypeId: unique symbol = Symbol.for("@hostnode/core/Directory/Handle")

/** Marks an implementation's object as a {@link Handle}. */
export const handle = <A extends { readonly path: string }>(value: A): A & Handle =>
  Object.assign(value, { [HandleTypeId]: HandleTypeId } as const)
