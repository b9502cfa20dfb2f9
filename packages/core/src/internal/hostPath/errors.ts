/**
 * The one constructor of a `HostPathError` the modules of this directory use.
 *
 * @since 0.3.0
 */
import { HostPathError } from "../../HostPathError.ts"

/** The refusal of `path` below the root `root` as given (of the root itself without `path`). */
export const refusal = (reason: HostPathError["reason"], root: string, path?: string): HostPathError =>
  new HostPathError(path === undefined ? { reason, root } : { reason, root, path })
