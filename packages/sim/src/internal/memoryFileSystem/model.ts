/**
 * The data model of the in-memory file system: inodes (regular files,
 * directories, symbolic links), file systems ("devices"), mounts, open file
 * descriptions and the file-system state, with the `stat(2)` constants and
 * device numbers.
 *
 * Boundary: plain data and the constructor of an empty file system only. How
 * paths reach inodes is `resolve.ts`; how inodes change is `inode.ts` and
 * `syscalls.ts`.
 */
import type { Journal } from "../journal.ts"

/**
 * How a file system reports directory sizes, the one stat field that differs
 * between Linux file systems for the same tree: ext4 reports whole 4 KiB
 * blocks and never shrinks a directory, tmpfs reports 20 bytes per entry
 * plus 40. The root file system is ext4-like, as on a typical node.
 */
export type Flavor = "ext4" | "tmpfs"

/**
 * Metadata every inode has, as `stat(2)` reports it. Times are epoch milliseconds.
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
 */
export interface FileNode extends InodeMeta {
  readonly type: "File"
  data: Uint8Array
  size: number
}

/**
 * A directory; `entries` never holds "." or "..".
 */
export interface DirectoryNode extends InodeMeta {
  readonly type: "Directory"
  readonly entries: Map<string, Inode>
  /** ext4 flavour: blocks allocated so far (directories never shrink on ext4). */
  blocks: number
}

/**
 * A symbolic link; its target is stored verbatim, never normalised.
 */
export interface SymlinkNode extends InodeMeta {
  readonly type: "SymbolicLink"
  readonly target: string
}

/**
 * Any inode of the simulated file system.
 */
export type Inode = FileNode | DirectoryNode | SymlinkNode

/**
 * One file system (a "device"): its `dev` number, inode counter and root directory.
 */
export interface Filesystem {
  readonly dev: bigint
  readonly flavor: Flavor
  nextIno: bigint
  readonly root: DirectoryNode
}

/**
 * A mount: `fs`'s directory (or, for a bind of a file, regular file) `root`
 * shown at `mountpoint`, a node of the same type in the `parent` mount. The
 * namespace root mount has no parent. A mount stacked on another one's mount
 * point is a child of that mount whose mountpoint is the lower mount's root.
 * A detached mount is no longer in its parent's `children` (its own subtree
 * goes with it). A mount the kernel moves down (one stacked on a copy that
 * umount propagation takes out) gets a new parent and mount point.
 *
 * Propagation (`shared`, `master`): the peer group the mount is in
 * (`shared:N`, 0 when it is not shared) and the group it receives from as a
 * slave (`master:N`, 0 when it is none). A mount made on a shared mount is
 * copied onto each mount that receives from it, and an unmount is
 * propagated the same way (see `mounts.ts`).
 */
export interface Mount {
  readonly id: number
  readonly fs: Filesystem
  readonly root: DirectoryNode | FileNode
  parent: Mount | undefined
  mountpoint: DirectoryNode | FileNode | undefined
  readonly children: Array<Mount>
  /** Where it was mounted, absolute; only used when the mount point can no longer be found in its parent. */
  readonly at: string
  shared: number
  master: number
}

/**
 * An open file description, what an `fd` refers to.
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
  /**
   * Ids of mounts that are gone, to give again: as the kernel does, a new
   * mount takes the lowest free id, so the top of a stack can have a lower
   * id than the mount below it.
   */
  readonly freeMountIds: Array<number>
  /** The next peer group number (`shared:N`). */
  nextPeerGroup: number
}

/**
 * The slice of the host state the file system works on: its files and the shared journal.
 */
export interface FsHost {
  readonly fs: FsState
  readonly journal: Journal
}

export const S_IFREG = 0o100000
export const S_IFDIR = 0o040000
export const S_IFLNK = 0o120000
export const S_ISUID = 0o4000
export const S_ISGID = 0o2000
export const S_IXGRP = 0o010
export const MAXSYMLINKS = 40
export const NAME_MAX = 255
export const PATH_MAX = 4096
export const BOGO_DIRENT_SIZE = 20
export const BLOCK = 4096

/** The kernel's `new_encode_dev`, so `stat().dev` looks like the real one for any minor. */
export const makeDev = (major: number, minor: number): bigint =>
  BigInt((minor & 0xff) | (major << 8) | ((minor & ~0xff) << 12))

/**
 * Major and minor of a device number made by `makeDev` (`new_decode_dev`).
 */
export const devNumbers = (dev: bigint): { readonly major: number; readonly minor: number } => {
  const d = Number(dev)
  return { major: (d & 0xfff00) >> 8, minor: (d & 0xff) | ((d >> 12) & 0xfff00) }
}

export const newDirectory = (fs: Filesystem | undefined, ino: bigint, mode: number, now: number): DirectoryNode => {
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
 */
export const makeFilesystem = (dev: bigint, flavor: Flavor, now: number): Filesystem => {
  const root = newDirectory(undefined, 2n, 0o755, now)
  const fs: Filesystem = { dev, flavor, nextIno: 11n, root }
  ;(root as { fs: Filesystem }).fs = fs
  return fs
}
