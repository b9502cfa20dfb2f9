/**
 * What every step of a snapshot operation shares: the services, the decoded
 * host root, where the snapshot directory is, and how failures are named.
 *
 * Internal to `Snapshot`.
 *
 * @since 0.2.0
 */
import { Duration, Effect, type FileSystem } from "effect"
import * as Directory from "../../Directory.ts"
import * as FileName from "../../FileName.ts"
import type * as Hashing from "../../Hashing.ts"
import * as HostPath from "../../HostPath.ts"
import { SnapshotError, type SnapshotErrorReason } from "./model.ts"

/** One operation's context. */
export interface Ctx {
  readonly dirs: Directory.Directories
  readonly fs: FileSystem.FileSystem
  readonly hashing: Hashing.Hashing
  readonly credentials: Directory.Credentials
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

/** A failure of this snapshot: its directory and host root, the reason, the path and what happened. */
export const error = (
  ctx: Pick<Ctx, "dir" | "hostRoot">,
  reason: SnapshotErrorReason,
  path: string,
  detail: string,
  extra?: { readonly errno?: string | undefined; readonly pid?: number }
) =>
  new SnapshotError({
    reason,
    dir: ctx.dir,
    hostRoot: ctx.hostRoot,
    path,
    detail,
    ...(extra?.errno === undefined || extra.errno === "" ? {} : { errno: extra.errno }),
    ...(extra?.pid === undefined ? {} : { pid: extra.pid })
  })

/** {@link error} as a failed effect. */
export const fail = (
  ctx: Pick<Ctx, "dir" | "hostRoot">,
  reason: SnapshotErrorReason,
  path: string,
  detail: string,
  extra?: { readonly errno?: string | undefined; readonly pid?: number }
) => Effect.fail(error(ctx, reason, path, detail, extra))

/**
 * A refused handle operation as a snapshot error naming the host path
 * concerned, the errno and the operation on the full path (`ENOSPC` reads
 * `ENOSPC`, not an opaque code).
 */
export const fromDirectory =
  (ctx: Pick<Ctx, "dir" | "hostRoot">, path: string, reason: SnapshotErrorReason = "Io") =>
  (e: Directory.DirectoryError): SnapshotError =>
    error(ctx, reason, path, e.message, { errno: Directory.errnoOf(e) })

/** True when a clean absolute path `p` is a host path a manifest may hold: absolute, not `/`, clean, no NUL. */
export const isHostPath = (p: string): boolean =>
  p.startsWith("/") && p !== "/" && !p.includes("\0") && HostPath.clean(p) === p

/** The last component of a clean absolute path. */
export const baseOf = (p: string): string => p.slice(p.lastIndexOf("/") + 1)

/** The last component of a host path as bytes. */
export const nameOf = (p: string): FileName.Bytes => FileName.encode(baseOf(p))

/** `name` below the host path `parent`, in the lossless string form. */
export const childOf = (parent: string, name: FileName.Bytes): string => Directory.childPath(parent, name)

/** True when `ancestor` is strictly above `p`. */
export const isBelow = (ancestor: string, p: string): boolean => ancestor !== p && HostPath.covers(ancestor, p)
