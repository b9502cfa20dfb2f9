/**
 * The system calls of the helper process, each returning its value or a
 * `Programs.Failure`: no exceptions and no Effect, so a whole program is one
 * tight synchronous loop. Runs only in the helper, which may block in the kernel.
 *
 * What keeps a dead file system from being asked anything: a node is
 * identified with `statx(AT_STATX_DONT_SYNC)` and its mount id; a child
 * directory is first held `O_PATH | O_NOFOLLOW`, identified, and refused when
 * it is a link, not a directory, or another mount's root, and only then
 * opened through the held descriptor; a mount is verified with
 * `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` and detached through that
 * very descriptor with `umount2(MNT_DETACH)`, which needs no answer from it.
 *
 * Internal: `./server.ts` dispatches requests to it.
 */
import { createHash } from "node:crypto"
import type { Directory } from "@hostnode/core"
import {
  type AppendedFile,
  type Entry,
  type Failure,
  FileName,
  type HashedFile,
  type Identity,
  reasonTagOf
} from "@hostnode/core/Programs"
import { constants, cString, describeErrno, emptyPath, type Libc } from "../libc.ts"

/** Linux's ENOMEM. */
const ENOMEM = 12

/** The flags and other constants of this architecture. */
export type Constants = NonNullable<typeof constants>

/** The type in a `st_mode`. */
export const typeOfMode = (mode: number): Directory.Stat["type"] => {
  switch (mode & 0o170000) {
    case 0o100000:
      return "File"
    case 0o040000:
      return "Directory"
    case 0o120000:
      return "SymbolicLink"
    case 0o060000:
      return "BlockDevice"
    case 0o020000:
      return "CharacterDevice"
    case 0o010000:
      return "FIFO"
    case 0o140000:
      return "Socket"
    default:
      return "Unknown"
  }
}

/** The type in a directory entry's `d_type` (`DT_UNKNOWN` is `Unknown`). */
export const typeOfDirent = (t: number): Directory.Stat["type"] => {
  switch (t) {
    case 8:
      return "File"
    case 4:
      return "Directory"
    case 10:
      return "SymbolicLink"
    case 6:
      return "BlockDevice"
    case 2:
      return "CharacterDevice"
    case 1:
      return "FIFO"
    case 12:
      return "Socket"
    default:
      return "Unknown"
  }
}

/** A stat as it crosses the process boundary: `Directory.Stat`. */
export type Stat = Directory.Stat

/** One file of `Sys.copyFiles`, as it crosses the process boundary (`Programs.CopyFile` with its directory's descriptor). */
export interface CopyItem {
  readonly dir: number
  readonly name: Uint8Array
  readonly permissions: number
  readonly offset: number
  readonly size: number
  readonly mode: number
  readonly uid: number
  readonly gid: number
  /** Access and modification times in nanoseconds, or null to leave them. */
  readonly times: readonly [bigint, bigint] | null
}

/** One directory `Sys.openDirectories` opened, as it crosses the process boundary (`Programs.OpenedDirectory` with its descriptor). */
export interface OpenedDirectory {
  readonly fd: number
  readonly mountId: number
  readonly entries: ReadonlyArray<Entry>
  readonly stats: ReadonlyArray<Stat | Failure>
}

/** The failure of a range of `Sys.sha256` that runs past the file's end, at `at`. */
export const endsBefore = (at: number): Failure => ({
  _tag: "Failure",
  reason: "Other",
  errno: "EIO",
  detail: `the file ends at ${at}, before the end of the range`,
  call: "pread"
})

/** The most bytes `Sys.copyFiles` moves in one read and write. */
const CopyChunk = 1024 * 1024

const dot = cString(FileName.encode("."))
const dotDot = cString(FileName.encode(".."))

/** The helper's system calls over libc `c` (see the module comment). */
export class Sys {
  readonly c: Libc
  readonly k: Constants
  private readonly statBuf = new Uint8Array(256)
  private readonly statView = new DataView(this.statBuf.buffer)
  private readonly direntBuf = new Uint8Array(64 * 1024)
  private readonly linkBuf = new Uint8Array(4096)
  /** The mount id each descriptor this process holds was opened in. */
  private readonly mountOf = new Map<number, number>()
  private openat2Works: boolean
  /** How this process names itself in procfs: `/proc/self`, or `self` relative to the agent's procfs (in a namespace). */
  readonly procSelf: string

  constructor(c: Libc, options?: { readonly openat2?: boolean | undefined; readonly procSelf?: string | undefined }) {
    this.c = c
    this.k = constants as Constants
    this.openat2Works = options?.openat2 ?? true
    this.procSelf = options?.procSelf ?? "/proc/self"
  }

  /** The failure of the call that just failed (errno read now, before any other call). */
  fail(call: string, detail?: string): Failure {
    const d = describeErrno(this.c.errno())
    return { _tag: "Failure", reason: reasonTagOf(d.errno), errno: d.errno, detail: detail ?? d.message, call }
  }

  /** Records `fd` as held, in mount `mountId`. */
  private held(fd: number, mountId: number): number {
    this.mountOf.set(fd, mountId)
    return fd
  }

  /** A duplicate of `fd` (close-on-exec), or the failure. */
  dup(fd: number): number | Failure {
    const copy = this.c.fcntl(fd, this.k.F_DUPFD_CLOEXEC, 0)
    return copy < 0 ? this.fail("fcntl") : copy
  }

  close(fd: number): void {
    this.mountOf.delete(fd)
    this.c.close(fd)
  }

  /** statx of `name` in `dirfd` (or of `dirfd`), not following; `cached`: without asking the file system. */
  private statx(dirfd: number, name: Uint8Array | undefined, cached: boolean): boolean {
    const { c, k } = this
    const flags =
      k.AT_SYMLINK_NOFOLLOW | (name === undefined ? k.AT_EMPTY_PATH : 0) | (cached ? k.AT_STATX_DONT_SYNC : 0)
    const path = name === undefined ? emptyPath : cString(name)
    for (let attempt = 1; ; attempt++) {
      if (c.statx(dirfd, path, flags, k.STATX_BASIC_STATS | k.STATX_MNT_ID, this.statBuf) === 0) return true
      // ENOMEM is transient where it is the kernel's, and koffi reads errno live, after the
      // runtime may have run (and failed a call of its own): a lookup that changes nothing is
      // asked again, twice at most, before its errno is believed.
      if (attempt === 3 || c.errno() !== ENOMEM) return false
    }
  }

  /** The mount id in the last statx, or from fdinfo on a kernel without `STATX_MNT_ID` (before 5.8). */
  private mountIdOfLast(dirfd: number, name: Uint8Array | undefined): number {
    const v = this.statView
    if ((v.getUint32(0, true) & this.k.STATX_MNT_ID) !== 0) return Number(v.getBigUint64(144, true))
    const { c, k } = this
    const fd = name === undefined ? dirfd : c.openat(dirfd, cString(name), k.O_PATH | k.O_NOFOLLOW | k.O_CLOEXEC, 0)
    if (fd < 0) return -1
    const text = this.readProcText(`${this.procSelf}/fdinfo/${fd}`)
    if (name !== undefined) c.close(fd)
    const m = text === undefined ? null : /^mnt_id:\s*(\d+)/m.exec(text)
    return m === null ? -1 : Number(m[1])
  }

  private identityOfLast(dirfd: number, name: Uint8Array | undefined): Identity {
    const v = this.statView
    return {
      type: typeOfMode(v.getUint16(28, true)),
      device: `${v.getUint32(136, true)}:${v.getUint32(140, true)}`,
      inode: v.getBigUint64(32, true),
      mountId: this.mountIdOfLast(dirfd, name)
    }
  }

  /** The identity of `name` in `dirfd`, or of `dirfd`, without asking the file system. */
  identify(dirfd: number, name: Uint8Array | undefined): Identity | Failure {
    if (!this.statx(dirfd, name, true)) return this.fail("statx")
    return this.identityOfLast(dirfd, name)
  }

  /** The full stat of `name` in `dirfd`, or of `dirfd` (asks the file system: fresh attributes). */
  stat(dirfd: number, name: Uint8Array | undefined): Stat | Failure {
    if (!this.statx(dirfd, name, false)) return this.fail("statx")
    return this.statOfLast(dirfd, name)
  }

  /** The {@link Stat} of the last `statx` made (of `name` in `dirfd`, or of `dirfd`): no call of its own. */
  private statOfLast(dirfd: number, name: Uint8Array | undefined): Stat {
    const v = this.statView
    const mode = v.getUint16(28, true)
    return {
      type: typeOfMode(mode),
      mode: mode & 0o7777,
      uid: v.getUint32(20, true),
      gid: v.getUint32(24, true),
      size: Number(v.getBigUint64(40, true)),
      nlink: v.getUint32(16, true),
      device: `${v.getUint32(136, true)}:${v.getUint32(140, true)}`,
      inode: v.getBigUint64(32, true),
      mountId: this.mountIdOfLast(dirfd, name),
      atimeNs: v.getBigInt64(64, true) * 1_000_000_000n + BigInt(v.getUint32(72, true)),
      mtimeNs: v.getBigInt64(112, true) * 1_000_000_000n + BigInt(v.getUint32(120, true))
    }
  }

  /** The mount id a held descriptor was opened in (identified now if it was not recorded). */
  mountIdOf(fd: number): number {
    const known = this.mountOf.get(fd)
    if (known !== undefined) return known
    const id = this.identify(fd, undefined)
    return "mountId" in id ? id.mountId : -1
  }

  /** Opens the directory at `path` (a decoded root: trusted once, here) for reading. */
  openRoot(path: Uint8Array): { readonly fd: number; readonly mountId: number } | Failure {
    const { c, k } = this
    const fd = c.openat(k.AT_FDCWD, cString(path), k.O_RDONLY | k.O_DIRECTORY | k.O_CLOEXEC, 0)
    if (fd < 0) return this.fail("open")
    const id = this.identify(fd, undefined)
    if ("_tag" in id) {
      c.close(fd)
      return id
    }
    return { fd: this.held(fd, id.mountId), mountId: id.mountId }
  }

  /**
   * Opens the child directory `name` of `dirfd` (see the module comment):
   * held `O_PATH` first, refused as a link, a non-directory or (with
   * `sameMount`) the root of another mount before its file system is asked
   * anything, then opened for reading through that descriptor.
   */
  openDirectory(
    dirfd: number,
    name: Uint8Array,
    sameMount: boolean
  ): { readonly fd: number; readonly identity: Identity } | Failure {
    const { c, k } = this
    const held = c.openat(dirfd, cString(name), k.O_PATH | k.O_NOFOLLOW | k.O_CLOEXEC, 0)
    if (held < 0) return this.fail("openat")
    const identity = this.identify(held, undefined)
    if ("_tag" in identity) {
      c.close(held)
      return identity
    }
    // O_DIRECTORY | O_NOFOLLOW says ENOTDIR for a link too: the same answer, the link never followed.
    if (identity.type !== "Directory") {
      c.close(held)
      return {
        _tag: "Failure",
        reason: "NotADirectory",
        errno: "ENOTDIR",
        detail: `a ${identity.type}, not a directory`,
        call: "openat"
      }
    }
    if (sameMount) {
      const parent = this.mountIdOf(dirfd)
      if (identity.mountId !== parent) {
        c.close(held)
        return {
          _tag: "Failure",
          reason: "OtherMount",
          detail: `the root of mount ${identity.mountId}, not of mount ${parent} it is in`,
          call: "openat"
        }
      }
    }
    const fd = c.openat(held, dot, k.O_RDONLY | k.O_DIRECTORY | k.O_CLOEXEC, 0)
    const failed = fd < 0 ? this.fail("openat") : undefined
    c.close(held)
    if (failed !== undefined) return failed
    return { fd: this.held(fd, identity.mountId), identity }
  }

  /**
   * `Directories.openDirectories`: each child directory of `dirfd` opened as
   * {@link openDirectory} opens it, listed, and the names asked of it
   * stat'ed; one whose listing fails is closed again.
   */
  openDirectories(
    dirfd: number,
    directories: ReadonlyArray<{ readonly name: Uint8Array; readonly stat: ReadonlyArray<Uint8Array> }>,
    sameMount: boolean
  ): Array<OpenedDirectory | Failure> {
    const out: Array<OpenedDirectory | Failure> = []
    for (const d of directories) {
      const opened = this.openDirectory(dirfd, d.name, sameMount)
      if ("_tag" in opened) {
        out.push(opened)
        continue
      }
      const entries = this.list(opened.fd)
      if ("_tag" in entries) {
        this.close(opened.fd)
        out.push(entries)
        continue
      }
      out.push({
        fd: opened.fd,
        mountId: opened.identity.mountId,
        entries,
        stats: d.stat.map((n) => this.stat(opened.fd, n))
      })
    }
    return out
  }

  /** Opens `..` of `dirfd` (where the directory is now, not how it was reached). */
  openParent(dirfd: number): { readonly fd: number; readonly identity: Identity } | Failure {
    const { c, k } = this
    const fd = c.openat(dirfd, dotDot, k.O_RDONLY | k.O_DIRECTORY | k.O_CLOEXEC, 0)
    if (fd < 0) return this.fail("openat")
    const identity = this.identify(fd, undefined)
    if ("_tag" in identity) {
      c.close(fd)
      return identity
    }
    return { fd: this.held(fd, identity.mountId), identity }
  }

  /**
   * `Directories.ancestors` of `dirfd`: its stat, then each `..` above it
   * opened and stat'ed in turn, up to the process's root (where `..` is the
   * directory itself), each descriptor closed once the next one is held. A
   * directory bind-mounted below itself shows one device and inode twice;
   * with the mount id it repeats only at the root. Bounded by PATH_MAX / 2
   * steps: a deeper chain is a loop no kernel makes.
   */
  ancestors(dirfd: number): Array<Stat> | Failure {
    const { c, k } = this
    const first = this.stat(dirfd, undefined)
    if ("_tag" in first) return first
    const out = [first]
    const where = (st: Stat) => `${st.device}:${st.inode}@${st.mountId}`
    const seen = new Set([where(first)])
    let here = dirfd
    for (let depth = 0; depth < 2048; depth++) {
      const up = c.openat(here, dotDot, k.O_RDONLY | k.O_DIRECTORY | k.O_CLOEXEC, 0)
      const failed = up < 0 ? this.fail("openat") : undefined
      if (here !== dirfd) c.close(here)
      if (failed !== undefined) return failed
      here = up
      const st = this.stat(here, undefined)
      if ("_tag" in st || seen.has(where(st))) {
        c.close(here)
        return "_tag" in st ? st : out
      }
      seen.add(where(st))
      out.push(st)
    }
    if (here !== dirfd) c.close(here)
    return out
  }

  /** Holds `name` of `dirfd` without opening it (`O_PATH | O_NOFOLLOW`): a mount point held so is the mount's root. */
  openPath(dirfd: number, name: Uint8Array): { readonly fd: number; readonly identity: Identity } | Failure {
    const { c, k } = this
    const fd = c.openat(dirfd, cString(name), k.O_PATH | k.O_NOFOLLOW | k.O_CLOEXEC, 0)
    if (fd < 0) return this.fail("openat")
    const identity = this.identify(fd, undefined)
    if ("_tag" in identity) {
      c.close(fd)
      return identity
    }
    return { fd: this.held(fd, identity.mountId), identity }
  }

  private how: Uint8Array | undefined

  /** The `open_how` of `openBeneath`: O_PATH, no link anywhere, never above the root. */
  private beneathNoLinks(): Uint8Array {
    if (this.how !== undefined) return this.how
    const k = this.k
    const view = new DataView(new ArrayBuffer(24))
    view.setBigUint64(0, BigInt(k.O_PATH | k.O_NOFOLLOW | k.O_CLOEXEC), true)
    view.setBigUint64(16, BigInt(k.RESOLVE_BENEATH | k.RESOLVE_NO_SYMLINKS | k.RESOLVE_NO_MAGICLINKS), true)
    this.how = new Uint8Array(view.buffer)
    return this.how
  }

  /**
   * Holds the node at `components` below `rootfd` without following any
   * link (see `Programs.Op`'s `openBeneath`): `openat2`, or where the kernel
   * has none one `O_PATH | O_NOFOLLOW` per component, each before the last
   * checked to be a directory.
   */
  openBeneath(
    rootfd: number,
    components: ReadonlyArray<Uint8Array>
  ): { readonly fd: number; readonly identity: Identity } | Failure {
    const { c, k } = this
    let fd = -1
    if (components.length === 0) {
      fd = c.openat(rootfd, dot, k.O_PATH | k.O_CLOEXEC, 0)
      if (fd < 0) return this.fail("openat")
    } else if (this.openat2Works) {
      let size = 0
      for (const x of components) size += x.length + 1
      const joined = new Uint8Array(size)
      let at = 0
      for (const x of components) {
        joined.set(x, at)
        at += x.length
        joined[at++] = 0x2f
      }
      joined[size - 1] = 0
      fd = c.openat2(rootfd, joined, this.beneathNoLinks())
      if (fd < 0) {
        const e = this.fail("openat2")
        if (e.errno !== "ENOSYS" && e.errno !== "E2BIG") return e
        this.openat2Works = false
      }
    }
    if (fd < 0) {
      let here = rootfd
      for (const [i, name] of components.entries()) {
        const next = c.openat(here, cString(name), k.O_PATH | k.O_NOFOLLOW | k.O_CLOEXEC, 0)
        const failed = next < 0 ? this.fail("openat") : undefined
        if (here !== rootfd) c.close(here)
        if (failed !== undefined) return failed
        here = next
        if (i < components.length - 1) {
          const id = this.identify(here, undefined)
          const bad =
            "_tag" in id
              ? id
              : id.type === "SymbolicLink"
                ? ({
                    _tag: "Failure",
                    reason: "SymbolicLink",
                    errno: "ELOOP",
                    detail: "a symbolic link on the way",
                    call: "openat"
                  } as const)
                : id.type !== "Directory"
                  ? ({
                      _tag: "Failure",
                      reason: "NotADirectory",
                      errno: "ENOTDIR",
                      detail: "not a directory",
                      call: "openat"
                    } as const)
                  : undefined
          if (bad !== undefined) {
            c.close(here)
            return bad
          }
        }
      }
      fd = here
    }
    const identity = this.identify(fd, undefined)
    if ("_tag" in identity) {
      c.close(fd)
      return identity
    }
    return { fd: this.held(fd, identity.mountId), identity }
  }

  /** Every entry of `dirfd` (`.` and `..` left out), from its start. */
  list(dirfd: number): Array<Entry> | Failure {
    const out: Array<Entry> = []
    if (this.c.lseek(dirfd, 0, 0) < 0) return this.fail("lseek")
    for (;;) {
      const batch = this.readBatch(dirfd, out)
      if (typeof batch !== "number") return batch
      if (batch === 0) return out
    }
  }

  /** One `getdents64` into `out`: the bytes read (0 at the end), or the failure. */
  private readBatch(dirfd: number, out: Array<Entry>): number | Failure {
    const buf = this.direntBuf
    const n = this.c.getdents64(dirfd, buf, buf.length)
    if (n < 0) return this.fail("getdents64")
    let off = 0
    while (off < n) {
      const reclen = (buf[off + 16] as number) | ((buf[off + 17] as number) << 8)
      const type = buf[off + 18] as number
      let end = off + 19
      while (buf[end] !== 0) end++
      const len = end - off - 19
      const first = buf[off + 19]
      const isDots = first === 0x2e && (len === 1 || (len === 2 && buf[off + 20] === 0x2e))
      if (!isDots) out.push({ name: buf.slice(off + 19, end), type: typeOfDirent(type) })
      off += reclen
    }
    return n
  }

  /** The next batch of `dirfd`'s entries (one `getdents64`); `restart` from the first. */
  readDirectory(dirfd: number, restart: boolean): { readonly entries: Array<Entry>; readonly end: boolean } | Failure {
    if (restart && this.c.lseek(dirfd, 0, 0) < 0) return this.fail("lseek")
    const entries: Array<Entry> = []
    const n = this.readBatch(dirfd, entries)
    if (typeof n !== "number") return n
    return { entries, end: n === 0 }
  }

  readLink(dirfd: number, name: Uint8Array): Uint8Array | Failure {
    const n = this.c.readlinkat(dirfd, cString(name), this.linkBuf, this.linkBuf.length)
    return n < 0 ? this.fail("readlinkat") : this.linkBuf.slice(0, n)
  }

  /** `undefined` when the call succeeded, else its failure. */
  check(r: number, call: string): Failure | undefined {
    return r < 0 ? this.fail(call) : undefined
  }

  unlink(dirfd: number, name: Uint8Array, directory: boolean): Failure | undefined {
    return this.check(
      this.c.unlinkat(dirfd, cString(name), directory ? this.k.AT_REMOVEDIR : 0),
      directory ? "rmdir" : "unlinkat"
    )
  }

  unlinkAll(dirfd: number, names: ReadonlyArray<Uint8Array>): Array<Failure | undefined> {
    const out: Array<Failure | undefined> = []
    for (const name of names) out.push(this.check(this.c.unlinkat(dirfd, cString(name), 0), "unlinkat"))
    return out
  }

  /** Where a descriptor is, as the kernel names it (d_path), or undefined. */
  whereIs(fd: number): string | undefined {
    const n = this.c.readlink(cString(FileName.encode(`${this.procSelf}/fd/${fd}`)), this.linkBuf, this.linkBuf.length)
    if (n < 0 || n >= this.linkBuf.length) return undefined
    const text = FileName.decode(this.linkBuf.slice(0, n))
    return text.startsWith("/") && !text.endsWith(" (deleted)") ? text : undefined
  }

  /**
   * `Primitives.resolveDirectory`: `openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)`
   * for the directories of a path; where it ended, below the root, from
   * `/proc/self/fd`. `undefined` where the walk must decide instead.
   */
  resolveDirectory(
    rootfd: number,
    path: Uint8Array,
    noSymlinks: boolean
  ): { readonly fd: number; readonly mountId: number; readonly below: string } | undefined | Failure {
    if (!this.openat2Works) return undefined
    const { c, k } = this
    const how = new DataView(new ArrayBuffer(24))
    how.setBigUint64(0, BigInt(k.O_RDONLY | k.O_DIRECTORY | k.O_CLOEXEC), true)
    how.setBigUint64(
      16,
      BigInt(k.RESOLVE_NO_MAGICLINKS | (noSymlinks ? k.RESOLVE_NO_SYMLINKS | k.RESOLVE_BENEATH : k.RESOLVE_IN_ROOT)),
      true
    )
    const cpath = cString(path)
    let fd = -1
    for (let attempt = 0; attempt < 4 && fd < 0; attempt++) {
      fd = c.openat2(rootfd, cpath, new Uint8Array(how.buffer))
      if (fd >= 0) break
      const e = this.fail("openat2")
      if (e.errno === "ENOSYS" || e.errno === "E2BIG") {
        this.openat2Works = false
        return undefined
      }
      // A rename racing `..` (EAGAIN) or a link met where none may be: the walk says what it is.
      if (e.errno === "EAGAIN" || e.errno === "EXDEV" || e.errno === "ELOOP") continue
      return e
    }
    if (fd < 0) return undefined
    const rootAt = this.whereIs(rootfd)
    const here = this.whereIs(fd)
    const below =
      rootAt === undefined || here === undefined
        ? undefined
        : rootAt === "/"
          ? here
          : here === rootAt
            ? "/"
            : here.startsWith(`${rootAt}/`)
              ? here.slice(rootAt.length)
              : undefined
    const id = below === undefined ? undefined : this.identify(fd, undefined)
    if (below === undefined || id === undefined || "_tag" in id) {
      c.close(fd)
      return id !== undefined && "_tag" in id ? id : undefined
    }
    return { fd: this.held(fd, id.mountId), mountId: id.mountId, below }
  }

  /**
   * Opens the regular file `name` of `dirfd`: never following a link at the
   * name, never blocking on a FIFO planted there (`O_NONBLOCK`), refusing
   * what is not a regular file (`WrongType`).
   */
  /**
   * `openFile` for reading, with the stat of the open file (the one its
   * type was checked with: a file read in a batch is stat'ed once).
   */
  openRead(dirfd: number, name: Uint8Array): { readonly fd: number; readonly stat: Stat } | Failure {
    const fd = this.openFile(dirfd, name, "read", 0)
    // openFile's statx of the open file is the last one made.
    return typeof fd === "number" ? { fd, stat: this.statOfLast(fd, undefined) } : fd
  }

  openFile(dirfd: number, name: Uint8Array, mode: "read" | "write" | "create", permissions: number): number | Failure {
    const { c, k } = this
    const base = k.O_NOFOLLOW | k.O_CLOEXEC | k.O_NOCTTY | k.O_NONBLOCK
    const flags =
      mode === "read"
        ? k.O_RDONLY | base
        : mode === "write"
          ? k.O_WRONLY | base
          : k.O_WRONLY | k.O_CREAT | k.O_EXCL | base
    const fd = c.openat(dirfd, cString(name), flags, mode === "create" ? permissions : 0)
    if (fd < 0) {
      const e = this.fail("openat")
      // ENXIO: a FIFO or socket with nothing at its other end, opened for writing without blocking.
      return e.errno === "ENXIO" ? { ...e, reason: "WrongType", detail: "not a regular file (a FIFO or socket)" } : e
    }
    // Created here, exclusively and without following a link: a regular file, no need to ask.
    if (mode === "create") return fd
    if (!this.statx(fd, undefined, false)) {
      const e = this.fail("statx")
      c.close(fd)
      return e
    }
    const type = typeOfMode(this.statView.getUint16(28, true))
    if (type !== "File") {
      c.close(fd)
      return { _tag: "Failure", reason: "WrongType", detail: `a ${type}, not a regular file`, call: "openat" }
    }
    return fd
  }

  /**
   * `Directories.readFiles`: each regular file of `names` opened as
   * `openFile` (read) opens it, its stat and all its bytes; stops before
   * the first whose size would take the total past `maxBytes`.
   */
  readFiles(
    dirfd: number,
    names: ReadonlyArray<Uint8Array>,
    maxBytes: number
  ): Array<{ readonly stat: Stat; readonly bytes: Uint8Array } | Failure> {
    return this.eachFile(dirfd, names, maxBytes, (stat) => {
      const bytes = new Uint8Array(stat.size)
      return {
        into: (at) => bytes.subarray(at),
        done: (got) => ({ stat, bytes: got === bytes.length ? bytes : bytes.slice(0, got) })
      }
    })
  }

  private readonly copyBuffer = new Uint8Array(CopyChunk)

  /**
   * `Directories.hashFiles`: each regular file of `names` opened as
   * `readFiles` opens it, its bytes hashed here through the copy buffer
   * (none of them cross to the agent); stops as `readFiles` does.
   */
  hashFiles(dirfd: number, names: ReadonlyArray<Uint8Array>, maxBytes: number): Array<HashedFile | Failure> {
    return this.eachFile(dirfd, names, maxBytes, (stat) => {
      const h = createHash("sha256")
      return {
        into: () => this.copyBuffer,
        read: (chunk) => {
          h.update(chunk)
        },
        done: (got) => ({ stat, size: got, sha256: h.digest("hex") })
      }
    })
  }

  /**
   * The loop of `readFiles` and `hashFiles`: each regular file of `names`
   * opened as `openFile` (read) opens it, with its stat; reading stops before
   * the first whose size would take the bytes read past `maxBytes`. Each
   * file's bytes are read up to its size (or its end) into what `reader`
   * gives for the offset reached, each chunk handed to `read`; `done` makes
   * its answer from how many bytes were read.
   */
  private eachFile<A>(
    dirfd: number,
    names: ReadonlyArray<Uint8Array>,
    maxBytes: number,
    reader: (stat: Stat) => {
      readonly into: (at: number) => Uint8Array
      readonly read?: (chunk: Uint8Array) => void
      readonly done: (got: number) => A
    }
  ): Array<A | Failure> {
    const out: Array<A | Failure> = []
    let total = 0
    for (const name of names) {
      const opened = this.openRead(dirfd, name)
      if ("_tag" in opened) {
        out.push(opened)
        continue
      }
      const { fd, stat } = opened
      if (total + stat.size > maxBytes) {
        this.c.close(fd)
        break
      }
      const r = reader(stat)
      let got = 0
      let failed: Failure | undefined
      while (got < stat.size) {
        const into = r.into(got)
        const n = this.c.pread(fd, into, Math.min(into.length, stat.size - got), got)
        if (n < 0) {
          failed = this.fail("pread")
          break
        }
        if (n === 0) break
        r.read?.(into.subarray(0, n))
        got += n
      }
      this.c.close(fd)
      if (failed !== undefined) out.push(failed)
      else {
        total += got
        out.push(r.done(got))
      }
    }
    return out
  }

  /** The SHA-256 (hex) of each range of `fd`: read here, hashed here (node's crypto, the one `NodeHashing` uses). */
  sha256(
    fd: number,
    ranges: ReadonlyArray<{ readonly offset: number; readonly size: number }>
  ): Array<string> | Failure {
    const buffer = this.copyBuffer
    const out: Array<string> = []
    for (const range of ranges) {
      const h = createHash("sha256")
      for (let at = 0; at < range.size; ) {
        const want = Math.min(buffer.length, range.size - at)
        const n = this.c.pread(fd, buffer, want, range.offset + at)
        if (n < 0) return this.fail("pread")
        if (n === 0) return endsBefore(range.offset + at)
        h.update(buffer.subarray(0, n))
        at += n
      }
      out.push(h.digest("hex"))
    }
    return out
  }

  /**
   * `Directories.appendFiles`: each file read as `readFiles` reads it,
   * its bytes written to `to` from `at` on and hashed; a file that fails
   * adds no bytes.
   */
  appendFiles(
    to: number,
    at: number,
    dirfd: number,
    names: ReadonlyArray<Uint8Array>,
    maxBytes: number
  ): Array<AppendedFile | Failure> {
    const out: Array<AppendedFile | Failure> = []
    let position = at
    for (const r of this.readFiles(dirfd, names, maxBytes)) {
      if ("_tag" in r) {
        out.push(r)
        continue
      }
      const written = this.pwrite(to, r.bytes, position)
      if (written !== undefined) {
        out.push(written)
        continue
      }
      out.push({
        stat: r.stat,
        offset: position,
        size: r.bytes.length,
        sha256: createHash("sha256").update(r.bytes).digest("hex")
      })
      position += r.bytes.length
    }
    return out
  }

  /**
   * `Directories.copyFiles`: each file created exclusively in its directory
   * (as `openFile` creates), its bytes copied from `from`, its owner set
   * where the one fstat says it differs, then its mode and times, closed;
   * stops at the first that fails.
   */
  copyFiles(from: number, files: ReadonlyArray<CopyItem>): { readonly done: number; readonly failure?: Failure } {
    const c = this.c
    const buffer = this.copyBuffer
    for (const [i, item] of files.entries()) {
      const fd = this.openFile(item.dir, item.name, "create", item.permissions)
      if (typeof fd !== "number") return { done: i, failure: fd }
      const failure = this.fill(fd, from, item, buffer)
      c.close(fd)
      if (failure !== undefined) return { done: i, failure }
    }
    return { done: files.length }
  }

  /** Copies `item`'s bytes from `from` into the open `fd`, then its owner, mode and times. */
  private fill(fd: number, from: number, item: CopyItem, buffer: Uint8Array): Failure | undefined {
    const c = this.c
    for (let at = 0; at < item.size; ) {
      const want = Math.min(buffer.length, item.size - at)
      const n = c.pread(from, buffer, want, item.offset + at)
      if (n < 0) return this.fail("pread")
      if (n === 0) {
        return {
          _tag: "Failure",
          reason: "Other",
          errno: "EIO",
          detail: `the source ends at ${item.offset + at}, before the file's ${item.size} bytes`,
          call: "pread"
        }
      }
      const written = this.pwrite(fd, buffer.subarray(0, n), at)
      if (written !== undefined) return written
      at += n
    }
    if (!this.statx(fd, undefined, false)) return this.fail("statx")
    const uid = this.statView.getUint32(20, true)
    const gid = this.statView.getUint32(24, true)
    if (uid !== item.uid || gid !== item.gid) {
      const e = this.check(c.fchownat(fd, new Uint8Array(1), item.uid, item.gid, this.k.AT_EMPTY_PATH), "fchown")
      if (e !== undefined) return e
    }
    // After chown, which clears setuid and setgid.
    const m = this.check(c.fchmod(fd, item.mode), "fchmod")
    if (m !== undefined) return m
    return item.times === null ? undefined : this.futimens(fd, item.times[0], item.times[1])
  }

  pread(fd: number, length: number, position: number): Uint8Array | Failure {
    const buf = new Uint8Array(length)
    const n = this.c.pread(fd, buf, length, position)
    return n < 0 ? this.fail("pread") : buf.subarray(0, n)
  }

  pwrite(fd: number, bytes: Uint8Array, position: number): Failure | undefined {
    let done = 0
    while (done < bytes.length) {
      const n = this.c.pwrite(fd, bytes.subarray(done), bytes.length - done, position + done)
      if (n < 0) return this.fail("pwrite")
      done += n
    }
    return undefined
  }

  futimens(fd: number, atimeNs: bigint, mtimeNs: bigint): Failure | undefined {
    const times = new DataView(new ArrayBuffer(32))
    times.setBigInt64(0, atimeNs / 1_000_000_000n, true)
    times.setBigInt64(8, atimeNs % 1_000_000_000n, true)
    times.setBigInt64(16, mtimeNs / 1_000_000_000n, true)
    times.setBigInt64(24, mtimeNs % 1_000_000_000n, true)
    return this.check(this.c.futimens(fd, new Uint8Array(times.buffer)), "futimens")
  }

  /** True when the exclusive lock was taken, false when another open file holds it. */
  tryLock(fd: number): boolean | Failure {
    if (this.c.flock(fd, this.k.LOCK_EX | this.k.LOCK_NB) === 0) return true
    const e = this.fail("flock")
    return e.errno === "EWOULDBLOCK" || e.errno === "EAGAIN" ? false : e
  }

  /** Releases this descriptor's lock (`flock(LOCK_UN)`). */
  unlock(fd: number): Failure | undefined {
    return this.check(this.c.flock(fd, this.k.LOCK_UN), "flock")
  }

  /** The offset of the first hole at or after `offset` (`lseek(SEEK_HOLE)`). */
  holeAt(fd: number, offset: number): number | Failure {
    const n = this.c.lseek(fd, offset, this.k.SEEK_HOLE)
    if (n >= 0) return Number(n)
    const e = this.fail("lseek")
    // ENXIO: the offset is at or past the end, where there is nothing, hole or data.
    return e.errno === "ENXIO" ? offset : e
  }

  /** A procfs file's text, read through libc; undefined when it cannot be opened. */
  readProcText(path: string): string | undefined {
    const bytes = this.readFile(FileName.encode(path))
    return bytes === undefined || "_tag" in bytes
      ? undefined
      : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString("latin1")
  }

  /** A whole file's bytes by path (procfs tables), or its failure. */
  readFile(path: Uint8Array): Uint8Array | Failure | undefined {
    const { c, k } = this
    const fd = c.openat(k.AT_FDCWD, cString(path), k.O_RDONLY | k.O_CLOEXEC, 0)
    if (fd < 0) return this.fail("open")
    const chunks: Array<Uint8Array> = []
    let total = 0
    for (let at = 0; ; ) {
      const buf = new Uint8Array(64 * 1024)
      const n = c.pread(fd, buf, buf.length, at)
      if (n < 0) {
        const e = this.fail("pread")
        c.close(fd)
        return e
      }
      if (n === 0) break
      chunks.push(buf.subarray(0, n))
      at += n
      total += n
    }
    c.close(fd)
    const out = new Uint8Array(total)
    let o = 0
    for (const ch of chunks) {
      out.set(ch, o)
      o += ch.length
    }
    return out
  }

  /**
   * Who holds a lock on the node `fd` is open on, from `/proc/locks` (`1:
   * FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF`: the device's major and
   * minor in hex, the inode in decimal): the first holder that is not
   * waiting (`->`); undefined when procfs does not say.
   */
  lockHolder(fd: number): number | undefined {
    const st = this.stat(fd, undefined)
    if ("_tag" in st) return undefined
    const text = this.readProcText("/proc/locks")
    if (text === undefined) return undefined
    const [major, minor] = st.device.split(":").map(Number)
    for (const line of text.split("\n")) {
      const m = /^\d+:\s+(\S+)\s+\S+\s+\S+\s+(\d+)\s+([0-9a-f]+):([0-9a-f]+):(\d+)\s/.exec(line)
      if (m === null || line.includes("->")) continue
      if (
        Number.parseInt(m[3] as string, 16) === major &&
        Number.parseInt(m[4] as string, 16) === minor &&
        BigInt(m[5] as string) === st.inode
      ) {
        return Number(m[2])
      }
    }
    return undefined
  }
}
