/**
 * What a real `Directory.Handle` is: a file descriptor and the mount id it
 * was opened in. Internal: shared by `NodeDirectory`, which makes handles,
 * and `NodeMounter`, which unmounts through them.
 *
 * @since 0.2.0
 */
import type { Directory } from "@hostnode/core"

/** A handle of the real layer. */
export interface FdHandle extends Directory.Handle {
  readonly fd: number
  readonly mountId: number
}

/** The descriptor of `handle`, or `undefined` when it is not a real layer's (a simulated host's handle). */
export const fdOf = (handle: Directory.Handle): FdHandle | undefined =>
  typeof (handle as Partial<FdHandle>).fd === "number" ? (handle as FdHandle) : undefined
