/**
 * The in-memory Linux file system of `MemoryHost`: an inode tree, one path
 * resolver, the simulated syscalls, and Effect's `FileSystem` on top with the
 * semantics of `NodeFileSystem` for a root process with umask 022, Node's
 * quirks included. It owns file-system state only; every operation passes
 * through the host's journal. Mounts follow the kernel's rules (stacking,
 * EXDEV, EBUSY, MNT_DETACH taking the subtree) and `mountEntries` is the table
 * `/proc/<pid>/mountinfo` serves. The parts are in `memoryFileSystem/`, one
 * file per seam; this module is their face for the rest of the package.
 *
 * @since 0.1.0
 */
import type { PlatformError } from "effect"
import { Errno, type ErrnoCode, errno, type NodeErrorCode, toPlatformError } from "./errno.ts"
import {
  addEntry,
  createDirectory,
  createFile,
  createSymlink,
  fileBytes,
  removeEntry,
  setSize,
  touchRead,
  unlinkInode,
  writeAt
} from "./memoryFileSystem/inode.ts"
import type * as Model from "./memoryFileSystem/model.ts"
import { S_ISGID, S_ISUID, S_IXGRP } from "./memoryFileSystem/model.ts"
import type * as Resolve from "./memoryFileSystem/resolve.ts"
import {
  chainHas,
  crossFile,
  enterFrame,
  Fail,
  finalFrame,
  isMountpoint,
  lookup,
  rootFrame,
  walkFinal
} from "./memoryFileSystem/resolve.ts"
import type * as Seed from "./memoryFileSystem/seed.ts"
import { sysExchange, sysMkdir, sysRename, sysSymlink, sysUnlink } from "./memoryFileSystem/syscalls.ts"

export {
  /**
   * `stat(2)` of an inode as Effect's `File.Info`, with the same field shapes NodeFileSystem produces.
   *
   * @since 0.1.0
   */
  info
} from "./memoryFileSystem/inode.ts"
export {
  /**
   * Major and minor of a device number made by the kernel's `new_encode_dev` (`new_decode_dev`).
   *
   * @since 0.1.0
   */
  devNumbers,
  /**
   * A new, empty file system of `flavor`; its root directory is 0755 root:root with inode 2.
   *
   * @since 0.1.0
   */
  makeFilesystem
} from "./memoryFileSystem/model.ts"
export {
  /**
   * `mount --bind source target` (not recursive): both paths then reach the
   * same inodes. A regular file binds onto a regular file too,
   * and a mount made on a shared mount is propagated to its peers and slaves.
   *
   * @since 0.1.0
   */
  bindMount,
  /**
   * True while `mount` is in the namespace: it and every mount above it still attached.
   *
   * @since 0.2.0
   */
  isAttached,
  /**
   * True for `/proc/<anything>/mountinfo` (absolute, normalised), the table `readFile` serves.
   *
   * @since 0.1.0
   */
  isProcMountinfo,
  /**
   * The mountinfo entries of the namespace, as the kernel writes them.
   *
   * @since 0.1.0
   */
  mountEntries,
  /**
   * Every mount of the namespace (the root mount first, parents before children, older before newer).
   *
   * @since 0.1.0
   */
  mounts,
  /**
   * `mount -t tmpfs tmpfs target`: a new, empty tmpfs on top of whatever is mounted at `target`.
   *
   * @since 0.1.0
   */
  mountTmpfs,
  /**
   * How a mount takes part in propagation (`mount --make-shared`, `--make-slave`, `--make-private`).
   *
   * @since 0.4.0
   */
  type PropagationKind,
  /**
   * `mount --make-shared|--make-slave|--make-private target`: the mount whose root `target` is.
   *
   * @since 0.4.0
   */
  setPropagation,
  /**
   * `umount2(target, lazy ? MNT_DETACH : 0)` with the kernel's errors (ENOENT, EINVAL, EBUSY).
   *
   * @since 0.1.0
   */
  unmount,
  /**
   * Unmounts `mount` itself (what `umount2` through a descriptor of its root does).
   *
   * @since 0.2.0
   */
  unmountMount
} from "./memoryFileSystem/mounts.ts"
export {
  /**
   * `path` made absolute against the working directory, `.` and `..` removed lexically.
   *
   * @since 0.1.0
   */
  absolute,
  /**
   * `path` made absolute against "/" with `.` and `..` removed lexically.
   *
   * @since 0.1.0
   */
  normalizeAbsolute,
  /**
   * `text` as Node's UTF-8 encoding sees it: every lone surrogate replaced by U+FFFD.
   *
   * @since 0.2.0
   */
  wellFormed
} from "./memoryFileSystem/resolve.ts"
export {
  /**
   * The tree at `root` as a flat record keyed by absolute path, in depth-first name order.
   *
   * @since 0.1.0
   */
  dumpTree,
  /**
   * True when `path` resolves (following symlinks) to a directory; for messages, not journalled.
   *
   * @since 0.1.0
   */
  isDirectoryAt,
  /**
   * Fresh file-system state: one ext4-like root file system at "/" with a sticky, world-writable `/tmp`.
   *
   * @since 0.1.0
   */
  makeState,
  /**
   * Creates `path` and missing parents as root directories with `mode` (no umask); for seeding.
   *
   * @since 0.1.0
   */
  mkdirAll,
  /**
   * Writes a fixture into the tree; returns the first entry that cannot be created, if any.
   *
   * @since 0.1.0
   */
  seed
} from "./memoryFileSystem/seed.ts"
export {
  /**
   * `FileSystem` over `host`'s in-memory tree, with NodeFileSystem's behaviour for a root process.
   *
   * @since 0.1.0
   */
  make
} from "./memoryFileSystem/service.ts"
export {
  /**
   * The `open(2)` flags NodeFileSystem passes for each `OpenFlag`.
   *
   * @since 0.1.0
   */
  openFlags
} from "./memoryFileSystem/syscalls.ts"

/**
 * A directory; `entries` never holds "." or "..".
 *
 * @since 0.1.0
 */
export type DirectoryNode = Model.DirectoryNode

/**
 * A regular file. `data` may be longer than `size` (spare capacity).
 *
 * @since 0.1.0
 */
export type FileNode = Model.FileNode

/**
 * One file system (a "device"): its `dev` number, inode counter and root directory.
 *
 * @since 0.1.0
 */
export type Filesystem = Model.Filesystem

/**
 * How a file system reports directory sizes (ext4: whole 4 KiB blocks, never shrinking; tmpfs: 20 bytes an entry).
 *
 * @since 0.1.0
 */
export type Flavor = Model.Flavor

/**
 * The slice of the host state the file system works on: its files and the shared journal.
 *
 * @since 0.1.0
 */
export type FsHost = Model.FsHost

/**
 * All file-system state of a simulated host: the mount tree, working directory, umask, descriptors.
 *
 * @since 0.1.0
 */
export type FsState = Model.FsState

/**
 * Any inode of the simulated file system.
 *
 * @since 0.1.0
 */
export type Inode = Model.Inode

/**
 * Metadata every inode has, as `stat(2)` reports it. Times are epoch milliseconds.
 *
 * @since 0.1.0
 */
export type InodeMeta = Model.InodeMeta

/**
 * A mount: a file system's directory shown at a mount point, a directory of the parent mount.
 *
 * @since 0.1.0
 */
export type Mount = Model.Mount

/**
 * An open file description, what an `fd` refers to.
 *
 * @since 0.1.0
 */
export type OpenFile = Model.OpenFile

/**
 * A symbolic link; its target is stored verbatim, never normalised.
 *
 * @since 0.1.0
 */
export type SymlinkNode = Model.SymlinkNode

/**
 * A directory reached by a walk: its mount, the directory, the name it was reached by and the frame before.
 *
 * @since 0.1.0
 */
export type Frame = Resolve.Frame

/**
 * Why a fixture entry could not be created.
 *
 * @since 0.1.0
 */
export type SeedProblem = Seed.SeedProblem

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
  crossFile,
  rootFrame,
  lookup,
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
