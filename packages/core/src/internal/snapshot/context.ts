/**
 * What every step of a snapshot operation shares: the services, the decoded
 * host root, where the snapshot directory is, and how failures are named.
 *
 * Internal to `Snapshot`.
 *
 * @since 0.2.0
 */
import { Duration, Effect, type FileSystem } from "effect"
import type * as Directory from "../../Directory.ts"
import * as FileName from "../../FileName.ts"
import type * as Hashing from "../../Hashing.ts"
import type * as HostPath from "../../HostPath.ts"
import type * as Programs from "../../Programs.ts"
import { Failure, SnapshotError } from "../../SnapshotError.ts"
import * as DirectoryErrors from "../directory/errors.ts"
import * as Names from "../directory/names.ts"
import * as Lexical from "../hostPath/lexical.ts"

type SnapshotErrorReason = SnapshotError["reason"]

/** One operation's context. */
export interface Ctx {
  readonly dirs: Directory.Directories
  readonly fs: FileSystem.FileSystem
  readonly hashing: Hashing.Hashing
  readonly credentials: Programs.Credentials
  /** The snapshot directory: a clean absolute path of this process (not joined below the host root). */
  readonly dir: string
  /** The directory the snapshot directory is in, where its staging directory, lock file and discarded copy go. */
  readonly parentPath: string
  /** The snapshot directory's name in its parent. */
  readonly base: string
  readonly root: HostPath.HostRoot
  /** The canonical host root path, for messages and the manifest. */
  readonly hostRoot: string
  /** Restore a snapshot recorded below another host root (see `HostRootMismatch`). */
  readonly allowHostRootMismatch: boolean
  /** How long to wait for another process's lock before `Busy`. */
  readonly lockTimeout: Duration.Duration
}

/** How long an operation waits for the snapshot's lock by default. */
export const DefaultLockTimeout: Duration.Duration = Duration.minutes(1)

/** What names an operation's snapshot in its errors. */
type Label = Pick<Ctx, "dir" | "hostRoot">

/** A failure of this snapshot: its directory and host root, and why. */
export const error = (ctx: Label, reason: SnapshotErrorReason): SnapshotError =>
  new SnapshotError({ reason, dir: ctx.dir, hostRoot: ctx.hostRoot })

/** {@link error} as a failed effect. */
export const fail = (ctx: Label, reason: SnapshotErrorReason) => Effect.fail(error(ctx, reason))

/** The errno a refused handle operation names, as the optional field of a reason (none when it names none). */
const errnoOf = (e: Directory.DirectoryError): { readonly errno?: string } => {
  const errno = DirectoryErrors.errnoOf(e)
  return errno === undefined || errno === "" ? {} : { errno }
}

/**
 * A refused handle operation as an `Io` snapshot error naming the host path
 * concerned (none for the snapshot's own files), the errno and the
 * operation on the full path (`ENOSPC` reads `ENOSPC`, not an opaque code).
 */
export const fromDirectory =
  (ctx: Label, path?: string) =>
  (e: Directory.DirectoryError): SnapshotError =>
    error(ctx, new Failure({ _tag: "Io", ...(path === undefined ? {} : { path }), ...errnoOf(e), detail: e.message }))

/** A host path that could not be resolved below the root, as an `Unresolvable` snapshot error. */
export const unresolvable = (ctx: Label, path: string, e: Directory.DirectoryError): SnapshotError =>
  error(ctx, new Failure({ _tag: "Unresolvable", path, ...errnoOf(e), detail: e.message }))

/**
 * `reason` with `prefix` before its detail, the rest kept: a step that fails
 * after an earlier one changed the host says what had been done.
 */
export const prefixed = (reason: SnapshotErrorReason, prefix: string): SnapshotErrorReason => {
  if (reason._tag === "RollbackFailed") return reason
  const Reason = reason.constructor as new (fields: { readonly detail: string }) => SnapshotErrorReason
  return new Reason({ ...reason, detail: `${prefix}${reason.detail}` })
}

/** True when a clean absolute path `p` is a host path a manifest may hold: absolute, not `/`, clean, no NUL. */
export const isHostPath = (p: string): boolean =>
  p.startsWith("/") && p !== "/" && !p.includes("\0") && Lexical.clean(p) === p

/** The last component of a clean absolute path. */
export const baseOf = (p: string): string => p.slice(p.lastIndexOf("/") + 1)

/** The last component of a host path as bytes. */
export const nameOf = (p: string): Uint8Array => FileName.encode(baseOf(p))

/** `name` below the host path `parent`, in the lossless string form. */
export const childOf = (parent: string, name: Uint8Array): string => Names.childPath(parent, name)

/** True when `ancestor` is strictly above `p`. */
export const isBelow = (ancestor: string, p: string): boolean => ancestor !== p && Lexical.covers(ancestor, p)
