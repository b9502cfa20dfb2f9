/**
 * Building and reading the tree from outside the simulated process (nothing
 * here is journalled): fresh file-system state, creating directories for a
 * fixture (`mkdirAll`), seeding a `Fixture`, and dumping a tree for
 * assertions.
 *
 * Boundary: the test's view of the tree, not the process's: no errno, no
 * umask, modes taken literally. What the process under test does is
 * `service.ts`.
 */
import { posix } from "node:path"
import type { Fixture } from "../../MemoryHost.ts"
import { createDirectory, createFile, createSymlink, fileBytes, writeAt } from "./inode.ts"
import {
  type DirectoryNode,
  type Flavor,
  type FsState,
  type Inode,
  type Mount,
  makeDev,
  makeFilesystem
} from "./model.ts"
import { crossFile, enterFrame, Fail, type Frame, lookup, rootFrame } from "./resolve.ts"

/**
 * Fresh file-system state: one root file system (dev 8:1, ext4-like unless
 * `flavor` says otherwise) mounted at "/", containing only "/" and a
 * world-writable sticky `/tmp` (so `makeTempDirectory` works like on a real
 * host).
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
    at: "/",
    shared: 0,
    master: 0
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
    nextMountId: 2,
    freeMountIds: [],
    nextPeerGroup: 1
  }
  const tmp = mkdirAll(st, st.tmpdir, 0o755, options.now)
  if (tmp !== undefined) tmp.mode = 0o1777
  return st
}

/**
 * Creates `path` and missing parents as root directories with `mode` (no umask); for seeding.
 */
export const mkdirAll = (st: FsState, path: string, mode: number, now: number): DirectoryNode | undefined =>
  mkdirAllFrame(st, path, mode, now)?.dir

/** {@link mkdirAll}, giving the frame reached: which mount the directory is on matters to what is created in it. */
export const mkdirAllFrame = (st: FsState, path: string, mode: number, now: number): Frame | undefined => {
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

/**
 * What a fixture path holds: text (a 0644 root file), bytes, a file with
 * explicit mode and owner, a symlink, or a directory. Modes are taken
 * literally (no umask), because a fixture describes a tree as it already is.
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
 * One path of `dump`: files with permission bits, owner and UTF-8 content;
 * directories with permission bits and owner; symlinks with their target.
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

const encoder = new TextEncoder()

/**
 * Why a fixture entry could not be created.
 */
export interface SeedProblem {
  readonly path: string
  readonly reason: "NotAbsolute" | "ParentNotDirectory" | "AlreadyExists" | "EmptySymlinkTarget"
}

/**
 * Writes `fixture` into the tree. Returns the first entry that cannot be
 * created (relative path, a non-directory in the way, a duplicate), or
 * undefined when all were created.
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
 */
export const dumpTree = (st: FsState, root = "/"): Record<string, DumpEntry> => {
  const out: Record<string, DumpEntry> = {}
  const start = lookup(st, posix.resolve(st.cwd, root), false)
  if (start instanceof Fail) return out
  const visit = (path: string, node: Inode, frame: Frame | undefined) => {
    // A mounted directory (or file) shows the mount's root, as `ls` would.
    out[path] = dumpEntry(frame?.dir ?? node)
    if (node.type !== "Directory" || frame === undefined) return
    const names = [...frame.dir.entries.keys()].sort()
    for (const name of names) {
      const child = frame.dir.entries.get(name)!
      visit(
        posix.join(path, name),
        child.type === "Directory" ? child : crossFile(frame.mount, child).node,
        child.type === "Directory" ? enterFrame(frame, name, child) : undefined
      )
    }
  }
  visit(posix.resolve(st.cwd, root), start.node, start.frame)
  return out
}

/**
 * True when `path` resolves (following symlinks) to a directory; for messages, not journalled.
 */
export const isDirectoryAt = (st: FsState, path: string): boolean => {
  const f = lookup(st, path, true)
  return !(f instanceof Fail) && f.node.type === "Directory"
}
