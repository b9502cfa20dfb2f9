/**
 * Copying on the in-memory file system: libuv's `uv_fs_copyfile` (what
 * `fs.copyFile` runs) and Node's `fs.cp` with `recursive: true` and no
 * dereference (internal/fs/cp/cp.js), with its own `ERR_FS_CP_*` errors,
 * link rewriting and mode copying.
 *
 * Boundary: the two copy functions only, over the simulated syscalls; like
 * `nodeFs.ts` they return an `Errno` rather than fail.
 */
import { posix } from "node:path"
import { Errno, errno, type NodeErrorCode } from "../errno.ts"
import { fileBytes, setSize, touchRead, writeAt } from "./inode.ts"
import type { FileNode, FsState, Inode } from "./model.ts"
import { mkdirp } from "./nodeFs.ts"
import {
  chmodPath,
  openFlags,
  sysMkdir,
  sysOpen,
  sysReaddir,
  sysReadlink,
  sysStat,
  sysSymlink,
  sysUnlink
} from "./syscalls.ts"

/** libuv's `uv_fs_copyfile` (what `fs.copyFile` runs): every error is reported as syscall `copyfile`. */
export const copyFileSys = (st: FsState, from: string, to: string, now: number): undefined | Errno => {
  const e = (x: Errno) => errno(x.code, "copyfile", from, to)
  const src = sysOpen(st, from, openFlags("r"), 0, now)
  if (src instanceof Errno) return e(src)
  // O_WRONLY | O_CREAT without O_TRUNC: copying a file onto itself must not empty it.
  const dst = sysOpen(st, to, { ...openFlags("w"), trunc: false }, src.mode, now)
  if (dst instanceof Errno) return e(dst)
  if (dst === src || dst.type !== "File") return undefined
  setSize(dst, 0)
  dst.mtime = now
  dst.ctime = now
  // libuv then fchown()s and fchmod()s the target to the source's owner and mode, like `cp -p`.
  dst.uid = src.uid
  dst.gid = src.gid
  dst.mode = src.mode
  if (src.type !== "File") {
    // Reading a directory fails only now, and libuv then unlinks the destination
    // name: an existing target file is gone (or, behind a symlink, emptied).
    sysUnlink(st, to, now)
    return errno("EISDIR", "copyfile", from, to)
  }
  writeAt(dst, fileBytes(src), 0, now)
  // Also for an empty source, which writeAt leaves untouched: the copy truncated it.
  dst.mtime = now
  dst.ctime = now
  touchRead(src, now)
  return undefined
}

interface CpOptions {
  readonly force: boolean
  readonly preserveTimestamps: boolean
}

/** Node's `fs.cp` with `recursive: true`, `errorOnExist: false`, no dereference (internal/fs/cp/cp.js). */
export const cpNode = (st: FsState, src: string, dest: string, opts: CpOptions, now: number): undefined | Errno => {
  const checked = cpCheckPaths(st, src, dest)
  if (checked instanceof Errno) return checked
  const parents = cpCheckParentPaths(st, src, checked.src, dest)
  if (parents instanceof Errno) return parents
  const destParent = posix.dirname(dest)
  const exists = sysStat(st, destParent, true, "stat")
  if (exists instanceof Errno) {
    if (exists.code !== "ENOENT") return exists
    const made = mkdirp(st, destParent, 0o777, now)
    if (made instanceof Errno) return made
  }
  return cpTree(st, checked.dest, src, dest, opts, now)
}

/** A directory being copied: its entries and how far the copy has got. */
interface CpFrame {
  readonly dest: string
  readonly src: string
  readonly names: ReadonlyArray<string>
  index: number
  /** Set when the copy created `dest`: Node then gives it the source's mode once its entries are done. */
  readonly mode: number | undefined
}

/**
 * Node's depth-first copy (getStatsForCopy / onDir / copyDir), with an
 * explicit stack instead of recursion so a pathologically deep copy ends in
 * ENAMETOOLONG as on the real host rather than in a stack overflow.
 */
const cpTree = (
  st: FsState,
  destNode: Inode | undefined,
  src: string,
  dest: string,
  opts: CpOptions,
  now: number
): undefined | Errno => {
  const stack: Array<CpFrame> = []
  const entry = (destNode: Inode | undefined, src: string, dest: string): undefined | Errno => {
    const s = sysStat(st, src, false, "lstat")
    if (s instanceof Errno) return s
    if (s.type === "File") return cpFile(st, s, destNode, src, dest, opts, now)
    if (s.type === "SymbolicLink") return cpLink(st, destNode, src, dest, now)
    if (destNode === undefined) {
      const made = sysMkdir(st, dest, 0o777, now)
      if (made instanceof Errno) return made
    }
    const names = sysReaddir(st, src, now)
    if (names instanceof Errno) return errno(names.code, "opendir", src)
    stack.push({
      src,
      dest,
      names: names.map(([name]) => name),
      index: 0,
      mode: destNode === undefined ? s.mode : undefined
    })
    return undefined
  }
  const first = entry(destNode, src, dest)
  if (first instanceof Errno) return first
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!
    if (frame.index >= frame.names.length) {
      stack.pop()
      if (frame.mode !== undefined) {
        const r = chmodPath(st, frame.dest, frame.mode, now)
        if (r instanceof Errno) return r
      }
      continue
    }
    const name = frame.names[frame.index++]!
    const srcItem = posix.join(frame.src, name)
    const destItem = posix.join(frame.dest, name)
    const checked = cpCheckPaths(st, srcItem, destItem)
    if (checked instanceof Errno) return checked
    const r = entry(checked.dest, srcItem, destItem)
    if (r instanceof Errno) return r
  }
  return undefined
}

const isSrcSubdir = (st: FsState, src: string, dest: string): boolean => {
  const split = (p: string) =>
    posix
      .resolve(st.cwd, p)
      .split("/")
      .filter((n) => n !== "")
  const d = split(dest)
  return split(src).every((c, i) => d[i] === c)
}

const cpError = (code: NodeErrorCode, path: string, detail: string) => new Errno(code, "cp", path, undefined, detail)

const cpCheckPaths = (st: FsState, src: string, dest: string): { src: Inode; dest: Inode | undefined } | Errno => {
  const s = sysStat(st, src, false, "lstat")
  if (s instanceof Errno) return s
  const d = sysStat(st, dest, false, "lstat")
  if (d instanceof Errno && d.code !== "ENOENT") return d
  const destNode = d instanceof Errno ? undefined : d
  if (destNode !== undefined) {
    if (destNode === s) return cpError("ERR_FS_CP_EINVAL", dest, "src and dest cannot be the same")
    if (s.type === "Directory" && destNode.type !== "Directory") {
      return cpError("ERR_FS_CP_DIR_TO_NON_DIR", dest, `cannot overwrite non-directory ${dest} with directory ${src}`)
    }
    if (s.type !== "Directory" && destNode.type === "Directory") {
      return cpError("ERR_FS_CP_NON_DIR_TO_DIR", dest, `cannot overwrite directory ${dest} with non-directory ${src}`)
    }
  }
  if (s.type === "Directory" && isSrcSubdir(st, src, dest)) {
    return cpError("ERR_FS_CP_EINVAL", dest, `cannot copy ${src} to a subdirectory of self ${dest}`)
  }
  return { src: s, dest: destNode }
}

const cpCheckParentPaths = (st: FsState, src: string, srcNode: Inode, dest: string): undefined | Errno => {
  const srcParent = posix.resolve(st.cwd, posix.dirname(src))
  let destParent = posix.resolve(st.cwd, posix.dirname(dest))
  for (;;) {
    if (destParent === srcParent || destParent === "/") return undefined
    const s = sysStat(st, destParent, true, "stat")
    if (s instanceof Errno) return s.code === "ENOENT" ? undefined : s
    if (s === srcNode) return cpError("ERR_FS_CP_EINVAL", dest, `cannot copy ${src} to a subdirectory of self ${dest}`)
    destParent = posix.resolve(st.cwd, posix.dirname(destParent))
  }
}

const cpFile = (
  st: FsState,
  s: FileNode,
  destNode: Inode | undefined,
  src: string,
  dest: string,
  opts: CpOptions,
  now: number
): undefined | Errno => {
  if (destNode !== undefined) {
    // Without `force` an existing file is silently left alone (errorOnExist is false).
    if (!opts.force) return undefined
    const u = sysUnlink(st, dest, now)
    if (u instanceof Errno) return u
  }
  const c = copyFileSys(st, src, dest, now)
  if (c instanceof Errno) return c
  if (opts.preserveTimestamps) {
    const t = sysStat(st, dest, true, "utime")
    if (t instanceof Errno) return t
    t.atime = s.atime
    t.mtime = s.mtime
    t.ctime = now
  }
  return chmodPath(st, dest, s.mode, now)
}

const cpLink = (
  st: FsState,
  destNode: Inode | undefined,
  src: string,
  dest: string,
  now: number
): undefined | Errno => {
  const target = sysReadlink(st, src)
  if (target instanceof Errno) return target
  // Node makes a relative link target absolute (verbatimSymlinks is false).
  const resolvedSrc = posix.isAbsolute(target) ? target : posix.resolve(st.cwd, posix.dirname(src), target)
  if (destNode === undefined) return sysSymlink(st, resolvedSrc, dest, now)
  let resolvedDest = sysReadlink(st, dest)
  if (resolvedDest instanceof Errno) {
    return resolvedDest.code === "EINVAL" ? sysSymlink(st, resolvedSrc, dest, now) : resolvedDest
  }
  if (!posix.isAbsolute(resolvedDest)) resolvedDest = posix.resolve(st.cwd, posix.dirname(dest), resolvedDest)
  if (isSrcSubdir(st, resolvedSrc, resolvedDest)) {
    return cpError("ERR_FS_CP_EINVAL", dest, `cannot copy ${resolvedSrc} to a subdirectory of self ${resolvedDest}`)
  }
  const srcStat = sysStat(st, src, true, "stat")
  if (srcStat instanceof Errno) return srcStat
  if (srcStat.type === "Directory" && isSrcSubdir(st, resolvedDest, resolvedSrc)) {
    return cpError("ERR_FS_CP_SYMLINK_TO_SUBDIRECTORY", dest, `cannot overwrite ${resolvedDest} with ${resolvedSrc}`)
  }
  const u = sysUnlink(st, dest, now)
  if (u instanceof Errno) return u
  return sysSymlink(st, resolvedSrc, dest, now)
}
