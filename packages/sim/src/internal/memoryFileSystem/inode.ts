/**
 * Inode bookkeeping of the in-memory file system: allocating inode numbers,
 * adding and removing directory entries with their link counts and sizes
 * (ext4 blocks or tmpfs entry sizes), creating files, directories and
 * symlinks with the umask and setgid rules, growing and writing file data,
 * relatime, and `stat(2)` as Effect's `File.Info`.
 *
 * Boundary: acts on inodes and frames already resolved; no path lookup and
 * no errors. The syscalls (`syscalls.ts`) check first, then call these.
 */
import { ByteSize, type FileSystem, Option } from "effect"
import {
  BLOCK,
  BOGO_DIRENT_SIZE,
  type DirectoryNode,
  type FileNode,
  type Filesystem,
  type FsState,
  type Inode,
  newDirectory,
  S_IFDIR,
  S_IFLNK,
  S_IFREG,
  S_ISGID,
  type SymlinkNode
} from "./model.ts"
import type { Frame } from "./resolve.ts"

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
export const addEntry = (dir: DirectoryNode, name: string, node: Inode, now: number) => {
  dir.entries.set(name, node)
  if (node.type === "Directory") dir.nlink += 1
  fitBlocks(dir)
  touchDir(dir, now)
}

/** Removes an entry; the inode's own link count is the caller's business. */
export const removeEntry = (dir: DirectoryNode, name: string, now: number) => {
  const node = dir.entries.get(name)
  dir.entries.delete(name)
  if (node?.type === "Directory") dir.nlink -= 1
  touchDir(dir, now)
}

/** Drops one link to `node` (an unlinked or replaced entry). */
export const unlinkInode = (node: Inode, now: number) => {
  node.nlink = node.type === "Directory" ? 0 : node.nlink - 1
  node.ctime = now
}

/** Group for a new inode: a setgid directory passes its group down (BSD semantics). */
const newGid = (parent: DirectoryNode) => ((parent.mode & S_ISGID) !== 0 ? parent.gid : 0)

export const createFile = (st: FsState, parent: Frame, name: string, mode: number, now: number): FileNode => {
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

export const createDirectory = (st: FsState, parent: Frame, name: string, mode: number, now: number): DirectoryNode => {
  const fs = parent.mount.fs
  const dir = newDirectory(fs, allocIno(fs), 0, now)
  // mkdir(2) keeps only rwx and sticky from `mode`, then applies the umask;
  // setgid is inherited from a setgid parent together with its group.
  dir.mode = (mode & 0o1777 & ~st.umask) | (parent.dir.mode & S_ISGID)
  dir.gid = newGid(parent.dir)
  addEntry(parent.dir, name, dir, now)
  return dir
}

export const createSymlink = (parent: Frame, name: string, target: string, now: number): SymlinkNode => {
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

export const fileBytes = (node: FileNode): Uint8Array => node.data.subarray(0, node.size)

export const setSize = (node: FileNode, size: number) => {
  if (size > node.data.length) {
    const grown = new Uint8Array(Math.max(size, node.data.length * 2, 64))
    grown.set(fileBytes(node))
    node.data = grown
  } else if (size < node.size) {
    node.data.fill(0, size, node.size)
  }
  node.size = size
}

export const writeAt = (node: FileNode, bytes: Uint8Array, position: number, now: number) => {
  const end = position + bytes.length
  if (end > node.size) setSize(node, end)
  node.data.set(bytes, position)
  if (bytes.length > 0) {
    node.mtime = now
    node.ctime = now
  }
}

/** relatime: a read updates atime only when it is older than mtime/ctime or a day old. */
export const touchRead = (node: Inode, now: number) => {
  if (node.atime <= node.mtime || node.atime <= node.ctime || now - node.atime >= 86_400_000) node.atime = now
}

const directorySize = (dir: DirectoryNode): number =>
  dir.fs.flavor === "tmpfs" ? (2 + dir.entries.size) * BOGO_DIRENT_SIZE : dir.blocks * BLOCK

const sizeOf = (node: Inode): number =>
  node.type === "File" ? node.size : node.type === "Directory" ? directorySize(node) : Buffer.byteLength(node.target)

const typeBits = (node: Inode) => (node.type === "File" ? S_IFREG : node.type === "Directory" ? S_IFDIR : S_IFLNK)

/**
 * `stat(2)` of an inode as Effect's `File.Info`, with the same field shapes NodeFileSystem produces.
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
