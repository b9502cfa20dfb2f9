/**
 * A container's init, pinned once: a pidfd on the process, then its
 * `/proc/<pid>` directory, its root directory and its mount, network and pid
 * namespaces opened as descriptors, then the pidfd asked whether that very
 * process is still alive. Only then are the descriptors known to be its (a
 * pid the kernel has not freed cannot have been given to another); every
 * later use goes through them, never `/proc/<pid>/...` by path, and what
 * stays open after it exits is refused by {@link Pinned.gone}, asked before
 * each use.
 *
 * Internal: `NodeContainer` turns the failures into its `ContainerError`.
 */
import { closeSync, fstatSync, openSync, readFileSync, statSync } from "node:fs"
import { HostPath } from "@hostnode/core"
import * as Layers from "@hostnode/core/Layers"
import { Effect, type Scope } from "effect"
import { constants, LibcUnavailable, load } from "../libc.ts"

// The descriptors are named for other processes of ours (the helper, `nsenter`)
// as `/proc/<this pid>/fd/<n>`: a name that means the same open file for as
// long as this process lives. Lookups below the pinned `/proc/<pid>` directory
// (`mountinfo`) fail once that process is gone, whatever now has its pid.

const O_RDONLY = 0
const O_DIRECTORY = 0o200000
const O_PATH = 0o10000000

/** A pinned process (see the module comment). */
export interface Pinned {
  /** The host pid it had when pinned: for messages only, never looked up again. */
  readonly pid: number
  /** The slot whose resolver named it, where one did. */
  readonly slot: string | undefined
  /** Its root directory, as any process of ours can open it. */
  readonly rootPath: string
  /** Its mount table (relative to its root), readable while it lives. */
  readonly mountInfo: string
  /** The descriptors themselves, for a helper or `nsenter` to inherit or name. */
  readonly fds: {
    readonly root: number
    readonly mnt: number
    readonly net: number
    readonly pid: number
  }
  /** `/proc/<this pid>/fd/<fd>`: a descriptor of ours as a path another process of ours can open. */
  readonly path: (fd: number) => string
  /** What names its root across restarts, for snapshots (see `identityOf`). */
  readonly identity: string
  /** Whether it is in this process's own mount namespace (then it acts on this host). */
  readonly ownNamespace: boolean
  /** Why it is gone, or `undefined` while it lives: one `poll` of the pidfd, no file system asked. */
  readonly gone: () => HostPath.Gone | undefined
  /** Who it is, for messages: `container process 4242 (slot "a")`. */
  readonly name: string
}

/** Why a pid could not be pinned. */
export interface PinFailure {
  readonly _tag: "NotFound" | "Unreachable"
  readonly detail: string
}

const fail = (tag: PinFailure["_tag"], detail: string): Effect.Effect<never, PinFailure> =>
  Effect.fail({ _tag: tag, detail })

/** The message of a thrown system error, without Node's prefix. */
const why = (e: unknown): string =>
  e instanceof Error ? ("code" in e && typeof e.code === "string" ? `${e.code}` : e.message) : String(e)

/**
 * Pins host process `pid` for the scope (see the module comment). Fails with
 * `NotFound` when there is no such process or only its zombie, and with
 * `Unreachable` when it exists but cannot be opened (not root, no pidfds).
 */
export const pin = (pid: number, slot?: string): Effect.Effect<Pinned, PinFailure, Scope.Scope> =>
  Effect.gen(function* () {
    const libc = load()
    if (libc instanceof LibcUnavailable || constants === undefined) {
      return yield* fail(
        "Unreachable",
        `a process cannot be pinned here: ${libc instanceof LibcUnavailable ? libc.message : "no system call table"}`
      )
    }
    const k = constants
    const opened: Array<number> = []
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        for (const fd of opened.splice(0)) closeSync(fd)
      })
    )
    const pidfd = libc.syscall3(k.SYS_pidfd_open, pid, 0, 0)
    if (pidfd < 0) {
      const errno = libc.errno()
      return yield* errno === 3 // ESRCH
        ? fail("NotFound", "no such process (the container is gone)")
        : fail("Unreachable", `pidfd_open: errno ${errno}`)
    }
    opened.push(pidfd)
    const poll = new Uint8Array(8)
    const view = new DataView(poll.buffer)
    const exited = (): boolean => {
      view.setInt32(0, pidfd, true)
      view.setInt16(4, k.POLLIN, true)
      view.setInt16(6, 0, true)
      // Readable once the process has exited (a zombie included): no wait, timeout 0.
      return libc.poll(poll, 1, 0) > 0
    }
    const self = process.pid
    const path = (fd: number) => `/proc/${self}/fd/${fd}`
    // `what` names the file for messages as a person knows it: `/proc/<pid>/ns/mnt`.
    const open = (name: string, flags: number, what: string): Effect.Effect<number, PinFailure> =>
      Effect.matchEffect(Effect.try({ try: () => openSync(name, flags), catch: why }), {
        onSuccess: (fd) =>
          Effect.sync(() => {
            opened.push(fd)
            return fd
          }),
        onFailure: (e) =>
          exited() || e === "ENOENT" || e === "ESRCH"
            ? fail("NotFound", "no such process, or only its zombie (the container is gone)")
            : fail("Unreachable", `${what} cannot be opened: ${e} (run as root)`)
      })
    const procDir = yield* open(`/proc/${pid}`, O_PATH | O_DIRECTORY, `/proc/${pid}`)
    // Below the pinned directory from here on: a lookup there is the pinned process's or fails.
    const below = (name: string) => `${path(procDir)}/${name}`
    const mnt = yield* open(below("ns/mnt"), O_RDONLY, `/proc/${pid}/ns/mnt`)
    const net = yield* open(below("ns/net"), O_RDONLY, `/proc/${pid}/ns/net`)
    const pidNs = yield* open(below("ns/pid"), O_RDONLY, `/proc/${pid}/ns/pid`)
    const root = yield* open(below("root"), O_PATH | O_DIRECTORY, `/proc/${pid}/root`)
    // Only now: alive means the pid was not freed since the pidfd, so every descriptor is that process's.
    if (exited()) return yield* fail("NotFound", "the process exited while it was being opened (the container is gone)")
    const ownNamespace = yield* Effect.try({
      try: () => {
        const theirs = fstatSync(mnt)
        const ours = statSync("/proc/self/ns/mnt")
        return theirs.ino === ours.ino && theirs.dev === ours.dev
      },
      catch: (e) => ({ _tag: "Unreachable", detail: `its mount namespace: ${why(e)}` }) as PinFailure
    })
    const name = `container process ${pid}${slot === undefined ? "" : ` (slot ${JSON.stringify(slot)})`}`
    const mountInfo = below("mountinfo")
    const identity = slot !== undefined ? `container slot ${slot}` : yield* identityOf(root, mountInfo, pid)
    return {
      pid,
      slot,
      rootPath: path(root),
      mountInfo,
      fds: { root, mnt, net, pid: pidNs },
      path,
      identity,
      ownNamespace,
      name,
      gone: () =>
        exited()
          ? new HostPath.Gone({
              pid,
              ...(slot === undefined ? {} : { slot }),
              detail: `${name} has exited: nothing is done in what is left of it, or in whatever has its pid now`
            })
          : undefined
    } satisfies Pinned
  })

/**
 * What names a container's root across its restarts, for a snapshot to
 * record: where its root file system comes from, read from its own mount
 * table (the entry of the mount its root directory is on). An overlay (an
 * image's root: containerd, Docker, CRI-O) is named by its upper directory,
 * which a restarted container keeps and no other container shares; any
 * other file system by its device and the directory of it that is the root
 * (a bind of a host directory). Never by pid, which changes with a restart
 * and may be reused by another process.
 */
const identityOf = (rootFd: number, mountInfo: string, pid: number): Effect.Effect<string, PinFailure> =>
  Effect.gen(function* () {
    const read = (name: string) =>
      Effect.try({
        try: () => readFileSync(name, "utf8"),
        catch: (e) => ({ _tag: "NotFound", detail: `its mount table: ${why(e)} (the container is gone)` }) as PinFailure
      })
    const info = yield* read(`/proc/self/fdinfo/${rootFd}`)
    const mountId = Number(/^mnt_id:\s*(\d+)$/m.exec(info)?.[1] ?? Number.NaN)
    const table = yield* Layers.parseMountInfo(yield* read(mountInfo), `/proc/${pid}/mountinfo`).pipe(
      Effect.mapError((e): PinFailure => ({ _tag: "Unreachable", detail: e.message }))
    )
    const entry = table.find((e) => e.id === mountId)
    if (entry === undefined) {
      // The root is on no mount of its table (a chroot below a mount): its device and inode name it.
      const s = fstatSync(rootFd)
      return `container root device ${s.dev} inode ${s.ino}`
    }
    if (entry.fsType === "overlay") {
      const upper = entry.superOptions.split(",").find((o) => o.startsWith("upperdir="))
      if (upper !== undefined) return `container root overlay ${upper}`
    }
    return `container root ${entry.fsType} ${entry.major}:${entry.minor} ${entry.root}`
  })
