/**
 * Mounts of the in-memory file system: `mount(2)` of a new tmpfs or a bind
 * mount, `umount2(2)` with the kernel's rules (stacking, EINVAL, ENOENT,
 * EBUSY, MNT_DETACH taking the subtree), the list of mounts, and the
 * mountinfo table `/proc/<pid>/mountinfo` serves.
 *
 * Boundary: the mount tree. Crossing mount points during a walk is the
 * resolver's (`crossMounts` in `resolve.ts`); the `Mounter` service and the
 * `mount`/`umount` interpreters over these are `MemoryMounts`.
 */
import { posix } from "node:path"
import type { MountInfo } from "@hostnode/core"
import { Errno, errno } from "../errno.ts"
import {
  type DirectoryNode,
  devNumbers,
  type Filesystem,
  type FsHost,
  type FsState,
  type Mount,
  makeDev,
  makeFilesystem
} from "./model.ts"
import { cwdFrame, Fail, type Frame, lookup } from "./resolve.ts"
import { withSyscall } from "./syscalls.ts"

/**
 * True for `/proc/<anything>/mountinfo` (absolute, normalised), the table `readFile` serves.
 */
export const isProcMountinfo = (path: string): boolean => /^\/proc\/[^/]+\/mountinfo$/.test(path)

/** The directory `path` names (symlinks followed) as a frame: the top-most mount's view of it. */
const directoryFrame = (st: FsState, path: string, syscall: string): Frame | Errno => {
  const f = lookup(st, path, true)
  if (f instanceof Fail) return withSyscall(f, syscall, path)
  if (f.frame === undefined) return errno("ENOTDIR", syscall, path)
  return f.frame
}

/** The lowest free mount id, as the kernel gives one (`ida_alloc`): an id of a mount that is gone comes back. */
const allocateMountId = (st: FsState): number => {
  if (st.freeMountIds.length === 0) return st.nextMountId++
  let at = 0
  for (let i = 1; i < st.freeMountIds.length; i++) {
    if ((st.freeMountIds[i] as number) < (st.freeMountIds[at] as number)) at = i
  }
  return st.freeMountIds.splice(at, 1)[0] as number
}

/**
 * Frees the ids of `mount` and the mounts below it, detached, when nothing
 * still holds them (an open file, the working directory): the kernel frees a
 * mount's id when the mount itself is freed, and a lazily detached mount in
 * use lives on (its id is then simply never given again here).
 */
const releaseMountIds = (host: FsHost, mount: Mount): void => {
  const st = host.fs
  const subtree: Array<Mount> = []
  const visit = (m: Mount) => {
    subtree.push(m)
    for (const c of m.children) visit(c)
  }
  visit(mount)
  const held = new Set(subtree)
  for (const h of st.openFiles) {
    if (!h.closed && h.generation === host.journal.generation && h.mount !== undefined && held.has(h.mount)) return
  }
  const cwd = cwdFrame(st)
  if (!(cwd instanceof Fail) && held.has(cwd.mount)) return
  for (const m of subtree) st.freeMountIds.push(m.id)
}

const attach = (st: FsState, parent: Frame, fs: Filesystem, root: DirectoryNode, path: string): Mount => {
  const mount: Mount = {
    id: allocateMountId(st),
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
  releaseMountIds(host, mount)
  return undefined
}

/**
 * Every mount of the namespace (the root mount first, parents before children, older before newer).
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
 * True while `mount` is in the namespace: it and every mount above it still attached.
 */
export const isAttached = (st: FsState, mount: Mount): boolean => {
  for (let m = mount; m.parent !== undefined; m = m.parent) if (!m.parent.children.includes(m)) return false
  let top = mount
  while (top.parent !== undefined) top = top.parent
  return top === st.rootMount
}
