/**
 * The helper process: the one place the real layers make system calls on a
 * host's files. It reads requests from descriptor 3, makes each one's calls
 * synchronously (koffi), and writes the reply; a long program sends progress
 * and checks between calls whether the agent asked it to stop. It may block
 * in the kernel: the agent then abandons it, and it dies with `SIGKILL` when
 * the kernel lets go (or with the agent: `PR_SET_PDEATHSIG`).
 *
 * Started as `node server.js <agent pid> [--mnt-ns=FD]`: with `--mnt-ns` it
 * first enters that mount namespace (`unshare(CLONE_FS)` then `setns`), so its
 * `/`, mount table and unmounts are that namespace's; the agent's procfs,
 * opened before, names its own descriptors.
 *
 * A large `sha256` is hashed on a second thread (`./hashThread.ts`) while
 * this one answers the requests after it; its answer is sent when it is
 * done, so answers may come in another order than their requests.
 *
 * Internal: `./client.ts` starts it. It loads koffi and `@hostnode/core/Programs`, not Effect.
 */
import { readSync, writeSync } from "node:fs"
import { type Failure, FileName, type Limits, reasonTagOf, removeTree } from "@hostnode/core/Programs"
import { constants, cString, LibcUnavailable, load } from "../libc.ts"
import { run, type Ticker } from "./driver.ts"
import { HashThread } from "./hashThread.ts"
import { type Asked, holders } from "./holders.ts"
import { type Outcome, type Outcomes, type Targets, targetAt, unmountOne } from "./mounts.ts"
import { Frames, frameParts, type Reply, type Request } from "./protocol.ts"
import { type CopyItem, endsBefore, Sys } from "./sys.ts"

const channel = 3

const write = (reply: Reply): void => {
  // A large reply (a batch of files read) is written as it was serialized, after its length: not copied again.
  for (const bytes of frameParts(reply)) {
    for (let at = 0; at < bytes.length; ) at += writeSync(channel, bytes, at, bytes.length - at)
  }
}

const c = load()
if (c instanceof LibcUnavailable) {
  write({ id: 0, err: { _tag: "Failure", reason: "Unsupported", detail: c.message, call: "load" } })
  process.exit(3)
}
const libc = c
const k = constants as NonNullable<typeof constants>

const agent = Number(process.argv[2])
// Dies with the agent; an agent already gone (before the call) leaves no orphan either.
libc.prctl(k.PR_SET_PDEATHSIG, k.SIGKILL)
if (libc.getppid() !== agent) process.exit(0)
// Blocking reads and writes: this process does nothing else while it waits.
libc.fcntl(channel, k.F_SETFL, libc.fcntl(channel, k.F_GETFL, 0) & ~k.O_NONBLOCK)

let procSelf = "/proc/self"
const option = (name: string): number | undefined => {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`))
  return a === undefined ? undefined : Number(a.slice(name.length + 3))
}
const mntNs = option("mnt-ns")
if (mntNs !== undefined) {
  const rootFd = option("root")
  const proc = libc.openat(k.AT_FDCWD, cString(FileName.encode("/proc")), k.O_RDONLY | k.O_DIRECTORY | k.O_CLOEXEC, 0)
  const entered =
    proc >= 0 &&
    libc.unshare(k.CLONE_FS) === 0 &&
    libc.setns(mntNs, k.CLONE_NEWNS) === 0 &&
    // The root the agent pinned (the container init's), not only the namespace's.
    (rootFd === undefined || (libc.fchdir(rootFd) === 0 && libc.chroot(cString(FileName.encode("."))) === 0)) &&
    libc.fchdir(proc) === 0
  if (!entered) {
    write({ id: 0, err: new Sys(libc).fail("setns", "could not enter the mount namespace") })
    process.exit(3)
  }
  libc.close(mntNs)
  if (rootFd !== undefined) libc.close(rootFd)
  // The agent's procfs is the working directory: `self/...` names this process there.
  procSelf = "self"
}

const sys = new Sys(libc, { procSelf })
const frames = new Frames()
const queue: Array<Request> = []
const inbuf = Buffer.allocUnsafe(256 * 1024)

/** Which of `fds` can be read (or ended) within `millis` (-1: however long it takes), one `poll`. */
const readableOf = (fds: ReadonlyArray<number>, millis: number): Array<boolean> => {
  const pfd = new Uint8Array(8 * fds.length)
  const v = new DataView(pfd.buffer)
  for (const [i, fd] of fds.entries()) {
    v.setInt32(8 * i, fd, true)
    v.setInt16(8 * i + 4, k.POLLIN, true)
  }
  const n = libc.poll(pfd, fds.length, millis)
  return fds.map((_, i) => n > 0 && v.getInt16(8 * i + 6, true) !== 0)
}

/** Reads what is there (blocking when `wait`), queueing whole requests; false at the end of the channel. */
const fill = (wait: boolean): boolean => {
  if (!wait && !readableOf([channel], 0)[0]) return true
  const n = readSync(channel, inbuf, 0, inbuf.length, null)
  if (n === 0) return false
  for (const m of frames.push(Buffer.from(inbuf.subarray(0, n)))) queue.push(m as Request)
  return true
}

/** The hashing thread's wake-up: an eventfd it writes with each answer (see `./hashThread.ts`); -1 without one. */
let wake = -1
const wakeCount = Buffer.alloc(8)

/**
 * Waits, with no request queued and a job on the hashing `thread`, until a
 * request can be read (true; or the channel ended: the next read says so),
 * the thread answered, or it is due to have started (false: the job is
 * looked at again). Without an eventfd, a millisecond at a time.
 */
const awaitRequestOrAnswer = (thread: HashThread): boolean => {
  if (wake < 0) return readableOf([channel], 1)[0] === true
  const due = thread.startDueIn()
  const [request, answered] = readableOf([channel, wake], due === undefined ? -1 : Math.ceil(due))
  if (answered) {
    // Back to 0, so that the next wait blocks until the next answer (nonblocking: a count read already is no error).
    try {
      readSync(wake, wakeCount, 0, 8, null)
    } catch {}
  }
  return request === true
}

/**
 * The bytes from which a `sha256` call is hashed on the hashing thread
 * (`./hashThread.ts`) while this one answers the requests after it (a
 * restore reads the host's directories meanwhile); its answer is sent when
 * it is done. A smaller call is answered here at once: the thread costs a
 * few tens of milliseconds to start, once.
 */
const ThreadHashBytes = 8 * 1024 * 1024

/** The hashing thread, made at the first call that needs it; `null` when it could not be (hashed here then). */
let hashThread: HashThread | null | undefined

/** The `sha256` call on the hashing thread: its request, and the duplicate of the descriptor the thread reads. */
let hashing: { readonly id: number; readonly fd: number; readonly ranges: Ranges } | undefined

type Ranges = ReadonlyArray<{ readonly offset: number; readonly size: number }>

/** A handler's answer that is sent later (a `sha256` on the hashing thread). */
const Later = Symbol("later")

/** Sends the answer of the call on the hashing thread when it is done, or (`wait`) once it is. */
const settleHashing = (wait: boolean): void => {
  const job = hashing
  const thread = hashThread
  if (job === undefined || thread === undefined || thread === null) return
  if (!wait && !thread.done()) return
  hashing = undefined
  const answer = thread.finish()
  let result: ReadonlyArray<string> | Failure
  if (answer === undefined) {
    // The thread never started: this one hashes, now and from now on.
    hashThread = null
    result = sys.sha256(job.fd, job.ranges)
  } else if ("hashes" in answer) result = answer.hashes
  else if ("endsAt" in answer) result = endsBefore(answer.endsAt)
  else {
    result = {
      _tag: "Failure",
      reason: reasonTagOf(answer.code),
      errno: answer.code,
      detail: answer.message,
      call: "pread"
    }
  }
  libc.close(job.fd)
  write("_tag" in result ? { id: job.id, err: result } : { id: job.id, ok: result })
}

/** `sha256`: answered at once, or on the hashing thread (see {@link ThreadHashBytes}). */
const sha256 = (fd: number, ranges: Ranges, id: number): ReadonlyArray<string> | Failure | typeof Later => {
  let total = 0
  for (const r of ranges) total += r.size
  if (total < ThreadHashBytes) return sys.sha256(fd, ranges)
  // One job at a time (the agent asks for the next batch once it has the last one's answer).
  settleHashing(true)
  if (hashThread === undefined) {
    wake = libc.eventfd(0, k.O_CLOEXEC | k.O_NONBLOCK)
    hashThread = HashThread.make(wake) ?? null
  }
  // Its own descriptor: a close of `fd` the agent sends meanwhile does not take the file from the thread.
  const copy = hashThread === null ? undefined : sys.dup(fd)
  if (hashThread === null || typeof copy !== "number") return sys.sha256(fd, ranges)
  hashThread.begin(copy, ranges)
  hashing = { id, fd: copy, ranges }
  return Later
}

/** The ticker of request `id`: progress every 100 ms, and a stop when the agent asks for one. */
const tickerOf = (
  id: number,
  progress: () => unknown,
  removed?: (path: string) => void
): Ticker & { flush: () => void } => {
  const started = performance.now()
  let last = started
  let stopped = false
  const flush = () => {
    last = performance.now()
    write({ id, progress: progress() })
  }
  return {
    tick: () => {
      const now = performance.now()
      if (now - last < 100) return !stopped
      flush()
      if (fill(false)) {
        for (let i = queue.length - 1; i >= 0; i--) {
          const q = queue[i] as Request
          if (q.op === "stop" && q.args[0] === id) {
            stopped = true
            queue.splice(i, 1)
          }
        }
      } else process.exit(0)
      return !stopped
    },
    stopped: (): Failure => ({
      _tag: "Failure",
      reason: "Hung",
      detail: "stopped: the operation's deadline passed",
      call: "the operation",
      seconds: Math.round((performance.now() - started) / 100) / 10
    }),
    removed,
    flush
  }
}

// Each handler declares the tuple it is sent; the agent builds it (see NodeDirectory).
// biome-ignore lint/suspicious/noExplicitAny: the arguments are decoded per operation
type Handler = (args: any, id: number) => unknown

const handlers: Record<string, Handler> = {
  hello: () => ({ pid: process.pid }),
  credentials: () => ({ uid: process.geteuid?.() ?? 0, gid: process.getegid?.() ?? 0, pid: process.pid }),
  openRoot: ([path]: [Uint8Array]) => sys.openRoot(path),
  adopt: ([pid, pin]: [number, number]) => sys.openRoot(FileName.encode(`/proc/${pid}/fd/${pin}`)),
  openDirectory: ([fd, name, sameMount]: [number, Uint8Array, boolean]) => sys.openDirectory(fd, name, sameMount),
  openParent: ([fd]: [number]) => sys.openParent(fd),
  ancestors: ([fd]: [number]) => sys.ancestors(fd),
  openPath: ([fd, name]: [number, Uint8Array]) => sys.openPath(fd, name),
  openBeneath: ([fd, components]: [number, ReadonlyArray<Uint8Array>]) => sys.openBeneath(fd, components),
  list: ([fd]: [number]) => sys.list(fd),
  stat: ([fd, name]: [number, Uint8Array | null]) => sys.stat(fd, name ?? undefined),
  identify: ([fd, name]: [number, Uint8Array | null]) => sys.identify(fd, name ?? undefined),
  readLink: ([fd, name]: [number, Uint8Array]) => sys.readLink(fd, name),
  unlink: ([fd, name, dir]: [number, Uint8Array, boolean]) => sys.unlink(fd, name, dir) ?? null,
  unlinkAll: ([fd, names]: [number, ReadonlyArray<Uint8Array>]) => sys.unlinkAll(fd, names).map((f) => f ?? null),
  mkdir: ([fd, name, mode]: [number, Uint8Array, number]) =>
    sys.check(libc.mkdirat(fd, cString(name), mode), "mkdirat") ?? null,
  symlink: ([fd, name, target]: [number, Uint8Array, Uint8Array]) =>
    sys.check(libc.symlinkat(cString(target), fd, cString(name)), "symlinkat") ?? null,
  rename: ([from, fromName, to, toName, noReplace]: [number, Uint8Array, number, Uint8Array, boolean]) =>
    sys.check(
      libc.renameat2(from, cString(fromName), to, cString(toName), noReplace ? k.RENAME_NOREPLACE : 0),
      "renameat2"
    ) ?? null,
  chown: ([fd, name, uid, gid]: [number, Uint8Array | null, number, number]) =>
    sys.check(
      name === null
        ? libc.fchownat(fd, new Uint8Array(1), uid, gid, k.AT_EMPTY_PATH)
        : libc.fchownat(fd, cString(name), uid, gid, k.AT_SYMLINK_NOFOLLOW),
      "fchownat"
    ) ?? null,
  chmod: ([fd, mode]: [number, number]) => sys.check(libc.fchmod(fd, mode), "fchmod") ?? null,
  fsync: ([fd]: [number]) => sys.check(libc.fsync(fd), "fsync") ?? null,
  syncfs: ([fd]: [number]) => sys.check(libc.syncfs(fd), "syncfs") ?? null,
  resolveDirectory: ([fd, path, noSymlinks]: [number, Uint8Array, boolean]) =>
    sys.resolveDirectory(fd, path, noSymlinks) ?? null,
  openFile: ([fd, name, mode, permissions]: [number, Uint8Array, "read" | "write" | "create", number]) =>
    sys.openFile(fd, name, mode, permissions),
  pread: ([fd, length, position]: [number, number, number]) => sys.pread(fd, length, position),
  pwrite: ([fd, bytes, position]: [number, Uint8Array, number]) => sys.pwrite(fd, bytes, position) ?? null,
  ftruncate: ([fd, size]: [number, number]) => sys.check(libc.ftruncate(fd, size), "ftruncate") ?? null,
  fchown: ([fd, uid, gid]: [number, number, number]) =>
    sys.check(libc.fchownat(fd, new Uint8Array(1), uid, gid, k.AT_EMPTY_PATH), "fchown") ?? null,
  futimens: ([fd, atime, mtime]: [number, bigint, bigint]) => sys.futimens(fd, atime, mtime) ?? null,
  tryLock: ([fd]: [number]) => sys.tryLock(fd),
  unlock: ([fd]: [number]) => sys.unlock(fd) ?? null,
  lockHolder: ([fd]: [number]) => sys.lockHolder(fd) ?? null,
  holeAt: ([fd, offset]: [number, number]) => sys.holeAt(fd, offset),
  statAll: ([fd, names]: [number, ReadonlyArray<Uint8Array>]) => names.map((n) => sys.stat(fd, n)),
  openDirectories: ([fd, directories, sameMount]: [
    number,
    ReadonlyArray<{ readonly name: Uint8Array; readonly stat: ReadonlyArray<Uint8Array> }>,
    boolean
  ]) => sys.openDirectories(fd, directories, sameMount),
  readFiles: ([fd, names, maxBytes]: [number, ReadonlyArray<Uint8Array>, number]) => sys.readFiles(fd, names, maxBytes),
  hashFiles: ([fd, names, maxBytes]: [number, ReadonlyArray<Uint8Array>, number]) => sys.hashFiles(fd, names, maxBytes),
  copyFiles: ([from, files]: [number, ReadonlyArray<CopyItem>]) => {
    const r = sys.copyFiles(from, files)
    return { done: r.done, failure: r.failure ?? null }
  },
  renameAll: ([moves]: [ReadonlyArray<readonly [number, Uint8Array, number, Uint8Array]>]) => {
    for (const [i, [from, fromName, to, toName]] of moves.entries()) {
      const f = sys.check(libc.renameat2(from, cString(fromName), to, cString(toName), 0), "renameat2")
      if (f !== undefined) return { done: i, failure: f }
    }
    return { done: moves.length, failure: null }
  },
  sha256: ([fd, ranges]: [number, Ranges], id: number) => sha256(fd, ranges, id),
  appendFiles: ([to, at, fd, names, maxBytes]: [number, number, number, ReadonlyArray<Uint8Array>, number]) =>
    sys.appendFiles(to, at, fd, names, maxBytes),
  readFile: ([path]: [Uint8Array]) => sys.readFile(path) ?? null,
  mountTable: () => sys.readFile(FileName.encode(`${procSelf}/mountinfo`)) ?? null,
  holders: ([asked, skip]: [ReadonlyArray<Asked>, ReadonlyArray<number>]) =>
    holders(sys, procSelf === "self" ? "." : "/proc", asked, new Set([...skip, process.pid])),
  removeTree: (
    [fd, name, path, events, limits]: [number, Uint8Array, string, boolean, Limits | undefined],
    id: number
  ) => {
    let removed = 0
    let paths: Array<string> = []
    const ticker = tickerOf(
      id,
      () => {
        const p = { removed, paths }
        paths = []
        return p
      },
      events ? (p) => paths.push(p) : undefined
    )
    const counting: Ticker = {
      tick: ticker.tick,
      stopped: ticker.stopped,
      removed: ticker.removed,
      count: (n) => {
        removed += n
      }
    }
    const result = run(sys, removeTree({ dir: fd, name, path, events, limits }), counting)
    if (paths.length > 0) ticker.flush()
    return result
  },
  unmount: ([rootfd, targets, lazy]: [number, Targets, boolean], id: number) => {
    const n = targets.mountIds.length
    // Progress: the targets done since the last frame (`i` is the one in progress).
    let i = 0
    let from = 0
    let since: Array<[number, Outcome]> = []
    const ticker = tickerOf(id, (): Outcomes => {
      const p = { from, upTo: i, others: since }
      from = i
      since = []
      return p
    })
    const others: Array<[number, Outcome]> = []
    for (; i < n; i++) {
      const o = unmountOne(sys, rootfd, targetAt(targets, i), lazy, ticker)
      if (o._tag !== "Unmounted") {
        others.push([i, o])
        since.push([i, o])
      }
    }
    return { from: 0, upTo: n, others } satisfies Outcomes
  }
}

for (;;) {
  while (queue.length === 0) {
    if (hashing !== undefined) {
      settleHashing(false)
      const thread = hashThread as HashThread
      // A thread that has not started in time never will: the job is hashed here (`finish` says so).
      if (hashing !== undefined && thread.startDueIn() === 0) settleHashing(true)
      // Two things to wait for: the next request, and the hashing thread's answer.
      if (hashing !== undefined && !awaitRequestOrAnswer(thread)) continue
    }
    if (!fill(true)) process.exit(0)
  }
  const req = queue.shift() as Request
  if (req.closes !== undefined) for (const fd of req.closes) sys.close(fd)
  if (req.op === "stop" || req.op === "close") continue
  const handler = handlers[req.op]
  const result =
    handler === undefined
      ? ({ _tag: "Failure", reason: "Unsupported", detail: `no operation ${req.op}`, call: req.op } satisfies Failure)
      : handler(req.args, req.id)
  if (result === Later) continue
  const failed = typeof result === "object" && result !== null && (result as { _tag?: unknown })._tag === "Failure"
  write(failed ? { id: req.id, err: result as Failure } : { id: req.id, ok: result })
  settleHashing(false)
}
