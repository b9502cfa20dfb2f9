/**
 * Open files of the in-memory file system: Effect's `FileSystem.File` over an
 * open file description, with NodeFileSystem's cursor rules, each call
 * journalled as `File.<method>`; a handle of a process that crashed and was
 * restarted dies with `MemoryHostCrashed` (reason `StaleHandle`).
 *
 * Boundary: what happens through a descriptor once `open` (in `service.ts`)
 * has made it; opening, closing and the busy-mount bookkeeping are there.
 */
import { Effect, FileSystem, Option } from "effect"
import { BadArgument, badArgumentError, Errno, errno } from "../errno.ts"
import { crashed, StaleHandle } from "../journal.ts"
import { info, setSize, touchRead, writeAt } from "./inode.ts"
import type { FsHost, OpenFile } from "./model.ts"
import { defaultSyscall, type Outcome, operate } from "./operate.ts"

/**
 * A `File` over an open file description, with NodeFileSystem's cursor
 * rules: each handle has its own cursor, appends go to the end without moving
 * it, positional reads leave it alone, truncate clamps it.
 */
export const makeFile = (host: FsHost, handle: OpenFile): FileSystem.File => {
  let position = 0n
  const fd = handle.fd
  const fileOp = <A>(method: string, body: (now: number) => Outcome<A>) =>
    Effect.suspend(() => {
      if (handle.generation !== host.journal.generation) {
        // The handle belongs to a process that crashed and was restarted: nothing may use it.
        return Effect.die(crashed(new StaleHandle({ fd }), `File.${method}`, [handle.path]))
      }
      return operate(
        host,
        {
          kind: `File.${method}`,
          method,
          pathOrDescriptor: fd,
          paths: [handle.path],
          syscall: defaultSyscall[`File.${method}`] ?? method
        },
        (now) => {
          if (handle.closed) return errno("EBADF", defaultSyscall[`File.${method}`] ?? method)
          return body(now)
        }
      )
    })

  const readInto = (buffer: Uint8Array, at: bigint, now: number): number | Errno => {
    if (!handle.readable) return errno("EBADF", "read")
    const node = handle.node
    if (node.type === "Directory") return errno("EISDIR", "read")
    if (node.type !== "File") return errno("EINVAL", "read")
    const start = Number(at)
    if (start >= node.size) return 0
    const n = Math.min(buffer.length, node.size - start)
    buffer.set(node.data.subarray(start, start + n))
    if (n > 0) touchRead(node, now)
    return n
  }

  const writeOnce = (buffer: Uint8Array, now: number): number | Errno => {
    if (!handle.writable) return errno("EBADF", "write")
    const node = handle.node
    if (node.type !== "File") return errno("EBADF", "write")
    if (handle.append) {
      writeAt(node, buffer, node.size, now)
    } else {
      writeAt(node, buffer, Number(position), now)
      position += BigInt(buffer.length)
    }
    return buffer.length
  }

  const negative = (method: string) =>
    Effect.fail(badArgumentError(new BadArgument("Cannot read before the start of the file"), method))

  return {
    [FileSystem.FileTypeId]: FileSystem.FileTypeId,
    get stat() {
      return fileOp("stat", () => info(handle.node))
    },
    get sync() {
      return fileOp("sync", () => undefined)
    },
    seek: (offset, from) =>
      Effect.suspend(() => {
        const next = from === "start" ? offset : position + offset
        if (next < 0n) {
          return Effect.fail(badArgumentError(new BadArgument("Cannot seek before the start of the file"), "seek"))
        }
        position = next
        return Effect.succeed(next)
      }),
    read: (buffer, options) =>
      Effect.suspend(() => {
        const explicit = options?.position
        if (explicit !== undefined && explicit < 0n) return negative("read")
        return fileOp("read", (now) => {
          const at = explicit ?? position
          const n = readInto(buffer, at, now)
          if (typeof n === "number" && explicit === undefined) position = at + BigInt(n)
          return n
        })
      }),
    readAlloc: (size, options) =>
      Effect.suspend(() => {
        if (!Number.isInteger(size) || size < 0) {
          return Effect.fail(badArgumentError(new BadArgument("size must be a non-negative integer"), "readAlloc"))
        }
        const explicit = options?.position
        if (explicit !== undefined && explicit < 0n) return negative("readAlloc")
        return fileOp("readAlloc", (now): Option.Option<Uint8Array> | Errno => {
          const at = explicit ?? position
          const buffer = new Uint8Array(size)
          const n = readInto(buffer, at, now)
          if (n instanceof Errno) return n
          if (n === 0) return Option.none()
          if (explicit === undefined) position = at + BigInt(n)
          return Option.some(n === size ? buffer : buffer.slice(0, n))
        })
      }),
    truncate: (length) =>
      fileOp("truncate", (now) => {
        const len = length || 0
        if (!Number.isInteger(len)) return new BadArgument(`The value of "len" is out of range. Received ${len}`)
        const node = handle.node
        if (!handle.writable || node.type !== "File") return errno("EINVAL", "ftruncate")
        setSize(node, Math.max(0, len))
        node.mtime = now
        node.ctime = now
        if (!handle.append) {
          const clamp = BigInt(Math.max(0, len))
          if (position > clamp) position = clamp
        }
        return undefined
      }),
    write: (buffer) => fileOp("write", (now) => writeOnce(buffer, now)),
    writeAll: (buffer) =>
      buffer.length === 0
        ? Effect.void
        : fileOp("writeAll", (now) => {
            const n = writeOnce(buffer, now)
            return n instanceof Errno ? n : undefined
          })
  }
}
