/**
 * The real `Mounter`. `layer` verifies and unmounts in-process through koffi
 * (prebuilt binaries, no compiler): each target's path is resolved below the
 * root handle with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` (or, on a
 * kernel without it, one `openat(O_PATH | O_NOFOLLOW)` per component, each
 * checked to be a directory and not a link), the mount id of what it reached
 * compared with the table's (`statx`), and that very mount detached through
 * its descriptor (`umount2("/proc/self/fd/N", MNT_DETACH)`): a link swapped
 * into a parent after the check cannot redirect it. A thousand lazy unmounts
 * take tens of milliseconds, where one `umount` process per mount takes
 * seconds.
 *
 * `layerCommand` runs `umount -l` through the spawner in context, many
 * targets per process: the path for another mount namespace (a spawner
 * wrapped with `nsenter`; the kernel lets a process unmount only in its own
 * mount namespace, and a threaded Node process cannot enter another), and
 * the fallback where the FFI cannot load. What it guarantees is weaker, and
 * said at {@link makeCommand}.
 *
 * @since 0.1.0
 */
import { readFileSync } from "node:fs"
import { Directory, FileName, HostCommand, Mounter, MountInfo } from "@hostnode/core"
import { Effect, FileSystem, Layer, Schema } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import { fdOf } from "./internal/handles.ts"
import { constants, cString, describeErrno, emptyPath, type Libc, LibcUnavailable, load } from "./internal/libc.ts"

/**
 * The FFI could not be loaded (no libc.so.6, an unsupported platform). `layerCommand` still works.
 *
 * @since 0.1.0
 */
export class MounterUnavailable extends Schema.TaggedError<MounterUnavailable>()("MounterUnavailable", {
  /** Why: koffi or libc's `umount2` could not be loaded (no prebuilt binary for this platform, no libc.so.6). */
  reason: Schema.Literal("FfiUnavailable"),
  detail: Schema.String
}) {
  override get message(): string {
    return `in-process umount2 is unavailable: ${this.detail}`
  }
}

const unverified = (target: string, reason: Mounter.UnverifiedReason, detail: string): Mounter.UnmountResult => ({
  _tag: "Unverified",
  target,
  reason,
  detail
})

/** A target whose path led to its mount: `fd` holds that mount (an `O_PATH` descriptor at its root) until closed. */
interface Verified {
  readonly _tag: "Verified"
  readonly fd: number
}

/**
 * Verifies one target below `rootFd` (see the module comment): `rel` is its
 * path below the root. Returns the open descriptor of the very mount the
 * table listed, or the result to report when the path no longer leads there.
 */
const verifyOne = (
  c: Libc,
  rootFd: number,
  rel: string,
  target: Mounter.Target,
  statBuf: Uint8Array,
  state: { openat2: boolean }
): Verified | Mounter.UnmountResult => {
  const k = constants as NonNullable<typeof constants>
  const names = Directory.components(FileName.encode(rel))
  let fd = -1
  if (names.length === 0) {
    fd = c.openat(rootFd, cString(new Uint8Array([0x2e])), k.O_PATH | k.O_CLOEXEC, 0)
  } else if (state.openat2) {
    fd = c.openat2(rootFd, cString(FileName.encode(rel.slice(1))), beneathNoLinks())
    if (fd < 0 && describeErrno(c.errno()).errno === "ENOSYS") state.openat2 = false
  }
  if (names.length > 0 && !state.openat2) {
    // One component at a time, each opened without following and checked.
    let at = rootFd
    fd = -2
    for (const [i, name] of names.entries()) {
      const next = c.openat(at, cString(name), k.O_PATH | k.O_NOFOLLOW | k.O_CLOEXEC, 0)
      if (at !== rootFd) c.close(at)
      if (next < 0) {
        fd = -1
        break
      }
      at = next
      if (i < names.length - 1) {
        if (c.statx(at, emptyPath, k.AT_EMPTY_PATH, k.STATX_BASIC_STATS, statBuf) !== 0) {
          c.close(at)
          fd = -1
          break
        }
        const mode = new DataView(statBuf.buffer).getUint16(28, true) & 0o170000
        if (mode !== 0o040000) {
          c.close(at)
          return unverified(target.path, "LinkInPath", `${FileName.display(FileName.decode(name))} is not a directory`)
        }
      }
      fd = at
    }
  }
  if (fd < 0) {
    const { errno, message } = describeErrno(c.errno())
    if (errno === "ENOENT") return unverified(target.path, "Gone", "the path no longer exists")
    if (errno === "ELOOP" || errno === "ENOTDIR" || errno === "EXDEV") {
      return unverified(target.path, "LinkInPath", `a link or a non-directory on the way (${errno})`)
    }
    return { _tag: "Failed", target: target.path, failure: { target: target.path, errno, message } }
  }
  const close = (r: Mounter.UnmountResult) => {
    c.close(fd)
    return r
  }
  if (
    c.statx(fd, emptyPath, k.AT_EMPTY_PATH | k.AT_SYMLINK_NOFOLLOW, k.STATX_BASIC_STATS | k.STATX_MNT_ID, statBuf) !== 0
  ) {
    const { errno, message } = describeErrno(c.errno())
    return close({ _tag: "Failed", target: target.path, failure: { target: target.path, errno, message } })
  }
  const view = new DataView(statBuf.buffer)
  if ((view.getUint16(28, true) & 0o170000) === 0o120000) {
    return close(unverified(target.path, "LinkInPath", "the mount point is now a symbolic link"))
  }
  const mountId =
    (view.getUint32(0, true) & k.STATX_MNT_ID) !== 0 ? Number(view.getBigUint64(144, true)) : fdinfoMountId(fd)
  if (mountId !== target.mountId) {
    return close(unverified(target.path, "Moved", `the path leads to mount ${mountId}, not to mount ${target.mountId}`))
  }
  return { _tag: "Verified", fd }
}

/**
 * Verifies and unmounts one target below `rootFd` (see the module comment);
 * synchronous, so a whole pass is one tight loop of system calls.
 */
const unmountOne = (
  c: Libc,
  rootFd: number,
  rootPath: string,
  target: Mounter.Target,
  flags: number,
  statBuf: Uint8Array,
  state: { openat2: boolean }
): Mounter.UnmountResult => {
  const k = constants as NonNullable<typeof constants>
  const rel = Mounter.below(rootPath, target.path)
  if (rel === undefined) return unverified(target.path, "OutsideRoot", `not below the host root ${rootPath}`)
  const verified = verifyOne(c, rootFd, rel, target, statBuf, state)
  if (verified._tag !== "Verified") return verified
  const fd = verified.fd
  const close = (r: Mounter.UnmountResult) => {
    c.close(fd)
    return r
  }
  // Through the descriptor: the mount just verified, whatever the path says now.
  // A non-lazy unmount cannot go that way (the descriptor itself keeps the
  // mount busy): it goes by path, not following a final link, after the check.
  const lazy = (flags & k.MNT_DETACH) !== 0
  if (!lazy) c.close(fd)
  const r = lazy
    ? c.umount2(cString(FileName.encode(`/proc/self/fd/${fd}`)), flags)
    : c.umount2(cString(FileName.encode(target.path)), flags | k.UMOUNT_NOFOLLOW)
  if (!lazy) {
    if (r === 0) return { _tag: "Unmounted", target: target.path }
    const { errno, message } = describeErrno(c.errno())
    return { _tag: "Failed", target: target.path, failure: { target: target.path, errno, message } }
  }
  if (r === 0) return close({ _tag: "Unmounted", target: target.path })
  const { errno, message } = describeErrno(c.errno())
  return close({ _tag: "Failed", target: target.path, failure: { target: target.path, errno, message } })
}

// The `open_how` of a verification: O_PATH, no link anywhere, never above the root. Made once.
let how: Uint8Array | undefined
const beneathNoLinks = (): Uint8Array => {
  if (how !== undefined) return how
  const k = constants as NonNullable<typeof constants>
  const view = new DataView(new ArrayBuffer(24))
  view.setBigUint64(0, BigInt(k.O_PATH | k.O_NOFOLLOW | k.O_CLOEXEC), true)
  view.setBigUint64(16, BigInt(k.RESOLVE_BENEATH | k.RESOLVE_NO_SYMLINKS | k.RESOLVE_NO_MAGICLINKS), true)
  how = new Uint8Array(view.buffer)
  return how
}

const fdinfoMountId = (fd: number): number => {
  const text = readFileSync(`/proc/self/fdinfo/${fd}`, "latin1")
  const m = /^mnt_id:\s*(\d+)/m.exec(text)
  return m === null ? -1 : Number(m[1])
}

const loadLibc = Effect.suspend(() => {
  const c = load()
  return c instanceof LibcUnavailable
    ? Effect.fail(new MounterUnavailable({ reason: "FfiUnavailable", detail: c.message }))
    : Effect.succeed(c)
})

/**
 * The `Mounter` backed by in-process system calls (see the module comment).
 * All targets of one call are verified and unmounted in one synchronous
 * loop: with MNT_DETACH the syscall does not wait for busy or unreachable
 * file systems, so the loop cannot hang on them. The root handle must be the
 * real `Directories`' (`NodeDirectory`).
 *
 * @since 0.1.0
 */
export const make = Effect.map(loadLibc, (c) => {
  const statBuf = new Uint8Array(256)
  const state = { openat2: true }
  return Mounter.Mounter.of({
    unmount: (root, targets, options) =>
      Effect.suspend(() => {
        const handle = fdOf(root)
        if (handle === undefined) {
          return Effect.die(new Error("NodeMounter: the root handle is not a NodeDirectory handle"))
        }
        const flags = options.lazy ? (constants as NonNullable<typeof constants>).MNT_DETACH : 0
        const out: Array<Mounter.UnmountResult> = []
        for (const t of targets) out.push(unmountOne(c, handle.fd, root.path, t, flags, statBuf, state))
        return Effect.succeed(out)
      })
  })
})

/**
 * The in-process `Mounter` (see {@link make}); fails to build with {@link MounterUnavailable}.
 *
 * @since 0.1.0
 */
export const layer: Layer.Layer<Mounter.Mounter, MounterUnavailable> = Layer.effect(Mounter.Mounter, make)

/**
 * Options of {@link layerCommand}.
 *
 * @since 0.1.0
 */
export interface CommandOptions {
  /**
   * The mount table of the namespace the spawner's commands run in, read to
   * tell which targets were unmounted (default `/proc/self/mountinfo`; for a
   * spawner wrapped with `nsenter -t PID`, `/proc/PID/mountinfo`).
   */
  readonly mountInfo?: string | undefined
  /** Most bytes of target arguments per `umount` process (default 64 KiB, far below ARG_MAX). */
  readonly maxArgBytes?: number | undefined
}

// util-linux umount's messages for the failures a teardown meets.
const classify = (text: string): { readonly errno: string; readonly message: string } => {
  const t = text.toLowerCase()
  if (t.includes("busy")) return { errno: "EBUSY", message: "Device or resource busy" }
  if (t.includes("not mounted")) return { errno: "EINVAL", message: "Invalid argument (not mounted)" }
  // util-linux says "no mount point specified" for a path that does not exist
  if (t.includes("no such file") || t.includes("no mount point specified"))
    return { errno: "ENOENT", message: "No such file or directory" }
  if (t.includes("superuser") || t.includes("not permitted") || t.includes("permission")) {
    return { errno: "EPERM", message: "Operation not permitted" }
  }
  return { errno: "EUNKNOWN", message: text.trim() === "" ? "umount failed" : text.trim() }
}

const chunk = (targets: ReadonlyArray<string>, maxBytes: number): Array<Array<string>> => {
  const out: Array<Array<string>> = []
  let current: Array<string> = []
  let bytes = 0
  for (const t of targets) {
    const size = t.length * 3 + 1
    if (current.length > 0 && bytes + size > maxBytes) {
      out.push(current)
      current = []
      bytes = 0
    }
    current.push(t)
    bytes += size
  }
  if (current.length > 0) out.push(current)
  return out
}

const countByMountPoint = (table: MountInfo.MountTable): Map<string, number> => {
  const m = new Map<string, number>()
  for (const e of table) m.set(e.mountPoint, (m.get(e.mountPoint) ?? 0) + 1)
  return m
}

/**
 * The `Mounter` that runs `umount [-l] -c -- targets...` through the spawner
 * in context, many targets per process, in the namespace the spawner's
 * commands run in (`nsenter` for another one).
 *
 * What it can guarantee: before the commands run, each distinct target path
 * is verified through the `Directories` in context, below the root handle,
 * as the in-process layer does (resolved without following any link, its
 * mount id compared with the table's; a stack is verified at its top and
 * unmounted once per entry, top down); what fails verification is reported
 * `Unverified` and not given to `umount`. What it cannot: `umount` is a
 * process of its own and unmounts by path (`-c`: not canonicalised, but the
 * kernel still follows links in it), so a link swapped into a parent between
 * the check and the command can redirect that unmount. The operations read
 * the table again after every pass, so such a detach is seen, not trusted.
 *
 * umount reports failures as text, so which targets were unmounted is
 * decided from the mount table: for a path given k times, as many of its
 * occurrences succeeded as its entries decreased; the others take the reason
 * umount printed for that path.
 *
 * @since 0.1.0
 */
export const makeCommand = (options?: CommandOptions) =>
  Effect.gen(function* () {
    const context = yield* Effect.context<
      ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem | Directory.Directories
    >()
    const tablePath = options?.mountInfo ?? MountInfo.DefaultPath
    const maxBytes = options?.maxArgBytes ?? 64 * 1024
    const countNow = MountInfo.read(tablePath).pipe(
      Effect.map(countByMountPoint),
      Effect.orElseSucceed(() => undefined)
    )
    // Whether `t`'s path, resolved below `root` without links, leads to its mount.
    const verify = (root: Directory.Handle, t: Mounter.Target) =>
      Effect.gen(function* () {
        const dirs = yield* Directory.Directories
        const rel = Mounter.below(root.path, t.path)
        if (rel === undefined) return { reason: "OutsideRoot" as const, detail: `not below the host root ${root.path}` }
        const r = yield* Effect.result(
          Effect.gen(function* () {
            const at = yield* dirs.resolve(root, rel, { noSymlinks: true })
            const held = at.name === undefined ? at.parent : yield* dirs.openPath(at.parent, at.name)
            return yield* dirs.stat(held)
          })
        )
        if (r._tag === "Failure") {
          const e = r.failure
          return e.reason === "NotFound"
            ? { reason: "Gone" as const, detail: "the path no longer exists" }
            : { reason: "LinkInPath" as const, detail: e.message }
        }
        if (r.success.type === "SymbolicLink")
          return { reason: "LinkInPath" as const, detail: "the mount point is a link" }
        return r.success.mountId === t.mountId
          ? undefined
          : {
              reason: "Moved" as const,
              detail: `the path leads to mount ${r.success.mountId}, not to mount ${t.mountId}`
            }
      }).pipe(Effect.scoped)
    const unmount = Effect.fnUntraced(function* (
      root: Directory.Handle,
      targets: ReadonlyArray<Mounter.Target>,
      opts: Mounter.UnmountOptions
    ) {
      if (targets.length === 0) return []
      // A stack is verified at its top: the first target of each path.
      const checked = new Map<
        string,
        { readonly reason: Mounter.UnverifiedReason; readonly detail: string } | undefined
      >()
      for (const t of targets) if (!checked.has(t.tablePath)) checked.set(t.tablePath, yield* verify(root, t))
      const verified = targets.filter((t) => checked.get(t.tablePath) === undefined).map((t) => t.tablePath)
      const before = yield* countNow
      const messages = new Map<string, string>()
      let spawnFailure: string | undefined
      for (const part of chunk(verified, maxBytes)) {
        const args = [...(opts.lazy ? ["-l"] : []), "-c", "--", ...part]
        const result = yield* Effect.result(HostCommand.run("umount", args))
        if (result._tag === "Failure") {
          spawnFailure ??= result.failure.detail
          continue
        }
        for (const line of result.success.stderr.split("\n")) {
          for (const t of part) if (line.startsWith(`umount: ${t}: `)) messages.set(t, line)
        }
      }
      const after = yield* countNow
      // How many mounts left each mount point: that many of its targets succeeded
      // (a stacked mount point is a target once per mount).
      const gone = new Map<string, number>()
      if (before !== undefined && after !== undefined) {
        for (const [point, n] of before) gone.set(point, Math.max(0, n - (after.get(point) ?? 0)))
      }
      return targets.map((t): Mounter.UnmountResult => {
        const problem = checked.get(t.tablePath)
        if (problem !== undefined) return { _tag: "Unverified", target: t.path, ...problem }
        const left = gone.get(t.tablePath) ?? 0
        if (left > 0) {
          gone.set(t.tablePath, left - 1)
          return { _tag: "Unmounted", target: t.path }
        }
        const why =
          spawnFailure !== undefined && !messages.has(t.tablePath)
            ? { errno: "ENOEXEC", message: `umount could not run: ${spawnFailure}` }
            : classify(messages.get(t.tablePath) ?? "")
        return { _tag: "Failed", target: t.path, failure: { target: t.path, ...why } }
      })
    })
    return Mounter.Mounter.of({
      unmount: (root, targets, opts) => unmount(root, targets, opts).pipe(Effect.provide(context))
    })
  })

/**
 * The command-based `Mounter` (see {@link makeCommand}); requires a spawner, a FileSystem and the `Directories`.
 *
 * @since 0.1.0
 */
export const layerCommand = (
  options?: CommandOptions
): Layer.Layer<
  Mounter.Mounter,
  never,
  ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem | Directory.Directories
> => Layer.effect(Mounter.Mounter, makeCommand(options))

/**
 * The in-process `Mounter`, or the command-based one where the FFI cannot load.
 *
 * @since 0.1.0
 */
export const layerWithFallback = (
  options?: CommandOptions
): Layer.Layer<
  Mounter.Mounter,
  never,
  ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem | Directory.Directories
> => Layer.catch(layer, () => layerCommand(options))

/**
 * Options of {@link layerIn}.
 *
 * @since 0.2.0
 */
export interface InOptions {
  /** Most targets one helper process is given (default 256: one descriptor each, well below the open-file limit). */
  readonly maxTargets?: number | undefined
}

/** The mount ids in a table, or `undefined` when it cannot be read (the process is gone). */
const mountIds = (path: string) =>
  MountInfo.read(path).pipe(
    Effect.map((table) => new Set(table.map((e) => e.id))),
    Effect.orElseSucceed(() => undefined)
  )

/**
 * The `Mounter` of another mount namespace: the one host process `pid` (a
 * container's init) is in. A process can only unmount in its own mount
 * namespace (the kernel refuses a mount of another one with EINVAL, even
 * through a descriptor), and a process with threads, as Node is, cannot
 * enter another. So the work is split, and the guarantee of the in-process
 * {@link layer} kept:
 *
 * - Verification, here, in-process: each target's path *as the container's
 *   table names it* is resolved below a handle on the container's root
 *   (`/proc/<pid>/root`, opened for each call) with `openat2(RESOLVE_BENEATH
 *   | RESOLVE_NO_SYMLINKS)`, and the mount id it reaches compared with the
 *   table's (`statx`). What passes is held open as an `O_PATH` descriptor of
 *   that very mount; what fails is `Unverified` and left mounted. The root
 *   the operation passes is not resolved in: whatever host root the caller's files
 *   are below, a mount is only ever looked for in the container (a target
 *   must still lie below that root, as for every `Mounter`).
 * - The unmount, in a helper: `nsenter -t <pid> -m --root=/ -- umount -l -c
 *   -- /proc/<self>/fd/N...`, a single-threaded process entered into the
 *   container's mount namespace, its root set back to this process's `/` (so
 *   `umount` and `/proc` are this host's, whatever the container's image
 *   has), that detaches each mount through this process's descriptor of it.
 *   A descriptor names a mount, not a path, so a link swapped into a parent
 *   after the check cannot redirect the unmount, and since the helper is in
 *   the container's namespace the kernel cannot detach anything outside it.
 *
 * Which targets went is read from the container's table afterwards (mount
 * ids are unique), not from umount's text. A stack is unmounted top down in
 * rounds of one helper each, since only its top is reachable. A non-lazy
 * unmount cannot go through a descriptor (the descriptor keeps the mount
 * busy): it is given `/proc/<pid>/root<path>` after the check, a path.
 *
 * @since 0.2.0
 */
export const makeIn = (pid: number, options?: InOptions) =>
  Effect.gen(function* () {
    const c = yield* loadLibc
    const context = yield* Effect.context<
      ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem | Directory.Directories
    >()
    const fs = yield* FileSystem.FileSystem
    // This process as its own /proc names it: what the helper, its root set
    // to this process's `/`, reaches the descriptors through.
    const self = yield* fs.readLink("/proc/self").pipe(Effect.orElseSucceed(() => String(process.pid)))
    const rootPath = `/proc/${pid}/root`
    const tablePath = `/proc/${pid}/mountinfo`
    const maxTargets = Math.max(1, options?.maxTargets ?? 256)
    const statBuf = new Uint8Array(256)
    const state = { openat2: true }
    const runHelper = (args: ReadonlyArray<string>, lazy: boolean) =>
      HostCommand.run("nsenter", [
        "-t",
        String(pid),
        "-m",
        "--root=/",
        "--",
        "umount",
        ...(lazy ? ["-l"] : []),
        "-c",
        "--",
        ...args
      ])

    const unmount = Effect.fnUntraced(function* (
      root: Directory.Handle,
      targets: ReadonlyArray<Mounter.Target>,
      opts: Mounter.UnmountOptions
    ) {
      const results: Array<Mounter.UnmountResult | undefined> = targets.map(() => undefined)
      if (targets.length === 0) return []
      const dirs = yield* Directory.Directories
      const container = yield* dirs.openRoot(rootPath).pipe(Effect.result)
      const handle = container._tag === "Success" ? fdOf(container.success) : undefined
      if (handle === undefined) {
        const why = container._tag === "Failure" ? container.failure.message : "not a NodeDirectory handle"
        return targets.map(
          (t): Mounter.UnmountResult => ({
            _tag: "Failed",
            target: t.path,
            failure: { target: t.path, errno: "ESRCH", message: `the container's root ${rootPath}: ${why}` }
          })
        )
      }
      let pending = targets.map((_, i) => i)
      while (pending.length > 0) {
        const verified: Array<{ readonly i: number; readonly fd: number }> = []
        for (const i of pending) {
          const t = targets[i] as Mounter.Target
          // The caller's contract still holds: a target is below the root it passed.
          if (Mounter.below(root.path, t.path) === undefined) {
            results[i] = unverified(t.path, "OutsideRoot", `not below the host root ${root.path}`)
            continue
          }
          const v = verifyOne(c, handle.fd, t.tablePath, t, statBuf, state)
          if (v._tag === "Verified") verified.push({ i, fd: v.fd })
          else results[i] = v
        }
        if (verified.length === 0) break
        const stderr: Array<string> = []
        let spawnFailure: string | undefined
        yield* Effect.gen(function* () {
          for (let at = 0; at < verified.length; at += maxTargets) {
            const part = verified.slice(at, at + maxTargets)
            const args = part.map(({ i, fd }) =>
              opts.lazy ? `/proc/${self}/fd/${fd}` : `${rootPath}${(targets[i] as Mounter.Target).tablePath}`
            )
            if (!opts.lazy) for (const { fd } of part) c.close(fd)
            const r = yield* Effect.result(runHelper(args, opts.lazy))
            if (r._tag === "Failure") spawnFailure ??= r.failure.detail
            else stderr.push(r.success.stderr)
          }
        }).pipe(
          Effect.ensuring(
            Effect.sync(() => {
              if (opts.lazy) for (const { fd } of verified) c.close(fd)
            })
          )
        )
        const after = yield* mountIds(tablePath)
        const said = stderr.join("\n").split("\n")
        const unmountedAt = new Set<string>()
        for (const { i, fd } of verified) {
          const t = targets[i] as Mounter.Target
          if (after !== undefined && !after.has(t.mountId)) {
            results[i] = { _tag: "Unmounted", target: t.path }
            unmountedAt.add(t.tablePath)
            continue
          }
          const arg = opts.lazy ? `/proc/${self}/fd/${fd}` : `${rootPath}${t.tablePath}`
          const line = said.find((l) => l.startsWith(`umount: ${arg}: `))
          const why =
            line !== undefined
              ? classify(line)
              : spawnFailure !== undefined
                ? { errno: "ENOEXEC", message: `the unmount helper could not run: ${spawnFailure}` }
                : after === undefined
                  ? { errno: "ESRCH", message: `the container's mount table ${tablePath} is gone` }
                  : classify(said.join(" ").trim())
          results[i] = { _tag: "Failed", target: t.path, failure: { target: t.path, ...why } }
        }
        // Only the top of a stack was reachable: the rest is tried again once it is on top.
        pending = pending.filter((i) => {
          const r = results[i]
          return (
            r?._tag === "Unverified" &&
            r.reason === "Moved" &&
            unmountedAt.has((targets[i] as Mounter.Target).tablePath)
          )
        })
      }
      return results.map(
        (r, i): Mounter.UnmountResult =>
          r ?? {
            _tag: "Unverified",
            target: (targets[i] as Mounter.Target).path,
            reason: "Moved",
            detail: "not reached"
          }
      )
    }, Effect.scoped)
    return Mounter.Mounter.of({
      unmount: (root, targets, opts) => unmount(root, targets, opts).pipe(Effect.provide(context))
    })
  })

/**
 * The `Mounter` of the mount namespace of host process `pid` (see
 * {@link makeIn}); fails to build with {@link MounterUnavailable} where the
 * FFI cannot load. Requires this host's spawner (not one wrapped with
 * `nsenter`: the layer enters the namespace itself), a FileSystem and the
 * real `Directories`.
 *
 * @since 0.2.0
 */
export const layerIn = (
  pid: number,
  options?: InOptions
): Layer.Layer<
  Mounter.Mounter,
  MounterUnavailable,
  ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem | Directory.Directories
> => Layer.effect(Mounter.Mounter, makeIn(pid, options))
