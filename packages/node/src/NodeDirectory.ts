/**
 * The real `Directory.Directories`: every operation one system call on a
 * file descriptor (`openat`, `statx`, `getdents64`, `unlinkat`, `renameat2`,
 * ...) through koffi, names passed and returned as bytes. Directories are
 * opened `O_DIRECTORY | O_NOFOLLOW`, files `O_NOFOLLOW | O_NONBLOCK` (a FIFO
 * planted at a name cannot hang an open), nodes held for their identity
 * `O_PATH`. Mount ids come from `statx(STATX_MNT_ID)`, or from
 * `/proc/self/fdinfo/<fd>` on kernels older than 5.8. A name that is not one
 * component (`.`, `..`, a `/` or a NUL in it, more than 255 bytes) is refused
 * before the system call (`InvalidName`), as the simulated host refuses it.
 *
 * `layer` resolves paths with `openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)`
 * where the kernel has it (5.6 and later), and learns where the result is
 * from `/proc/self/fd`; where it does not (`ENOSYS`), and in `layerWalk`,
 * resolution is core's walk from handle to handle. Both are race-free; the
 * tests run the conformance suite on both.
 *
 * Boundary: the system calls and their errors. What a path resolves to and
 * what may be removed is decided in @hostnode/core.
 *
 * @since 0.2.0
 */
import { readFileSync } from "node:fs"
import { Directory, FileName } from "@hostnode/core"
import { Effect, Layer, Schema } from "effect"
import type { FdHandle } from "./internal/handles.ts"
import { constants, cString, describeErrno, emptyPath, type Libc, LibcUnavailable, load } from "./internal/libc.ts"

/**
 * The system-call layer could not be built here (no koffi binary, no libc.so.6, an unknown architecture).
 *
 * @since 0.2.0
 */
export class DirectoryUnavailable extends Schema.TaggedError<DirectoryUnavailable>()("DirectoryUnavailable", {
  reason: Schema.Literal("FfiUnavailable"),
  detail: Schema.String
}) {
  override get message(): string {
    return `directory handles through system calls are unavailable: ${this.detail}`
  }
}

/**
 * Options of {@link make}.
 *
 * @since 0.2.0
 */
export interface Options {
  /** Use `openat2` for resolution where the kernel has it (default true); false walks from handle to handle. */
  readonly openat2?: boolean | undefined
}

const typeOfMode = (mode: number): Directory.Type => {
  switch (mode & 0o170000) {
    case 0o100000:
      return "File"
    case 0o040000:
      return "Directory"
    case 0o120000:
      return "SymbolicLink"
    case 0o060000:
      return "BlockDevice"
    case 0o020000:
      return "CharacterDevice"
    case 0o010000:
      return "FIFO"
    case 0o140000:
      return "Socket"
    default:
      return "Unknown"
  }
}

const typeOfDirent = (t: number): Directory.Type => {
  switch (t) {
    case 8:
      return "File"
    case 4:
      return "Directory"
    case 10:
      return "SymbolicLink"
    case 6:
      return "BlockDevice"
    case 2:
      return "CharacterDevice"
    case 1:
      return "FIFO"
    case 12:
      return "Socket"
    default:
      return "Unknown"
  }
}

const childFull = (dir: string, name: Uint8Array): string =>
  dir === "/" ? `/${FileName.decode(name)}` : `${dir}/${FileName.decode(name)}`

/** The file-system state behind the layer: libc and the buffers its calls reuse (calls are synchronous). */
const build = (c: Libc, options?: Options): Directory.Directories => {
  const k = constants as NonNullable<typeof constants>
  const statBuf = new Uint8Array(256)
  const statView = new DataView(statBuf.buffer)
  const direntBuf = new Uint8Array(64 * 1024)
  const linkBuf = new Uint8Array(4096)
  let openat2Works = options?.openat2 ?? true

  const error = (operation: string, path: string, errno = c.errno()) => {
    const d = describeErrno(errno)
    return new Directory.DirectoryError({
      reason: Directory.reasonOf(d.errno),
      operation,
      path,
      errno: d.errno,
      detail: d.message
    })
  }

  /** The mount id of `fd` from procfs, for kernels whose statx has no STATX_MNT_ID. */
  const fdinfoMountId = (fd: number): number => {
    const text = readFileSync(`/proc/self/fdinfo/${fd}`, "latin1")
    const m = /^mnt_id:\s*(\d+)/m.exec(text)
    return m === null ? -1 : Number(m[1])
  }

  /** statx of `name` in `dirfd` (or of `dirfd`), not following a link; undefined with errno set on failure. */
  const statAt = (dirfd: number, name: Uint8Array | undefined): Directory.Stat | undefined => {
    const flags = k.AT_SYMLINK_NOFOLLOW | (name === undefined ? k.AT_EMPTY_PATH : 0)
    if (c.statx(dirfd, name ?? emptyPath, flags, k.STATX_BASIC_STATS | k.STATX_MNT_ID, statBuf) !== 0) return undefined
    const v = statView
    const mask = v.getUint32(0, true)
    const mode = v.getUint16(28, true)
    let mountId = (mask & k.STATX_MNT_ID) !== 0 ? Number(v.getBigUint64(144, true)) : -1
    if (mountId === -1) {
      // Before 5.8: the mount id of a descriptor is in its fdinfo.
      const fd = name === undefined ? dirfd : c.openat(dirfd, name, k.O_PATH | k.O_NOFOLLOW | k.O_CLOEXEC, 0)
      if (fd >= 0) {
        mountId = fdinfoMountId(fd)
        if (name !== undefined) c.close(fd)
      }
    }
    return {
      type: typeOfMode(mode),
      mode: mode & 0o7777,
      uid: v.getUint32(20, true),
      gid: v.getUint32(24, true),
      size: Number(v.getBigUint64(40, true)),
      nlink: v.getUint32(16, true),
      device: `${v.getUint32(136, true)}:${v.getUint32(140, true)}`,
      inode: v.getBigUint64(32, true),
      mountId,
      atimeNs: v.getBigInt64(64, true) * 1_000_000_000n + BigInt(v.getUint32(72, true)),
      mtimeNs: v.getBigInt64(112, true) * 1_000_000_000n + BigInt(v.getUint32(120, true))
    }
  }

  const fdOf = (h: Directory.Handle): FdHandle => h as FdHandle

  /**
   * A name that is not one component is refused before the system call, as
   * the simulated host does: a NUL would end it early (`a\0b` is `a` to the
   * kernel), a `/`, `.` or `..` would make it a path, walked by the kernel
   * without `O_NOFOLLOW` on the way and out of the directory.
   */
  const badName = (operation: string, path: string, name: Uint8Array): Directory.DirectoryError | undefined => {
    const errno = Directory.nameProblem(name)
    if (errno === undefined) return undefined
    return new Directory.DirectoryError({
      reason: Directory.reasonOf(errno),
      operation,
      path,
      errno,
      detail:
        errno === "ENAMETOOLONG"
          ? `a name of ${name.length} bytes, more than ${Directory.NameMax}`
          : "not a single path component (empty, `.`, `..`, or with a `/` or NUL byte)"
    })
  }

  /** `body` when every name is one component, else the error for the first that is not. */
  const named = <A, E, R>(
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

  /** A handle for the descriptor `fd`, closed with the scope. */
  const own = (fd: number, path: string, operation: string) =>
    Effect.acquireRelease(
      Effect.suspend(() => {
        const st = statAt(fd, undefined)
        if (st === undefined) {
          const e = error(operation, path)
          c.close(fd)
          return Effect.fail(e)
        }
        return Effect.succeed(Directory.handle({ path, fd, mountId: st.mountId }) as FdHandle & Directory.Handle)
      }),
      (h) =>
        Effect.sync(() => {
          c.close(h.fd)
        })
    )

  const openRoot: Directory.Primitives["openRoot"] = (path) =>
    Effect.suspend(() => {
      // The decoded host root: trusted once, here; `/proc/<pid>/root` is meant to be followed.
      const fd = c.openat(k.AT_FDCWD, cString(FileName.encode(path)), k.O_RDONLY | k.O_DIRECTORY | k.O_CLOEXEC, 0)
      return fd < 0 ? Effect.fail(error("open", path)) : own(fd, path, "open")
    })

  const openDirectory: Directory.Primitives["openDirectory"] = (dir, name, opts) =>
    Effect.suspend(() => {
      const d = fdOf(dir)
      const path = childFull(dir.path, name)
      const bad = badName("openat", path, name)
      if (bad !== undefined) return Effect.fail(bad)
      const fd = c.openat(d.fd, cString(name), k.O_RDONLY | k.O_DIRECTORY | k.O_NOFOLLOW | k.O_CLOEXEC, 0)
      if (fd < 0) return Effect.fail(error("openat", path))
      return Effect.flatMap(own(fd, path, "openat"), (h) =>
        opts?.sameMount === true && h.mountId !== d.mountId
          ? Effect.fail(
              new Directory.DirectoryError({
                reason: "OtherMount",
                operation: "openat",
                path,
                errno: "",
                detail: `the root of mount ${h.mountId}, not of mount ${d.mountId} it is in`
              })
            )
          : Effect.succeed(h)
      )
    })

  const dotDot = cString(FileName.encode(".."))

  const openParent: Directory.Primitives["openParent"] = (dir) =>
    Effect.suspend(() => {
      const path = dir.path === "/" ? "/" : dir.path.slice(0, Math.max(1, dir.path.lastIndexOf("/")))
      const fd = c.openat(fdOf(dir).fd, dotDot, k.O_RDONLY | k.O_DIRECTORY | k.O_CLOEXEC, 0)
      return fd < 0 ? Effect.fail(error("openat", `${dir.path}/..`)) : own(fd, path, "openat")
    })

  const credentials: Directory.Primitives["credentials"] = Effect.sync(() => ({
    uid: process.geteuid?.() ?? 0,
    gid: process.getegid?.() ?? 0,
    pid: process.pid
  }))

  const openPath: Directory.Primitives["openPath"] = (dir, name) =>
    Effect.suspend(() => {
      const path = childFull(dir.path, name)
      const bad = badName("openat", path, name)
      if (bad !== undefined) return Effect.fail(bad)
      const fd = c.openat(fdOf(dir).fd, cString(name), k.O_PATH | k.O_NOFOLLOW | k.O_CLOEXEC, 0)
      return fd < 0 ? Effect.fail(error("openat", path)) : own(fd, path, "openat")
    })

  const list: Directory.Primitives["list"] = (dir) =>
    Effect.suspend(() => {
      const fd = fdOf(dir).fd
      const out: Array<Directory.Entry> = []
      // A directory's read offset belongs to the descriptor: every listing starts at the beginning.
      if (c.lseek(fd, 0, 0) < 0) return Effect.fail(error("lseek", dir.path))
      for (;;) {
        const n = c.getdents64(fd, direntBuf, direntBuf.length)
        if (n < 0) return Effect.fail(error("getdents64", dir.path))
        if (n === 0) return Effect.succeed(out)
        let off = 0
        while (off < n) {
          const reclen = (direntBuf[off + 16] as number) | ((direntBuf[off + 17] as number) << 8)
          const type = direntBuf[off + 18] as number
          let end = off + 19
          while (direntBuf[end] !== 0) end++
          const len = end - off - 19
          const first = direntBuf[off + 19]
          const isDots = first === 0x2e && (len === 1 || (len === 2 && direntBuf[off + 20] === 0x2e))
          if (!isDots) out.push({ name: direntBuf.slice(off + 19, end), type: typeOfDirent(type) })
          off += reclen
        }
      }
    })

  const stat: Directory.Primitives["stat"] = (dir, name) =>
    Effect.suspend(() => {
      const bad = name === undefined ? undefined : badName("statx", childFull(dir.path, name), name)
      if (bad !== undefined) return Effect.fail(bad)
      const st = statAt(fdOf(dir).fd, name === undefined ? undefined : cString(name))
      return st === undefined
        ? Effect.fail(error("statx", name === undefined ? dir.path : childFull(dir.path, name)))
        : Effect.succeed(st)
    })

  const readLink: Directory.Primitives["readLink"] = (dir, name) =>
    Effect.suspend(() => {
      const bad = badName("readlinkat", childFull(dir.path, name), name)
      if (bad !== undefined) return Effect.fail(bad)
      const n = c.readlinkat(fdOf(dir).fd, cString(name), linkBuf, linkBuf.length)
      return n < 0 ? Effect.fail(error("readlinkat", childFull(dir.path, name))) : Effect.succeed(linkBuf.slice(0, n))
    })

  const check = (r: number, operation: string, path: string) =>
    r < 0 ? Effect.fail(error(operation, path)) : Effect.void

  const unlink: Directory.Primitives["unlink"] = (dir, name, opts) =>
    Effect.suspend(() =>
      named("unlinkat", [[childFull(dir.path, name), name]], () =>
        check(
          c.unlinkat(fdOf(dir).fd, cString(name), opts?.directory === true ? k.AT_REMOVEDIR : 0),
          "unlinkat",
          childFull(dir.path, name)
        )
      )
    )

  const unlinkAll: NonNullable<Directory.Primitives["unlinkAll"]> = (dir, names) =>
    Effect.sync(() => {
      const fd = fdOf(dir).fd
      const out: Array<Directory.DirectoryError | undefined> = []
      for (const name of names) {
        const bad = badName("unlinkat", childFull(dir.path, name), name)
        if (bad !== undefined) out.push(bad)
        else out.push(c.unlinkat(fd, cString(name), 0) < 0 ? error("unlinkat", childFull(dir.path, name)) : undefined)
      }
      return out
    })

  const makeDirectory: Directory.Primitives["makeDirectory"] = (dir, name, permissions) =>
    Effect.suspend(() =>
      named("mkdirat", [[childFull(dir.path, name), name]], () =>
        check(c.mkdirat(fdOf(dir).fd, cString(name), permissions), "mkdirat", childFull(dir.path, name))
      )
    )

  const symlink: Directory.Primitives["symlink"] = (dir, name, target) =>
    Effect.suspend(() =>
      named("symlinkat", [[childFull(dir.path, name), name]], () =>
        // A NUL in the target would end it early: the link would lead somewhere else than asked.
        target.includes(0)
          ? Effect.fail(
              new Directory.DirectoryError({
                reason: "InvalidName",
                operation: "symlinkat",
                path: childFull(dir.path, name),
                errno: "EINVAL",
                detail: "the link's target contains a NUL byte"
              })
            )
          : check(c.symlinkat(cString(target), fdOf(dir).fd, cString(name)), "symlinkat", childFull(dir.path, name))
      )
    )

  const rename: Directory.Primitives["rename"] = (from, fromName, to, toName, opts) =>
    Effect.suspend(() =>
      named(
        "renameat2",
        [
          [childFull(from.path, fromName), fromName],
          [childFull(to.path, toName), toName]
        ],
        () =>
          check(
            c.renameat2(
              fdOf(from).fd,
              cString(fromName),
              fdOf(to).fd,
              cString(toName),
              opts?.noReplace === true ? k.RENAME_NOREPLACE : 0
            ),
            "renameat2",
            childFull(from.path, fromName)
          )
      )
    )

  const chown: Directory.Primitives["chown"] = (dir, name, uid, gid) =>
    Effect.suspend(() =>
      named("fchownat", name === undefined ? [] : [[childFull(dir.path, name), name]], () =>
        check(
          name === undefined
            ? c.fchownat(fdOf(dir).fd, emptyPath, uid, gid, k.AT_EMPTY_PATH)
            : c.fchownat(fdOf(dir).fd, cString(name), uid, gid, k.AT_SYMLINK_NOFOLLOW),
          "fchownat",
          name === undefined ? dir.path : childFull(dir.path, name)
        )
      )
    )

  const chmod: Directory.Primitives["chmod"] = (dir, mode) =>
    Effect.suspend(() => check(c.fchmod(fdOf(dir).fd, mode), "fchmod", dir.path))

  const sync: Directory.Primitives["sync"] = (dir) =>
    Effect.suspend(() => check(c.fsync(fdOf(dir).fd), "fsync", dir.path))

  const syncFileSystem: Directory.Primitives["syncFileSystem"] = (dir) =>
    Effect.suspend(() => check(c.syncfs(fdOf(dir).fd), "syncfs", dir.path))

  const makeFile = (fd: number, path: string): Directory.File => ({
    path,
    stat: Effect.suspend(() => {
      const st = statAt(fd, undefined)
      return st === undefined ? Effect.fail(error("statx", path)) : Effect.succeed(st)
    }),
    read: (buffer, position) =>
      Effect.suspend(() => {
        const n = c.pread(fd, buffer, buffer.length, position)
        return n < 0 ? Effect.fail(error("pread", path)) : Effect.succeed(n)
      }),
    write: (bytes, position) =>
      Effect.suspend(() => {
        let done = 0
        while (done < bytes.length) {
          const n = c.pwrite(fd, bytes.subarray(done), bytes.length - done, position + done)
          if (n < 0) return Effect.fail(error("pwrite", path))
          done += n
        }
        return Effect.void
      }),
    truncate: (size) => Effect.suspend(() => check(c.ftruncate(fd, size), "ftruncate", path)),
    chmod: (mode) => Effect.suspend(() => check(c.fchmod(fd, mode), "fchmod", path)),
    chown: (uid, gid) =>
      Effect.suspend(() => check(c.fchownat(fd, emptyPath, uid, gid, k.AT_EMPTY_PATH), "fchown", path)),
    setTimes: (atimeNs, mtimeNs) =>
      Effect.suspend(() => {
        const times = new DataView(new ArrayBuffer(32))
        times.setBigInt64(0, atimeNs / 1_000_000_000n, true)
        times.setBigInt64(8, atimeNs % 1_000_000_000n, true)
        times.setBigInt64(16, mtimeNs / 1_000_000_000n, true)
        times.setBigInt64(24, mtimeNs % 1_000_000_000n, true)
        return check(c.futimens(fd, new Uint8Array(times.buffer)), "futimens", path)
      }),
    sync: Effect.suspend(() => check(c.fsync(fd), "fsync", path)),
    tryLock: Effect.suspend(() => {
      if (c.flock(fd, k.LOCK_EX | k.LOCK_NB) === 0) return Effect.succeed(true)
      const e = error("flock", path)
      return e.errno === "EWOULDBLOCK" || e.errno === "EAGAIN" ? Effect.succeed(false) : Effect.fail(e)
    }),
    lockHolder: Effect.sync(() => {
      const st = statAt(fd, undefined)
      return st === undefined ? undefined : lockHolderOf(st)
    }),
    holeAt: (offset) =>
      Effect.suspend(() => {
        const n = c.lseek(fd, offset, k.SEEK_HOLE)
        if (n >= 0) return Effect.succeed(Number(n))
        const e = error("lseek", path)
        // ENXIO: the offset is at or past the end, where there is nothing, hole or data.
        return e.errno === "ENXIO" ? Effect.succeed(offset) : Effect.fail(e)
      })
  })

  const procLocks = cString(FileName.encode("/proc/locks"))

  /** A procfs file's text, read through libc (no exception to catch); undefined when it cannot be opened. */
  const readProc = (path: Uint8Array): string | undefined => {
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

  /**
   * Who holds a lock on the node `st` describes, from `/proc/locks`
   * (`1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF`: the device's major
   * and minor in hex, the inode in decimal). The first holder that is not
   * waiting (`->`); undefined when procfs does not say.
   */
  const lockHolderOf = (st: Directory.Stat): number | undefined => {
    const text = readProc(procLocks)
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

  const openFile: Directory.Primitives["openFile"] = (dir, name, opts) =>
    Effect.suspend(() => {
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
        const e = error("openat", path)
        // ENXIO: a FIFO or socket with nothing at its other end, opened for writing without blocking.
        return Effect.fail(
          e.errno === "ENXIO"
            ? new Directory.DirectoryError({
                ...e,
                reason: "WrongType",
                detail: "not a regular file (a FIFO or socket)"
              })
            : e
        )
      }
      return Effect.acquireRelease(
        Effect.suspend(() => {
          const st = statAt(fd, undefined)
          if (st === undefined || st.type !== "File") {
            const e =
              st === undefined
                ? error("statx", path)
                : new Directory.DirectoryError({
                    reason: "WrongType",
                    operation: "openat",
                    path,
                    errno: "",
                    detail: `a ${st.type}, not a regular file`
                  })
            c.close(fd)
            return Effect.fail(e)
          }
          return Effect.succeed(makeFile(fd, path))
        }),
        () =>
          Effect.sync(() => {
            c.close(fd)
          })
      )
    })

  // Where a descriptor is, as the kernel names it (d_path), for openat2's results.
  const whereIs = (fd: number): string | undefined => {
    const n = c.readlink(cString(FileName.encode(`/proc/self/fd/${fd}`)), linkBuf, linkBuf.length)
    if (n < 0 || n >= linkBuf.length) return undefined
    const text = FileName.decode(linkBuf.slice(0, n))
    return text.startsWith("/") && !text.endsWith(" (deleted)") ? text : undefined
  }

  const resolveDirectory: Directory.Primitives["resolveDirectory"] = (root, names, opts) =>
    Effect.suspend(() => {
      if (!openat2Works) return Effect.succeed(undefined)
      const r = fdOf(root)
      const joined = new Uint8Array(names.reduce((n, x) => n + x.length + 1, 0))
      let at = 0
      for (const x of names) {
        joined.set(x, at)
        at += x.length
        joined[at++] = 0x2f
      }
      const how = new DataView(new ArrayBuffer(24))
      how.setBigUint64(0, BigInt(k.O_RDONLY | k.O_DIRECTORY | k.O_CLOEXEC), true)
      how.setBigUint64(
        16,
        BigInt(
          k.RESOLVE_NO_MAGICLINKS | (opts.noSymlinks ? k.RESOLVE_NO_SYMLINKS | k.RESOLVE_BENEATH : k.RESOLVE_IN_ROOT)
        ),
        true
      )
      const path = cString(joined.subarray(0, Math.max(0, at - 1)))
      let fd = -1
      for (let attempt = 0; attempt < 4 && fd < 0; attempt++) {
        fd = c.openat2(r.fd, path, new Uint8Array(how.buffer))
        if (fd >= 0) break
        const errno = describeErrno(c.errno()).errno
        if (errno === "ENOSYS" || errno === "E2BIG") {
          openat2Works = false
          return Effect.succeed(undefined)
        }
        // A rename racing `..` (EAGAIN) or a link met where none may be: the walk says what it is.
        if (errno === "EAGAIN" || errno === "EXDEV" || errno === "ELOOP") continue
        return Effect.fail(error("openat2", childFull(root.path, joined.subarray(0, Math.max(0, at - 1)))))
      }
      if (fd < 0) return Effect.succeed(undefined)
      const rootAt = whereIs(r.fd)
      const here = whereIs(fd)
      const below =
        rootAt === undefined || here === undefined
          ? undefined
          : rootAt === "/"
            ? here
            : here === rootAt
              ? "/"
              : here.startsWith(`${rootAt}/`)
                ? here.slice(rootAt.length)
                : undefined
      if (below === undefined) {
        c.close(fd)
        return Effect.succeed(undefined)
      }
      const full = root.path === "/" ? below : below === "/" ? root.path : `${root.path}${below}`
      return Effect.map(own(fd, full, "openat2"), (handle) => ({ handle, path: below }))
    })

  return Directory.make({
    openRoot,
    openDirectory,
    openParent,
    credentials,
    openPath,
    list,
    stat,
    readLink,
    unlink,
    unlinkAll,
    makeDirectory,
    symlink,
    rename,
    chown,
    chmod,
    openFile,
    sync,
    syncFileSystem,
    resolveDirectory
  })
}

const loadLibc = Effect.suspend(() => {
  const c = load()
  return c instanceof LibcUnavailable
    ? Effect.fail(new DirectoryUnavailable({ reason: "FfiUnavailable", detail: c.message }))
    : Effect.succeed(c)
})

/**
 * The service over this process's system calls; fails to build with {@link DirectoryUnavailable}.
 *
 * @since 0.2.0
 */
export const make = (options?: Options): Effect.Effect<Directory.Directories, DirectoryUnavailable> =>
  Effect.map(loadLibc, (c) => build(c, options))

/**
 * The real `Directories`, resolving with `openat2` where the kernel has it.
 *
 * @since 0.2.0
 */
export const layer: Layer.Layer<Directory.Directories, DirectoryUnavailable> = Layer.effect(
  Directory.Directories,
  make()
)

/**
 * The real `Directories` resolving by the walk only (no `openat2`): a kernel older than 5.6, and its tests.
 *
 * @since 0.2.0
 */
export const layerWalk: Layer.Layer<Directory.Directories, DirectoryUnavailable> = Layer.effect(
  Directory.Directories,
  make({ openat2: false })
)
