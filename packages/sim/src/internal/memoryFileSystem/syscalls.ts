/**
 * The simulated system calls of the in-memory file system: `open(2)`,
 * `stat(2)`, `mkdir(2)`, `symlink(2)`, `link(2)`, `unlink(2)`, `rmdir(2)`,
 * `rename(2)` and `renameat2(RENAME_EXCHANGE)`, `readlink(2)`, `scandir`,
 * `chown(2)` and `chmod(2)`, each with Linux's checks in Linux's order (EXDEV
 * across mounts, EBUSY on mount points).
 *
 * Boundary: one syscall each, on paths resolved by `resolve.ts`; each returns
 * its result or an `Errno` naming the syscall and path exactly as Node's
 * error would. Node's compound functions built on them (`fs.rm`, `fs.cp`,
 * recursive `mkdir`, ...) are `nodeFs.ts` and `copy.ts`.
 */
import type { FileSystem } from "effect"
import { Errno, type ErrnoCode, errno } from "../errno.ts"
import {
  addEntry,
  createDirectory,
  createFile,
  createSymlink,
  removeEntry,
  setSize,
  touchRead,
  unlinkInode
} from "./inode.ts"
import {
  type DirectoryNode,
  type FsState,
  type Inode,
  MAXSYMLINKS,
  type Mount,
  S_ISGID,
  S_ISUID,
  S_IXGRP
} from "./model.ts"
import {
  type Ctx,
  chainHas,
  crossFile,
  cwdFrame,
  enterFrame,
  Fail,
  type Frame,
  fail,
  isMountpoint,
  type Last,
  lookup,
  resolveLast,
  rootFrame,
  specialFrame,
  walkLast
} from "./resolve.ts"

export const withSyscall = (f: Fail, syscall: string, path?: string, dest?: string) =>
  errno(f.code, syscall, path, dest)

/** Flags of `open(2)` as Node's string flags map to them. */
export interface OpenFlags {
  readonly read: boolean
  readonly write: boolean
  readonly creat: boolean
  readonly excl: boolean
  readonly trunc: boolean
  readonly append: boolean
  readonly noFollow: boolean
}

/**
 * The `open(2)` flags NodeFileSystem passes for each `OpenFlag`.
 */
export const openFlags = (flag: FileSystem.OpenFlag, noFollow = false): OpenFlags => {
  const plus = flag.endsWith("+")
  const kind = flag[0]
  return {
    read: kind === "r" || plus,
    write: kind !== "r" || plus,
    creat: kind !== "r",
    excl: flag.includes("x"),
    trunc: kind === "w",
    append: kind === "a",
    noFollow
  }
}

/** `open(2)`: returns the inode, creating or truncating as the flags say. */
export const sysOpen = (
  st: FsState,
  path: string,
  flags: OpenFlags,
  mode: number,
  now: number,
  via?: { mount?: Mount }
): Inode | Errno => {
  const e = (f: Fail) => withSyscall(f, "open", path)
  const ctx: Ctx = { links: 0 }
  const start = path.startsWith("/") ? rootFrame(st) : cwdFrame(st)
  if (start instanceof Fail) return e(start)
  // O_EXCL implies O_NOFOLLOW for the final component.
  const follow = !flags.noFollow && !(flags.creat && flags.excl)
  let mustDir = false
  let cur: { path: string; from: Frame } = { path, from: start }
  for (;;) {
    const last = walkLast(st, cur.path, cur.from, ctx)
    if (last instanceof Fail) return e(last)
    let node: Inode
    if (last._tag === "Special") {
      const frame = specialFrame(last)
      node = frame.dir
      if (via !== undefined) via.mount = frame.mount
    } else {
      if (flags.creat && last.trailing) return e(fail("EISDIR"))
      mustDir = mustDir || last.trailing
      if (last.node === undefined) {
        if (!flags.creat) return e(fail("ENOENT"))
        if (mustDir) return e(fail("EISDIR"))
        if (via !== undefined) via.mount = last.parent.mount
        return createFile(st, last.parent, last.name, mode, now)
      }
      if (last.node.type === "SymbolicLink" && (follow || last.trailing)) {
        ctx.links += 1
        if (ctx.links > MAXSYMLINKS) return e(fail("ELOOP"))
        cur = { path: last.node.target, from: last.parent }
        continue
      }
      node = last.node
      if (node.type === "Directory") {
        const frame = enterFrame(last.parent, last.name, node)
        node = frame.dir
        if (via !== undefined) via.mount = frame.mount
      } else {
        // A file mounted on the file: its root file is what opens.
        const crossed = crossFile(last.parent.mount, node)
        node = crossed.node
        if (via !== undefined) via.mount = crossed.mount
      }
    }
    if (flags.creat && flags.excl) return e(fail("EEXIST"))
    if (node.type === "SymbolicLink") return e(fail("ELOOP"))
    if (node.type === "Directory") {
      if (flags.creat || flags.write) return e(fail("EISDIR"))
    } else if (mustDir) {
      return e(fail("ENOTDIR"))
    }
    if (flags.trunc && node.type === "File") {
      setSize(node, 0)
      node.mtime = now
      node.ctime = now
    }
    return node
  }
}

export const sysStat = (st: FsState, path: string, follow: boolean, syscall: string): Inode | Errno => {
  const f = lookup(st, path, follow)
  return f instanceof Fail ? withSyscall(f, syscall, path) : f.node
}

/** `mkdir(2)`. Trailing slashes are fine; any existing entry (even a dangling symlink) is EEXIST. */
export const sysMkdir = (st: FsState, path: string, mode: number, now: number): DirectoryNode | Errno => {
  const last = resolveLast(st, path)
  if (last instanceof Fail) return withSyscall(last, "mkdir", path)
  if (last._tag === "Special" || last.node !== undefined) return errno("EEXIST", "mkdir", path)
  return createDirectory(st, last.parent, last.name, mode, now)
}

export const sysSymlink = (st: FsState, target: string, path: string, now: number): undefined | Errno => {
  if (target === "") return errno("ENOENT", "symlink", target, path)
  const last = resolveLast(st, path)
  if (last instanceof Fail) return withSyscall(last, "symlink", target, path)
  if (last._tag === "Special" || last.node !== undefined) return errno("EEXIST", "symlink", target, path)
  if (last.trailing) return errno("ENOENT", "symlink", target, path)
  createSymlink(last.parent, last.name, target, now)
  return undefined
}

export const sysLink = (st: FsState, from: string, to: string, now: number): undefined | Errno => {
  const old = lookup(st, from, false)
  if (old instanceof Fail) return withSyscall(old, "link", from, to)
  const last = resolveLast(st, to)
  if (last instanceof Fail) return withSyscall(last, "link", from, to)
  if (last._tag === "Special" || last.node !== undefined) return errno("EEXIST", "link", from, to)
  if (last.trailing) return errno("ENOENT", "link", from, to)
  if (old.node.type === "Directory") return errno("EPERM", "link", from, to)
  if (old.parent.mount !== last.parent.mount) return errno("EXDEV", "link", from, to)
  old.node.nlink += 1
  old.node.ctime = now
  addEntry(last.parent.dir, last.name, old.node, now)
  return undefined
}

export const sysUnlink = (st: FsState, path: string, now: number): undefined | Errno => {
  const last = resolveLast(st, path)
  if (last instanceof Fail) return withSyscall(last, "unlink", path)
  if (last._tag === "Special") return errno("EISDIR", "unlink", path)
  if (last.node === undefined) return errno("ENOENT", "unlink", path)
  if (last.node.type === "Directory") return errno("EISDIR", "unlink", path)
  if (last.trailing) return errno("ENOTDIR", "unlink", path)
  // A file something is mounted on (a bind of a file) cannot be unlinked.
  if (isMountpoint(last.parent, last.node)) return errno("EBUSY", "unlink", path)
  removeEntry(last.parent.dir, last.name, now)
  unlinkInode(last.node, now)
  return undefined
}

export const sysRmdir = (st: FsState, path: string, now: number): undefined | Errno => {
  const last = resolveLast(st, path)
  if (last instanceof Fail) return withSyscall(last, "rmdir", path)
  if (last._tag === "Special") {
    return errno(last.kind === "dot" ? "EINVAL" : last.kind === "dotdot" ? "ENOTEMPTY" : "EBUSY", "rmdir", path)
  }
  const node = last.node
  if (node === undefined) return errno("ENOENT", "rmdir", path)
  if (node.type !== "Directory") return errno("ENOTDIR", "rmdir", path)
  if (isMountpoint(last.parent, node)) return errno("EBUSY", "rmdir", path)
  if (node.entries.size > 0) return errno("ENOTEMPTY", "rmdir", path)
  removeEntry(last.parent.dir, last.name, now)
  unlinkInode(node, now)
  return undefined
}

/** `rename(2)` with Linux's checks in Linux's order (do_renameat2, then vfs_rename). */
export const sysRename = (st: FsState, from: string, to: string, now: number): undefined | Errno => {
  const e = (code: ErrnoCode) => errno(code, "rename", from, to)
  const po = resolveLast(st, from)
  if (po instanceof Fail) return e(po.code)
  const pn = resolveLast(st, to)
  if (pn instanceof Fail) return e(pn.code)
  const mountOf = (l: Last) => (l._tag === "Special" ? l.frame.mount : l.parent.mount)
  if (mountOf(po) !== mountOf(pn)) return e("EXDEV")
  if (po._tag === "Special" || pn._tag === "Special") return e("EBUSY")
  const old = po.node
  if (old === undefined) return e("ENOENT")
  if (old.type !== "Directory" && (po.trailing || pn.trailing)) return e("ENOTDIR")
  // The source may not be an ancestor of the target's parent ...
  if (old.type === "Directory" && chainHas(pn.parent, old)) return e("EINVAL")
  const target = pn.node
  // ... and the target may not be an ancestor of the source.
  if (target?.type === "Directory" && chainHas(po.parent, target)) return e("ENOTEMPTY")
  if (old === target) return undefined
  if (isMountpoint(po.parent, old)) return e("EBUSY")
  if (target !== undefined) {
    if (old.type === "Directory" && target.type !== "Directory") return e("ENOTDIR")
    if (old.type !== "Directory" && target.type === "Directory") return e("EISDIR")
    if (isMountpoint(pn.parent, target)) return e("EBUSY")
    if (target.type === "Directory" && target.entries.size > 0) return e("ENOTEMPTY")
    removeEntry(pn.parent.dir, pn.name, now)
    unlinkInode(target, now)
  }
  removeEntry(po.parent.dir, po.name, now)
  addEntry(pn.parent.dir, pn.name, old, now)
  old.ctime = now
  return undefined
}

/** `renameat2(RENAME_EXCHANGE)`: the two entries swap places; both must exist, on one mount. */
export const sysExchange = (st: FsState, a: string, b: string, now: number): undefined | Errno => {
  const e = (code: ErrnoCode) => errno(code, "renameat2", a, b)
  const pa = resolveLast(st, a)
  if (pa instanceof Fail) return e(pa.code)
  const pb = resolveLast(st, b)
  if (pb instanceof Fail) return e(pb.code)
  if (pa._tag === "Special" || pb._tag === "Special") return e("EBUSY")
  if (pa.node === undefined || pb.node === undefined) return e("ENOENT")
  if (pa.parent.mount !== pb.parent.mount) return e("EXDEV")
  if (pa.node === pb.node) return undefined
  if (isMountpoint(pa.parent, pa.node) || isMountpoint(pb.parent, pb.node)) return e("EBUSY")
  if (pa.node.type === "Directory" && chainHas(pb.parent, pa.node)) return e("EINVAL")
  if (pb.node.type === "Directory" && chainHas(pa.parent, pb.node)) return e("EINVAL")
  const na = pa.node
  const nb = pb.node
  removeEntry(pa.parent.dir, pa.name, now)
  removeEntry(pb.parent.dir, pb.name, now)
  addEntry(pa.parent.dir, pa.name, nb, now)
  addEntry(pb.parent.dir, pb.name, na, now)
  na.ctime = now
  nb.ctime = now
  return undefined
}

export const sysReadlink = (st: FsState, path: string): string | Errno => {
  const f = lookup(st, path, false)
  if (f instanceof Fail) return withSyscall(f, "readlink", path)
  if (f.node.type !== "SymbolicLink") return errno("EINVAL", "readlink", path)
  return f.node.target
}

/** `scandir`: the names in a directory (sorted, so listings are deterministic). */
export const sysReaddir = (st: FsState, path: string, now: number): Array<[string, Inode]> | Errno => {
  const f = lookup(st, path, true)
  if (f instanceof Fail) return withSyscall(f, "scandir", path)
  if (f.node.type !== "Directory") return errno("ENOTDIR", "scandir", path)
  touchRead(f.node, now)
  return [...f.node.entries.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
}

/** `chown(2)` also clears setuid, and setgid when group-executable, on non-directories, even for root. */
export const sysChown = (st: FsState, path: string, uid: number, gid: number, now: number): undefined | Errno => {
  const f = lookup(st, path, true)
  if (f instanceof Fail) return withSyscall(f, "chown", path)
  const node = f.node
  if (uid !== -1) node.uid = uid
  if (gid !== -1) node.gid = gid
  if (node.type !== "Directory") {
    node.mode &= ~S_ISUID
    if ((node.mode & S_IXGRP) !== 0) node.mode &= ~S_ISGID
  }
  node.ctime = now
  return undefined
}

export const chmodPath = (st: FsState, path: string, mode: number, now: number): undefined | Errno => {
  const t = sysStat(st, path, true, "chmod")
  if (t instanceof Errno) return t
  t.mode = mode & 0o7777
  t.ctime = now
  return undefined
}
