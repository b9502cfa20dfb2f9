/**
 * Regular files below a handle: `openFile` (never following a link at the
 * name, never blocking on a FIFO planted there, refusing what is not a
 * regular file) and every call on the open file, on its descriptor; who
 * holds a lock on it, from `/proc/locks`.
 *
 * Internal: `NodeDirectory` puts `openFile` among its primitives.
 *
 * @since 0.3.0
 */
import { Directory, FileName } from "@hostnode/core"
import { Effect } from "effect"
import { cString, emptyPath } from "../libc.ts"
import { statAt } from "./stat.ts"
import { badName, check, childFull, error, fdOf, fromErrno, lastErrno, type Sys } from "./sys.ts"

/** A procfs file's text, read through libc (no exception to catch); undefined when it cannot be opened. */
const readProc = (sys: Sys, path: Uint8Array): string | undefined => {
  const { c, k } = sys
  const fd = c.openat(k.AT_FDCWD, path, k.O_RDONLY | k.O_CLOEXEC, 0)
  if (fd < 0) return undefined
  const chunks: Array<Uint8Array> = []
  for (let at = 0; ; ) {
    const buf = new Uint8Array(64 * 1024)
    const n = c.pread(fd, buf, buf.length, at)
    if (n <= 0) break
    chunks.push(buf.subarray(0, n))
    at += n
  }
  c.close(fd)
  return Buffer.concat(chunks).toString("latin1")
}

const procLocks = cString(FileName.encode("/proc/locks"))

/**
 * Who holds a lock on the node `st` describes, from `/proc/locks`
 * (`1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF`: the device's major
 * and minor in hex, the inode in decimal). The first holder that is not
 * waiting (`->`); undefined when procfs does not say.
 */
const lockHolderOf = (sys: Sys, st: Directory.Stat): number | undefined => {
  const text = readProc(sys, procLocks)
  // procfs may be absent (a chroot without /proc): then nobody can be named.
  if (text === undefined) return undefined
  const [major, minor] = st.device.split(":").map(Number)
  for (const line of text.split("\n")) {
    const m = /^\d+:\s+(\S+)\s+\S+\s+\S+\s+(\d+)\s+([0-9a-f]+):([0-9a-f]+):(\d+)\s/.exec(line)
    if (m === null || line.includes("->")) continue
    if (
      Number.parseInt(m[3] as string, 16) === major &&
      Number.parseInt(m[4] as string, 16) === minor &&
      BigInt(m[5] as string) === st.inode
    ) {
      return Number(m[2])
    }
  }
  return undefined
}

/** The open file `fd` (at `path`, for reports): every call on the descriptor. */
const makeFile = (sys: Sys, fd: number, path: string): Directory.File => {
  const { c, k } = sys
  return {
    path,
    stat: Effect.suspend(() => {
      const st = statAt(sys, fd, undefined)
      return st === undefined ? Effect.fail(error(sys, "statx", path)) : Effect.succeed(st)
    }),
    read: (buffer, position) =>
      Effect.suspend(() => {
        const n = c.pread(fd, buffer, buffer.length, position)
        return n < 0 ? Effect.fail(error(sys, "pread", path)) : Effect.succeed(n)
      }),
    write: (bytes, position) =>
      Effect.suspend(() => {
        let done = 0
        while (done < bytes.length) {
          const n = c.pwrite(fd, bytes.subarray(done), bytes.length - done, position + done)
          if (n < 0) return Effect.fail(error(sys, "pwrite", path))
          done += n
        }
        return Effect.void
      }),
    truncate: (size) => Effect.suspend(() => check(sys, c.ftruncate(fd, size), "ftruncate", path)),
    chmod: (mode) => Effect.suspend(() => check(sys, c.fchmod(fd, mode), "fchmod", path)),
    chown: (uid, gid) =>
      Effect.suspend(() => check(sys, c.fchownat(fd, emptyPath, uid, gid, k.AT_EMPTY_PATH), "fchown", path)),
    setTimes: (atimeNs, mtimeNs) =>
      Effect.suspend(() => {
        const times = new DataView(new ArrayBuffer(32))
        times.setBigInt64(0, atimeNs / 1_000_000_000n, true)
        times.setBigInt64(8, atimeNs % 1_000_000_000n, true)
        times.setBigInt64(16, mtimeNs / 1_000_000_000n, true)
        times.setBigInt64(24, mtimeNs % 1_000_000_000n, true)
        return check(sys, c.futimens(fd, new Uint8Array(times.buffer)), "futimens", path)
      }),
    sync: Effect.suspend(() => check(sys, c.fsync(fd), "fsync", path)),
    tryLock: Effect.suspend(() => {
      if (c.flock(fd, k.LOCK_EX | k.LOCK_NB) === 0) return Effect.succeed(true)
      const d = lastErrno(sys)
      // Held by another open file: not taken, not a failure.
      return d.errno === "EWOULDBLOCK" || d.errno === "EAGAIN"
        ? Effect.succeed(false)
        : Effect.fail(fromErrno("flock", path, d))
    }),
    lockHolder: Effect.sync(() => {
      const st = statAt(sys, fd, undefined)
      return st === undefined ? undefined : lockHolderOf(sys, st)
    }),
    holeAt: (offset) =>
      Effect.suspend(() => {
        const n = c.lseek(fd, offset, k.SEEK_HOLE)
        if (n >= 0) return Effect.succeed(Number(n))
        const d = lastErrno(sys)
        // ENXIO: the offset is at or past the end, where there is nothing, hole or data.
        return d.errno === "ENXIO" ? Effect.succeed(offset) : Effect.fail(fromErrno("lseek", path, d))
      })
  }
}

/** `Primitives.openFile` over `sys`. */
export const openFile =
  (sys: Sys): Directory.Primitives["openFile"] =>
  (dir, name, opts) =>
    Effect.suspend(() => {
      const { c, k } = sys
      const path = childFull(dir.path, name)
      const bad = badName("openat", path, name)
      if (bad !== undefined) return Effect.fail(bad)
      // Never follows a link at the name; O_NONBLOCK: a FIFO planted there cannot hang the open.
      const base = k.O_NOFOLLOW | k.O_CLOEXEC | k.O_NOCTTY | k.O_NONBLOCK
      const flags =
        opts.mode === "read"
          ? k.O_RDONLY | base
          : opts.mode === "write"
            ? k.O_WRONLY | base
            : k.O_WRONLY | k.O_CREAT | k.O_EXCL | base
      const fd = c.openat(fdOf(dir).fd, cString(name), flags, opts.mode === "create" ? opts.permissions : 0)
      if (fd < 0) {
        const d = lastErrno(sys)
        // ENXIO: a FIFO or socket with nothing at its other end, opened for writing without blocking.
        return Effect.fail(
          d.errno === "ENXIO"
            ? new Directory.DirectoryError({
                reason: new Directory.WrongType({ errno: d.errno, detail: "not a regular file (a FIFO or socket)" }),
                operation: "openat",
                path
              })
            : fromErrno("openat", path, d)
        )
      }
      return Effect.acquireRelease(
        Effect.suspend(() => {
          const st = statAt(sys, fd, undefined)
          if (st === undefined || st.type !== "File") {
            const e =
              st === undefined
                ? error(sys, "statx", path)
                : new Directory.DirectoryError({
                    reason: new Directory.WrongType({ detail: `a ${st.type}, not a regular file` }),
                    operation: "openat",
                    path
                  })
            c.close(fd)
            return Effect.fail(e)
          }
          return Effect.succeed(makeFile(sys, fd, path))
        }),
        () =>
          Effect.sync(() => {
            c.close(fd)
          })
      )
    })
