/**
 * What every system call of the real `Directories` shares: libc and the
 * buffers its calls reuse (calls are synchronous), how a failed call becomes
 * a `DirectoryError` (the errno read here, classified here, in the node
 * layer), the names refused before a call, and a descriptor made a handle.
 *
 * Internal: `NodeDirectory` builds one {@link Sys} per layer; the other
 * modules of this directory take it.
 *
 * @since 0.3.0
 */
import { Directory } from "@hostnode/core"
import { Effect } from "effect"
import type { FdHandle } from "../handles.ts"
import { constants, describeErrno, type Libc } from "../libc.ts"
import { statAt } from "./stat.ts"

/** The open flags and other constants of this architecture. */
export type Constants = NonNullable<typeof constants>

/** libc, the constants, and the buffers the calls reuse. */
export interface Sys {
  readonly c: Libc
  readonly k: Constants
  readonly statBuf: Uint8Array
  readonly statView: DataView
  readonly direntBuf: Uint8Array
  readonly linkBuf: Uint8Array
}

/** A {@link Sys} over `c`. */
export const makeSys = (c: Libc): Sys => {
  const statBuf = new Uint8Array(256)
  return {
    c,
    k: constants as Constants,
    statBuf,
    statView: new DataView(statBuf.buffer),
    direntBuf: new Uint8Array(64 * 1024),
    linkBuf: new Uint8Array(4096)
  }
}

/** The errno of the call that just failed, by name, with what it means. */
export const lastErrno = (sys: Sys): { readonly errno: string; readonly message: string } =>
  describeErrno(sys.c.errno())

/** The error of `operation` on `path` for the errno `d`, classified as every implementation does. */
export const fromErrno = (
  operation: string,
  path: string,
  d: { readonly errno: string; readonly message: string }
): Directory.DirectoryError =>
  new Directory.DirectoryError({ reason: Directory.reasonOf(d.errno, d.message), operation, path })

/** The error of `operation` on `path` that just failed (errno read now: before any other call). */
export const error = (sys: Sys, operation: string, path: string): Directory.DirectoryError =>
  fromErrno(operation, path, lastErrno(sys))

/** `name` below the full path `dir` (lossless string forms). */
export const childFull: (dir: string, name: Uint8Array) => string = Directory.childPath

/** The real layer's view of a handle. */
export const fdOf = (h: Directory.Handle): FdHandle => h as FdHandle

/**
 * A name that is not one component is refused before the system call, as
 * the simulated host does: a NUL would end it early (`a\0b` is `a` to the
 * kernel), a `/`, `.` or `..` would make it a path, walked by the kernel
 * without `O_NOFOLLOW` on the way and out of the directory.
 */
export const badName = (operation: string, path: string, name: Uint8Array): Directory.DirectoryError | undefined => {
  const errno = Directory.nameProblem(name)
  if (errno === undefined) return undefined
  return new Directory.DirectoryError({
    reason: new Directory.InvalidName({
      errno,
      detail:
        errno === "ENAMETOOLONG"
          ? `a name of ${name.length} bytes, more than ${Directory.NameMax}`
          : "not a single path component (empty, `.`, `..`, or with a `/` or NUL byte)"
    }),
    operation,
    path
  })
}

/** `body` when every name is one component, else the error for the first that is not. */
export const named = <A, E, R>(
  operation: string,
  names: ReadonlyArray<readonly [string, Uint8Array]>,
  body: () => Effect.Effect<A, E, R>
): Effect.Effect<A, E | Directory.DirectoryError, R> => {
  for (const [path, name] of names) {
    const e = badName(operation, path, name)
    if (e !== undefined) return Effect.fail(e)
  }
  return body()
}

/** Nothing, or the error of `operation` when the call's result `r` says it failed. */
export const check = (
  sys: Sys,
  r: number,
  operation: string,
  path: string
): Effect.Effect<void, Directory.DirectoryError> => (r < 0 ? Effect.fail(error(sys, operation, path)) : Effect.void)

/** A handle for the descriptor `fd`, closed with the scope. */
export const own = (sys: Sys, fd: number, path: string, operation: string) =>
  Effect.acquireRelease(
    Effect.suspend(() => {
      const st = statAt(sys, fd, undefined)
      if (st === undefined) {
        const e = error(sys, operation, path)
        sys.c.close(fd)
        return Effect.fail(e)
      }
      return Effect.succeed(Directory.handle({ path, fd, mountId: st.mountId }) as FdHandle & Directory.Handle)
    }),
    (h) =>
      Effect.sync(() => {
        sys.c.close(h.fd)
      })
  )
