/**
 * The mark of a `Directory.Handle`, and `handle`, which sets it on a layer's
 * own object; the identity of a node. Effect-free, so
 * `@hostnode/core/Programs` (which a helper process loads) can export them.
 *
 * @since 0.4.0
 */
import type { Handle, Stat } from "../../Directory.ts"

/** The mark every {@link Handle} carries. */
export const HandleTypeId: unique symbol = Symbol.for("@hostnode/core/Directory/Handle")

/** Marks an implementation's object as a {@link Handle}. */
export const handle = <A extends { readonly path: string }>(value: A): A & Handle =>
  Object.assign(value, { [HandleTypeId]: HandleTypeId } as const)

/** What makes a node the node it is, whatever it is called or reached through: its device and inode. */
export const identity = (st: Stat): string => `${st.device}:${st.inode}`
