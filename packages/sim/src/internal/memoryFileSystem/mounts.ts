/**
 * Mounts of the in-memory file system: `mount(2)` of a new tmpfs or a bind
 * mount (of a directory, or of a regular file on a regular file), the
 * propagation flags (`--make-shared|slave|private`), `umount2(2)` with the
 * kernel's rules (stacking, EINVAL, ENOENT, EBUSY, MNT_DETACH taking the
 * subtree), mount and umount propagation between peers and to slaves as
 * Linux 6.x does them, the list of mounts, and the mountinfo table
 * `/proc/<pid>/mountinfo` serves (with `shared:N` and `master:N`).
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
  type FileNode,
  type Filesystem,
  type FsHost,
  type FsState,
  type Inode,
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

/** Where a new mount goes: the mount it is made in and the node (directory or file) it covers. */
interface Place {
  readonly parent: Mount
  readonly at: DirectoryNode | FileNode
}

/** The directory or regular file `path` names (symlinks followed), as the top-most mount shows it. */
const placeOf = (st: FsState, path: string, syscall: string): Place | Errno => {
  const f = lookup(st, path, true)
  if (f instanceof Fail) return withSyscall(f, syscall, path)
  if (f.frame !== undefined) return { parent: f.frame.mount, at: f.frame.dir }
  if (f.node.type !== "File") return errno("ENOTDIR", syscall, path)
  return { parent: f.mount, at: f.node }
}

const newMount = (
  st: FsState,
  parent: Mount,
  fs: Filesystem,
  root: DirectoryNode | FileNode,
  at: DirectoryNode | FileNode,
  path: string,
  propagation: { readonly shared: number; readonly master: number }
): Mount => {
  const mount: Mount = {
    id: allocateMountId(st),
    fs,
    root,
    parent,
    mountpoint: at,
    children: [],
    at: path,
    ...propagation
  }
  parent.children.push(mount)
  return mount
}

/**
 * The mounts that receive propagation from `p`, each with the group its copy
 * of a new mount joins: `p`'s peers (the new mount's own group), and the
 * slaves of every group reached (a slave's copy is a slave of the new
 * mount's group; slaves that are peers of each other share a group of their
 * own), recursively.
 */
const receivers = (all: ReadonlyArray<Mount>, p: Mount): Array<{ readonly mount: Mount; readonly slave: boolean }> => {
  if (p.shared === 0) return []
  const out: Array<{ readonly mount: Mount; readonly slave: boolean }> = []
  const seen = new Set<Mount>([p])
  const groups = new Set<number>([p.shared])
  const queue: Array<{ readonly group: number; readonly slave: boolean }> = [{ group: p.shared, slave: false }]
  while (queue.length > 0) {
    const { group, slave } = queue.shift() as { readonly group: number; readonly slave: boolean }
    for (const m of all) {
      if (seen.has(m)) continue
      const peer = m.shared === group
      const ofGroup = m.master === group
      if (!peer && !ofGroup) continue
      seen.add(m)
      out.push({ mount: m, slave: slave || ofGroup })
      if (m.shared !== 0 && !groups.has(m.shared)) {
        groups.add(m.shared)
        queue.push({ group: m.shared, slave: true })
      }
    }
  }
  return out
}

/** True when `node` is `dir` or below it (a file: in a directory below it), for a mount's root. */
const isWithin = (dir: DirectoryNode, node: Inode): boolean => {
  if (node === dir) return true
  const stack: Array<DirectoryNode> = [dir]
  while (stack.length > 0) {
    const d = stack.pop() as DirectoryNode
    for (const child of d.entries.values()) {
      if (child === node) return true
      if (child.type === "Directory") stack.push(child)
    }
  }
  return false
}

/**
 * Attaches a new mount of `fs`'s `root` at `place`, with the kernel's mount
 * propagation: on a shared mount the new one is shared (a bind of a shared
 * mount joins that mount's group, anything else gets a new group), and a copy
 * is made at the same place on each mount that receives from the parent
 * (where its root shows that place): on a peer a peer of the new mount, on
 * a slave a slave of it. A bind of a shared mount elsewhere joins its group.
 */
const attach = (
  st: FsState,
  place: Place,
  fs: Filesystem,
  root: DirectoryNode | FileNode,
  path: string,
  source?: Mount
): Mount => {
  const { parent, at } = place
  const all = mounts(st)
  const copies = receivers(all, parent)
  const group =
    source !== undefined && source.shared !== 0 ? source.shared : parent.shared !== 0 ? st.nextPeerGroup++ : 0
  const mount = newMount(st, parent, fs, root, at, path, { shared: group, master: 0 })
  const slaveGroups = new Map<number, number>()
  for (const { mount: r, slave } of copies) {
    // The same place of the same file system, where r's root shows it.
    if (r.fs !== parent.fs || r.root.type !== "Directory" || !isWithin(r.root, at)) continue
    // What r shows there now: a copy goes on top of a mount already on that place.
    let under = r
    for (;;) {
      const top = under.children.findLast((c) => c.mountpoint === (under === r ? at : under.root))
      if (top === undefined) break
      under = top
    }
    const covers = under === r ? at : under.root
    if (!slave) {
      newMount(st, under, fs, root, covers, path, { shared: group, master: 0 })
    } else {
      let own = 0
      if (r.shared !== 0) {
        own = slaveGroups.get(r.shared) ?? st.nextPeerGroup++
        slaveGroups.set(r.shared, own)
      }
      newMount(st, under, fs, root, covers, path, { shared: own, master: group })
    }
  }
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
  return attach(st, { parent: at.mount, at: at.dir }, fs, fs.root, target)
}

/**
 * `mount --bind source target` (not recursive): the directory or regular
 * file `source`, as the top-most mount at that path shows it, also shown at
 * `target`, a node of the same type (else ENOTDIR). Both paths then reach
 * the same inodes.
 */
export const bindMount = (st: FsState, source: string, target: string): Mount | Errno => {
  const from = lookup(st, source, true)
  if (from instanceof Fail) return withSyscall(from, "mount", source)
  const node = from.frame?.dir ?? from.node
  if (node.type !== "Directory" && node.type !== "File") return errno("EINVAL", "mount", source)
  const at = placeOf(st, target, "mount")
  if (at instanceof Errno) return at
  if ((at.at.type === "Directory") !== (node.type === "Directory")) return errno("ENOTDIR", "mount", target)
  return attach(st, at, from.mount.fs, node, target, from.mount)
}

/** How a mount takes part in propagation: in a peer group, a slave of its group, or neither. */
export type PropagationKind = "shared" | "slave" | "private"

/**
 * `mount --make-shared|--make-slave|--make-private target`: the mount whose
 * root `target` is (EINVAL for a path that is no mount's root). Shared: a
 * new peer group unless it is in one; slave: it receives from its group
 * (made private when it was alone in it); private: neither.
 */
export const setPropagation = (st: FsState, target: string, kind: PropagationKind): undefined | Errno => {
  const f = lookup(st, target, true)
  if (f instanceof Fail) return withSyscall(f, "mount", target)
  const mount = f.mount
  if (mount.root !== (f.frame?.dir ?? f.node)) return errno("EINVAL", "mount", target)
  switch (kind) {
    case "shared":
      if (mount.shared === 0) mount.shared = st.nextPeerGroup++
      return undefined
    case "slave": {
      if (mount.shared !== 0) {
        const peers = mounts(st).some((m) => m !== mount && m.shared === mount.shared)
        if (peers) mount.master = mount.shared
        mount.shared = 0
      }
      return undefined
    }
    case "private":
      mount.shared = 0
      mount.master = 0
      return undefined
  }
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
  if (f.mount.root !== (f.frame?.dir ?? f.node) || (f.mount.parent === undefined && f.frame === undefined)) {
    return errno("EINVAL", "umount2", target)
  }
  return unmountMount(host, f.mount, lazy, target)
}

/** `mount` and every mount below it. */
const subtree = (mount: Mount): Array<Mount> => {
  const out: Array<Mount> = []
  const visit = (m: Mount) => {
    out.push(m)
    for (const c of m.children) visit(c)
  }
  visit(mount)
  return out
}

/**
 * The kernel's umount propagation for the mounts `taken` (a mount and those
 * below it): for each, the mount at the same place on every mount that
 * receives from its parent (its cognate) goes too, unless something is
 * mounted inside the cognate (not on its root) that does not go; a mount on
 * a departing cognate's root stays, moved down onto the cognate's place.
 */
const propagateUnmount = (st: FsState, taken: ReadonlyArray<Mount>): Array<Mount> => {
  const all = mounts(st)
  const out = new Set(taken)
  const candidates = new Set<Mount>()
  for (const x of taken) {
    const p = x.parent
    if (p === undefined || x.mountpoint === undefined) continue
    for (const { mount: r } of receivers(all, p)) {
      for (const y of r.children) {
        if (y.mountpoint === x.mountpoint && !out.has(y)) candidates.add(y)
      }
    }
  }
  for (let changed = true; changed; ) {
    changed = false
    for (const y of candidates) {
      if (y.children.some((z) => z.mountpoint !== y.root && !out.has(z) && !candidates.has(z))) {
        candidates.delete(y)
        changed = true
      }
    }
  }
  return [...candidates]
}

/**
 * Unmounts `mount` itself (what `umount2` through a descriptor of its root
 * does): EINVAL when it is detached already or is the namespace's root, EBUSY
 * when not lazy and it is in use. The copies the kernel detaches by
 * propagation (see {@link propagateUnmount}) go with it.
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
  const copies = propagateUnmount(st, lazy ? subtree(mount) : [mount])
  if (!lazy && copies.some((c) => c.children.length > 0)) return errno("EBUSY", "umount2", target)
  const gone = new Set<Mount>([mount, ...copies])
  for (const c of copies) {
    const up = c.parent as Mount
    up.children.splice(up.children.indexOf(c), 1)
    // What is mounted on the copy's root (and not going) moves down onto the copy's place.
    for (const z of [...c.children]) {
      if (z.mountpoint !== c.root || gone.has(z)) continue
      c.children.splice(c.children.indexOf(z), 1)
      z.parent = up
      z.mountpoint = c.mountpoint
      up.children.push(z)
    }
  }
  parent.children.splice(parent.children.indexOf(mount), 1)
  releaseMountIds(host, mount)
  for (const c of copies) releaseMountIds(host, c)
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
 * Where every directory and regular file below `from` is, relative to it
 * (`from` itself is `""`): one walk of the tree. Directories cannot be
 * hard-linked, so each has one path; a file with several names is given the
 * first one met (a mount on it shows at the name it was mounted on, which
 * the kernel knows by its dentry and this model does not).
 */
const nodePaths = (from: Inode): Map<Inode, string> => {
  const out = new Map<Inode, string>([[from, ""]])
  if (from.type !== "Directory") return out
  const stack: Array<[DirectoryNode, string]> = [[from, ""]]
  while (stack.length > 0) {
    const [dir, path] = stack.pop()!
    for (const [name, child] of dir.entries) {
      const p = `${path}/${name}`
      if (child.type === "File" && !out.has(child)) out.set(child, p)
      if (child.type !== "Directory") continue
      out.set(child, p)
      stack.push([child, p])
    }
  }
  return out
}

/**
 * The mountinfo entries of the namespace, as the kernel writes them: root `/`
 * for a whole file system, the source's path inside its file system for a
 * bind mount; fs type and source `tmpfs`/`tmpfs` or `ext4`/`/dev/vda`; the
 * optional fields `shared:N` and `master:N` as the kernel writes them. The
 * root mount is its own parent.
 */
export const mountEntries = (st: FsState): ReadonlyArray<MountInfo.MountEntry> => {
  // Each file system's tree is walked once per call, not once per mount on it.
  const walked = new Map<Inode, Map<Inode, string>>()
  const pathBelow = (from: Inode, target: Inode): string | undefined => {
    let index = walked.get(from)
    if (index === undefined) {
      index = nodePaths(from)
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
      optionalFields: [
        ...(m.shared === 0 ? [] : [`shared:${m.shared}`]),
        ...(m.master === 0 ? [] : [`master:${m.master}`])
      ],
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
