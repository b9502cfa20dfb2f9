/**
 * The `FileSystem` service of the in-memory file system: every method of
 * Effect's `FileSystem` with NodeFileSystem's behaviour for a root process
 * (temporary directories and files with mkdtemp's names, scoped removal that
 * a crashed process never runs, `/proc/<pid>/mountinfo`, watch through a
 * `WatchBackend`), each one call through the journal gate.
 *
 * Boundary: argument handling and the choice of simulated call per method;
 * the semantics are in `syscalls.ts`, `nodeFs.ts` and `copy.ts`, open files
 * in `file.ts`. `FileSystem.make` derives the rest (`exists`, `stream`,
 * `sink`, ...), as it does for NodeFileSystem.
 */
import { posix } from "node:path"
import { FileName } from "@hostnode/core"
import * as Layers from "@hostnode/core/Layers"
import { Effect, FileSystem, Option, type PlatformError, Random, Stream } from "effect"
import type * as Scope from "effect/Scope"
import { BadArgument, badArgumentError, Errno, errno } from "../errno.ts"
import { copyFileSys, cpNode } from "./copy.ts"
import { makeFile } from "./file.ts"
import { fileBytes, info, setSize, touchRead, writeAt } from "./inode.ts"
import type { FsHost, FsState, Mount, OpenFile } from "./model.ts"
import { isProcMountinfo, mountEntries } from "./mounts.ts"
import { isUint32, mkdirp, readdirRecursive, realpathNode, rmNode, toMillis, validateId } from "./nodeFs.ts"
import { meta, operate } from "./operate.ts"
import { absolute, wellFormed } from "./resolve.ts"
import {
  chmodPath,
  openFlags,
  sysChown,
  sysLink,
  sysMkdir,
  sysOpen,
  sysReaddir,
  sysReadlink,
  sysRename,
  sysStat,
  sysSymlink
} from "./syscalls.ts"

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
const HEX = "0123456789abcdef"

const randomString = (alphabet: string, length: number): Effect.Effect<string> =>
  Effect.map(
    Effect.all(Array.from({ length }, () => Random.nextIntBetween(0, alphabet.length, { halfOpen: true }))),
    (ixs) => ixs.map((i) => alphabet[i]).join("")
  )

/** Node's mkdtemp template: `join(directory, prefix)`, or `directory + "/"` without a prefix. */
const tempTemplate = (
  st: FsState,
  options?: { readonly directory?: string | undefined; readonly prefix?: string | undefined }
) => {
  const prefix = options?.prefix ?? ""
  const directory = typeof options?.directory === "string" ? posix.join(options.directory, ".") : st.tmpdir
  return prefix ? posix.join(directory, prefix) : `${directory}/`
}

/**
 * `FileSystem` over `host`'s in-memory tree, with NodeFileSystem's behaviour
 * for a root process. `exists`, `glob`, `readFileString`, `writeFileString`,
 * `stream` and `sink` are derived by `FileSystem.make` from the methods
 * below, exactly as NodeFileSystem derives them, so they log and fail as the
 * underlying `access`, `readFile`, `writeFile` and `open` calls.
 */
export const make = (host: FsHost): FileSystem.FileSystem => {
  const st = host.fs

  const mkdtemp = (
    method: string,
    options?: { readonly directory?: string | undefined; readonly prefix?: string | undefined }
  ) =>
    Effect.gen(function* () {
      const template = tempTemplate(st, options)
      // Retry on a name collision like mkdtemp(3) does; the suffix is 6 random alphanumerics.
      for (let attempt = 0; ; attempt++) {
        const name = `${template}${yield* randomString(ALNUM, 6)}`
        const result = yield* Effect.result(
          operate(host, { ...meta(st, method, template), paths: [absolute(st, name)] }, (now) => {
            const made = sysMkdir(st, name, 0o700, now)
            return made instanceof Errno ? errno(made.code, "mkdtemp", name) : name
          })
        )
        if (result._tag === "Success") return result.success
        if (result.failure.reason._tag !== "AlreadyExists" || attempt >= 100) return yield* Effect.fail(result.failure)
      }
    })

  const remove = (
    method: string,
    path: string,
    options?: { readonly recursive?: boolean | undefined; readonly force?: boolean | undefined }
  ) =>
    operate(host, meta(st, method, path), (now) =>
      rmNode(st, path, { recursive: options?.recursive ?? false, force: options?.force ?? false }, now)
    )

  /** A scoped removal that a crashed process never gets to run (its finalizers died with it). */
  const removeOnRelease = (method: string, path: string) =>
    Effect.suspend(() =>
      host.journal.crashed ? Effect.void : Effect.orDie(remove(method, path, { recursive: true, force: true }))
    )

  const writeFile = (
    path: string,
    data: Uint8Array,
    options?: { readonly flag?: FileSystem.OpenFlag | undefined; readonly mode?: number | undefined }
  ) =>
    operate(host, meta(st, "writeFile", path), (now) => {
      const flags = openFlags(options?.flag ?? "w")
      const node = sysOpen(st, path, flags, options?.mode ?? 0o666, now)
      if (node instanceof Errno) return node
      if (!flags.write) return errno("EBADF", "write")
      if (node.type !== "File") return errno("EISDIR", "write")
      writeAt(node, data, flags.append ? node.size : 0, now)
      return undefined
    })

  const makeTempFile = (
    method: string,
    options?: {
      readonly directory?: string | undefined
      readonly prefix?: string | undefined
      readonly suffix?: string | undefined
    }
  ) =>
    Effect.gen(function* () {
      const directory = yield* mkdtemp(method, options)
      const random = yield* randomString(HEX, 12)
      const name = posix.join(directory, options?.suffix ? `${random}${options.suffix}` : random)
      yield* writeFile(name, new Uint8Array(0))
      return name
    })

  const open = (
    path: string,
    options?: {
      readonly flag?: FileSystem.OpenFlag | undefined
      readonly mode?: number | undefined
      readonly noFollow?: boolean | undefined
    }
  ): Effect.Effect<FileSystem.File, PlatformError.PlatformError, Scope.Scope> =>
    Effect.acquireRelease(
      operate(host, meta(st, "open", path), (now) => {
        const flag = options?.flag ?? "r"
        const flags = openFlags(flag, options?.noFollow === true)
        const via: { mount?: Mount } = {}
        const node = sysOpen(st, path, flags, options?.mode ?? 0o666, now, via)
        if (node instanceof Errno) return node
        const handle: OpenFile = {
          mount: via.mount,
          fd: st.nextFd++,
          node,
          path: absolute(st, path),
          readable: flags.read,
          writable: flags.write,
          append: flags.append,
          generation: host.journal.generation,
          closed: false
        }
        st.openFiles.add(handle)
        return handle
      }),
      (handle) =>
        Effect.sync(() => {
          handle.closed = true
          st.openFiles.delete(handle)
        })
    ).pipe(Effect.map((handle) => makeFile(host, handle)))

  return FileSystem.make({
    // Root passes every permission check access(2) makes, so only existence matters.
    access: (path) =>
      operate(host, meta(st, "access", path), () => {
        const f = sysStat(st, path, true, "access")
        return f instanceof Errno ? f : undefined
      }),
    chmod: (path, mode) =>
      operate(host, meta(st, "chmod", path), (now) => {
        if (!isUint32(mode)) return new BadArgument(`The value of "mode" is out of range. Received ${mode}`)
        return chmodPath(st, path, mode, now)
      }),
    chown: (path, uid, gid) =>
      operate(
        host,
        meta(st, "chown", path),
        (now) => validateId(uid, "uid") ?? validateId(gid, "gid") ?? sysChown(st, path, uid, gid, now)
      ),
    copy: (fromPath, toPath, options) =>
      operate(host, meta(st, "copy", fromPath, toPath), (now) =>
        cpNode(
          st,
          fromPath,
          toPath,
          { force: options?.overwrite ?? false, preserveTimestamps: options?.preserveTimestamps ?? false },
          now
        )
      ),
    copyFile: (fromPath, toPath) =>
      operate(host, meta(st, "copyFile", fromPath, toPath), (now) => copyFileSys(st, fromPath, toPath, now)),
    link: (fromPath, toPath) =>
      operate(host, meta(st, "link", fromPath, toPath), (now) => sysLink(st, fromPath, toPath, now)),
    lstat: (path) =>
      operate(host, meta(st, "lstat", path), () => {
        const n = sysStat(st, path, false, "lstat")
        return n instanceof Errno ? n : info(n)
      }),
    stat: (path) =>
      operate(host, meta(st, "stat", path), () => {
        const n = sysStat(st, path, true, "stat")
        return n instanceof Errno ? n : info(n)
      }),
    makeDirectory: (path, options) =>
      operate(host, meta(st, "makeDirectory", path), (now) => {
        const mode = options?.mode ?? 0o777
        if (options?.recursive) return mkdirp(st, path, mode, now)
        const made = sysMkdir(st, path, mode, now)
        return made instanceof Errno ? made : undefined
      }),
    makeTempDirectory: (options) => mkdtemp("makeTempDirectory", options),
    makeTempDirectoryScoped: (options) =>
      Effect.acquireRelease(mkdtemp("makeTempDirectoryScoped", options), (dir) =>
        removeOnRelease("makeTempDirectoryScoped", dir)
      ),
    makeTempFile: (options) => makeTempFile("makeTempFile", options),
    makeTempFileScoped: (options) =>
      Effect.acquireRelease(makeTempFile("makeTempFileScoped", options), (file) =>
        removeOnRelease("makeTempFileScoped", posix.dirname(file))
      ),
    open,
    readDirectory: (path, options) =>
      operate(host, meta(st, "readDirectory", path), (now) => {
        if (options?.recursive) return readdirRecursive(st, path, now)
        const entries = sysReaddir(st, path, now)
        // Node decodes names as UTF-8, lossily: a name that is not valid UTF-8 comes back with U+FFFD.
        return entries instanceof Errno ? entries : entries.map(([name]) => wellFormed(name))
      }),
    readDirectoryEntries: (path) =>
      operate(host, meta(st, "readDirectoryEntries", path), (now) => {
        const entries = sysReaddir(st, path, now)
        return entries instanceof Errno
          ? entries
          : entries.map(([name, node]): FileSystem.DirectoryEntry => ({ name: wellFormed(name), type: node.type }))
      }),
    readFile: (path) =>
      operate(host, meta(st, "readFile", path), (now) => {
        if (isProcMountinfo(absolute(st, path))) return FileName.encode(Layers.renderMountInfo(mountEntries(st)))
        const node = sysOpen(st, path, openFlags("r"), 0, now)
        if (node instanceof Errno) return node
        if (node.type !== "File") return errno("EISDIR", "read")
        touchRead(node, now)
        return fileBytes(node).slice()
      }),
    readLink: (path) =>
      operate(host, meta(st, "readLink", path), () => {
        const t = sysReadlink(st, path)
        return typeof t === "string" ? wellFormed(t) : t
      }),
    realPath: (path) => operate(host, meta(st, "realPath", path), () => realpathNode(st, path)),
    remove: (path, options) => remove("remove", path, options),
    rename: (oldPath, newPath) =>
      operate(host, meta(st, "rename", oldPath, newPath), (now) => sysRename(st, oldPath, newPath, now)),
    symlink: (target, path) =>
      operate(host, { ...meta(st, "symlink", target, path), paths: [absolute(st, path)] }, (now) =>
        sysSymlink(st, target, path, now)
      ),
    truncate: (path, length) =>
      operate(host, meta(st, "truncate", path), (now) => {
        const len = length ?? 0
        if (!Number.isInteger(len)) return new BadArgument(`The value of "len" is out of range. Received ${len}`)
        const node = sysOpen(st, path, openFlags("r+"), 0, now)
        if (node instanceof Errno) return node
        if (node.type !== "File") return errno("EINVAL", "ftruncate")
        setSize(node, Math.max(0, len))
        node.mtime = now
        node.ctime = now
        return undefined
      }),
    utimes: (path, atime, mtime) =>
      operate(host, meta(st, "utimes", path), (now) => {
        const a = toMillis(atime, now)
        if (a instanceof BadArgument) return a
        const m = toMillis(mtime, now)
        if (m instanceof BadArgument) return m
        const node = sysStat(st, path, true, "utime")
        if (node instanceof Errno) return node
        node.atime = a
        node.mtime = m
        node.ctime = now
        return undefined
      }),
    watch: (path, options) =>
      Stream.unwrap(
        Effect.gen(function* () {
          // NodeFileSystem's watch starts with its own stat, so its errors name "stat".
          const stat = yield* operate(host, { ...meta(st, "watch", path), method: "stat" }, () => {
            const n = sysStat(st, path, true, "stat")
            return n instanceof Errno ? n : info(n)
          })
          // Like NodeFileSystem, a WatchBackend in context wins; there is no built-in watcher.
          const backend = yield* Effect.serviceOption(FileSystem.WatchBackend)
          const registered = Option.flatMap(backend, (b) => b.register(path, stat, options))
          if (Option.isSome(registered)) return registered.value
          return yield* Effect.fail(
            badArgumentError(
              new BadArgument("watch is not supported by MemoryHost; provide a FileSystem.WatchBackend"),
              "watch"
            )
          )
        })
      ),
    writeFile
  })
}
