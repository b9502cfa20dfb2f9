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
 * Boundary: the system calls and their errors (errnos are read and
 * classified here, never in core). What a path resolves to and what may be
 * removed is decided in @hostnode/core. The shared state and the errors are
 * in `internal/nodeDirectory/sys.ts`, `statx` decoding in `stat.ts`, files in
 * `file.ts`, `openat2` resolution in `openat2.ts`.
 *
 * @since 0.2.0
 */
import { Directory, FileName } from "@hostnode/core"
import { Effect, Layer, Schema } from "effect"
import { cString, emptyPath, type Libc, LibcUnavailable, load } from "./internal/libc.ts"
import { openFile } from "./internal/nodeDirectory/file.ts"
import { resolveDirectory } from "./internal/nodeDirectory/openat2.ts"
import { statAt, typeOfDirent } from "./internal/nodeDirectory/stat.ts"
import { badName, check, childFull, error, fdOf, makeSys, named, own } from "./internal/nodeDirectory/sys.ts"

/**
 * koffi's prebuilt binary, libc.so.6 or this architecture's system call
 * table could not be loaded; `detail` says which and why.
 *
 * @since 0.3.0
 */
export class FfiUnavailable extends Schema.TaggedError<FfiUnavailable>()("FfiUnavailable", {
  detail: Schema.String
}) {
  override get message(): string {
    return this.detail
  }
}

/**
 * Why the system-call layer could not be built (one reason so far: {@link FfiUnavailable}).
 *
 * @since 0.3.0
 */
export const DirectoryUnavailableReason = Schema.Union([FfiUnavailable])

/**
 * Why the system-call layer could not be built.
 *
 * @since 0.3.0
 */
export type DirectoryUnavailableReason = typeof DirectoryUnavailableReason.Type

/**
 * The system-call layer could not be built here (no koffi binary, no libc.so.6, an unknown architecture).
 *
 * @since 0.2.0
 */
export class DirectoryUnavailable extends Schema.TaggedError<DirectoryUnavailable>()("DirectoryUnavailable", {
  reason: DirectoryUnavailableReason
}) {
  override get message(): string {
    return `directory handles through system calls are unavailable: ${this.reason.message}`
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

/** The service over libc: every primitive one system call on a descriptor. */
const build = (c: Libc, options?: Options): Directory.Directories => {
  const sys = makeSys(c)
  const k = sys.k

  const openRoot: Directory.Primitives["openRoot"] = (path) =>
    Effect.suspend(() => {
      // The decoded host root: trusted once, here; `/proc/<pid>/root` is meant to be followed.
      const fd = c.openat(k.AT_FDCWD, cString(FileName.encode(path)), k.O_RDONLY | k.O_DIRECTORY | k.O_CLOEXEC, 0)
      return fd < 0 ? Effect.fail(error(sys, "open", path)) : own(sys, fd, path, "open")
    })

  const openDirectory: Directory.Primitives["openDirectory"] = (dir, name, opts) =>
    Effect.suspend(() => {
      const d = fdOf(dir)
      const path = childFull(dir.path, name)
      const bad = badName("openat", path, name)
      if (bad !== undefined) return Effect.fail(bad)
      const fd = c.openat(d.fd, cString(name), k.O_RDONLY | k.O_DIRECTORY | k.O_NOFOLLOW | k.O_CLOEXEC, 0)
      if (fd < 0) return Effect.fail(error(sys, "openat", path))
      return Effect.flatMap(own(sys, fd, path, "openat"), (h) =>
        opts?.sameMount === true && h.mountId !== d.mountId
          ? Effect.fail(
              new Directory.DirectoryError({
                reason: new Directory.OtherMount({
                  detail: `the root of mount ${h.mountId}, not of mount ${d.mountId} it is in`
                }),
                operation: "openat",
                path
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
      return fd < 0 ? Effect.fail(error(sys, "openat", `${dir.path}/..`)) : own(sys, fd, path, "openat")
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
      return fd < 0 ? Effect.fail(error(sys, "openat", path)) : own(sys, fd, path, "openat")
    })

  const list: Directory.Primitives["list"] = (dir) =>
    Effect.suspend(() => {
      const fd = fdOf(dir).fd
      const out: Array<Directory.Entry> = []
      // A directory's read offset belongs to the descriptor: every listing starts at the beginning.
      if (c.lseek(fd, 0, 0) < 0) return Effect.fail(error(sys, "lseek", dir.path))
      for (;;) {
        const n = c.getdents64(fd, sys.direntBuf, sys.direntBuf.length)
        if (n < 0) return Effect.fail(error(sys, "getdents64", dir.path))
        if (n === 0) return Effect.succeed(out)
        let off = 0
        while (off < n) {
          const reclen = (sys.direntBuf[off + 16] as number) | ((sys.direntBuf[off + 17] as number) << 8)
          const type = sys.direntBuf[off + 18] as number
          let end = off + 19
          while (sys.direntBuf[end] !== 0) end++
          const len = end - off - 19
          const first = sys.direntBuf[off + 19]
          const isDots = first === 0x2e && (len === 1 || (len === 2 && sys.direntBuf[off + 20] === 0x2e))
          if (!isDots) out.push({ name: sys.direntBuf.slice(off + 19, end), type: typeOfDirent(type) })
          off += reclen
        }
      }
    })

  const stat: Directory.Primitives["stat"] = (dir, name) =>
    Effect.suspend(() => {
      const bad = name === undefined ? undefined : badName("statx", childFull(dir.path, name), name)
      if (bad !== undefined) return Effect.fail(bad)
      const st = statAt(sys, fdOf(dir).fd, name === undefined ? undefined : cString(name))
      return st === undefined
        ? Effect.fail(error(sys, "statx", name === undefined ? dir.path : childFull(dir.path, name)))
        : Effect.succeed(st)
    })

  const readLink: Directory.Primitives["readLink"] = (dir, name) =>
    Effect.suspend(() => {
      const bad = badName("readlinkat", childFull(dir.path, name), name)
      if (bad !== undefined) return Effect.fail(bad)
      const n = c.readlinkat(fdOf(dir).fd, cString(name), sys.linkBuf, sys.linkBuf.length)
      return n < 0
        ? Effect.fail(error(sys, "readlinkat", childFull(dir.path, name)))
        : Effect.succeed(sys.linkBuf.slice(0, n))
    })

  const unlink: Directory.Primitives["unlink"] = (dir, name, opts) =>
    Effect.suspend(() =>
      named("unlinkat", [[childFull(dir.path, name), name]], () =>
        check(
          sys,
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
        else
          out.push(c.unlinkat(fd, cString(name), 0) < 0 ? error(sys, "unlinkat", childFull(dir.path, name)) : undefined)
      }
      return out
    })

  const makeDirectory: Directory.Primitives["makeDirectory"] = (dir, name, permissions) =>
    Effect.suspend(() =>
      named("mkdirat", [[childFull(dir.path, name), name]], () =>
        check(sys, c.mkdirat(fdOf(dir).fd, cString(name), permissions), "mkdirat", childFull(dir.path, name))
      )
    )

  const symlink: Directory.Primitives["symlink"] = (dir, name, target) =>
    Effect.suspend(() =>
      named("symlinkat", [[childFull(dir.path, name), name]], () =>
        // A NUL in the target would end it early: the link would lead somewhere else than asked.
        target.includes(0)
          ? Effect.fail(
              new Directory.DirectoryError({
                reason: new Directory.InvalidName({ errno: "EINVAL", detail: "the link's target contains a NUL byte" }),
                operation: "symlinkat",
                path: childFull(dir.path, name)
              })
            )
          : check(
              sys,
              c.symlinkat(cString(target), fdOf(dir).fd, cString(name)),
              "symlinkat",
              childFull(dir.path, name)
            )
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
            sys,
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
          sys,
          name === undefined
            ? c.fchownat(fdOf(dir).fd, emptyPath, uid, gid, k.AT_EMPTY_PATH)
            : c.fchownat(fdOf(dir).fd, cString(name), uid, gid, k.AT_SYMLINK_NOFOLLOW),
          "fchownat",
          name === undefined ? dir.path : childFull(dir.path, name)
        )
      )
    )

  const chmod: Directory.Primitives["chmod"] = (dir, mode) =>
    Effect.suspend(() => check(sys, c.fchmod(fdOf(dir).fd, mode), "fchmod", dir.path))

  const sync: Directory.Primitives["sync"] = (dir) =>
    Effect.suspend(() => check(sys, c.fsync(fdOf(dir).fd), "fsync", dir.path))

  const syncFileSystem: Directory.Primitives["syncFileSystem"] = (dir) =>
    Effect.suspend(() => check(sys, c.syncfs(fdOf(dir).fd), "syncfs", dir.path))

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
    openFile: openFile(sys),
    sync,
    syncFileSystem,
    resolveDirectory: resolveDirectory(sys, options?.openat2 ?? true)
  })
}

const loadLibc = Effect.suspend(() => {
  const c = load()
  return c instanceof LibcUnavailable
    ? Effect.fail(new DirectoryUnavailable({ reason: new FfiUnavailable({ detail: c.message }) }))
    : Effect.succeed(c)
})

/**
 * The service over this process's system calls; fails to build with {@link DirectoryUnavailable}.
 *
 * @since 0.2.0
 */
export const make: (options?: Options) => Effect.Effect<Directory.Directories, DirectoryUnavailable> = Effect.fn(
  "NodeDirectory.make"
)(function* (options?: Options) {
  return build(yield* loadLibc, options)
})
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
