/**
 * The agent's side of the helper process: it starts the helper when first
 * needed, sends each request, and never waits for a reply past its deadline.
 * A call without an answer for its call timeout takes the helper to be stuck
 * in the kernel (a dead file system): where it is stuck is read from procfs,
 * it is sent `SIGKILL` (not waited for), its calls fail `Hung`, and the next
 * call starts a new helper. Past the operation's deadline, a program is asked
 * to stop and ends with what it did. So the agent's event loop never waits on
 * a file system, no thread of the agent can be stuck in one, and the agent
 * always exits.
 *
 * Internal: `NodeDirectory` and `NodeMounter` make their calls through a {@link Client}.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { closeSync, openSync, readFileSync, readlinkSync, readSync } from "node:fs"
import type { Socket } from "node:net"
import { Deadline, type Directory } from "@hostnode/core"
import * as Layers from "@hostnode/core/Layers"
import type { Failure } from "@hostnode/core/Programs"
import * as Programs from "@hostnode/core/Programs"
import { Clock, Duration, Effect } from "effect"
import { Frames, frame, frameParts, type Reply } from "./protocol.ts"

// Handles belong to a helper: one whose helper was abandoned fails `Hung`,
// except a root, which the agent holds a descriptor of (`O_PATH`, opened
// through `/proc/HELPER/fd/N`, which asks no file system) and a new helper
// opens again through it.

/** A handle of the real layers: a descriptor of one helper, and the mount it is in. */
export interface IoHandle extends Directory.Handle {
  fd: number
  mountId: number
  /** The helper the descriptor belongs to. */
  gen: number
  /** For a root: the agent's own `O_PATH` descriptor of it, through which a new helper opens it again. */
  readonly pin: number | undefined
  readonly client: Client
}

/** The handle of a real layer, or `undefined` for another layer's. */
export const ioHandleOf = (h: Directory.Handle): IoHandle | undefined =>
  typeof (h as Partial<IoHandle>).fd === "number" && (h as Partial<IoHandle>).client !== undefined
    ? (h as IoHandle)
    : undefined

/** Options of {@link make}. */
export interface Options {
  /** Who the helper works for, for messages (`this host`, `container 1234`). */
  readonly name: string
  /**
   * A mount namespace to enter (a descriptor of this process, e.g. of
   * `/proc/PID/ns/mnt`): the helper's `/`, table and unmounts are then that
   * namespace's.
   */
  readonly mountNamespace?: number | undefined
  /** With `mountNamespace`: a descriptor of the directory to make the helper's `/` (a container init's root). */
  readonly root?: number | undefined
  /** Called before each request: a failure is returned instead of making it (a container that is gone). */
  readonly guard?: (() => Failure | undefined) | undefined
}

interface Pending {
  readonly id: number
  readonly call: string
  readonly path: string
  readonly sentAt: number
  readonly resume: (e: Effect.Effect<unknown, Failure>) => void
  readonly onProgress: ((p: unknown) => void) | undefined
  readonly program: boolean
  /** The answer is a descriptor (`{ fd }` or a number) to close if no one takes it. */
  readonly opens: boolean
  done: boolean
}

interface Helper {
  readonly gen: number
  readonly child: ChildProcess
  readonly socket: Socket
  readonly pid: number
  readonly pending: Map<number, Pending>
  lastFrameAt: number
  dead: boolean
  /** No new calls: an abandoned call of it is pending; it still serves the handles it holds. */
  retired: boolean
  /** Handles of it still open. */
  handles: number
  stderr: string
  refIfWaiting: () => void
}

/** The x86-64 and arm64 numbers of the calls a helper can be stuck in, for the `Hung` message. */
const syscallNames: Readonly<Record<string, Readonly<Record<number, string>>>> = {
  x64: {
    0: "read",
    1: "write",
    2: "open",
    4: "stat",
    6: "lstat",
    17: "pread64",
    18: "pwrite64",
    74: "fsync",
    77: "ftruncate",
    82: "rename",
    83: "mkdir",
    84: "rmdir",
    87: "unlink",
    89: "readlink",
    166: "umount2",
    217: "getdents64",
    257: "openat",
    258: "mkdirat",
    260: "fchownat",
    262: "newfstatat",
    263: "unlinkat",
    266: "symlinkat",
    267: "readlinkat",
    280: "utimensat",
    306: "syncfs",
    316: "renameat2",
    332: "statx",
    437: "openat2"
  },
  arm64: {
    17: "getcwd",
    34: "mkdirat",
    35: "unlinkat",
    36: "symlinkat",
    39: "umount2",
    54: "fchownat",
    56: "openat",
    61: "getdents64",
    63: "read",
    64: "write",
    67: "pread64",
    68: "pwrite64",
    78: "readlinkat",
    82: "fsync",
    88: "utimensat",
    267: "syncfs",
    276: "renameat2",
    291: "statx",
    437: "openat2"
  }
}

/** Calls whose first argument is a directory descriptor and second a path. */
const atCalls = new Set([
  "openat",
  "openat2",
  "statx",
  "unlinkat",
  "mkdirat",
  "readlinkat",
  "fchownat",
  "newfstatat",
  "renameat2",
  "symlinkat"
])

/**
 * Where helper `pid` is stuck, from procfs: the call and, where it can be
 * told, the path (a descriptor argument's target, and the name argument read
 * from its memory). Read only when a helper is given up on; procfs answers
 * without asking any other file system.
 */
export const whereStuck = (
  pid: number
): Effect.Effect<{ readonly call: string; readonly path: string | undefined } | undefined> =>
  Effect.gen(function* () {
    const text = yield* procfs(() => readFileSync(`/proc/${pid}/syscall`, "latin1"))
    if (text === undefined) return undefined
    const fields = text.trim().split(" ")
    const nr = Number(fields[0])
    if (!Number.isInteger(nr)) return undefined
    const call = syscallNames[process.arch]?.[nr] ?? `system call ${nr}`
    const arg = (i: number) => (/^0x[0-9a-f]+$/i.test(fields[i + 1] ?? "") ? BigInt(fields[i + 1] as string) : 0n)
    const fdPath = (fd: bigint) =>
      fd === 0xffffff9cn || fd === -100n
        ? Effect.succeed<string | undefined>(".")
        : fd < 1_000_000n
          ? procfs(() => readlinkSync(`/proc/${pid}/fd/${fd}`))
          : Effect.succeed(undefined)
    // The name argument, from the helper's memory (its own child: this process may read it).
    const stringAt = (address: bigint) =>
      address === 0n
        ? Effect.succeed(undefined)
        : procfs(() => {
            const bytes = Buffer.alloc(4096)
            const fd = openSync(`/proc/${pid}/mem`, "r")
            const got = readSync(fd, bytes, 0, bytes.length, address)
            closeSync(fd)
            const end = bytes.subarray(0, got).indexOf(0)
            return bytes.subarray(0, end < 0 ? got : end).toString("utf8")
          })
    if (atCalls.has(call)) {
      const dir = yield* fdPath(arg(call === "symlinkat" ? 1 : 0))
      const name = yield* stringAt(arg(call === "symlinkat" ? 2 : 1))
      const path =
        name === undefined || name === ""
          ? dir
          : name.startsWith("/") || dir === undefined
            ? name
            : `${dir === "/" ? "" : dir}/${name}`
      return { call, path }
    }
    if (call === "umount2") return { call, path: yield* stringAt(arg(0)) }
    return { call, path: yield* fdPath(arg(0)) }
  })

/** A procfs read of the helper's own entries (which never wait on another file system), or `undefined`. */
const procfs = <A>(f: () => A): Effect.Effect<A | undefined> =>
  Effect.try({ try: f, catch: () => undefined }).pipe(Effect.orElseSucceed(() => undefined))

/** A helper process and the calls made through it (see the module comment). */
export interface Client {
  readonly name: string
  /**
   * Makes one call in the helper the handles belong to (a root pinned by
   * the agent can be opened again in another; the current helper when there
   * are no others): `build` makes the arguments from their descriptors,
   * `call` and `path` name it for a `Hung` failure; a program's `onProgress`
   * is given each progress frame. The answer, and which helper gave it.
   */
  readonly request: (
    op: string,
    handles: ReadonlyArray<Directory.Handle>,
    build: (fds: ReadonlyArray<number>) => ReadonlyArray<unknown>,
    meta: {
      readonly call: string
      readonly path: string
      readonly program?: boolean | undefined
      readonly onProgress?: ((p: unknown) => void) | undefined
    }
  ) => Effect.Effect<Answer, Failure>
  /** A root handle for `fd` of helper `gen`, pinned in the agent so another helper can open it again. */
  readonly root: (fd: number, mountId: number, path: string, gen: number) => Effect.Effect<IoHandle>
  /** A handle for `fd` of helper `gen`. */
  readonly handle: (fd: number, mountId: number, path: string, gen: number) => IoHandle
  /** Closes a handle's descriptor now (nothing to do for an abandoned helper's): a lock it holds goes with it. */
  readonly release: (h: IoHandle) => Effect.Effect<void>
  /**
   * The node a handle holds, opened again in the agent (`O_PATH`, through
   * the helper's `/proc/<pid>/fd/<n>`: procfs only): a descriptor of this
   * process the caller closes, `undefined` where the helper is gone.
   */
  readonly descriptor: (h: IoHandle) => Effect.Effect<number | undefined>
  /** Ends every helper (`SIGKILL`) and the pins. */
  readonly shutdown: Effect.Effect<void>
}

/** A helper's answer to a call, and which helper gave it (what it opened is a descriptor of that one). */
export interface Answer {
  readonly value: unknown
  readonly gen: number
}

const hungFailure = (call: string, seconds: number, detail: string): Failure => ({
  _tag: "Failure",
  reason: "Hung",
  call,
  seconds,
  detail
})

const serverUrl = new URL(import.meta.url.endsWith(".ts") ? "./server.ts" : "./server.js", import.meta.url)

/** A client (see the module comment); nothing is started until the first call. */
export const make = (options: Options): Effect.Effect<Client> =>
  Effect.gen(function* () {
    return makeWith(options, yield* Clock.Clock)
  })

const makeWith = (options: Options, clock: Clock.Clock): Client => {
  /** The helper new calls without handles go to; `undefined`: one is started at the next. */
  let current: Helper | undefined
  const helpers = new Map<number, Helper>()
  let gens = 0
  let ids = 0
  const pins = new Set<number>()

  const fail = (h: Helper, failureOf: (p: Pending, now: number) => Failure, now: number) => {
    for (const p of h.pending.values()) {
      if (p.done) continue
      p.done = true
      p.resume(Effect.fail(failureOf(p, now)))
    }
    h.pending.clear()
  }

  /** Gives up on `h`: killed (it dies when the kernel lets go), its calls failed, no longer used. */
  const abandon = (h: Helper, failureOf: (p: Pending, now: number) => Failure, now: number) => {
    if (h.dead) return
    h.dead = true
    helpers.delete(h.gen)
    if (current === h) current = undefined
    h.child.kill("SIGKILL")
    h.socket.destroy()
    fail(h, failureOf, now)
  }

  /** A retired helper with nothing left to do ends quietly. */
  const endIfDone = (h: Helper) => {
    if (h.dead || !h.retired || h.handles > 0 || h.pending.size > 0) return
    h.dead = true
    helpers.delete(h.gen)
    h.child.kill("SIGKILL")
    h.socket.destroy()
  }

  const spawnHelper = Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const gen = ++gens
    const isTs = serverUrl.pathname.endsWith(".ts")
    const args = [
      ...(isTs ? ["--conditions=@hostnode/source", "--disable-warning=ExperimentalWarning"] : []),
      serverUrl.pathname,
      String(process.pid),
      ...(options.mountNamespace === undefined ? [] : ["--mnt-ns=4"]),
      ...(options.mountNamespace === undefined || options.root === undefined ? [] : ["--root=5"])
    ]
    const stdio: Array<"ignore" | "pipe" | number> = ["ignore", "ignore", "pipe", "pipe"]
    if (options.mountNamespace !== undefined) {
      stdio.push(options.mountNamespace)
      if (options.root !== undefined) stdio.push(options.root)
    }
    const spawned = yield* Effect.try({
      try: () => spawn(process.execPath, args, { stdio, env: process.env }),
      catch: () => undefined
    }).pipe(Effect.orElseSucceed(() => undefined))
    if (spawned === undefined || spawned.pid === undefined) {
      return yield* Effect.fail<Failure>({
        _tag: "Failure",
        reason: "Other",
        detail: `the helper process for ${options.name} could not be started`,
        call: "spawn"
      })
    }
    const child = spawned
    const socket = child.stdio[3] as Socket
    const h: Helper = {
      gen,
      child,
      socket,
      pid: child.pid as number,
      pending: new Map(),
      lastFrameAt: now,
      dead: false,
      retired: false,
      handles: 0,
      stderr: "",
      refIfWaiting: () => {}
    }
    const frames = new Frames()
    /** Keeps the agent's event loop alive exactly while someone waits for an answer. */
    const refIfWaiting = () => {
      for (const p of h.pending.values()) {
        if (!p.done) {
          socket.ref()
          return
        }
      }
      socket.unref()
    }
    h.refIfWaiting = refIfWaiting
    socket.on("data", (chunk: Buffer) => {
      h.lastFrameAt = clock.currentTimeMillisUnsafe()
      for (const m of frames.push(chunk)) {
        const r = m as Reply
        if (r.id === 0 && "err" in r) {
          h.stderr += `${r.err.detail}\n`
          continue
        }
        const p = h.pending.get(r.id)
        if (p === undefined) continue
        if ("progress" in r) {
          p.onProgress?.(r.progress)
          continue
        }
        h.pending.delete(r.id)
        if (p.done) {
          // No one waits for it any more (interrupted, or past its deadline): what it opened is closed.
          const fds = p.opens && "ok" in r ? descriptorsIn(r.ok) : []
          if (fds.length > 0) socket.write(frame({ id: 0, op: "close", args: [], closes: fds }))
          continue
        }
        p.done = true
        p.resume("err" in r ? Effect.fail(r.err) : Effect.succeed({ value: r.ok, gen: h.gen }))
      }
      refIfWaiting()
      endIfDone(h)
    })
    socket.on("error", () => {})
    child.stderr?.on("data", (chunk: Buffer) => {
      h.stderr = (h.stderr + chunk.toString("utf8")).slice(-2000)
    })
    child.on("exit", (code, signal) => {
      if (h.dead) return
      h.dead = true
      helpers.delete(h.gen)
      if (current === h) current = undefined
      const said = h.stderr.trim()
      fail(
        h,
        (p) => ({
          _tag: "Failure",
          reason: "Other",
          detail: `the helper process for ${options.name} exited (${signal ?? `code ${code}`}) during ${p.call}${said === "" ? "" : `: ${said}`}`,
          call: p.call
        }),
        0
      )
    })
    ;(child.stderr as Socket | null)?.unref()
    child.unref()
    socket.unref()
    helpers.set(gen, h)
    current = h
    return h
  })

  const ensure = Effect.suspend(() => (current !== undefined && !current.dead ? Effect.succeed(current) : spawnHelper))

  const notOurs: Failure = {
    _tag: "Failure",
    reason: "Other",
    detail: "not a handle of the real layers (NodeDirectory)",
    call: "handle"
  }

  /**
   * Where a call on `handles` goes: the helper of its handles that are not
   * pinned roots (they cannot move), else the current one; a handle whose
   * helper was abandoned, and is not a pinned root, fails `Hung`.
   */
  const route = (handles: ReadonlyArray<Directory.Handle>): Effect.Effect<Helper, Failure> =>
    Effect.suspend(() => {
      let at: Helper | undefined
      for (const handle of handles) {
        const io = ioHandleOf(handle)
        if (io === undefined) return Effect.fail(notOurs)
        if (io.pin !== undefined) continue
        const h = helpers.get(io.gen)
        if (h === undefined || h.dead) {
          return Effect.fail(
            hungFailure(
              "a call",
              0,
              `${io.path} was held by a helper process that was abandoned after a call on it did not return`
            )
          )
        }
        at = h
      }
      if (at !== undefined) return Effect.succeed(at)
      // Only roots (or nothing): a retired helper still serves the roots it holds; else the current one.
      for (const handle of handles) {
        const h = helpers.get((handle as IoHandle).gen)
        if (h !== undefined && !h.dead && (handle as IoHandle).gen === h.gen && !h.retired) return Effect.succeed(h)
      }
      return ensure
    })

  /** The descriptor of `handle` in helper `h`: a pinned root is opened again there when it belonged to another. */
  const fdIn = (h: Helper, handle: Directory.Handle): Effect.Effect<number, Failure> =>
    Effect.suspend(() => {
      const io = handle as IoHandle
      if (io.gen === h.gen) return Effect.succeed(io.fd)
      return Effect.map(
        send(h, "adopt", [process.pid, io.pin], { call: "open", path: io.path, program: false, onProgress: undefined }),
        (r) => {
          const opened = r.value as { readonly fd: number; readonly mountId: number }
          io.fd = opened.fd
          io.mountId = opened.mountId
          io.gen = h.gen
          return opened.fd
        }
      )
    })

  /** Sends a request to `h` and waits for its reply, within its deadline (see the module comment). */
  const send = (
    h: Helper,
    op: string,
    args: ReadonlyArray<unknown>,
    meta: {
      readonly call: string
      readonly path: string
      readonly program: boolean
      readonly onProgress: ((p: unknown) => void) | undefined
    }
  ): Effect.Effect<Answer, Failure> =>
    Effect.gen(function* () {
      const budget = yield* Layers.forCall
      const callMillis = Duration.toMillis((yield* Deadline.Deadline).call)
      const sentAt = yield* Clock.currentTimeMillis
      if (budget.millis <= 0) {
        return yield* Effect.fail(
          hungFailure(meta.call, 0, `${meta.path}: the operation's deadline passed before the call`)
        )
      }
      if (h.dead) {
        return yield* Effect.fail(hungFailure(meta.call, 0, `${meta.path}: its helper process was abandoned`))
      }
      const deadlineAt = budget.byDeadline ? sentAt + budget.millis : Number.POSITIVE_INFINITY
      const id = ++ids
      let pending: Pending | undefined
      const reply = Effect.callback<Answer, Failure>((resume) => {
        pending = {
          id,
          call: meta.call,
          path: meta.path,
          sentAt,
          resume: resume as (e: Effect.Effect<unknown, Failure>) => void,
          onProgress: meta.onProgress,
          program: meta.program,
          opens: openers.has(op),
          done: false
        }
        h.pending.set(id, pending)
        h.socket.ref()
        // Its length, then its body as serialized: a large request (a batch of data written) is not copied again.
        for (const part of frameParts({ id, op, args })) h.socket.write(part)
        // Interrupted (an `Effect.timeout` around the operation): the answer is no longer awaited.
        return Effect.gen(function* () {
          const p = pending as Pending
          if (p.done) return
          p.done = true
          h.refIfWaiting()
          if (h.dead) return
          // A program is asked to stop. New calls go to a new helper; this one is given up on if it
          // does not answer soon (stuck in the call), else it serves its own handles until they close.
          if (p.program) h.socket.write(frame({ id: ++ids, op: "stop", args: [id] }))
          h.retired = true
          if (current === h) current = undefined
          yield* Effect.forkDetach(
            Effect.sleep(AbandonedGrace).pipe(
              Effect.andThen(
                Effect.gen(function* () {
                  if (h.dead || !h.pending.has(id)) return endIfDone(h)
                  const where = yield* whereStuck(h.pid)
                  const stuck =
                    where === undefined ? "" : `: ${where.call}${where.path === undefined ? "" : ` of ${where.path}`}`
                  abandon(
                    h,
                    (q, at) =>
                      hungFailure(
                        q.call,
                        Math.round((at - q.sentAt) / 100) / 10,
                        `${q.path}: no answer from the file system (behind a call that did not return${stuck})`
                      ),
                    yield* Clock.currentTimeMillis
                  )
                })
              )
            )
          )
        })
      })
      const watchdog: Effect.Effect<never, Failure> = Effect.gen(function* () {
        let stopSent = false
        for (;;) {
          const now = yield* Clock.currentTimeMillis
          const quietSince = Math.max(sentAt, h.lastFrameAt)
          const callLimit = quietSince + callMillis
          const limit = Math.min(callLimit, deadlineAt + (stopSent ? 2000 : 0))
          if (now < limit && !h.dead) {
            yield* Effect.sleep(Duration.millis(Math.max(1, limit - now)))
            continue
          }
          const seconds = Math.round((now - sentAt) / 100) / 10
          if (h.dead)
            return yield* Effect.fail(hungFailure(meta.call, seconds, `${meta.path}: its helper process was abandoned`))
          if (now >= callLimit || stopSent) {
            // No answer and no progress for the call timeout: stuck in the kernel.
            const where = yield* whereStuck(h.pid)
            const stuck =
              where === undefined
                ? ""
                : `; stuck in ${where.call}${where.path === undefined ? "" : ` of ${where.path}`}`
            abandon(
              h,
              (p, at) =>
                hungFailure(
                  p === pending && where !== undefined ? where.call : p.call,
                  Math.round((at - p.sentAt) / 100) / 10,
                  `${p.path}: no answer from the file system${p === pending ? stuck : " (behind a call that did not return)"}`
                ),
              now
            )
            return yield* Effect.fail(
              hungFailure(where?.call ?? meta.call, seconds, `${meta.path}: no answer from the file system${stuck}`)
            )
          }
          // The operation's deadline: a program is asked to stop and ends with what it did.
          if (meta.program) {
            h.socket.write(frame({ id: ++ids, op: "stop", args: [id] }))
            stopSent = true
            continue
          }
          const p = pending as Pending
          p.done = true
          h.refIfWaiting()
          return yield* Effect.fail(
            hungFailure(meta.call, seconds, `${meta.path}: the operation's deadline passed before it returned`)
          )
        }
      })
      return yield* Effect.raceFirst(reply, watchdog)
    })

  const client: Client = {
    name: options.name,
    request: (op, handles, build, meta) =>
      Effect.gen(function* () {
        const refused = options.guard?.()
        if (refused !== undefined) return yield* Effect.fail(refused)
        const h = yield* route(handles)
        const fds: Array<number> = []
        for (const handle of handles) fds.push(yield* fdIn(h, handle))
        return yield* send(h, op, build(fds), {
          call: meta.call,
          path: meta.path,
          program: meta.program ?? false,
          onProgress: meta.onProgress
        })
      }),
    root: (fd, mountId, path, gen) =>
      Effect.gen(function* () {
        const h = helpers.get(gen)
        // Procfs only: the magic link is followed to the open file, no other file system is asked.
        const pin = h === undefined ? undefined : yield* procfs(() => openSync(`/proc/${h.pid}/fd/${fd}`, O_PATH))
        if (pin !== undefined) pins.add(pin)
        if (h !== undefined) h.handles++
        return Programs.handle({ path, fd, mountId, gen, pin, client })
      }),
    handle: (fd, mountId, path, gen) => {
      const h = helpers.get(gen)
      if (h !== undefined) h.handles++
      return Programs.handle({ path, fd, mountId, gen, pin: undefined, client })
    },
    release: (handle) =>
      Effect.gen(function* () {
        if (handle.pin !== undefined && pins.delete(handle.pin)) yield* procfs(() => closeSync(handle.pin as number))
        const h = helpers.get(handle.gen)
        if (h === undefined || h.dead) return
        h.handles--
        // No answer is awaited: the helper closes it before the next request it reads.
        h.socket.write(frame({ id: 0, op: "close", args: [], closes: [handle.fd] }))
        endIfDone(h)
      }),
    descriptor: (handle) =>
      Effect.suspend(() => {
        const h = helpers.get(handle.gen)
        return h === undefined || h.dead
          ? Effect.succeed(undefined)
          : procfs(() => openSync(`/proc/${h.pid}/fd/${handle.fd}`, O_PATH))
      }),
    shutdown: Effect.gen(function* () {
      for (const h of [...helpers.values()]) abandon(h, (p) => hungFailure(p.call, 0, "the layer was closed"), 0)
      for (const pin of pins) yield* procfs(() => closeSync(pin))
      pins.clear()
    })
  }
  return client
}

const O_PATH = 0o10000000

/** How long a helper has to answer a call no one waits for any more before it is taken to be stuck. */
const AbandonedGrace = Duration.seconds(1)

/** The operations whose answer is a descriptor (`openDirectories`: a list of them, among failures). */
const openers = new Set([
  "openRoot",
  "adopt",
  "openDirectory",
  "openDirectories",
  "openParent",
  "openPath",
  "openBeneath",
  "resolveDirectory",
  "openFile"
])

/** The descriptors an opener's answer holds: a number, an object's `fd`, or those of a list's items. */
const descriptorsIn = (answer: unknown): ReadonlyArray<number> => {
  if (typeof answer === "number") return [answer]
  if (Array.isArray(answer)) return answer.flatMap(descriptorsIn)
  const fd = (answer as { readonly fd?: unknown } | null)?.fd
  return typeof fd === "number" ? [fd] : []
}
