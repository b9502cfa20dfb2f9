/**
 * The dry-run file system's model: what the overlay knows of a path, how a
 * node reads as a `File.Info` and as an open file, and the small helpers the
 * file system and the mounter share (paths, device numbers, the mount table
 * without detached mounts). Boundary: plain data and functions; the overlay
 * itself is made in `view.ts`.
 */
import type { MountInfo } from "@hostnode/core"
import { ByteSize, Effect, FileSystem, Option } from "effect"
import * as PlatformError from "effect/PlatformError"
import * as MemoryFileSystem from "../memoryFileSystem.ts"

/** What the overlay knows of one path; a path it does not know is the host's. */
export type Node =
  | { readonly kind: "gone" }
  | {
      readonly kind: "file"
      data: Uint8Array
      mode: number
      uid: number
      gid: number
      /** Names of this file: a hard link made in the dry run shares the node. */
      nlink?: number
      times?: { readonly atime: Date; readonly mtime: Date }
    }
  | {
      readonly kind: "dir"
      mode: number
      uid: number
      gid: number
      readonly dev?: bigint
      times?: { readonly atime: Date; readonly mtime: Date }
    }
  | { readonly kind: "link"; readonly target: string; nlink?: number }
  /** The host's path `from` (a file or a whole tree) now appears here: it was renamed. */
  | { readonly kind: "moved"; readonly from: string }

/** Where a path's truth lies: in the overlay, on the host (under another name after a rename), or nowhere. */
export type Place =
  | { readonly _tag: "Overlay"; readonly node: Exclude<Node, { kind: "gone" | "moved" }> }
  | { readonly _tag: "Host"; readonly path: string }
  | { readonly _tag: "Absent" }

export const normalize = (path: string): string => {
  const p = path.replace(/\/+/g, "/")
  return p.length > 1 && p.endsWith("/") ? p.slice(0, -1) : p
}

export const parentOf = (path: string): string | undefined => {
  if (path === "/" || !path.includes("/")) return undefined
  const i = path.lastIndexOf("/")
  return i === 0 ? "/" : path.slice(0, i)
}

export const TypeBits = { file: 0o100000, dir: 0o040000, link: 0o120000 } as const

/**
 * A PlatformError as the host's file system would report it for `syscall`
 * failing with `code` in `method(path)`, errno code included (the operations
 * look at it). The reason for each code is the simulated host's, which is
 * Node's (`MemoryFileSystem.systemError`): one table, so the dry run, the
 * simulated host and the real layer agree (ENOTDIR is a BadResource).
 */
export const fsError = (
  method: string,
  syscall: string,
  path: string,
  code: Parameters<typeof MemoryFileSystem.systemError>[0]
) => MemoryFileSystem.systemError(code, method, syscall, path)

/** The times `utimes` set on an overlay node, if it did. */
export const timesOf = (node: { readonly times?: { readonly atime: Date; readonly mtime: Date } }) =>
  node.times === undefined ? {} : { atime: Option.some(node.times.atime), mtime: Option.some(node.times.mtime) }

export const infoOf = (node: Exclude<Node, { kind: "gone" | "moved" }>): FileSystem.File.Info => {
  const common = {
    mtime: Option.none(),
    atime: Option.none(),
    birthtime: Option.none(),
    dev: 0n,
    ino: Option.none(),
    nlink: Option.some(1n),
    rdev: Option.none(),
    blksize: Option.none(),
    blocks: Option.none()
  }
  switch (node.kind) {
    case "file":
      return {
        ...common,
        ...timesOf(node),
        nlink: Option.some(BigInt(node.nlink ?? 1)),
        type: "File",
        mode: TypeBits.file | node.mode,
        uid: Option.some(node.uid),
        gid: Option.some(node.gid),
        size: ByteSize.bytes(node.data.length)
      }
    case "dir":
      return {
        ...common,
        ...timesOf(node),
        dev: node.dev ?? 0n,
        type: "Directory",
        mode: TypeBits.dir | node.mode,
        uid: Option.some(node.uid),
        gid: Option.some(node.gid),
        size: ByteSize.bytes(4096)
      }
    case "link":
      return {
        ...common,
        nlink: Option.some(BigInt(node.nlink ?? 1)),
        type: "SymbolicLink",
        mode: TypeBits.link | 0o777,
        uid: Option.some(0),
        gid: Option.some(0),
        size: ByteSize.bytes(node.target.length)
      }
  }
}

/** How an overlay file was opened: what its descriptor allows (the kernel checks these, with EBADF/EINVAL/EISDIR). */
export interface Access {
  readonly readable: boolean
  readonly writable: boolean
  readonly append: boolean
  readonly directory: boolean
}

/**
 * An open file of the overlay: reads and writes its bytes in memory; `sync`
 * has nothing to do. The cursor is the File's own, as in Node's layer: an
 * append does not move it, a truncate clamps it.
 */
export const memoryFile = (
  node: { data: Uint8Array },
  info: () => FileSystem.File.Info,
  access: Access
): FileSystem.File => {
  let position = 0
  const badf = (method: string, syscall: string) => fsError(method, syscall, "<file>", "EBADF")
  const readAt = (buffer: Uint8Array, at: number) => {
    const n = Math.max(0, Math.min(buffer.length, node.data.length - at))
    if (n > 0) buffer.set(node.data.subarray(at, at + n))
    return n
  }
  const canRead = (method: string) =>
    access.directory
      ? Effect.fail(fsError(method, "read", "<file>", "EISDIR"))
      : access.readable
        ? Effect.void
        : Effect.fail(badf(method, "read"))
  const negative = (method: string, description: string) =>
    Effect.fail(PlatformError.badArgument({ module: "FileSystem", method, description }))
  const write = (method: string) => (buffer: Uint8Array) =>
    access.writable
      ? Effect.sync(() => {
          const at = access.append ? node.data.length : position
          const end = at + buffer.length
          if (end > node.data.length) {
            const grown = new Uint8Array(end)
            grown.set(node.data)
            node.data = grown
          }
          node.data.set(buffer, at)
          if (!access.append) position = end
          return buffer.length
        })
      : Effect.fail(badf(method, "write"))
  return {
    [FileSystem.FileTypeId]: FileSystem.FileTypeId,
    stat: Effect.sync(info),
    seek: (offset, from) => {
      const next = from === "start" ? Number(offset) : position + Number(offset)
      return next < 0
        ? negative("seek", "negative offset")
        : Effect.sync(() => {
            position = next
            return BigInt(position)
          })
    },
    sync: Effect.void,
    read: (buffer, options) =>
      options?.position !== undefined && options.position < 0
        ? negative("read", "negative position")
        : Effect.andThen(
            canRead("read"),
            Effect.sync(() => {
              if (options?.position !== undefined) return readAt(buffer, Number(options.position))
              const n = readAt(buffer, position)
              position += n
              return n
            })
          ),
    readAlloc: (size, options) =>
      Effect.andThen(
        canRead("readAlloc"),
        Effect.sync(() => {
          const buffer = new Uint8Array(Number(size))
          const at = options?.position === undefined ? position : Number(options.position)
          const n = readAt(buffer, at)
          if (options?.position === undefined) position += n
          return n === 0 ? Option.none() : Option.some(buffer.subarray(0, n))
        })
      ),
    truncate: (length = 0) =>
      access.writable
        ? Effect.sync(() => {
            const size = Number(length)
            const next = new Uint8Array(size)
            next.set(node.data.subarray(0, Math.min(size, node.data.length)))
            node.data = next
            position = Math.min(position, size)
          })
        : Effect.fail(fsError("truncate", "ftruncate", "<file>", "EINVAL")),
    write: write("write"),
    writeAll: (buffer) => Effect.asVoid(write("writeAll")(buffer))
  }
}

/** The options argument of a FileSystem method. */
export type Options<K extends keyof FileSystem.FileSystem> = FileSystem.FileSystem[K] extends (
  path: string,
  options?: infer O
) => unknown
  ? O
  : never

/** The kernel's `new_encode_dev`: the `dev` stat reports for a mount's major:minor. */
export const deviceNumber = (major: number, minor: number): bigint =>
  BigInt((minor & 0xff) | (major << 8)) | (BigInt(minor & ~0xff) << 12n)

/** The entry whose mount point is the longest (the deepest mount containing a path), newest among equals. */
export const longestPrefix = (entries: ReadonlyArray<MountInfo.MountEntry>): MountInfo.MountEntry | undefined => {
  let best: MountInfo.MountEntry | undefined
  for (const e of entries) if (best === undefined || e.mountPoint.length >= best.mountPoint.length) best = e
  return best
}

/** The alphabet of mkdtemp(3)'s six random characters. */
export const TempAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

/** A mount table's path: this process's, another's, or one read through a pinned `/proc/<pid>` directory (`/proc/<agent>/fd/<n>/mountinfo`: a container's). */
export const MountInfoPath = /^\/proc\/(?:self|thread-self|\d+)(?:\/fd\/\d+)?\/mountinfo$/

/** What tells a mount from a later one given its id: its device and root. */
export const mountIdentity = (e: MountInfo.MountEntry): string => `${e.major}:${e.minor} ${e.root}`

/**
 * The table without the mounts a dry run detached: by id, and where `as`
 * says what the mount was, only while the entry still is that mount (the
 * kernel gives a freed id to the next mount).
 */
export const withoutDetached = (
  table: ReadonlyArray<MountInfo.MountEntry>,
  detached: ReadonlySet<number>,
  as?: ReadonlyMap<number, string> | undefined
) =>
  detached.size === 0
    ? table
    : table.filter((e) => {
        if (!detached.has(e.id)) return true
        const was = as?.get(e.id)
        return was !== undefined && was !== mountIdentity(e)
      })

export const processIds = () => ({
  uid: typeof process.getuid === "function" ? process.getuid() : 0,
  gid: typeof process.getgid === "function" ? process.getgid() : 0
})
