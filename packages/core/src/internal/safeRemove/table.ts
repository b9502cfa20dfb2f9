/**
 * What the mount table says keeps a path: the table indexed once per
 * session (mount points and roots cleaned, entries by device and by mount
 * point), and the mounts at or below a path or whose source lies there.
 * Pure: nothing here touches the host.
 *
 * Internal: `SafeRemove` re-exports `indexTable` and `blockers`; the walk
 * asks `blockers` before it removes a path.
 *
 * @since 0.3.0
 */
import type * as MountInfo from "../../MountInfo.ts"
import * as Lexical from "../hostPath/lexical.ts"

/** A table entry, its mount point and root cleaned once. */
export interface Indexed {
  readonly entry: MountInfo.MountEntry
  readonly mountPoint: string
  readonly root: string
}

/**
 * A mount table prepared for {@link blockers}.
 */
export interface TableIndex {
  readonly entries: ReadonlyArray<Indexed>
  /** The entries of each device (`major:minor`). */
  readonly byDevice: ReadonlyMap<string, ReadonlyArray<Indexed>>
  /** The distinct (device, root) pairs mounted at each mount point. */
  readonly byMountPoint: ReadonlyMap<string, ReadonlyArray<{ readonly device: string; readonly root: string }>>
}

/**
 * Indexes `table` for {@link blockers}: mount points and roots cleaned, entries grouped by device and mount point.
 */
export const indexTable = (table: ReadonlyArray<MountInfo.MountEntry>): TableIndex => {
  const entries: Array<Indexed> = []
  const byDevice = new Map<string, Array<Indexed>>()
  const byMountPoint = new Map<string, Array<{ readonly device: string; readonly root: string }>>()
  for (const entry of table) {
    const e = { entry, mountPoint: Lexical.clean(entry.mountPoint), root: Lexical.clean(entry.root) }
    entries.push(e)
    const device = `${entry.major}:${entry.minor}`
    const group = byDevice.get(device)
    if (group === undefined) byDevice.set(device, [e])
    else group.push(e)
    // Stacked copies of one mount (thousands of binds of the kubelet directory
    // onto itself have been seen) are one pair here.
    const at = byMountPoint.get(e.mountPoint)
    if (at === undefined) byMountPoint.set(e.mountPoint, [{ device, root: e.root }])
    else if (!at.some((x) => x.device === device && x.root === e.root)) at.push({ device, root: e.root })
  }
  return { entries, byDevice, byMountPoint }
}

/**
 * Why the table keeps a path: which mount, and where (a mount point, or where that mount's source shows).
 */
export interface Blocker {
  readonly reason: "MountBelow" | "MountSourceBelow"
  readonly entry: MountInfo.MountEntry
  /** The table path at or below the examined path that keeps it. */
  readonly at: string
}

// `path` (clean, at or below `ancestor`) relative to `ancestor`: "" or "/...".
const suffix = (ancestor: string, path: string): string =>
  ancestor === "/" ? (path === "/" ? "" : path) : path.slice(ancestor.length)

// `base` (clean) followed by `rest` ("" or "/..."), clean.
const append = (base: string, rest: string): string => (rest === "" ? base : base === "/" ? rest : base + rest)

/**
 * What in the table keeps `path` (a clean table path): every mount at or below
 * it, and every mount whose source lies at or below it. A source is found
 * through the mounts `path` lies in: `path` is, on the device of such a mount,
 * the directory `root + (path - mountPoint)`, and a mount of the same device
 * whose root lies at or below that directory shows files of `path`.
 *
 * Sources above `path` do not keep it: a bind of `/` (a container's
 * `/rootfs`) shows every file of the host, and removing anything would be
 * removing a file reachable through it.
 */
export const blockers = (index: TableIndex, path: string): Array<Blocker> => {
  const out: Array<Blocker> = []
  const seen = new Set<MountInfo.MountEntry>()
  for (const e of index.entries) {
    if (!Lexical.covers(path, e.mountPoint)) continue
    out.push({ reason: "MountBelow", entry: e.entry, at: e.mountPoint })
    seen.add(e.entry)
  }
  if (path === "/") return out
  const looked = new Set<string>()
  // The mounts `path` lies in are at its strict ancestors: "/", "/var", "/var/lib", ...
  for (let end = 0; end !== -1 && end < path.length; end = path.indexOf("/", end + 1)) {
    const mountPoint = end === 0 ? "/" : path.slice(0, end)
    for (const { device, root } of index.byMountPoint.get(mountPoint) ?? []) {
      // Strictly below `root`, since `path` is strictly below `mountPoint`.
      const onDevice = append(root, suffix(mountPoint, path))
      const key = `${device}\0${onDevice}`
      if (looked.has(key)) continue
      looked.add(key)
      for (const e of index.byDevice.get(device) ?? []) {
        if (seen.has(e.entry) || !Lexical.covers(onDevice, e.root)) continue
        seen.add(e.entry)
        out.push({ reason: "MountSourceBelow", entry: e.entry, at: append(path, suffix(onDevice, e.root)) })
      }
    }
  }
  return out
}
