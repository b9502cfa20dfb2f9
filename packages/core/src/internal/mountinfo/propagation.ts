/**
 * Which mounts the kernel detaches along with those a lazy unmount takes out,
 * read off a mount table (pure; the dry run predicts with it).
 *
 * The kernel's rule (`propagate_umount`, as Linux 6.x applies it): for each
 * mount X taken out, on parent P, every mount that receives propagation from
 * P (P's peers, `shared:N`, and their slaves, `master:N`, recursively, with
 * the slaves' own peers) holds a *cognate* of X: the mount on it at the same
 * place of the same file system. A cognate is taken out too, unless
 * something is mounted inside it (not on its root) that is not taken out as
 * well; a mount stacked on a cognate's root stays, moved down onto the
 * cognate's place. Checked against the kernel by the differential tests.
 *
 * @since 0.4.0
 */

import type { MountEntry } from "../../MountInfo.ts"

type MountTable = ReadonlyArray<MountEntry>

import { clean, covers } from "../hostPath/lexical.ts"

/** The peer group of a mount (`shared:N`), or undefined when it is not shared. */
export const peerGroupOf = (e: MountEntry): number | undefined => tagged(e, "shared:")

/** The peer group a slave receives from (`master:N`), or undefined when it is no slave. */
export const masterOf = (e: MountEntry): number | undefined => tagged(e, "master:")

const tagged = (e: MountEntry, prefix: string): number | undefined => {
  for (const f of e.optionalFields) {
    if (f.startsWith(prefix)) {
      const n = Number(f.slice(prefix.length))
      if (Number.isSafeInteger(n)) return n
    }
  }
  return undefined
}

/** `path` (clean, at or below `ancestor`) relative to `ancestor`: "" or "/...". */
const suffix = (ancestor: string, path: string): string =>
  ancestor === "/" ? (path === "/" ? "" : path) : path.slice(ancestor.length)

/** `base` (clean) followed by `rest` ("" or "/..."), clean. */
const append = (base: string, rest: string): string => (rest === "" ? base : base === "/" ? rest : base + rest)

/** A table indexed for propagation: entries by id, children by parent, members by peer group and by master. */
interface Index {
  readonly byId: ReadonlyMap<number, MountEntry>
  readonly children: ReadonlyMap<number, ReadonlyArray<MountEntry>>
  readonly peers: ReadonlyMap<number, ReadonlyArray<MountEntry>>
  readonly slaves: ReadonlyMap<number, ReadonlyArray<MountEntry>>
}

const push = <K, V>(map: Map<K, Array<V>>, key: K, value: V) => {
  const list = map.get(key)
  if (list === undefined) map.set(key, [value])
  else list.push(value)
}

const indexOf = (table: MountTable): Index => {
  const byId = new Map<number, MountEntry>()
  const children = new Map<number, Array<MountEntry>>()
  const peers = new Map<number, Array<MountEntry>>()
  const slaves = new Map<number, Array<MountEntry>>()
  for (const e of table) {
    byId.set(e.id, e)
    if (e.parentId !== e.id) push(children, e.parentId, e)
    const group = peerGroupOf(e)
    if (group !== undefined) push(peers, group, e)
    const master = masterOf(e)
    if (master !== undefined) push(slaves, master, e)
  }
  return { byId, children, peers, slaves }
}

/** The mounts that receive propagation from `p`: its peers and, recursively, the slaves of every group reached. */
const receivers = (index: Index, p: MountEntry): Array<MountEntry> => {
  const start = peerGroupOf(p)
  if (start === undefined) return []
  const out: Array<MountEntry> = []
  const groups = new Set<number>([start])
  const queue = [start]
  const seen = new Set<number>([p.id])
  const add = (e: MountEntry) => {
    if (seen.has(e.id)) return
    seen.add(e.id)
    out.push(e)
    const own = peerGroupOf(e)
    if (own !== undefined && !groups.has(own)) {
      groups.add(own)
      queue.push(own)
    }
  }
  while (queue.length > 0) {
    const g = queue.shift() as number
    for (const e of index.peers.get(g) ?? []) add(e)
    for (const e of index.slaves.get(g) ?? []) add(e)
  }
  return out
}

/**
 * The cognates of the mounts `detached` (ids of `table`): for each, the mount
 * at the same place of the same file system on each mount that receives
 * propagation from its parent. Keyed by the cognate's id, the detached mount
 * it is a cognate of; mounts of `detached` themselves are left out.
 */
export const cognates = (table: MountTable, detached: ReadonlySet<number>): Map<number, number> => {
  const index = indexOf(table)
  const out = new Map<number, number>()
  const receiversOf = new Map<number, Array<MountEntry>>()
  for (const id of detached) {
    const x = index.byId.get(id)
    if (x === undefined || x.parentId === x.id) continue
    const p = index.byId.get(x.parentId)
    if (p === undefined) continue
    const pPoint = clean(p.mountPoint)
    const xPoint = clean(x.mountPoint)
    if (!covers(pPoint, xPoint)) continue
    // Where X is mounted, as a directory of P's file system.
    const onDevice = append(clean(p.root), suffix(pPoint, xPoint))
    let rs = receiversOf.get(p.id)
    if (rs === undefined) {
      rs = receivers(index, p)
      receiversOf.set(p.id, rs)
    }
    for (const r of rs) {
      if (r.major !== p.major || r.minor !== p.minor) continue
      const rRoot = clean(r.root)
      if (!covers(rRoot, onDevice)) continue
      const at = append(clean(r.mountPoint), suffix(rRoot, onDevice))
      for (const y of index.children.get(r.id) ?? []) {
        if (clean(y.mountPoint) === at && !detached.has(y.id) && !out.has(y.id)) out.set(y.id, x.id)
      }
    }
  }
  return out
}

/**
 * The cognates of `detached` the kernel takes out with them (see the module
 * comment), keyed by id, with the detached mount each is a cognate of: a
 * cognate goes unless something other than a mount stacked on its root is
 * mounted in it and does not go too.
 */
export const propagated = (table: MountTable, detached: ReadonlySet<number>): Map<number, number> => {
  const index = indexOf(table)
  const taken = cognates(table, detached)
  for (let changed = true; changed; ) {
    changed = false
    for (const id of taken.keys()) {
      const y = index.byId.get(id) as MountEntry
      const yPoint = clean(y.mountPoint)
      const pinned = (index.children.get(id) ?? []).some(
        (z) => clean(z.mountPoint) !== yPoint && !detached.has(z.id) && !taken.has(z.id)
      )
      if (pinned) {
        taken.delete(id)
        changed = true
      }
    }
  }
  return taken
}

/** `ids` and every mount below them (the mounts a lazy detach of them takes along). */
export const subtrees = (table: MountTable, ids: Iterable<number>): Set<number> => {
  const index = indexOf(table)
  const out = new Set<number>()
  const stack = [...ids]
  while (stack.length > 0) {
    const id = stack.pop() as number
    if (out.has(id)) continue
    out.add(id)
    for (const c of index.children.get(id) ?? []) stack.push(c.id)
  }
  return out
}

/**
 * A mount the kernel detaches by propagation (see {@link propagatedUnmounts}),
 * and the detached mount it is a copy of.
 */
export interface PropagatedUnmount {
  readonly entry: MountEntry
  /** The id of the mount taken out whose detach propagated here (its cognate: the same place of the same file system). */
  readonly cognateOf: number
}

/**
 * The mounts of `table` the kernel detaches along with a lazy detach of each
 * of `targets` (mount ids; each goes with every mount below it), by umount
 * propagation, in table order. A mount on a shared mount (`shared:N`) has
 * copies on that mount's peers and slaves (`master:N`, recursively) wherever
 * they are in the namespace, another view of a data disk outside the host
 * root included; detaching it detaches each copy too, unless something not
 * detached is mounted inside the copy (a mount stacked on the copy's root
 * stays, moved onto the copy's place). This is how a dry run predicts them
 * and how an unmount names what left the table this way; the rule was
 * checked against Linux 6.x by the differential tests.
 */
export const propagatedUnmounts = (table: MountTable, targets: Iterable<number>): ReadonlyArray<PropagatedUnmount> => {
  const taken = propagated(table, subtrees(table, targets))
  const out: Array<PropagatedUnmount> = []
  for (const entry of table) {
    const of = taken.get(entry.id)
    if (of !== undefined) out.push({ entry, cognateOf: of })
  }
  return out
}
