/**
 * The verification of a mount before it is detached: its path, as the mount
 * table names it, is held below the root without following any link
 * (`openBeneath`), and what it reaches must be the root of the mount the
 * table listed (mount ids compared, read without asking the file system, so
 * a dead one is never asked). The caller then detaches that very mount
 * through the handle it is given, and closes it.
 *
 * Internal: `Programs` exports it; every `Mounter` runs it (the real one in
 * its helper process, the command one, the simulated and the dry-run ones
 * through `Directory.make`'s driver).
 *
 * @since 0.4.0
 */
import type { UnmountResult } from "../../Programs.ts"
import { type Failure, isFailure, type Op, type Opened } from "./ops.ts"

/*
 * Only the components before the last must be directories: a mount on a
 * regular file (a kubelet `subPath` of a file, a raw block volume) is
 * verified as the kernel reaches it.
 */

/** A mount to verify: its path below the root, as components, and the mount id the table gave it. */
export interface VerifyTarget {
  readonly components: ReadonlyArray<Uint8Array>
  readonly mountId: number
}

/** How a verification ended. */
export type VerifyOutcome<H> =
  /** The path leads to the mount: `handle` holds its root (the caller closes it). */
  | { readonly _tag: "Verified"; readonly handle: H }
  /** The path no longer leads to the mount, or not without a link: it is left mounted. */
  | {
      readonly _tag: "Unverified"
      readonly reason: Extract<UnmountResult, { readonly _tag: "Unverified" }>["reason"]
      readonly detail: string
    }
  /** The verification's own call failed. */
  | { readonly _tag: "Failed"; readonly errno: string; readonly message: string }
  /** The verification's own call did not return. */
  | { readonly _tag: "Hung"; readonly call: string; readonly seconds: number; readonly detail: string }

const fromFailure = <H>(f: Failure): VerifyOutcome<H> => {
  switch (f.reason) {
    case "NotFound":
      return { _tag: "Unverified", reason: "Gone", detail: "the path no longer exists" }
    case "SymbolicLink":
    case "NotADirectory":
    case "CrossDevice":
    case "TooManyLinks":
      return {
        _tag: "Unverified",
        reason: "LinkInPath",
        detail: `a link or a non-directory on the way (${f.errno ?? f.reason})`
      }
    case "Hung":
      return { _tag: "Hung", call: f.call ?? "openat2", seconds: f.seconds ?? 0, detail: f.detail }
    default:
      return { _tag: "Failed", errno: f.errno ?? f.reason, message: f.detail }
  }
}

/** Verifies `target` below `root` (see the module comment). */
export function* verifyMount<H>(root: H, target: VerifyTarget): Generator<Op<H>, VerifyOutcome<H>, unknown> {
  const opened = yield { _op: "openBeneath", root, components: target.components }
  if (isFailure(opened)) return fromFailure<H>(opened)
  const { handle, identity } = opened as Opened<H>
  if (identity.type === "SymbolicLink") {
    yield { _op: "close", handle }
    return { _tag: "Unverified", reason: "LinkInPath", detail: "the mount point is now a symbolic link" }
  }
  if (identity.mountId !== target.mountId) {
    yield { _op: "close", handle }
    return {
      _tag: "Unverified",
      reason: "Moved",
      detail: `the path leads to mount ${identity.mountId}, not to mount ${target.mountId}`
    }
  }
  return { _tag: "Verified", handle }
}
