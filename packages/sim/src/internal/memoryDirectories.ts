/**
 * `Directory.Directories` on the simulated host: a handle is a directory inode
 * and the mount it was reached in, so handle operations and the `FileSystem`
 * act on the same inodes with the same rules (`O_NOFOLLOW` meets a link as
 * `ELOOP`, a mount point is entered into its mount and cannot be removed,
 * names are bytes). Every call is one operation of the simulated process
 * (journal kind `Directory.<syscall>`: logged, faulted, stopped by a crash, and
 * preceded by the adversary seam). Resolution is core's walk; no `openat2`.
 *
 * @since 0.2.0
 */
import { Directory, FileName } from "@hostnode/core"
import * as Layers from "@hostnode/core/Layers"
import * as Programs from "@hostnode/core/Programs"
import { Clock, Deferred, Duration, Effect, type Scope } from "effect"
import { type ErrnoCode, errnoTable } from "./errno.ts"
import type { HostState } from "./hostState.ts"
import { admit, complete } from "./journal.ts"
import * as MemoryFileSystem from "./memoryFileSystem.ts"

const I = MemoryFileSystem.internals

/**
 * A handle of the simulated host: where its node was reached, and which process opened it.
 *
 * @since 0.2.0
 */
export interface MemoryHandle extends Directory.Handle {
  readonly frame: MemoryFileSystem.Frame
  /** The node held, when it is not the frame's directory (`openPath` of a file or link). */
  readonly node: MemoryFileSystem.Inode | undefined
  /** The mount `node` was reached in (a file bind-mounted on a file: that mount), when `node` is set. */
  readonly mount?: MemoryFileSystem.Mount | undefined
  readonly generation: number
}

/**
 * The mount a handle of the simulated host holds the root of, or is in: a
 * directory's frame's mount, or, for a held file, the mount it was reached in.
 *
 * @since 0.4.0
 */
export const mountOf = (h: MemoryHandle): MemoryFileSystem.Mount => h.mount ?? h.frame.mount

/**
 * The frame and node of a handle of the simulated host, or `undefined` for another layer's handle.
 *
 * @since 0.2.0
 */
export const frameOf = (h: Directory.Handle): MemoryHandle | undefined =>
  typeof (h as Partial<MemoryHandle>).frame === "object" ? (h as MemoryHandle) : undefined

const childFull = Programs.childPath

class Refused {
  readonly code: ErrnoCode
  constructor(code: ErrnoCode) {
    this.code = code
  }
}

const no = (code: ErrnoCode) => new Refused(code)

/** `stat` of a node reached in `mount`. */
const statOf = (node: MemoryFileSystem.Inode, mount: MemoryFileSystem.Mount): Directory.Stat => {
  const info = MemoryFileSystem.info(node)
  const { major, minor } = MemoryFileSystem.devNumbers(node.fs.dev)
  return {
    type: node.type,
    mode: node.mode & 0o7777,
    uid: node.uid,
    gid: node.gid,
    size: Number(info.size),
    nlink: node.nlink,
    device: `${major}:${minor}`,
    inode: node.ino,
    mountId: mount.id,
    atimeNs: BigInt(node.atime) * 1_000_000n,
    mtimeNs: BigInt(node.mtime) * 1_000_000n
  }
}

const lockTables = new WeakMap<MemoryFileSystem.FsState, Map<MemoryFileSystem.Inode, MemoryFileSystem.OpenFile>>()

const directoryLockTables = new WeakMap<
  MemoryFileSystem.FsState,
  Map<MemoryFileSystem.Inode, { readonly generation: number; released: boolean }>
>()

/** The directories locked on a simulated host (`Directories.lock`), shared by every service made over it. */
const directoryLocksOf = (fs: MemoryFileSystem.FsState) => {
  let table = directoryLockTables.get(fs)
  if (table === undefined) {
    table = new Map()
    directoryLockTables.set(fs, table)
  }
  return table
}

/** The `flock` holders of a simulated host, shared by every service made over it. */
const locksOf = (fs: MemoryFileSystem.FsState) => {
  let table = lockTables.get(fs)
  if (table === undefined) {
    table = new Map()
    lockTables.set(fs, table)
  }
  return table
}

/**
 * The service over `state` (see the module comment).
 *
 * @since 0.2.0
 */
export const make = (state: HostState): Directory.Directories => {
  const st = state.fs

  /**
   * Waits while a file system the call asks does not answer (`MemoryHost.hang`):
   * until it is released, or until the call's deadline, then `Hung`.
   */
  const stall = (
    kind: string,
    path: string,
    asks: ReadonlyArray<MemoryFileSystem.Filesystem>
  ): Effect.Effect<void, Directory.DirectoryError> =>
    Effect.gen(function* () {
      for (;;) {
        const waiting = asks.map((fs) => state.hangs.get(fs)).find((d) => d !== undefined)
        if (waiting === undefined) return
        const budget = yield* Layers.forCall
        const released =
          budget.millis <= 0
            ? false
            : yield* Effect.raceFirst(
                Effect.as(Deferred.await(waiting), true),
                Effect.as(Effect.sleep(Duration.millis(budget.millis)), false)
              )
        if (!released) {
          return yield* new Directory.DirectoryError({
            reason: new Directory.Hung({
              call: kind,
              seconds: Math.max(0, budget.millis) / 1000,
              detail: `${budget.byDeadline ? "the operation's deadline passed" : "no answer"}: the file system does not answer`
            }),
            operation: kind,
            path
          })
        }
      }
    })

  /** The file system of a handle's own node. */
  const fsOf = (m: MemoryHandle): MemoryFileSystem.Filesystem => (m.node ?? m.frame.dir).fs

  /** The file system of the entry `name` of `m` (the mounted one for a mount point), if there is one. */
  const entryFs = (m: MemoryHandle, name: Uint8Array): MemoryFileSystem.Filesystem | undefined => {
    if (m.node !== undefined) return undefined
    const k = FileName.decode(name)
    const node = dirOf(m).entries.get(k)
    if (node === undefined) return undefined
    return node.type === "Directory" ? I.enterFrame(m.frame, k, node).dir.fs : node.fs
  }

  /**
   * What a call on `m` (and its entry `name`) asks of file systems: a lookup
   * in the directory asks the directory's; an open or a fresh stat of the
   * entry asks the entry's own.
   */
  const asked = (
    m: MemoryHandle,
    name: Uint8Array | undefined,
    what: { readonly lookup: boolean; readonly target: boolean }
  ): Array<MemoryFileSystem.Filesystem> => {
    if (state.hangs.size === 0) return []
    const out: Array<MemoryFileSystem.Filesystem> = []
    if (what.lookup && name !== undefined) out.push(fsOf(m))
    if (what.target) {
      const fs = name === undefined ? fsOf(m) : entryFs(m, name)
      if (fs !== undefined) out.push(fs)
    }
    return out
  }

  /** Runs one simulated call through the journal; a `Refused` becomes a `DirectoryError` with its errno. */
  const operate = <A>(
    kind: string,
    path: string,
    body: (now: number) => A | Refused,
    asks: () => ReadonlyArray<MemoryFileSystem.Filesystem> = () => []
  ): Effect.Effect<A, Directory.DirectoryError> =>
    Effect.andThen(
      Effect.suspend(() => stall(kind, path, asks())),
      Clock.currentTimeMillis
    ).pipe(
      Effect.flatMap((now) =>
        Effect.suspend(() => {
          const fail = (code: string, injected: boolean) => {
            complete(state.journal, `Directory.${kind}`, [path], code, injected)
            const known = (errnoTable as Record<string, readonly [number, string] | undefined>)[code]
            return Effect.fail(
              new Directory.DirectoryError({
                reason: Directory.SystemError.fromErrno(code, known?.[1] ?? code),
                operation: kind,
                path
              })
            )
          }
          const gate = admit(state.journal, `Directory.${kind}`, [path])
          if (gate._tag === "Crashed") return Effect.die(gate.defect)
          if (gate._tag === "Inject") return fail(gate.fault.code, true)
          const r = body(now)
          if (r instanceof Refused) return fail(r.code, false)
          complete(state.journal, `Directory.${kind}`, [path], "ok")
          return Effect.succeed(r)
        })
      )
    )

  const live = (h: Directory.Handle): MemoryHandle => {
    const m = frameOf(h)
    if (m === undefined) throw new Error("MemoryDirectories: not a handle of the simulated host")
    return m
  }

  const checkGeneration = (h: MemoryHandle) =>
    h.generation === state.journal.generation
      ? Effect.void
      : Effect.die(new Error(`MemoryDirectories: ${h.path} is a handle of a crashed process`))

  const use = <A, R>(
    h: Directory.Handle,
    body: (m: MemoryHandle) => Effect.Effect<A, Directory.DirectoryError, R>
  ): Effect.Effect<A, Directory.DirectoryError, R> =>
    Effect.suspend(() => {
      const m = live(h)
      return Effect.andThen(checkGeneration(m), body(m))
    })

  const key = (name: Uint8Array): string | Refused => {
    const problem = Programs.nameProblem(name)
    return problem === undefined ? FileName.decode(name) : no(problem)
  }

  const makeHandle = (
    path: string,
    frame: MemoryFileSystem.Frame,
    node: MemoryFileSystem.Inode | undefined,
    mount?: MemoryFileSystem.Mount
  ): MemoryHandle => Programs.handle({ path, frame, node, mount, generation: state.journal.generation })

  const dirOf = (m: MemoryHandle) => m.frame.dir

  // flock: one holder per inode, an open file; closed, or of a crashed process, it holds nothing.
  const locks = locksOf(st)
  const isLive = (f: MemoryFileSystem.OpenFile) => !f.closed && f.generation === state.journal.generation

  const openRoot: Directory.Primitives["openRoot"] = (path) =>
    operate(
      "open",
      path,
      () => {
        const f = I.walkFinal(st, path, I.rootFrame(st), { links: 0 }, true, true)
        if (I.isFail(f)) return no(f.code)
        const frame = I.finalFrame(f)
        return I.isFail(frame) ? no(frame.code) : makeHandle(path, frame, undefined)
      },
      () => {
        if (state.hangs.size === 0) return []
        const found = I.lookup(st, path, true)
        return "node" in found ? [found.parent.dir.fs, found.node.fs] : []
      }
    )

  const openDirectory: Directory.Primitives["openDirectory"] = (dir, name, options) =>
    use(dir, (m) =>
      operate(
        "openat",
        childFull(dir.path, name),
        () => {
          if (m.node !== undefined) return no("ENOTDIR")
          const k = key(name)
          if (k instanceof Refused) return k
          const node = dirOf(m).entries.get(k)
          if (node === undefined) return no("ENOENT")
          // O_DIRECTORY | O_NOFOLLOW on a link is ENOTDIR, as the kernel says it (not ELOOP).
          if (node.type !== "Directory") return no("ENOTDIR")
          const frame = I.enterFrame(m.frame, k, node)
          return makeHandle(childFull(dir.path, name), frame, undefined)
        },
        // Another mount's root is refused before its file system is asked (the real layer holds it
        // `O_PATH` and compares mount ids first): only then is the child opened.
        () => {
          if (options?.sameMount !== true) return asked(m, name, { lookup: true, target: true })
          const k = FileName.decode(name)
          const node = m.node === undefined ? dirOf(m).entries.get(k) : undefined
          const other = node?.type === "Directory" && I.enterFrame(m.frame, k, node).mount !== m.frame.mount
          return asked(m, name, { lookup: true, target: !other })
        }
      ).pipe(
        Effect.flatMap((h) =>
          options?.sameMount === true && h.frame.mount !== m.frame.mount
            ? Effect.fail(
                new Directory.DirectoryError({
                  reason: new Directory.SystemError({
                    _tag: "OtherMount",
                    detail: `the root of mount ${h.frame.mount.id}, not of mount ${m.frame.mount.id} it is in`
                  }),
                  operation: "openat",
                  path: h.path
                })
              )
            : Effect.succeed(h)
        )
      )
    )

  /** The frame `..` of `frame` names now: the frame it was reached from, unless the directory moved since. */
  const parentFrame = (frame: MemoryFileSystem.Frame): MemoryFileSystem.Frame => {
    const up = frame.up
    if (up === undefined) return frame
    const at = up.dir.entries.get(frame.name)
    // A mount's root is reached from the directory its mount point is in; otherwise the name must still lead here.
    if (frame.mount.root === frame.dir || at === frame.dir) return up
    // Moved: find where it is now, as the kernel's d_parent knows it.
    const search = (f: MemoryFileSystem.Frame, depth: number): MemoryFileSystem.Frame | undefined => {
      if (depth > 256) return undefined
      for (const [name, node] of f.dir.entries) {
        if (node.type !== "Directory") continue
        const next = I.enterFrame(f, name, node)
        if (next.dir === frame.dir && next.mount === frame.mount) return f
        const found = search(next, depth + 1)
        if (found !== undefined) return found
      }
      return undefined
    }
    return search(I.rootFrame(st), 0) ?? frame
  }

  const openParent: Directory.Primitives["openParent"] = (dir) =>
    use(dir, (m) =>
      operate(
        "openat",
        `${dir.path}/..`,
        () => {
          if (m.node !== undefined) return no("ENOTDIR")
          const path = dir.path === "/" ? "/" : dir.path.slice(0, Math.max(1, dir.path.lastIndexOf("/")))
          return makeHandle(path, parentFrame(m.frame), undefined)
        },
        () => (state.hangs.size === 0 || m.node !== undefined ? [] : [parentFrame(m.frame).dir.fs])
      )
    )

  /** The simulated process's pid: a new one after each crash, as a restarted agent gets. */
  const pid = () => 4000 + state.journal.generation

  const credentials: Directory.Primitives["credentials"] = Effect.sync(() => ({ uid: 0, gid: 0, pid: pid() }))

  const openPath: Directory.Primitives["openPath"] = (dir, name) =>
    use(dir, (m) =>
      operate(
        "openat",
        childFull(dir.path, name),
        () => {
          if (m.node !== undefined) return no("ENOTDIR")
          const k = key(name)
          if (k instanceof Refused) return k
          const node = dirOf(m).entries.get(k)
          if (node === undefined) return no("ENOENT")
          if (node.type === "Directory")
            return makeHandle(childFull(dir.path, name), I.enterFrame(m.frame, k, node), undefined)
          // A file bind-mounted on a file: O_PATH holds the mount's root, as it does a directory's.
          const crossed = I.crossFile(m.frame.mount, node)
          return makeHandle(childFull(dir.path, name), m.frame, crossed.node, crossed.mount)
        },
        // O_PATH: the lookup asks the directory's file system, nothing asks the node's.
        () => asked(m, name, { lookup: true, target: false })
      )
    )

  const list: Directory.Primitives["list"] = (dir) =>
    use(dir, (m) =>
      operate(
        "getdents64",
        dir.path,
        (now) => {
          if (m.node !== undefined) return no("ENOTDIR")
          I.touchRead(dirOf(m), now)
          return [...dirOf(m).entries.entries()].map(
            ([k, node]): Programs.Entry => ({ name: FileName.encode(k), type: node.type })
          )
        },
        () => asked(m, undefined, { lookup: false, target: true })
      )
    )

  /** The stat of `name` in `m`, or of `m`. */
  const statIn = (m: MemoryHandle, name: Uint8Array | undefined): Directory.Stat | Refused => {
    if (name === undefined) return statOf(m.node ?? m.frame.dir, mountOf(m))
    if (m.node !== undefined) return no("ENOTDIR")
    const k = key(name)
    if (k instanceof Refused) return k
    const node = dirOf(m).entries.get(k)
    if (node === undefined) return no("ENOENT")
    if (node.type === "Directory") {
      const frame = I.enterFrame(m.frame, k, node)
      return statOf(frame.dir, frame.mount)
    }
    const crossed = I.crossFile(m.frame.mount, node)
    return statOf(crossed.node, crossed.mount)
  }

  const stat: Directory.Primitives["stat"] = (dir, name) =>
    use(dir, (m) =>
      operate(
        "statx",
        name === undefined ? dir.path : childFull(dir.path, name),
        () => statIn(m, name),
        () => asked(m, name, { lookup: true, target: true })
      )
    )

  // statx(AT_STATX_DONT_SYNC): cached attributes and the mount id; the node's file system is not asked.
  const identify: NonNullable<Directory.Primitives["identify"]> = (dir, name) =>
    use(dir, (m) =>
      operate(
        "statx",
        name === undefined ? dir.path : childFull(dir.path, name),
        () => {
          const st = statIn(m, name)
          return st instanceof Refused ? st : { type: st.type, device: st.device, inode: st.inode, mountId: st.mountId }
        },
        () => asked(m, name, { lookup: true, target: false })
      )
    )

  /** The entry `name` of a directory handle, or why not. */
  const entry = (m: MemoryHandle, name: Uint8Array) => {
    if (m.node !== undefined) return no("ENOTDIR")
    const k = key(name)
    if (k instanceof Refused) return k
    return { k, node: dirOf(m).entries.get(k) }
  }

  const readLink: Directory.Primitives["readLink"] = (dir, name) =>
    use(dir, (m) =>
      operate(
        "readlinkat",
        childFull(dir.path, name),
        () => {
          const e = entry(m, name)
          if (e instanceof Refused) return e
          if (e.node === undefined) return no("ENOENT")
          return e.node.type === "SymbolicLink" ? FileName.encode(e.node.target) : no("EINVAL")
        },
        () => asked(m, name, { lookup: true, target: false })
      )
    )

  const unlink: Directory.Primitives["unlink"] = (dir, name, options) =>
    use(dir, (m) =>
      operate(
        options?.directory === true ? "rmdir" : "unlinkat",
        childFull(dir.path, name),
        (now) => {
          const e = entry(m, name)
          if (e instanceof Refused) return e
          const node = e.node
          if (node === undefined) return no("ENOENT")
          if (options?.directory === true) {
            if (node.type !== "Directory") return no("ENOTDIR")
            if (I.isMountpoint(m.frame, node)) return no("EBUSY")
            if (node.entries.size > 0) return no("ENOTEMPTY")
          } else if (node.type === "Directory") {
            return no("EISDIR")
          } else if (I.isMountpoint(m.frame, node)) {
            // A file something is bind-mounted on.
            return no("EBUSY")
          }
          I.removeEntry(dirOf(m), e.k, now)
          I.unlinkInode(node, now)
          return undefined
        },
        () => asked(m, name, { lookup: true, target: false })
      )
    )

  const makeDirectory: Directory.Primitives["makeDirectory"] = (dir, name, permissions) =>
    use(dir, (m) =>
      operate(
        "mkdirat",
        childFull(dir.path, name),
        (now) => {
          const e = entry(m, name)
          if (e instanceof Refused) return e
          if (e.node !== undefined) return no("EEXIST")
          I.createDirectory(st, m.frame, e.k, permissions, now)
          return undefined
        },
        () => asked(m, name, { lookup: true, target: false })
      )
    )

  const symlink: Directory.Primitives["symlink"] = (dir, name, target) =>
    use(dir, (m) =>
      operate(
        "symlinkat",
        childFull(dir.path, name),
        (now) => {
          const e = entry(m, name)
          if (e instanceof Refused) return e
          if (target.length === 0) return no("ENOENT")
          // The kernel gets the target as a C string: a NUL in it is refused before the call (as the real layer does).
          if (target.includes(0)) return no("EINVAL")
          if (e.node !== undefined) return no("EEXIST")
          I.createSymlink(m.frame, e.k, FileName.decode(target), now)
          return undefined
        },
        () => asked(m, name, { lookup: true, target: false })
      )
    )

  const rename: Directory.Primitives["rename"] = (from, fromName, to, toName, options) =>
    use(from, (a) =>
      use(to, (b) =>
        operate(
          "renameat2",
          childFull(from.path, fromName),
          (now) => {
            const src = entry(a, fromName)
            if (src instanceof Refused) return src
            const dst = entry(b, toName)
            if (dst instanceof Refused) return dst
            if (a.frame.mount !== b.frame.mount) return no("EXDEV")
            const old = src.node
            if (old === undefined) return no("ENOENT")
            if (old.type === "Directory" && I.chainHas(b.frame, old)) return no("EINVAL")
            const target = dst.node
            if (target !== undefined && options?.noReplace === true) return no("EEXIST")
            if (target?.type === "Directory" && I.chainHas(a.frame, target)) return no("ENOTEMPTY")
            if (old === target) return undefined
            if (I.isMountpoint(a.frame, old)) return no("EBUSY")
            if (target !== undefined) {
              if (old.type === "Directory" && target.type !== "Directory") return no("ENOTDIR")
              if (old.type !== "Directory" && target.type === "Directory") return no("EISDIR")
              if (I.isMountpoint(b.frame, target)) return no("EBUSY")
              if (target.type === "Directory" && target.entries.size > 0) return no("ENOTEMPTY")
              I.removeEntry(dirOf(b), dst.k, now)
              I.unlinkInode(target, now)
            }
            I.removeEntry(dirOf(a), src.k, now)
            I.addEntry(dirOf(b), dst.k, old, now)
            old.ctime = now
            return undefined
          },
          () => [
            ...asked(a, fromName, { lookup: true, target: false }),
            ...asked(b, toName, { lookup: true, target: false })
          ]
        )
      )
    )

  const setOwner = (node: MemoryFileSystem.Inode, uid: number, gid: number, now: number) => {
    node.uid = uid
    node.gid = gid
    // chown(2) clears setuid, and setgid when group-executable, on regular files, even for root.
    if (node.type === "File") {
      node.mode &= ~I.S_ISUID
      if ((node.mode & I.S_IXGRP) !== 0) node.mode &= ~I.S_ISGID
    }
    node.ctime = now
  }

  const chown: Directory.Primitives["chown"] = (dir, name, uid, gid) =>
    use(dir, (m) =>
      operate(
        "fchownat",
        name === undefined ? dir.path : childFull(dir.path, name),
        (now) => {
          if (name === undefined) {
            setOwner(m.node ?? m.frame.dir, uid, gid, now)
            return undefined
          }
          const e = entry(m, name)
          if (e instanceof Refused) return e
          if (e.node === undefined) return no("ENOENT")
          const node = e.node.type === "Directory" ? I.enterFrame(m.frame, e.k, e.node).dir : e.node
          setOwner(node, uid, gid, now)
          return undefined
        },
        () => asked(m, name, { lookup: true, target: true })
      )
    )

  const chmod: Directory.Primitives["chmod"] = (dir, mode) =>
    use(dir, (m) =>
      operate(
        "fchmod",
        dir.path,
        (now) => {
          const node = m.node ?? m.frame.dir
          if (node.type === "SymbolicLink") return no("EBADF")
          node.mode = mode & 0o7777
          node.ctime = now
          return undefined
        },
        () => asked(m, undefined, { lookup: false, target: true })
      )
    )

  const fileOf = (
    node: MemoryFileSystem.FileNode,
    path: string,
    opened: MemoryFileSystem.OpenFile,
    mount: MemoryFileSystem.Mount
  ) => {
    const alive = <A>(kind: string, body: (now: number) => A | Refused) =>
      Effect.andThen(
        Effect.suspend(() =>
          opened.generation === state.journal.generation
            ? Effect.void
            : Effect.die(new Error(`MemoryDirectories: ${path} is a file of a crashed process`))
        ),
        operate(kind, path, body, () => (state.hangs.size === 0 ? [] : [node.fs]))
      )
    const file: Programs.File = {
      path,
      stat: alive("fstat", () => statOf(node, mount)),
      read: (buffer, position) =>
        alive("pread", (now) => {
          const bytes = I.fileBytes(node)
          if (position >= bytes.length) return 0
          const n = Math.min(buffer.length, bytes.length - position)
          buffer.set(bytes.subarray(position, position + n))
          I.touchRead(node, now)
          return n
        }),
      write: (bytes, position) =>
        alive("pwrite", (now) => {
          if (!opened.writable) return no("EBADF")
          I.writeAt(node, bytes, position, now)
          return undefined
        }),
      truncate: (size) =>
        alive("ftruncate", (now) => {
          if (!opened.writable) return no("EINVAL")
          I.setSize(node, size)
          node.mtime = now
          node.ctime = now
          return undefined
        }),
      chmod: (mode) =>
        alive("fchmod", (now) => {
          node.mode = mode & 0o7777
          node.ctime = now
          return undefined
        }),
      chown: (uid, gid) =>
        alive("fchown", (now) => {
          setOwner(node, uid, gid, now)
          return undefined
        }),
      setTimes: (atimeNs, mtimeNs) =>
        alive("futimens", (now) => {
          node.atime = Number(atimeNs / 1_000_000n)
          node.mtime = Number(mtimeNs / 1_000_000n)
          node.ctime = now
          return undefined
        }),
      sync: alive("fsync", () => undefined),
      tryLock: alive("flock", () => {
        const held = locks.get(node)
        if (held !== undefined && held !== opened && isLive(held)) return false
        locks.set(node, opened)
        return true
      }),
      lockHolder: Effect.sync(() => {
        const held = locks.get(node)
        return held !== undefined && isLive(held) ? pid() : undefined
      }),
      // The simulated files are written byte by byte: none has a hole.
      holeAt: (offset) => alive("lseek", () => Math.max(offset, I.fileBytes(node).length))
    }
    return file
  }

  const openFile: Directory.Primitives["openFile"] = (dir, name, options) =>
    use(dir, (m) =>
      Effect.acquireRelease(
        operate(
          "openat",
          childFull(dir.path, name),
          (now) => {
            const e = entry(m, name)
            if (e instanceof Refused) return e
            let node = e.node
            let mount = m.frame.mount
            if (options.mode === "create") {
              if (node !== undefined) return no("EEXIST")
              node = I.createFile(st, m.frame, e.k, options.permissions, now)
            } else {
              if (node === undefined) return no("ENOENT")
              if (node.type === "SymbolicLink") return no("ELOOP")
              if (node.type === "Directory" && options.mode === "write") return no("EISDIR")
              // A file bind-mounted on the file: its root file is what opens.
              const crossed = I.crossFile(mount, node)
              node = crossed.node
              mount = crossed.mount
            }
            const opened: MemoryFileSystem.OpenFile = {
              fd: st.nextFd++,
              node,
              path: childFull(dir.path, name),
              readable: options.mode === "read",
              writable: options.mode !== "read",
              append: false,
              generation: state.journal.generation,
              mount,
              closed: false
            }
            st.openFiles.add(opened)
            return opened
          },
          () => asked(m, name, { lookup: true, target: true })
        ),
        (opened) =>
          Effect.sync(() => {
            opened.closed = true
            st.openFiles.delete(opened)
          })
      ).pipe(
        Effect.flatMap((opened) =>
          opened.node.type === "File"
            ? Effect.succeed(fileOf(opened.node, opened.path, opened, opened.mount ?? m.frame.mount))
            : Effect.fail(
                new Directory.DirectoryError({
                  reason: new Directory.SystemError({
                    _tag: "WrongType",
                    detail: `a ${opened.node.type}, not a regular file`
                  }),
                  operation: "openat",
                  path: opened.path
                })
              )
        )
      )
    )

  const sync: Directory.Primitives["sync"] = (dir) =>
    use(dir, (m) =>
      operate(
        "fsync",
        dir.path,
        () => undefined,
        () => asked(m, undefined, { lookup: false, target: true })
      )
    )

  const syncFileSystem: Directory.Primitives["syncFileSystem"] = (dir) =>
    use(dir, (m) =>
      operate(
        "syncfs",
        dir.path,
        () => undefined,
        () => asked(m, undefined, { lookup: false, target: true })
      )
    )

  // flock on a directory: one holder per inode, released with the caller's scope; a crashed process holds nothing.
  const directoryLocks = directoryLocksOf(st)
  const lock: Directory.Primitives["lock"] = (dir) =>
    use(dir, (m) =>
      Effect.flatMap(
        operate("flock", dir.path, () => {
          const node = m.node ?? m.frame.dir
          const held = directoryLocks.get(node)
          if (held !== undefined && !held.released && held.generation === state.journal.generation) return undefined
          const token = { generation: state.journal.generation, released: false }
          directoryLocks.set(node, token)
          return { node, token }
        }),
        (taken) =>
          taken === undefined
            ? Effect.succeed(false)
            : Effect.as(
                Effect.addFinalizer(() =>
                  Effect.sync(() => {
                    taken.token.released = true
                    if (directoryLocks.get(taken.node) === taken.token) directoryLocks.delete(taken.node)
                  })
                ),
                true
              )
      )
    )
  const lockHolder: Directory.Primitives["lockHolder"] = (dir) =>
    Effect.sync(() => {
      const m = frameOf(dir)
      if (m === undefined) return undefined
      const held = directoryLocks.get(m.node ?? m.frame.dir)
      return held !== undefined && !held.released && held.generation === state.journal.generation ? pid() : undefined
    })

  return Directory.make({
    lock,
    lockHolder,
    openRoot: (path) => openRoot(path) as Effect.Effect<Directory.Handle, Directory.DirectoryError, Scope.Scope>,
    openDirectory,
    openParent,
    credentials,
    openPath,
    list,
    stat,
    readLink,
    unlink,
    makeDirectory,
    symlink,
    rename,
    chown,
    chmod,
    openFile,
    sync,
    syncFileSystem,
    identify
  })
}
