/**
 * The in-memory Linux file system of `MemoryHost`: an inode tree (directories,
 * regular files, symbolic links), one path resolver, the simulated syscalls
 * over them, and Effect's `FileSystem` service implemented on top with the
 * semantics of `@effect/platform-node`'s `NodeFileSystem` for a root process
 * with umask 022, down to Node's own quirks (`fs.rm`, `fs.cp`, `fs.realpath`,
 * recursive `mkdir` and `readdir`).
 *
 * Boundary: this module owns file-system state only. The operation log, fault
 * injection and the crash seam live in the host's journal, which every
 * operation here passes through; `MemoryHost` owns both and is what tests use.
 * Mounts: the resolver walks (mount, directory) frames and crosses mount
 * points in one place (`crossMounts`); rename and link refuse to cross mounts
 * (EXDEV) and rmdir/rename refuse mount points (EBUSY). `mountTmpfs`,
 * `bindMount` and `unmount` change the mount tree with the kernel's rules
 * (stacking, EINVAL/ENOENT/EBUSY, MNT_DETACH taking the subtree), and
 * `mountEntries` is the table `/proc/<pid>/mountinfo` serves.
 *
 * @since 0.1.0
 */
import { posix } from "node:path"
import { FileName, MountInfo } from "@hostnode/core"
import { ByteSize, Clock, Effect, FileSystem, Option, type PlatformError, Random, Stream } from "effect"
import type * as Scope from "effect/Scope"
import {
  BadArgument,
  badArgumentError,
  Errno,
  type ErrnoCode,
  errno,
  type NodeErrorCode,
  toPlatformError
} from "./internal/errno.ts"
import { admit, complete, type Journal, MemoryHostCrashed } from "./internal/journal.ts"

/**
 * The `PlatformError` Node's FileSystem layer reports when `syscall` fails
 * with errno `code` in `method(path)`. The reason for each errno is the one
 * table the simulated host uses (a copy of platform-node-shared's
 * `handleErrnoException`, which that package does not export), so that other
 * stand-ins for the real file system (the CLI's dry run) report the same.
 *
 * @since 0.2.0
 */
export const systemError = (
  code: ErrnoCode | NodeErrorCode,
  method: string,
  syscall: string,
  path: string
): PlatformError.PlatformError => toPlatformError(errno(code, syscall, path), method, path)

/**
 * `text` as Node's UTF-8 encoding sees it: every lone surrogate (which is
 * how the lossless `FileName` form writes a byte that is not UTF-8) replaced
 * by U+FFFD. The FileSystem API is made of JavaScript strings, so this is
 * all of a name it can name or return; only directory handles see the bytes.
 *
 * @since 0.2.0
 */
export const wellFormed = (text: string): string =>
  text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd")

// ---------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------

/**
 * How a file system reports directory sizes, the one stat field that differs
 * between Linux file systems for the same tree: ext4 reports whole 4 KiB
 * blocks and never shrinks a directory, tmpfs reports 20 bytes per entry
 * plus 40. The root file system is ext4-like, as on a typical node.
 *
 * @since 0.1.0
 */
export type Flavor = "ext4" | "tmpfs"

/**
 * Metadata every inode has, as `stat(2)` reports it. Times are epoch milliseconds.
 *
 * @since 0.1.0
 */
export interface InodeMeta {
  readonly ino: bigint
  readonly fs: Filesystem
  /** Permission bits only (0o7777): setuid, setgid, sticky and rwx. */
  mode: number
  uid: number
  gid: number
  nlink: number
  atime: number
  mtime: number
  ctime: number
  readonly birthtime: number
}

/**
 * A regular file. `data` may be longer than `size` (spare capacity).
 *
 * @since 0.1.0
 */
export interface FileNode extends InodeMeta {
  readonly type: "File"
  data: Uint8Array
  size: number
}

/**
 * A directory; `entries` never holds "." or "..".
 *
 * @since 0.1.0
 */
export interface DirectoryNode extends InodeMeta {
  readonly type: "Directory"
  readonly entries: Map<string, Inode>
  /** ext4 flavour: blocks allocated so far (directories never shrink on ext4). */
  blocks: number
}

/**
 * A symbolic link; its target is stored verbatim, never normalised.
 *
 * @since 0.1.0
 */
export interface SymlinkNode extends InodeMeta {
  readonly type: "SymbolicLink"
  readonly target: string
}

/**
 * Any inode of the simulated file system.
 *
 * @since 0.1.0
 */
export type Inode = FileNode | DirectoryNode | SymlinkNode

/**
 * One file system (a "device"): its `dev` number, inode counter and root directory.
 *
 * @since 0.1.0
 */
export interface Filesystem {
  readonly dev: bigint
  readonly flavor: Flavor
  nextIno: bigint
  readonly root: DirectoryNode
}

/**
 * A mount: `fs`'s directory `root` shown at `mountpoint`, a directory of the
 * `parent` mount. The namespace root mount has no parent. A mount stacked on
 * another one's mount point is a child of that mount whose mountpoint is the
 * lower mount's root. A detached mount is no longer in its parent's
 * `children` (its own subtree goes with it).
 *
 * @since 0.1.0
 */
export interface Mount {
  readonly id: number
  readonly fs: Filesystem
  readonly root: DirectoryNode
  readonly parent: Mount | undefined
  readonly mountpoint: DirectoryNode | undefined
  readonly children: Array<Mount>
  /** Where it was mounted, absolute; only used when the mount point can no longer be found in its parent. */
  readonly at: string
}

/**
 * An open file description, what an `fd` refers to.
 *
 * @since 0.1.0
 */
export interface OpenFile {
  readonly fd: number
  readonly node: Inode
  readonly path: string
  readonly readable: boolean
  readonly writable: boolean
  readonly append: boolean
  readonly generation: number
  /** The mount the file was opened through (what makes that mount busy); undefined for the root mount's seed. */
  readonly mount: Mount | undefined
  closed: boolean
}

/**
 * All file-system state of a simulated host: the mount tree, the process's
 * working directory and umask, descriptor numbering. Part of the single host
 * state object `MemoryHost` owns.
 *
 * @since 0.1.0
 */
export interface FsState {
  readonly rootMount: Mount
  /** Every file system of the host; mounting a new tmpfs adds one (with `nextDev`, `nextMountId`). */
  readonly filesystems: Array<Filesystem>
  /** Absolute, normalised; relative paths resolve against it. */
  cwd: string
  umask: number
  /** The directory `makeTempDirectory` uses when none is given (Node: `os.tmpdir()`). */
  tmpdir: string
  nextFd: number
  /** Files open in the simulated process, for the EBUSY check of a non-lazy unmount. */
  readonly openFiles: Set<OpenFile>
  nextDev: bigint
  nextMountId: number
}

/**
 * The slice of the host state the file system works on: its files and the shared journal.
 *
 * @since 0.1.0
 */
export interface FsHost {
  readonly fs: FsState
  readonly journal: Journal
}

const S_IFREG = 0o100000
const S_IFDIR = 0o040000
const S_IFLNK = 0o120000
const S_ISUID = 0o4000
const S_ISGID = 0o2000
const S_IXGRP = 0o010
const MAXSYMLINKS = 40
const NAME_MAX = 255
const PATH_MAX = 4096
const BOGO_DIRENT_SIZE = 20
const BLOCK = 4096

/** The kernel's `new_encode_dev`, so `stat().dev` looks like the real one for any minor. */
const makeDev = (major: number, minor: number): bigint =>
  BigInt((minor & 0xff) | (major << 8) | ((minor & ~0xff) << 12))

/**
 * Major and minor of a device number made by `makeDev` (`new_decode_dev`).
 *
 * @since 0.1.0
 */
export const devNumbers = (dev: bigint): { readonly major: number; readonly minor: number } => {
  const d = Number(dev)
  return { major: (d & 0xfff00) >> 8, minor: (d & 0xff) | ((d >> 12) & 0xfff00) }
}

const newDirectory = (fs: Filesystem | undefined, ino: bigint, mode: number, now: number): DirectoryNode => {
  const dir: DirectoryNode = {
    type: "Directory",
    ino,
    // The root directory is created before its file system object exists; patched right after.
    fs: fs as Filesystem,
    mode,
    uid: 0,
    gid: 0,
    nlink: 2,
    atime: now,
    mtime: now,
    ctime: now,
    birthtime: now,
    entries: new Map(),
    blocks: 1
  }
  return dir
}

/**
 * A new, empty file system of `flavor`. Its root directory is 0755 root:root
 * and has inode 2 like ext4's.
 *
 * @since 0.1.0
 */
export const makeFilesystem = (dev: bigint, flavor: Flavor, now: number): Filesystem => {
  const root = newDirectory(undefined, 2n, 0o755, now)
  const fs: Filesystem = { dev, flavor, nextIno: 11n, root }
  ;(root as { fs: Filesystem }).fs = fs
  return fs
}

/**
 * Fresh file-system state: one root file system (dev 8:1, ext4-like unless
 * `flavor` says otherwise) mounted at "/", containing only "/" and a
 * world-writable sticky `/tmp` (so `makeTempDirectory` works like on a real
 * host).
 *
 * @since 0.1.0
 */
export const makeState = (options: {
  readonly now: number
  readonly umask?: number | undefined
  readonly tmpdir?: string | undefined
  readonly flavor?: Flavor | undefined
}): FsState => {
  const rootFs = makeFilesystem(makeDev(8, 1), options.flavor ?? "ext4", options.now)
  const rootMount: Mount = {
    id: 1,
    fs: rootFs,
    root: rootFs.root,
    parent: undefined,
    mountpoint: undefined,
    children: [],
    at: "/"
  }
  const st: FsState = {
    rootMount,
    filesystems: [rootFs],
    cwd: "/",
    umask: options.umask ?? 0o022,
    tmpdir: options.tmpdir ?? "/tmp",
    nextFd: 20,
    openFiles: new Set(),
    nextDev: makeDev(0, 40),
    nextMountId: 2
  }
  const tmp = mkdirAll(st, st.tmpdir, 0o755, options.now)
  if (tmp !== undefined) tmp.mode = 0o1777
  return st
}

// ---------------------------------------------------------------------------
// Resolver
// ---------------------------------------------------------------------------

/**
 * A directory reached by a walk: which mount it was reached in, the
 * directory, the name it was reached by and the frame it was reached from.
 * Frames form the walked path, so `..` is "go back one frame", which is what
 * Linux does, including at mount roots, and ancestry checks (rename into
 * itself) look along the chain.
 *
 * @since 0.1.0
 */
export interface Frame {
  readonly mount: Mount
  readonly dir: DirectoryNode
  readonly name: string
  readonly up: Frame | undefined
}

/** A resolution failure before a syscall name is attached. */
class Fail {
  readonly code: ErrnoCode
  constructor(code: ErrnoCode) {
    this.code = code
  }
}

const fail = (code: ErrnoCode) => new Fail(code)

const rootFrame = (st: FsState): Frame =>
  crossMounts({ mount: st.rootMount, dir: st.rootMount.root, name: "", up: undefined })

/**
 * The mount seam: if some mount sits on `frame`'s directory (in `frame`'s
 * mount), the walk continues at the top-most such mount's root instead.
 * Stacked mounts are the repeated application; the frame keeps the name and
 * parent, so `..` from a mount root leaves the mount as on Linux.
 */
const crossMounts = (frame: Frame): Frame => {
  let current = frame
  for (;;) {
    let top: Mount | undefined
    for (const child of current.mount.children) {
      if (child.mountpoint === current.dir) top = child
    }
    if (top === undefined) return current
    current = { mount: top, dir: top.root, name: current.name, up: current.up }
  }
}

/** Steps from `frame` into its subdirectory `dir` named `name`, crossing mounts. */
const enterFrame = (frame: Frame, name: string, dir: DirectoryNode): Frame =>
  crossMounts({ mount: frame.mount, dir, name, up: frame })

/** True when `dir` is `frame`'s directory or one of the directories the frame was walked through. */
const chainHas = (frame: Frame, dir: Inode): boolean => {
  for (let f: Frame | undefined = frame; f !== undefined; f = f.up) if (f.dir === dir) return true
  return false
}

/**
 * The kernel's `is_local_mountpoint`: `dir` is a mount point of some mount of
 * the namespace, whichever mount it is reached through (a directory under a
 * bind mount is busy when its source path is a mount point, and vice versa).
 */
const isMountpoint = (frame: Frame, dir: Inode): boolean => {
  if (frame.mount.children.some((m) => m.mountpoint === dir)) return true
  let root = frame.mount
  while (root.parent !== undefined) root = root.parent
  const stack: Array<Mount> = [root]
  while (stack.length > 0) {
    const m = stack.pop()!
    for (const child of m.children) {
      if (child.mountpoint === dir) return true
      stack.push(child)
    }
  }
  return false
}

interface Ctx {
  links: number
}

/** The last component of a walk, not followed. */
type Last =
  | {
      readonly _tag: "Entry"
      readonly parent: Frame
      readonly name: string
      readonly node: Inode | undefined
      readonly trailing: boolean
    }
  | {
      /** The path ended in "/", "." or "..": Linux's LAST_ROOT, LAST_DOT, LAST_DOTDOT. */
      readonly _tag: "Special"
      readonly kind: "root" | "dot" | "dotdot"
      readonly frame: Frame
    }

/** The last component after following symlinks as asked. */
type Final =
  | {
      readonly _tag: "Entry"
      readonly parent: Frame
      readonly name: string
      readonly node: Inode | undefined
      /** The last walked component had a trailing slash. */
      readonly trailing: boolean
      /** Some trailing slash along the way demands a directory. */
      readonly mustDir: boolean
    }
  | { readonly _tag: "Special"; readonly kind: "root" | "dot" | "dotdot"; readonly frame: Frame }

const lookupName = (frame: Frame, name: string): Inode | undefined | Fail =>
  Buffer.byteLength(name) > NAME_MAX ? fail("ENAMETOOLONG") : frame.dir.entries.get(name)

/** Walks one non-final component: it must end up a directory. */
const step = (st: FsState, frame: Frame, name: string, ctx: Ctx): Frame | Fail => {
  if (name === ".") return frame
  if (name === "..") return frame.up ?? frame
  const child = lookupName(frame, name)
  if (child instanceof Fail) return child
  if (child === undefined) return fail("ENOENT")
  if (child.type === "Directory") return enterFrame(frame, name, child)
  if (child.type === "File") return fail("ENOTDIR")
  ctx.links += 1
  if (ctx.links > MAXSYMLINKS) return fail("ELOOP")
  const target = walkFinal(st, child.target, frame, ctx, true, true)
  if (target instanceof Fail) return target
  return finalFrame(target)
}

/** The frame of a resolved final that must be a directory (ENOENT/ENOTDIR otherwise). */
const finalFrame = (f: Final): Frame | Fail => {
  if (f._tag === "Special") return specialFrame(f)
  if (f.node === undefined) return fail("ENOENT")
  if (f.node.type !== "Directory") return fail("ENOTDIR")
  return enterFrame(f.parent, f.name, f.node)
}

const specialFrame = (f: { readonly kind: "root" | "dot" | "dotdot"; readonly frame: Frame }): Frame =>
  f.kind === "dotdot" ? (f.frame.up ?? f.frame) : f.frame

/** Walks all but the last component of `path` from `start` and looks the last one up without following it. */
const walkLast = (st: FsState, path: string, start: Frame, ctx: Ctx): Last | Fail => {
  if (path === "") return fail("ENOENT")
  if (Buffer.byteLength(path) >= PATH_MAX) return fail("ENAMETOOLONG")
  let frame = path.startsWith("/") ? rootFrame(st) : start
  // A JavaScript string reaches the kernel as UTF-8 (Node encodes a lone
  // surrogate as U+FFFD): names not valid UTF-8 are out of its reach, as on Linux.
  const names = wellFormed(path)
    .split("/")
    .filter((n) => n !== "")
  if (names.length === 0) return { _tag: "Special", kind: "root", frame }
  for (let i = 0; i < names.length - 1; i++) {
    const next = step(st, frame, names[i]!, ctx)
    if (next instanceof Fail) return next
    frame = next
  }
  const name = names[names.length - 1]!
  if (name === ".") return { _tag: "Special", kind: "dot", frame }
  if (name === "..") return { _tag: "Special", kind: "dotdot", frame }
  const node = lookupName(frame, name)
  if (node instanceof Fail) return node
  return { _tag: "Entry", parent: frame, name, node, trailing: path.endsWith("/") }
}

/**
 * Resolves `path` from `start`. A final symlink is followed when `follow` or
 * when the path ends in a slash (as Linux does), at most 40 links in all.
 * A missing final entry is not an error here: creating calls need its parent.
 */
const walkFinal = (
  st: FsState,
  path: string,
  start: Frame,
  ctx: Ctx,
  follow: boolean,
  mustDir: boolean
): Final | Fail => {
  const last = walkLast(st, path, start, ctx)
  if (last instanceof Fail || last._tag === "Special") return last
  const dir = mustDir || last.trailing
  if (last.node?.type === "SymbolicLink" && (follow || last.trailing)) {
    ctx.links += 1
    if (ctx.links > MAXSYMLINKS) return fail("ELOOP")
    return walkFinal(st, last.node.target, last.parent, ctx, true, dir)
  }
  return { ...last, mustDir: dir }
}

const cwdFrame = (st: FsState): Frame | Fail => {
  const f = walkFinal(st, st.cwd, rootFrame(st), { links: 0 }, true, true)
  return f instanceof Fail ? f : finalFrame(f)
}

/** `walkLast` from the process's working directory. */
const resolveLast = (st: FsState, path: string): Last | Fail => {
  const cwd = path.startsWith("/") ? rootFrame(st) : cwdFrame(st)
  return cwd instanceof Fail ? cwd : walkLast(st, path, cwd, { links: 0 })
}

/** `walkFinal` from the process's working directory. */
const resolveFinal = (st: FsState, path: string, follow: boolean): Final | Fail => {
  const cwd = path.startsWith("/") ? rootFrame(st) : cwdFrame(st)
  return cwd instanceof Fail ? cwd : walkFinal(st, path, cwd, { links: 0 }, follow, false)
}

/** An existing inode and, when it is a directory, its frame. */
interface Found {
  readonly node: Inode
  readonly frame: Frame | undefined
  /** The frame of the directory holding the entry (the node's own frame for "/", "." and ".."). */
  readonly parent: Frame
}

const foundOf = (f: Final): Found | Fail => {
  if (f._tag === "Special") {
    const frame = specialFrame(f)
    return { node: frame.dir, frame, parent: frame }
  }
  if (f.node === undefined) return fail("ENOENT")
  if (f.mustDir && f.node.type !== "Directory") return fail("ENOTDIR")
  const frame = f.node.type === "Directory" ? enterFrame(f.parent, f.name, f.node) : undefined
  // A mounted directory is seen as the root of the top-most mount on it.
  return { node: frame?.dir ?? f.node, frame, parent: f.parent }
}

/** Looks up an existing inode (stat/lstat semantics). */
const lookup = (st: FsState, path: string, follow: boolean): Found | Fail => {
  const f = resolveFinal(st, path, follow)
  return f instanceof Fail ? f : foundOf(f)
}

// ---------------------------------------------------------------------------
// Inode helpers
// ---------------------------------------------------------------------------

const allocIno = (fs: Filesystem): bigint => {
  const ino = fs.nextIno
  fs.nextIno += 1n
  return ino
}

const direntBytes = (name: string) => 8 + Math.ceil((Buffer.byteLength(name) + 1) / 4) * 4

/** Grows an ext4 directory's block count to fit its entries; ext4 never shrinks directories. */
const fitBlocks = (dir: DirectoryNode) => {
  if (dir.fs.flavor !== "ext4") return
  let bytes = 24
  for (const name of dir.entries.keys()) bytes += direntBytes(name)
  const needed = Math.ceil(bytes / BLOCK)
  if (needed > dir.blocks) dir.blocks = needed
}

const touchDir = (dir: DirectoryNode, now: number) => {
  dir.mtime = now
  dir.ctime = now
}

/** Adds an entry to a directory, keeping directory link counts and sizes. */
const addEntry = (dir: DirectoryNode, name: string, node: Inode, now: number) => {
  dir.entries.set(name, node)
  if (node.type === "Directory") dir.nlink += 1
  fitBlocks(dir)
  touchDir(dir, now)
}

/** Removes an entry; the inode's own link count is the caller's business. */
const removeEntry = (dir: DirectoryNode, name: string, now: number) => {
  const node = dir.entries.get(name)
  dir.entries.delete(name)
  if (node?.type === "Directory") dir.nlink -= 1
  touchDir(dir, now)
}

/** Drops one link to `node` (an unlinked or replaced entry). */
const unlinkInode = (node: Inode, now: number) => {
  node.nlink = node.type === "Directory" ? 0 : node.nlink - 1
  node.ctime = now
}

/** Group for a new inode: a setgid directory passes its group down (BSD semantics). */
const newGid = (parent: DirectoryNode) => ((parent.mode & S_ISGID) !== 0 ? parent.gid : 0)

const createFile = (st: FsState, parent: Frame, name: string, mode: number, now: number): FileNode => {
  const fs = parent.mount.fs
  const node: FileNode = {
    type: "File",
    ino: allocIno(fs),
    fs,
    mode: mode & 0o7777 & ~st.umask,
    uid: 0,
    gid: newGid(parent.dir),
    nlink: 1,
    atime: now,
    mtime: now,
    ctime: now,
    birthtime: now,
    data: new Uint8Array(0),
    size: 0
  }
  addEntry(parent.dir, name, node, now)
  return node
}

const createDirectory = (st: FsState, parent: Frame, name: string, mode: number, now: number): DirectoryNode => {
  const fs = parent.mount.fs
  const dir = newDirectory(fs, allocIno(fs), 0, now)
  // mkdir(2) keeps only rwx and sticky from `mode`, then applies the umask;
  // setgid is inherited from a setgid parent together with its group.
  dir.mode = (mode & 0o1777 & ~st.umask) | (parent.dir.mode & S_ISGID)
  dir.gid = newGid(parent.dir)
  addEntry(parent.dir, name, dir, now)
  return dir
}

const createSymlink = (parent: Frame, name: string, target: string, now: number): SymlinkNode => {
  const fs = parent.mount.fs
  const node: SymlinkNode = {
    type: "SymbolicLink",
    ino: allocIno(fs),
    fs,
    mode: 0o777,
    uid: 0,
    gid: newGid(parent.dir),
    nlink: 1,
    atime: now,
    mtime: now,
    ctime: now,
    birthtime: now,
    target
  }
  addEntry(parent.dir, name, node, now)
  return node
}

const fileBytes = (node: FileNode): Uint8Array => node.data.subarray(0, node.size)

const setSize = (node: FileNode, size: number) => {
  if (size > node.data.length) {
    const grown = new Uint8Array(Math.max(size, node.data.length * 2, 64))
    grown.set(fileBytes(node))
    node.data = grown
  } else if (size < node.size) {
    node.data.fill(0, size, node.size)
  }
  node.size = size
}

const writeAt = (node: FileNode, bytes: Uint8Array, position: number, now: number) => {
  const end = position + bytes.length
  if (end > node.size) setSize(node, end)
  node.data.set(bytes, position)
  if (bytes.length > 0) {
    node.mtime = now
    node.ctime = now
  }
}

/** relatime: a read updates atime only when it is older than mtime/ctime or a day old. */
const touchRead = (node: Inode, now: number) => {
  if (node.atime <= node.mtime || node.atime <= node.ctime || now - node.atime >= 86_400_000) node.atime = now
}

const directorySize = (dir: DirectoryNode): number =>
  dir.fs.flavor === "tmpfs" ? (2 + dir.entries.size) * BOGO_DIRENT_SIZE : dir.blocks * BLOCK

const sizeOf = (node: Inode): number =>
  node.type === "File" ? node.size : node.type === "Directory" ? directorySize(node) : Buffer.byteLength(node.target)

const typeBits = (node: Inode) => (node.type === "File" ? S_IFREG : node.type === "Directory" ? S_IFDIR : S_IFLNK)

/**
 * `stat(2)` of an inode as Effect's `File.Info`, with the same field shapes NodeFileSystem produces.
 *
 * @since 0.1.0
 */
export const info = (node: Inode): FileSystem.File.Info => {
  const size = sizeOf(node)
  const blocks =
    node.type === "Directory"
      ? node.fs.flavor === "tmpfs"
        ? 0
        : node.blocks * 8
      : node.type === "SymbolicLink" && size < 60
        ? 0
        : Math.ceil(size / BLOCK) * 8
  return {
    type: node.type,
    mtime: Option.some(new Date(node.mtime)),
    atime: Option.some(new Date(node.atime)),
    birthtime: Option.some(new Date(node.birthtime)),
    dev: node.fs.dev,
    ino: Option.some(node.ino),
    mode: typeBits(node) | node.mode,
    nlink: Option.some(BigInt(node.nlink)),
    uid: Option.some(node.uid),
    gid: Option.some(node.gid),
    rdev: Option.some(0n),
    size: ByteSize.bytes(size),
    blksize: Option.some(ByteSize.bytes(BLOCK)),
    blocks: Option.some(BigInt(blocks))
  }
}

// ---------------------------------------------------------------------------
// Simulated syscalls. Each returns its result or an Errno naming the syscall
// and path exactly as Node's error would.
// ---------------------------------------------------------------------------

const withSyscall = (f: Fail, syscall: string, path?: string, dest?: string) => errno(f.code, syscall, path, dest)

/** Flags of `open(2)` as Node's string flags map to them. */
interface OpenFlags {
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
 *
 * @since 0.1.0
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
const sysOpen = (
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
      } else if (via !== undefined) {
        via.mount = last.parent.mount
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

const sysStat = (st: FsState, path: string, follow: boolean, syscall: string): Inode | Errno => {
  const f = lookup(st, path, follow)
  return f instanceof Fail ? withSyscall(f, syscall, path) : f.node
}

/** `mkdir(2)`. Trailing slashes are fine; any existing entry (even a dangling symlink) is EEXIST. */
const sysMkdir = (st: FsState, path: string, mode: number, now: number): DirectoryNode | Errno => {
  const last = resolveLast(st, path)
  if (last instanceof Fail) return withSyscall(last, "mkdir", path)
  if (last._tag === "Special" || last.node !== undefined) return errno("EEXIST", "mkdir", path)
  return createDirectory(st, last.parent, last.name, mode, now)
}

const sysSymlink = (st: FsState, target: string, path: string, now: number): undefined | Errno => {
  if (target === "") return errno("ENOENT", "symlink", target, path)
  const last = resolveLast(st, path)
  if (last instanceof Fail) return withSyscall(last, "symlink", target, path)
  if (last._tag === "Special" || last.node !== undefined) return errno("EEXIST", "symlink", target, path)
  if (last.trailing) return errno("ENOENT", "symlink", target, path)
  createSymlink(last.parent, last.name, target, now)
  return undefined
}

const sysLink = (st: FsState, from: string, to: string, now: number): undefined | Errno => {
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

const sysUnlink = (st: FsState, path: string, now: number): undefined | Errno => {
  const last = resolveLast(st, path)
  if (last instanceof Fail) return withSyscall(last, "unlink", path)
  if (last._tag === "Special") return errno("EISDIR", "unlink", path)
  if (last.node === undefined) return errno("ENOENT", "unlink", path)
  if (last.node.type === "Directory") return errno("EISDIR", "unlink", path)
  if (last.trailing) return errno("ENOTDIR", "unlink", path)
  removeEntry(last.parent.dir, last.name, now)
  unlinkInode(last.node, now)
  return undefined
}

const sysRmdir = (st: FsState, path: string, now: number): undefined | Errno => {
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
const sysRename = (st: FsState, from: string, to: string, now: number): undefined | Errno => {
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
    if (target.type === "Directory") {
      if (isMountpoint(pn.parent, target)) return e("EBUSY")
      if (target.entries.size > 0) return e("ENOTEMPTY")
    }
    removeEntry(pn.parent.dir, pn.name, now)
    unlinkInode(target, now)
  }
  removeEntry(po.parent.dir, po.name, now)
  addEntry(pn.parent.dir, pn.name, old, now)
  old.ctime = now
  return undefined
}

/** `renameat2(RENAME_EXCHANGE)`: the two entries swap places; both must exist, on one mount. */
const sysExchange = (st: FsState, a: string, b: string, now: number): undefined | Errno => {
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

const sysReadlink = (st: FsState, path: string): string | Errno => {
  const f = lookup(st, path, false)
  if (f instanceof Fail) return withSyscall(f, "readlink", path)
  if (f.node.type !== "SymbolicLink") return errno("EINVAL", "readlink", path)
  return f.node.target
}

/** `scandir`: the names in a directory (sorted, so listings are deterministic). */
const sysReaddir = (st: FsState, path: string, now: number): Array<[string, Inode]> | Errno => {
  const f = lookup(st, path, true)
  if (f instanceof Fail) return withSyscall(f, "scandir", path)
  if (f.node.type !== "Directory") return errno("ENOTDIR", "scandir", path)
  touchRead(f.node, now)
  return [...f.node.entries.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
}

/** `chown(2)` also clears setuid, and setgid when group-executable, on non-directories, even for root. */
const sysChown = (st: FsState, path: string, uid: number, gid: number, now: number): undefined | Errno => {
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

// ---------------------------------------------------------------------------
// Node's fs functions over the syscalls
// ---------------------------------------------------------------------------

type Outcome<A> = A | Errno | BadArgument

/** Node's recursive mkdir (MKDirpAsync in node_file.cc), including its error choices. */
const mkdirp = (st: FsState, path: string, mode: number, now: number): string | undefined | Errno => {
  const stack: Array<string> = [path]
  // Node resolves a recursive mkdir with the first directory it created (typed away as void by Effect).
  let first: string | undefined
  // A guard only: Node's loop terminates because "/" always exists, and so does ours.
  for (let guard = 0; stack.length > 0 && guard < 100_000; guard++) {
    const next = stack.pop()!
    const made = sysMkdir(st, next, mode, now)
    if (!(made instanceof Errno)) {
      first ??= next
      continue
    }
    let code = made.code
    if (code === "EACCES" || code === "EPERM" || code === "ENOTDIR" || code === "ENOSPC") return made
    if (code === "ENOENT") {
      const slash = next.lastIndexOf("/")
      const dirname = slash === -1 ? next : next.slice(0, slash)
      if (dirname !== next) {
        stack.push(next, dirname)
        continue
      }
      if (stack.length > 0) continue
      code = "EEXIST"
    }
    // Any other error: stat the path to see whether a directory is there after all.
    const s = sysStat(st, next, true, "mkdir")
    if (code === "EEXIST" && stack.length > 0) {
      if (!(s instanceof Errno) && s.type === "Directory") continue
      return errno("ENOTDIR", "mkdir", next)
    }
    if (s instanceof Errno) return errno(s.code, "mkdir", next)
    if (s.type !== "Directory") return errno("EEXIST", "mkdir", next)
    return first
  }
  return first
}

/**
 * Creates `path` and missing parents as root directories with `mode` (no umask); for seeding.
 *
 * @since 0.1.0
 */
export const mkdirAll = (st: FsState, path: string, mode: number, now: number): DirectoryNode | undefined =>
  mkdirAllFrame(st, path, mode, now)?.dir

/** {@link mkdirAll}, giving the frame reached: which mount the directory is on matters to what is created in it. */
const mkdirAllFrame = (st: FsState, path: string, mode: number, now: number): Frame | undefined => {
  let frame = rootFrame(st)
  for (const name of path.split("/").filter((n) => n !== "")) {
    let child = frame.dir.entries.get(name)
    if (child === undefined) {
      child = createDirectory(st, frame, name, 0o777, now)
      child.mode = mode
    }
    if (child.type !== "Directory") return undefined
    frame = enterFrame(frame, name, child)
  }
  return frame
}

/** Node's `fs.rm` (validateRmOptions, then the vendored rimraf). */
const rmNode = (
  st: FsState,
  path: string,
  options: { readonly recursive: boolean; readonly force: boolean },
  now: number
): undefined | Errno => {
  const l = sysStat(st, path, false, "lstat")
  if (l instanceof Errno) return options.force && l.code === "ENOENT" ? undefined : l
  if (l.type === "Directory" && !options.recursive) {
    return new Errno("ERR_FS_EISDIR", "rm", path, undefined, "is a directory")
  }
  // Node's rimraf is callback-based and removes the children of a directory
  // concurrently. The syscalls are simulated through a FIFO of pending
  // requests, the way libuv's thread pool serves them, because the outcome
  // can depend on that interleaving (e.g. removing "a/b/.." removes a/b while
  // other children are still reached through it).
  const queue: Array<() => void> = []
  let result: undefined | Errno
  rimraf(st, path, now, queue, (e) => {
    result = e
  })
  while (queue.length > 0) queue.shift()!()
  return result
}

type Callback = (e: Errno | undefined) => void

const submit = <A>(queue: Array<() => void>, syscall: () => A, callback: (a: A) => void) =>
  queue.push(() => callback(syscall()))

/** Node's vendored rimraf (internal/fs/rimraf.js) without retries (`maxRetries` is 0). */
const rimraf = (st: FsState, path: string, now: number, queue: Array<() => void>, callback: Callback) =>
  rimrafOnce(st, path, now, queue, (e) => callback(e?.code === "ENOENT" ? undefined : e))

const rimrafOnce = (st: FsState, path: string, now: number, queue: Array<() => void>, callback: Callback) =>
  submit(
    queue,
    () => sysStat(st, path, false, "lstat"),
    (l) => {
      if (l instanceof Errno) {
        if (l.code === "ENOENT") return callback(undefined)
      } else if (l.type === "Directory") {
        return rimrafDir(st, path, undefined, now, queue, callback)
      }
      submit(
        queue,
        () => sysUnlink(st, path, now),
        (u) => {
          if (u !== undefined) {
            if (u.code === "ENOENT") return callback(undefined)
            if (u.code === "EISDIR" || u.code === "EPERM") return rimrafDir(st, path, u, now, queue, callback)
          }
          callback(u)
        }
      )
    }
  )

const rimrafDir = (
  st: FsState,
  path: string,
  original: Errno | undefined,
  now: number,
  queue: Array<() => void>,
  callback: Callback
) =>
  submit(
    queue,
    () => sysRmdir(st, path, now),
    (r) => {
      if (r !== undefined) {
        if (r.code === "ENOTEMPTY" || r.code === "EEXIST" || r.code === "EPERM") {
          return rimrafChildren(st, path, now, queue, callback)
        }
        // rimraf reports the unlink error here, and nothing at all when there was none.
        if (r.code === "ENOTDIR") return callback(original)
      }
      callback(r)
    }
  )

const rimrafChildren = (st: FsState, path: string, now: number, queue: Array<() => void>, callback: Callback) =>
  submit(
    queue,
    () => sysReaddir(st, path, now),
    (names) => {
      if (names instanceof Errno) return callback(names)
      let pending = names.length
      if (pending === 0) return submit(queue, () => sysRmdir(st, path, now), callback)
      let done = false
      for (const [name] of names) {
        rimraf(st, `${path}/${name}`, now, queue, (e) => {
          if (done) return
          if (e !== undefined) {
            done = true
            return callback(e)
          }
          pending -= 1
          if (pending === 0) submit(queue, () => sysRmdir(st, path, now), callback)
        })
      }
    }
  )

/** libuv's `uv_fs_copyfile` (what `fs.copyFile` runs): every error is reported as syscall `copyfile`. */
const copyFileSys = (st: FsState, from: string, to: string, now: number): undefined | Errno => {
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
const cpNode = (st: FsState, src: string, dest: string, opts: CpOptions, now: number): undefined | Errno => {
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

const chmodPath = (st: FsState, path: string, mode: number, now: number): undefined | Errno => {
  const t = sysStat(st, path, true, "chmod")
  if (t instanceof Errno) return t
  t.mode = mode & 0o7777
  t.ctime = now
  return undefined
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

/** Node's JavaScript `fs.realpath`: lexical resolve first, then an lstat per component. */
const realpathNode = (st: FsState, input: string): string | Errno => {
  let p = posix.resolve(st.cwd, input)
  const seen = new Map<Inode, string>()
  const known = new Set<string>()
  let current = "/"
  let base = "/"
  let previous = "/"
  let pos = 1
  let budget = 100_000
  while (pos < p.length) {
    if (--budget < 0) return errno("ELOOP", "realpath", input)
    const slash = p.indexOf("/", pos)
    previous = current
    if (slash === -1) {
      const last = p.slice(pos)
      current += last
      base = previous + last
      pos = p.length
    } else {
      current += p.slice(pos, slash + 1)
      base = previous + p.slice(pos, slash)
      pos = slash + 1
    }
    if (known.has(base)) continue
    const l = sysStat(st, base, false, "lstat")
    if (l instanceof Errno) return l
    if (l.type !== "SymbolicLink") {
      known.add(base)
      continue
    }
    let target = seen.get(l)
    if (target === undefined) {
      const s = sysStat(st, base, true, "stat")
      if (s instanceof Errno) return s
      const t = sysReadlink(st, base)
      if (t instanceof Errno) return t
      target = t
      seen.set(l, t)
    }
    const resolvedLink = posix.resolve(previous, target)
    p = posix.resolve(resolvedLink, p.slice(pos))
    current = "/"
    base = "/"
    pos = 1
  }
  return p
}

/** Node's recursive `readdir` (promises): follows symlinks to directories via `stat`. */
const readdirRecursive = (st: FsState, path: string, now: number): Array<string> | Errno => {
  const first = sysReaddir(st, path, now)
  if (first instanceof Errno) return first
  const result: Array<string> = []
  const queue: Array<[string, Array<[string, Inode]>]> = [[path, first]]
  while (queue.length > 0) {
    const [dir, entries] = queue.pop()!
    for (const [name] of entries) {
      const direntPath = posix.join(dir, name)
      const s = sysStat(st, direntPath, true, "stat")
      result.push(posix.relative(posix.resolve(st.cwd, path), posix.resolve(st.cwd, direntPath)))
      if (!(s instanceof Errno) && s.type === "Directory") {
        const sub = sysReaddir(st, direntPath, now)
        if (sub instanceof Errno) return sub
        queue.push([direntPath, sub])
      }
    }
  }
  return result
}

/** Node's `utimes` time argument: seconds, a Date, or a negative number meaning "now". */
const toMillis = (t: Date | number, now: number): number | BadArgument => {
  if (t instanceof Date) return t.getTime()
  if (!Number.isFinite(t)) return new BadArgument(`The "time" argument must be of type number. Received ${t}`)
  return t < 0 ? now : t * 1000
}

const isUint32 = (n: number) => Number.isInteger(n) && n >= 0 && n <= 0xffffffff

const validateId = (n: number, name: string): BadArgument | undefined =>
  Number.isInteger(n) && n >= -1 && n <= 0xffffffff
    ? undefined
    : new BadArgument(`The value of "${name}" is out of range. It must be >= -1 && <= 4294967295. Received ${n}`)

// ---------------------------------------------------------------------------
// The FileSystem service
// ---------------------------------------------------------------------------

interface Meta {
  /** Journal kind, also used for fault matching. */
  readonly kind: string
  /** `method` of the PlatformError NodeFileSystem would raise. */
  readonly method: string
  /** The first argument, as the caller gave it. */
  readonly pathOrDescriptor: string | number | undefined
  /** Absolute, normalised paths for the journal. */
  readonly paths: ReadonlyArray<string>
  /** Syscall an injected fault reports when the fault names none. */
  readonly syscall: string
}

/** The syscall Node's error names for each method's first failure, used for injected faults. */
const defaultSyscall: Record<string, string> = {
  access: "access",
  chmod: "chmod",
  chown: "chown",
  copy: "cp",
  copyFile: "copyfile",
  link: "link",
  lstat: "lstat",
  makeDirectory: "mkdir",
  makeTempDirectory: "mkdtemp",
  makeTempDirectoryScoped: "mkdtemp",
  makeTempFile: "mkdtemp",
  makeTempFileScoped: "mkdtemp",
  open: "open",
  readDirectory: "scandir",
  readDirectoryEntries: "scandir",
  readFile: "open",
  readLink: "readlink",
  realPath: "lstat",
  remove: "rm",
  rename: "rename",
  stat: "stat",
  symlink: "symlink",
  truncate: "open",
  utimes: "utime",
  writeFile: "open",
  "File.read": "read",
  "File.readAlloc": "read",
  "File.write": "write",
  "File.writeAll": "write",
  "File.truncate": "ftruncate",
  "File.stat": "fstat",
  "File.sync": "fsync"
}

/**
 * `path` made absolute against the working directory, `.` and `..` removed lexically.
 *
 * @since 0.1.0
 */
export const absolute = (st: FsState, path: string): string => posix.resolve(st.cwd, path)

const meta = (st: FsState, kind: string, first: string, ...rest: Array<string>): Meta => ({
  kind,
  method: kind === "utimes" ? "utime" : kind,
  pathOrDescriptor: first,
  paths: [first, ...rest].map((p) => absolute(st, p)),
  syscall: defaultSyscall[kind] ?? kind
})

/**
 * Runs one simulated operation through the host journal: refused after a
 * crash, replaced by an injected error when a fault matches, otherwise `body`
 * runs against the state at the current `Clock` time. Errors become the
 * `PlatformError` NodeFileSystem would raise.
 */
const operate = <A>(
  host: FsHost,
  m: Meta,
  body: (now: number) => Outcome<A>
): Effect.Effect<A, PlatformError.PlatformError> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.suspend(() => {
      const gate = admit(host.journal, m.kind, m.paths)
      if (gate._tag === "Crashed") return Effect.die(gate.defect)
      if (gate._tag === "Inject") {
        const e = errno(gate.fault.code, gate.fault.syscall ?? m.syscall, m.paths[0], m.paths[1])
        complete(host.journal, m.kind, m.paths, e.code, true)
        return Effect.fail(toPlatformError(e, m.method, m.pathOrDescriptor))
      }
      const r = body(now)
      if (r instanceof Errno) {
        complete(host.journal, m.kind, m.paths, r.code)
        return Effect.fail(toPlatformError(r, m.method, m.pathOrDescriptor))
      }
      if (r instanceof BadArgument) {
        complete(host.journal, m.kind, m.paths, "BadArgument")
        return Effect.fail(badArgumentError(r, m.method))
      }
      complete(host.journal, m.kind, m.paths, "ok")
      return Effect.succeed(r)
    })
  )

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
 *
 * @since 0.1.0
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
        if (isProcMountinfo(absolute(st, path))) return FileName.encode(MountInfo.render(mountEntries(st)))
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

// ---------------------------------------------------------------------------
// Open files
// ---------------------------------------------------------------------------

/**
 * A `File` over an open file description, with NodeFileSystem's cursor
 * rules: each handle has its own cursor, appends go to the end without moving
 * it, positional reads leave it alone, truncate clamps it.
 */
const makeFile = (host: FsHost, handle: OpenFile): FileSystem.File => {
  let position = 0n
  const fd = handle.fd
  const fileOp = <A>(method: string, body: (now: number) => Outcome<A>) =>
    Effect.suspend(() => {
      if (handle.generation !== host.journal.generation) {
        // The handle belongs to a process that crashed and was restarted: nothing may use it.
        return Effect.die(new MemoryHostCrashed({ operation: `File.${method}`, paths: [handle.path] }))
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

// ---------------------------------------------------------------------------
// Seeding and inspection (outside the simulated process: not journalled)
// ---------------------------------------------------------------------------

/**
 * What a fixture path holds: text (a 0644 root file), bytes, a file with
 * explicit mode and owner, a symlink, or a directory. Modes are taken
 * literally (no umask), because a fixture describes a tree as it already is.
 *
 * @since 0.1.0
 */
export type FixtureEntry =
  | string
  | Uint8Array
  | {
      readonly content: string | Uint8Array
      readonly mode?: number | undefined
      readonly uid?: number | undefined
      readonly gid?: number | undefined
    }
  | { readonly symlink: string; readonly uid?: number | undefined; readonly gid?: number | undefined }
  | {
      readonly directory: true
      readonly mode?: number | undefined
      readonly uid?: number | undefined
      readonly gid?: number | undefined
    }

/**
 * A tree as a flat record of absolute paths; missing parents are 0755 root directories.
 *
 * @since 0.1.0
 */
export type Fixture = Readonly<Record<string, FixtureEntry>>

const encoder = new TextEncoder()

/**
 * Why a fixture entry could not be created.
 *
 * @since 0.1.0
 */
export interface SeedProblem {
  readonly path: string
  readonly reason: "NotAbsolute" | "ParentNotDirectory" | "AlreadyExists" | "EmptySymlinkTarget"
}

/**
 * Writes `fixture` into the tree. Returns the first entry that cannot be
 * created (relative path, a non-directory in the way, a duplicate), or
 * undefined when all were created.
 *
 * @since 0.1.0
 */
export const seed = (st: FsState, fixture: Fixture, now: number): SeedProblem | undefined => {
  for (const key of Object.keys(fixture).sort()) {
    const entry = fixture[key]!
    if (!posix.isAbsolute(key)) return { path: key, reason: "NotAbsolute" }
    const path = posix.normalize(key)
    if (path === "/") {
      if (typeof entry === "object" && "directory" in entry) {
        applyOwner(st.rootMount.root, entry)
        continue
      }
      return { path: key, reason: "AlreadyExists" }
    }
    // The frame of the parent as reached, mounts crossed: new inodes belong to its file system.
    const frame = mkdirAllFrame(st, posix.dirname(path), 0o755, now)
    if (frame === undefined) return { path: key, reason: "ParentNotDirectory" }
    const parent = frame.dir
    const name = posix.basename(path)
    const existing = parent.entries.get(name)
    if (typeof entry === "object" && "directory" in entry) {
      if (existing !== undefined && existing.type !== "Directory") return { path: key, reason: "AlreadyExists" }
      const dir = existing ?? createDirectory(st, frame, name, 0o755, now)
      dir.mode = 0o755
      applyOwner(dir, entry)
      continue
    }
    if (existing !== undefined) return { path: key, reason: "AlreadyExists" }
    if (typeof entry === "object" && "symlink" in entry) {
      if (entry.symlink === "") return { path: key, reason: "EmptySymlinkTarget" }
      const link = createSymlink(frame, name, entry.symlink, now)
      applyOwner(link, entry)
      continue
    }
    const spec = typeof entry === "string" || entry instanceof Uint8Array ? { content: entry } : entry
    const file = createFile(st, frame, name, 0o644, now)
    const bytes = typeof spec.content === "string" ? encoder.encode(spec.content) : spec.content
    writeAt(file, bytes, 0, now)
    file.mode = 0o644
    applyOwner(file, spec)
  }
  return undefined
}

const applyOwner = (
  node: Inode,
  spec: { readonly mode?: number | undefined; readonly uid?: number | undefined; readonly gid?: number | undefined }
) => {
  if (spec.mode !== undefined && node.type !== "SymbolicLink") node.mode = spec.mode & 0o7777
  if (spec.uid !== undefined) node.uid = spec.uid
  if (spec.gid !== undefined) node.gid = spec.gid
}

/**
 * One path of a dump: files with permission bits, owner and UTF-8 content;
 * directories with permission bits and owner; symlinks with their target.
 *
 * @since 0.1.0
 */
export type DumpEntry =
  | {
      readonly type: "File"
      readonly mode: number
      readonly uid: number
      readonly gid: number
      readonly content: string
    }
  | { readonly type: "Directory"; readonly mode: number; readonly uid: number; readonly gid: number }
  | { readonly type: "SymbolicLink"; readonly target: string }

const decoder = new TextDecoder()

const dumpEntry = (node: Inode): DumpEntry =>
  node.type === "File"
    ? { type: "File", mode: node.mode, uid: node.uid, gid: node.gid, content: decoder.decode(fileBytes(node)) }
    : node.type === "Directory"
      ? { type: "Directory", mode: node.mode, uid: node.uid, gid: node.gid }
      : { type: "SymbolicLink", target: node.target }

/**
 * The tree at `root` (itself included, not followed if it is a symlink) as a
 * flat record keyed by absolute path, in depth-first name order, so two dumps
 * of equal trees are deep-equal. A missing root gives an empty record.
 *
 * @since 0.1.0
 */
export const dumpTree = (st: FsState, root = "/"): Record<string, DumpEntry> => {
  const out: Record<string, DumpEntry> = {}
  const start = lookup(st, posix.resolve(st.cwd, root), false)
  if (start instanceof Fail) return out
  const visit = (path: string, node: Inode, frame: Frame | undefined) => {
    // A mounted directory shows the mount's root, as `ls` would.
    out[path] = dumpEntry(frame?.dir ?? node)
    if (node.type !== "Directory" || frame === undefined) return
    const names = [...frame.dir.entries.keys()].sort()
    for (const name of names) {
      const child = frame.dir.entries.get(name)!
      visit(posix.join(path, name), child, child.type === "Directory" ? enterFrame(frame, name, child) : undefined)
    }
  }
  visit(posix.resolve(st.cwd, root), start.node, start.frame)
  return out
}

// ---------------------------------------------------------------------------
// Mounts (mount(2), umount2(2) and the mountinfo table)
// ---------------------------------------------------------------------------

/**
 * True for `/proc/<anything>/mountinfo` (absolute, normalised), the table `readFile` serves.
 *
 * @since 0.1.0
 */
export const isProcMountinfo = (path: string): boolean => /^\/proc\/[^/]+\/mountinfo$/.test(path)

/** The directory `path` names (symlinks followed) as a frame: the top-most mount's view of it. */
const directoryFrame = (st: FsState, path: string, syscall: string): Frame | Errno => {
  const f = lookup(st, path, true)
  if (f instanceof Fail) return withSyscall(f, syscall, path)
  if (f.frame === undefined) return errno("ENOTDIR", syscall, path)
  return f.frame
}

const attach = (st: FsState, parent: Frame, fs: Filesystem, root: DirectoryNode, path: string): Mount => {
  const mount: Mount = {
    id: st.nextMountId++,
    fs,
    root,
    parent: parent.mount,
    mountpoint: parent.dir,
    children: [],
    at: posix.resolve(st.cwd, path)
  }
  parent.mount.children.push(mount)
  return mount
}

/**
 * `mount -t tmpfs tmpfs target`: a new, empty tmpfs (its own file system with
 * a new device 0:N, root 1777) on top of whatever is mounted at `target`.
 *
 * @since 0.1.0
 */
export const mountTmpfs = (st: FsState, target: string, now: number): Mount | Errno => {
  const at = directoryFrame(st, target, "mount")
  if (at instanceof Errno) return at
  const fs = makeFilesystem(st.nextDev, "tmpfs", now)
  fs.root.mode = 0o1777
  const { major, minor } = devNumbers(st.nextDev)
  st.nextDev = makeDev(major, minor + 1)
  st.filesystems.push(fs)
  return attach(st, at, fs, fs.root, target)
}

/**
 * `mount --bind source target` (not recursive): the directory `source`, as
 * the top-most mount at that path shows it, also shown at `target`. Both
 * paths then reach the same inodes.
 *
 * @since 0.1.0
 */
export const bindMount = (st: FsState, source: string, target: string): Mount | Errno => {
  const from = directoryFrame(st, source, "mount")
  if (from instanceof Errno) return from
  const at = directoryFrame(st, target, "mount")
  if (at instanceof Errno) return at
  return attach(st, at, from.mount.fs, from.dir, target)
}

/**
 * `umount2(target, lazy ? MNT_DETACH : 0)` with the kernel's errors: ENOENT
 * when the path does not resolve, EINVAL when it is not the root of a mount
 * (the top one of a stack is what a path reaches), EBUSY when not lazy and the
 * mount has child mounts, a file of the live process open through it or the
 * working directory in it. A lazy unmount detaches the mount and its whole
 * subtree at once; their open files keep working.
 *
 * @since 0.1.0
 */
export const unmount = (host: FsHost, target: string, lazy: boolean): undefined | Errno => {
  const st = host.fs
  const f = lookup(st, target, true)
  if (f instanceof Fail) return withSyscall(f, "umount2", target)
  const frame = f.frame
  if (frame === undefined || frame.dir !== frame.mount.root) return errno("EINVAL", "umount2", target)
  return unmountMount(host, frame.mount, lazy, target)
}

/**
 * Unmounts `mount` itself (what `umount2` through a descriptor of its root
 * does): EINVAL when it is detached already or is the namespace's root, EBUSY
 * when not lazy and it is in use.
 *
 * @since 0.2.0
 */
export const unmountMount = (host: FsHost, mount: Mount, lazy: boolean, target: string): undefined | Errno => {
  const st = host.fs
  const parent = mount.parent
  if (!isAttached(st, mount)) return errno("EINVAL", "umount2", target)
  if (parent === undefined) return errno(lazy ? "EINVAL" : "EBUSY", "umount2", target)
  if (!lazy) {
    if (mount.children.length > 0) return errno("EBUSY", "umount2", target)
    for (const h of st.openFiles) {
      if (!h.closed && h.generation === host.journal.generation && h.mount === mount) {
        return errno("EBUSY", "umount2", target)
      }
    }
    const cwd = cwdFrame(st)
    if (!(cwd instanceof Fail) && cwd.mount === mount) return errno("EBUSY", "umount2", target)
  }
  parent.children.splice(parent.children.indexOf(mount), 1)
  return undefined
}

/**
 * Every mount of the namespace (the root mount first, parents before children, older before newer).
 *
 * @since 0.1.0
 */
export const mounts = (st: FsState): Array<Mount> => {
  const out: Array<Mount> = []
  const visit = (m: Mount) => {
    out.push(m)
    for (const c of m.children) visit(c)
  }
  visit(st.rootMount)
  return out
}

/** The path of directory `target` below directory `from`, walking entries without crossing mounts. */
/**
 * Where every directory below `from` is, relative to it (`from` itself is
 * `""`): one walk of the tree. Directories cannot be hard-linked, so each has
 * one path.
 */
const directoryPaths = (from: DirectoryNode): Map<DirectoryNode, string> => {
  const out = new Map<DirectoryNode, string>([[from, ""]])
  const stack: Array<[DirectoryNode, string]> = [[from, ""]]
  while (stack.length > 0) {
    const [dir, path] = stack.pop()!
    for (const [name, child] of dir.entries) {
      if (child.type !== "Directory") continue
      const p = `${path}/${name}`
      out.set(child, p)
      stack.push([child, p])
    }
  }
  return out
}

/**
 * The mountinfo entries of the namespace, as the kernel writes them: root `/`
 * for a whole file system, the source's path inside its file system for a
 * bind mount; fs type and source `tmpfs`/`tmpfs` or `ext4`/`/dev/vda`; no
 * optional fields. The root mount is its own parent.
 *
 * @since 0.1.0
 */
export const mountEntries = (st: FsState): MountInfo.MountTable => {
  // Each file system's tree is walked once per call, not once per mount on it.
  const walked = new Map<DirectoryNode, Map<DirectoryNode, string>>()
  const pathBelow = (from: DirectoryNode, target: DirectoryNode): string | undefined => {
    let index = walked.get(from)
    if (index === undefined) {
      index = directoryPaths(from)
      walked.set(from, index)
    }
    return index.get(target)
  }
  const paths = new Map<Mount, string>()
  const pathOf = (m: Mount): string => {
    const known = paths.get(m)
    if (known !== undefined) return known
    let p = m.at
    if (m.parent !== undefined && m.mountpoint !== undefined) {
      const below = pathBelow(m.parent.root, m.mountpoint)
      if (below !== undefined) p = below === "" ? pathOf(m.parent) : posix.join(pathOf(m.parent), below)
    }
    paths.set(m, p)
    return p
  }
  return mounts(st).map((m): MountInfo.MountEntry => {
    const { major, minor } = devNumbers(m.fs.dev)
    const tmpfs = m.fs.flavor === "tmpfs"
    const root = pathBelow(m.fs.root, m.root)
    return {
      id: m.id,
      parentId: m.parent?.id ?? m.id,
      major,
      minor,
      root: root === undefined || root === "" ? "/" : root,
      mountPoint: pathOf(m),
      mountOptions: "rw,relatime",
      optionalFields: [],
      fsType: tmpfs ? "tmpfs" : "ext4",
      source: tmpfs ? "tmpfs" : "/dev/vda",
      superOptions: "rw"
    }
  })
}

/**
 * True when `path` resolves (following symlinks) to a directory; for messages, not journalled.
 *
 * @since 0.1.0
 */
export const isDirectoryAt = (st: FsState, path: string): boolean => {
  const f = lookup(st, path, true)
  return !(f instanceof Fail) && f.node.type === "Directory"
}

/**
 * `path` made absolute against "/" with `.` and `..` removed lexically.
 *
 * @since 0.1.0
 */
export const normalizeAbsolute = (path: string): string => posix.resolve("/", path)

/**
 * True while `mount` is in the namespace: it and every mount above it still attached.
 *
 * @since 0.2.0
 */
export const isAttached = (st: FsState, mount: Mount): boolean => {
  for (let m = mount; m.parent !== undefined; m = m.parent) if (!m.parent.children.includes(m)) return false
  let top = mount
  while (top.parent !== undefined) top = top.parent
  return top === st.rootMount
}

/**
 * The building blocks the directory-handle simulation (`MemoryDirectories`)
 * shares with this file system, so both act on the same inodes with the same
 * rules. Internal to @hostnode/test.
 */
/**
 * What a concurrent writer does to the tree, for the adversary seam
 * (`MemoryAdversary`): the simulated system calls themselves, without the
 * journal (they are another process's, not the one under test). Each returns
 * the errno code it failed with, or undefined.
 *
 * @since 0.2.0
 */
export const foreign = {
  rename: (st: FsState, from: string, to: string, now: number) => sysRename(st, from, to, now)?.code,
  exchange: (st: FsState, a: string, b: string, now: number) => sysExchange(st, a, b, now)?.code,
  symlink: (st: FsState, target: string, path: string, now: number) => sysSymlink(st, target, path, now)?.code,
  mkdir: (st: FsState, path: string, now: number) => {
    const r = sysMkdir(st, path, 0o755, now)
    return r instanceof Errno ? r.code : undefined
  },
  unlink: (st: FsState, path: string, now: number) => sysUnlink(st, path, now)?.code
}

/**
 * The resolver and inode operations the sibling modules of the simulated
 * host build on (`MemoryDirectories` walks the same frames, `MemoryMounts`
 * the same mount tree); not for tests, which use the services.
 *
 * @since 0.2.0
 */
export const internals = {
  rootFrame,
  enterFrame,
  walkFinal,
  finalFrame,
  isMountpoint,
  chainHas,
  addEntry,
  removeEntry,
  unlinkInode,
  createFile,
  createDirectory,
  createSymlink,
  fileBytes,
  setSize,
  writeAt,
  touchRead,
  isFail: (u: unknown): u is { readonly code: ErrnoCode } => u instanceof Fail,
  S_ISUID,
  S_ISGID,
  S_IXGRP
}
