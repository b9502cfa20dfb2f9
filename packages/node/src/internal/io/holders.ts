/**
 * Who holds a mount, read from procfs in the helper process: what `fuser -m`
 * says, and what it cannot see, across mount namespaces. For each process:
 * its open files (the mount id in `/proc/PID/fdinfo/N`), its working
 * directory and its root (`statx` through `/proc/PID/cwd` and `root`, with
 * cached attributes, so a dead file system is not asked); and for a process
 * in another mount namespace, whether that namespace holds a copy of the
 * mount (the same device and root in its `/proc/PID/mountinfo`), and which of
 * its files are in that copy.
 *
 * Internal: `./server.ts` answers `NodeMounter`'s `holders` with it.
 *
 * @since 0.4.0
 */
import { FileName } from "@hostnode/core/Programs"
import { cString } from "../libc.ts"
import type { Sys } from "./sys.ts"

/** A mount asked about: its id, device and root, as the table says. */
export interface Asked {
  readonly mountId: number
  readonly device: string
  readonly root: string
}

/** One holder of a mount. */
export interface Held {
  readonly pid: number
  readonly command: string
  readonly how: "file" | "cwd" | "root" | "namespace"
  readonly detail: string
}

interface Line {
  readonly id: number
  readonly parent: number
  readonly device: string
  readonly root: string
  readonly mountPoint: string
}

const unescapeField = (s: string) =>
  s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)))

const parse = (text: string): Array<Line> =>
  text
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => {
      const f = l.split(" ")
      return {
        id: Number(f[0]),
        parent: Number(f[1]),
        device: f[2] ?? "",
        root: unescapeField(f[3] ?? ""),
        mountPoint: unescapeField(f[4] ?? "")
      }
    })

/** The mounts of `table` that are `ids` or below them (a file on a submount keeps it busy too). */
const withBelow = (table: ReadonlyArray<Line>, ids: ReadonlySet<number>): Set<number> => {
  const out = new Set(ids)
  for (let grew = true; grew; ) {
    grew = false
    for (const e of table) {
      if (!out.has(e.id) && out.has(e.parent)) {
        out.add(e.id)
        grew = true
      }
    }
  }
  return out
}

/** Who holds each of `asked` (see the module comment), leaving out `skip` (the agent and its helpers). */
export const holders = (
  sys: Sys,
  proc: string,
  asked: ReadonlyArray<Asked>,
  skip: ReadonlySet<number>
): Array<[number, Array<Held>]> => {
  const { c, k } = sys
  const linkBuf = new Uint8Array(4096)
  const readLink = (path: string): string | undefined => {
    const n = c.readlink(cString(FileName.encode(path)), linkBuf, linkBuf.length)
    return n < 0 ? undefined : FileName.decode(linkBuf.slice(0, n))
  }
  const statBuf = new Uint8Array(256)
  const mountIdAt = (path: string): number | undefined => {
    // Following the magic link, with cached attributes: the mount the directory is in, nothing asked of it.
    const r = c.statx(k.AT_FDCWD, cString(FileName.encode(path)), k.AT_STATX_DONT_SYNC, k.STATX_MNT_ID, statBuf)
    if (r !== 0) return undefined
    const v = new DataView(statBuf.buffer)
    return (v.getUint32(0, true) & k.STATX_MNT_ID) !== 0 ? Number(v.getBigUint64(144, true)) : undefined
  }
  /** The names in the procfs directory `path` (none when it is gone). */
  const names = (path: string): Array<string> => {
    const fd = c.openat(k.AT_FDCWD, cString(FileName.encode(path)), k.O_RDONLY | k.O_DIRECTORY | k.O_CLOEXEC, 0)
    if (fd < 0) return []
    const listed = sys.list(fd)
    c.close(fd)
    return Array.isArray(listed) ? listed.map((e) => FileName.decode(e.name)) : []
  }
  const ours = readLink(`${proc}/self/ns/mnt`)
  const ownTable = parse(sys.readProcText(`${proc}/self/mountinfo`) ?? "")
  const out = new Map<number, Array<Held>>(asked.map((a) => [a.mountId, []]))
  // Per mount namespace: which of its mounts are (copies of) each asked mount.
  const perNamespace = new Map<string, Map<number, number>>()
  const namespaceNamed = new Set<string>()
  const idsIn = (ns: string, pid: number): Map<number, number> => {
    const known = perNamespace.get(ns)
    if (known !== undefined) return known
    const map = new Map<number, number>()
    const table = ns === ours ? ownTable : parse(sys.readProcText(`${proc}/${pid}/mountinfo`) ?? "")
    for (const a of asked) {
      const roots =
        ns === ours
          ? new Set([a.mountId])
          : new Set(table.filter((e) => e.device === a.device && e.root === a.root).map((e) => e.id))
      for (const id of withBelow(table, roots)) map.set(id, a.mountId)
      if (ns !== ours) {
        for (const e of table) {
          if (roots.has(e.id) && !namespaceNamed.has(`${ns} ${a.mountId}`)) {
            namespaceNamed.add(`${ns} ${a.mountId}`)
            out.get(a.mountId)?.push({
              pid,
              command: commandOf(pid),
              how: "namespace",
              detail: `mount namespace ${ns} (process ${pid}) holds a copy at ${e.mountPoint}`
            })
          }
        }
      }
    }
    perNamespace.set(ns, map)
    return map
  }
  const commandOf = (pid: number) => (sys.readProcText(`${proc}/${pid}/comm`) ?? "?").trim()
  const pids = names(proc)
    .filter((n) => /^\d+$/.test(n))
    .map(Number)
  /** The agent's own helper processes (its children running this program) hold what they work on. */
  const isOurHelper = (pid: number): boolean => {
    const stat = sys.readProcText(`${proc}/${pid}/stat`)
    const ppid = stat === undefined ? Number.NaN : Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
    return skip.has(ppid) && (sys.readProcText(`${proc}/${pid}/cmdline`) ?? "").includes("io/server")
  }
  for (const pid of pids) {
    if (skip.has(pid) || isOurHelper(pid)) continue
    const ns = readLink(`${proc}/${pid}/ns/mnt`)
    if (ns === undefined) continue
    const ids = idsIn(ns, pid)
    if (ids.size === 0) continue
    const add = (mountId: number | undefined, how: Held["how"], detail: string) => {
      const asked = mountId === undefined ? undefined : ids.get(mountId)
      if (asked !== undefined) out.get(asked)?.push({ pid, command: commandOf(pid), how, detail })
    }
    add(
      mountIdAt(`${proc}/${pid}/cwd`),
      "cwd",
      `process ${pid} has its working directory ${readLink(`${proc}/${pid}/cwd`) ?? "?"} in it`
    )
    add(
      mountIdAt(`${proc}/${pid}/root`),
      "root",
      `process ${pid} has its root ${readLink(`${proc}/${pid}/root`) ?? "?"} in it`
    )
    for (const fd of names(`${proc}/${pid}/fd`)) {
      const info = sys.readProcText(`${proc}/${pid}/fdinfo/${fd}`)
      const m = info === undefined ? null : /^mnt_id:\s*(\d+)/m.exec(info)
      if (m === null) continue
      add(Number(m[1]), "file", `process ${pid} has ${readLink(`${proc}/${pid}/fd/${fd}`) ?? `descriptor ${fd}`} open`)
    }
  }
  return [...out.entries()]
}
