/**
 * Node's `fs.cp` for the dry-run file system (recursive, no dereference,
 * Node's path checks and error codes), made of the overlay's own steps so
 * each is recorded and reads back. Boundary: only `copy`; its steps are
 * `writes.ts`.
 */
import { posix } from "node:path"
import { Lexical } from "@hostnode/core/Programs"
import { Effect, type FileSystem, Option } from "effect"
import type * as PlatformError from "effect/PlatformError"
import { fsError } from "./overlay.ts"
import type { View } from "./view.ts"
import type { Writes } from "./writes.ts"

/** `copy` over `view` and its `writes`. */
export const makeCopy = (view: View, writes: Writes) => {
  const { place, exists, lstat, resolve, stat, readDirectory, readLink } = view
  const { remove, makeDirectory, symlink, copyFile, chmod, utimes } = writes
  /**
   * What makes two names one file: the overlay's node itself, or the
   * host's device and inode numbers.
   */
  const identity = (path: string, followLast: boolean) =>
    Effect.gen(function* () {
      const at = place(yield* resolve(path, followLast, "copy", followLast ? "stat" : "lstat"))
      if (at._tag === "Overlay") return at.node as unknown
      const info = yield* followLast ? stat(path) : lstat(path)
      return Option.isSome(info.ino) ? `${info.dev}:${info.ino.value}` : (Symbol() as unknown)
    })

  /** Whether `dest` is `src` or below it, component by component. */
  const isSubdirectory = (src: string, dest: string) => {
    const d = dest.split("/").filter((n) => n !== "")
    return src
      .split("/")
      .filter((n) => n !== "")
      .every((c, i) => d[i] === c)
  }

  const cpError = (
    code:
      | "ERR_FS_CP_EINVAL"
      | "ERR_FS_CP_DIR_TO_NON_DIR"
      | "ERR_FS_CP_NON_DIR_TO_DIR"
      | "ERR_FS_CP_SYMLINK_TO_SUBDIRECTORY",
    path: string
  ) => fsError("copy", "cp", path, code)

  /** Node's checkPaths: the source exists; a destination of another kind, the same file or the source's own subtree is refused. */
  const cpCheckPaths = (src: string, dest: string) =>
    Effect.gen(function* () {
      const s = yield* lstat(src)
      const d = yield* Effect.result(lstat(dest))
      if (d._tag === "Failure" && d.failure.reason._tag !== "NotFound") return yield* d.failure
      const destInfo = d._tag === "Success" ? d.success : undefined
      if (destInfo !== undefined) {
        if ((yield* identity(src, false)) === (yield* identity(dest, false)))
          return yield* cpError("ERR_FS_CP_EINVAL", dest)
        if (s.type === "Directory" && destInfo.type !== "Directory")
          return yield* cpError("ERR_FS_CP_DIR_TO_NON_DIR", dest)
        if (s.type !== "Directory" && destInfo.type === "Directory")
          return yield* cpError("ERR_FS_CP_NON_DIR_TO_DIR", dest)
      }
      if (s.type === "Directory" && isSubdirectory(src, dest)) return yield* cpError("ERR_FS_CP_EINVAL", dest)
      return destInfo
    })

  const cpLink = (destInfo: FileSystem.File.Info | undefined, src: string, dest: string) =>
    Effect.gen(function* () {
      const target = yield* readLink(src)
      // Node makes a relative link target absolute (verbatimSymlinks is false).
      const resolvedSrc = posix.isAbsolute(target) ? target : posix.resolve(posix.dirname(src), target)
      if (destInfo === undefined) return yield* symlink(resolvedSrc, dest)
      const destTarget = yield* Effect.result(readLink(dest))
      if (destTarget._tag === "Failure") return yield* symlink(resolvedSrc, dest)
      const resolvedDest = posix.isAbsolute(destTarget.success)
        ? destTarget.success
        : posix.resolve(posix.dirname(dest), destTarget.success)
      if (isSubdirectory(resolvedSrc, resolvedDest)) return yield* cpError("ERR_FS_CP_EINVAL", dest)
      const srcInfo = yield* stat(src)
      if (srcInfo.type === "Directory" && isSubdirectory(resolvedDest, resolvedSrc)) {
        return yield* cpError("ERR_FS_CP_SYMLINK_TO_SUBDIRECTORY", dest)
      }
      yield* remove(dest)
      yield* symlink(resolvedSrc, dest)
    })

  const cpEntry = (
    destInfo: FileSystem.File.Info | undefined,
    src: string,
    dest: string,
    options: Parameters<FileSystem.FileSystem["copy"]>[2]
  ): Effect.Effect<void, PlatformError.PlatformError> =>
    Effect.gen(function* () {
      const s = yield* lstat(src)
      if (s.type === "SymbolicLink") return yield* cpLink(destInfo, src, dest)
      if (s.type !== "Directory") {
        if (destInfo !== undefined) {
          // Without `overwrite` an existing file is silently left alone (errorOnExist is false).
          if (options?.overwrite !== true) return
          yield* remove(dest)
        }
        yield* copyFile(src, dest)
        if (options?.preserveTimestamps === true && Option.isSome(s.atime) && Option.isSome(s.mtime)) {
          yield* utimes(dest, s.atime.value, s.mtime.value)
        }
        return yield* chmod(dest, s.mode & 0o7777)
      }
      if (destInfo === undefined) yield* makeDirectory(dest)
      for (const name of yield* readDirectory(src)) {
        const from = Lexical.child(src, name)
        const to = Lexical.child(dest, name)
        yield* cpEntry(yield* cpCheckPaths(from, to), from, to, options)
      }
      // A directory the copy made gets the source's mode once its entries are done, as Node does.
      if (destInfo === undefined) yield* chmod(dest, s.mode & 0o7777)
    })

  /**
   * Node's `fs.cp` (recursive, no dereference, errorOnExist false), made
   * of the overlay's own steps, so each is recorded and reads back.
   */
  const copy = (from: string, to: string, options?: Parameters<FileSystem.FileSystem["copy"]>[2]) =>
    Effect.gen(function* () {
      const src = posix.resolve(from)
      const dest = posix.resolve(to)
      const destInfo = yield* cpCheckPaths(src, dest)
      const srcIdentity = yield* identity(src, false)
      // checkParentPaths: the destination must not be inside the source through a link.
      for (let p = posix.dirname(dest); p !== posix.dirname(src) && p !== "/"; p = posix.dirname(p)) {
        const up = yield* Effect.result(identity(p, true))
        if (up._tag === "Failure") {
          if (up.failure.reason._tag === "NotFound") break
          return yield* up.failure
        }
        if (up.success === srcIdentity) return yield* cpError("ERR_FS_CP_EINVAL", dest)
      }
      if (!(yield* exists(posix.dirname(dest)))) yield* makeDirectory(posix.dirname(dest), { recursive: true })
      yield* cpEntry(destInfo, src, dest, options)
    })
  return { identity, isSubdirectory, cpError, cpCheckPaths, cpLink, cpEntry, copy }
}
