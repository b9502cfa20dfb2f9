/**
 * Mounts on the simulated host: the in-memory `Mounter` (what `umount2` does
 * on the real host) and the `umount`/`mount` interpreters (what util-linux
 * prints and how it exits). Each `Mounter` target is one operation of the
 * host journal (kind `unmount`); the interpreters are other processes, not
 * journalled. Faults armed with `MemoryHost.failUnmount` refuse a target on
 * every unmount path until cleared.
 *
 * @since 0.1.0
 */
import { type Directory, FileName, Mounter } from "@hostnode/core"
import * as Programs from "@hostnode/core/Programs"
import { Lexical } from "@hostnode/core/Programs"
import { Clock, Effect } from "effect"
import { Errno, type ErrnoCode, errnoTable } from "./errno.ts"
import type { HostState } from "./hostState.ts"
import { admit, complete } from "./journal.ts"
import type * as MemoryCommands from "./memoryCommands.ts"
import * as MemoryDirectories from "./memoryDirectories.ts"
import * as MemoryFileSystem from "./memoryFileSystem.ts"

/** strerror(3) for the codes an unmount meets; libuv's description otherwise. */
const strerror = (code: string): string =>
  ({
    EINVAL: "Invalid argument",
    ENOENT: "No such file or directory",
    EBUSY: "Device or resource busy",
    EPERM: "Operation not permitted",
    ENOTDIR: "Not a directory"
  })[code] ?? (code in errnoTable ? errnoTable[code as ErrnoCode][1] : code)

const absolute = (state: HostState, path: string): string => MemoryFileSystem.absolute(state.fs, path)

/** One unmount with the persistent faults applied; the errno code or undefined when unmounted. */
const unmountOne = (state: HostState, target: string, lazy: boolean): string | undefined => {
  const fault = state.unmountFaults.get(absolute(state, target))
  if (fault !== undefined) return fault
  const r = MemoryFileSystem.unmount(state, target, lazy)
  return r === undefined ? undefined : r.code
}

/**
 * Verifies one target below the root handle with the program every layer
 * runs (`Programs.verifyMount`, over the simulated host's handle calls: each
 * one an operation of the simulated process, so a concurrent writer can act
 * between them) and unmounts the very mount it verified; the result.
 */
const verifyAndUnmount = (
  state: HostState,
  dirs: Directory.Directories,
  root: MemoryDirectories.MemoryHandle,
  target: Programs.Target,
  lazy: boolean
): Effect.Effect<Programs.UnmountResult> =>
  Effect.gen(function* () {
    const rel = Lexical.below(root.path, target.path)
    if (rel === undefined) {
      return {
        _tag: "Unverified",
        target: target.path,
        reason: "OutsideRoot",
        detail: `not below the host root ${root.path}`
      } as const
    }
    const v = yield* dirs.run(
      Programs.verifyMount<Directory.Handle>(root, {
        components: Programs.components(FileName.encode(rel)),
        mountId: target.mountId
      })
    )
    switch (v._tag) {
      case "Unverified":
        return { _tag: "Unverified", target: target.path, reason: v.reason, detail: v.detail } as const
      case "Failed":
        return {
          _tag: "Failed",
          target: target.path,
          failure: { target: target.path, errno: v.errno, message: v.message }
        } as const
      case "Hung":
        return { _tag: "Hung", target: target.path, call: v.call, seconds: v.seconds, detail: v.detail } as const
      case "Verified": {
        // The mount the handle holds (its frame's, or a held file's), whatever the path leads to now.
        const held = MemoryDirectories.frameOf(v.handle) as MemoryDirectories.MemoryHandle
        const mount = MemoryDirectories.mountOf(held)
        // umount2 through a descriptor of a node inside a mount, not its root, is EINVAL.
        const atRoot = (held.node ?? held.frame.dir) === mount.root
        const paths = [absolute(state, target.path)]
        const gate = admit(state.journal, "unmount", paths)
        if (gate._tag === "Crashed") return yield* Effect.die(gate.defect)
        const fault = gate._tag === "Inject" ? gate.fault.code : state.unmountFaults.get(paths[0] as string)
        const code = fault ?? (atRoot ? MemoryFileSystem.unmountMount(state, mount, lazy, target.path)?.code : "EINVAL")
        complete(state.journal, "unmount", paths, code ?? "ok", gate._tag === "Inject")
        return code === undefined
          ? ({ _tag: "Unmounted", target: target.path } as const)
          : ({
              _tag: "Failed",
              target: target.path,
              failure: { target: target.path, errno: code, message: strerror(code) }
            } as const)
      }
    }
  })

/**
 * The in-memory `Mounter`: each target verified below the root handle as
 * `NodeMounter.layer` verifies it (the same program), then one `umount2` of
 * the simulated process, in order, through the journal (see the module comment).
 *
 * @since 0.1.0
 */
export const makeMounter = (state: HostState): Mounter.Mounter => {
  const dirs = MemoryDirectories.make(state)
  return Mounter.Mounter.of({
    // The simulated host has one process: its open files and working directory, in the mount or below it.
    holders: (asked) =>
      Effect.sync(() => {
        const all = MemoryFileSystem.mounts(state.fs)
        const pid = 4000 + state.journal.generation
        const out = new Map<number, Array<Mounter.Holder>>()
        for (const a of asked) {
          const ids = new Set([a.mountId])
          for (const m of all) if (m.parent !== undefined && ids.has(m.parent.id)) ids.add(m.id)
          const held: Array<Mounter.Holder> = []
          for (const f of state.fs.openFiles) {
            if (
              !f.closed &&
              f.generation === state.journal.generation &&
              f.mount !== undefined &&
              ids.has(f.mount.id)
            ) {
              held.push({ pid, command: "hostnode", how: "file", detail: `process ${pid} has ${f.path} open` })
            }
          }
          out.set(a.mountId, held)
        }
        return out
      }),
    unmount: (root, targets, options) =>
      Effect.suspend(() => {
        const handle = MemoryDirectories.frameOf(root)
        if (handle === undefined)
          return Effect.die(new Error("MemoryMounts: the root handle is not the simulated host's"))
        return Effect.forEach(targets, (target) => verifyAndUnmount(state, dirs, handle, target, options.lazy))
      })
  })
}

/** util-linux umount's message for a failed target. */
const umountMessage = (target: string, code: string): string => {
  switch (code) {
    case "EINVAL":
      return `umount: ${target}: not mounted.`
    case "ENOENT":
      return `umount: ${target}: no mount point specified.`
    case "EBUSY":
      return `umount: ${target}: target is busy.`
    case "EPERM":
      return `umount: ${target}: must be superuser to unmount.`
    default:
      return `umount: ${target}: umount failed: ${strerror(code)}.`
  }
}

/** The mount points at or below the mount `target` reaches, deepest (and newest) first, for `umount -R`. */
const recursiveTargets = (state: HostState, target: string): Array<string> | undefined => {
  const table = MemoryFileSystem.mountEntries(state.fs)
  const top = absolute(state, target)
  const own = table.filter((e) => e.mountPoint === top)
  if (own.length === 0) return undefined
  const topId = (Programs.stackTop(own) ?? own[own.length - 1])?.id as number
  const below = new Set([topId])
  for (const e of table) if (below.has(e.parentId) && e.id !== e.parentId) below.add(e.id)
  return table
    .filter((e) => below.has(e.id))
    .sort((a, b) => b.mountPoint.split("/").length - a.mountPoint.split("/").length || b.id - a.id)
    .map((e) => e.mountPoint)
}

/**
 * `umount [-l] [-R] [-c] [--] targets...`: each target unmounted in order, a
 * failure printed as util-linux prints it, exit 32 when any failed.
 *
 * @since 0.1.0
 */
export const umountInterpreter =
  (state: HostState): MemoryCommands.Interpreter =>
  (args) =>
    Effect.sync(() => {
      let lazy = false
      let recursive = false
      const targets: Array<string> = []
      let options = true
      for (const a of args) {
        if (options && a === "--") options = false
        // -c (--no-canonicalize) changes nothing here: paths are taken as given anyway.
        else if (options && /^-[lRfc]+$/.test(a)) {
          if (a.includes("l")) lazy = true
          if (a.includes("R")) recursive = true
        } else if (options && a === "--no-canonicalize") {
          // as -c
        } else if (options && (a === "--lazy" || a === "--recursive")) {
          if (a === "--lazy") lazy = true
          else recursive = true
        } else targets.push(a)
      }
      if (targets.length === 0) return { stdout: "", stderr: "umount: bad usage\n", exitCode: 1 }
      const errors: Array<string> = []
      for (const target of targets) {
        const all = recursive ? (recursiveTargets(state, target) ?? [target]) : [target]
        for (const t of all) {
          const code = unmountOne(state, t, lazy)
          if (code !== undefined) {
            errors.push(umountMessage(target, code))
            break
          }
        }
      }
      return {
        stdout: "",
        stderr: errors.map((e) => `${e}\n`).join(""),
        exitCode: errors.length > 0 ? 32 : 0
      }
    })

/**
 * `mount -t tmpfs [-o options] source target`, `mount --bind source target`
 * (also `-B`, `-o bind`) and `mount --make-shared|--make-slave|--make-private
 * target`; util-linux's messages and exit 32 on failure.
 *
 * @since 0.1.0
 */
export const mountInterpreter =
  (state: HostState): MemoryCommands.Interpreter =>
  (args) =>
    Effect.gen(function* () {
      let type: string | undefined
      let isBind = false
      let make: MemoryFileSystem.PropagationKind | undefined
      const positional: Array<string> = []
      for (let i = 0; i < args.length; i++) {
        const a = args[i]!
        if (a === "--make-shared" || a === "--make-slave" || a === "--make-private") {
          make = a.slice("--make-".length) as MemoryFileSystem.PropagationKind
        } else if (a === "-t" || a === "--types") type = args[++i]
        else if (a === "-o" || a === "--options") {
          if ((args[++i] ?? "").split(",").includes("bind")) isBind = true
        } else if (a === "--bind" || a === "-B") isBind = true
        else if (a !== "--") positional.push(a)
      }
      if (make !== undefined) {
        const at = positional[0]
        if (at === undefined || positional.length > 1) return { stdout: "", stderr: "mount: bad usage\n", exitCode: 1 }
        return MemoryFileSystem.setPropagation(state.fs, at, make) instanceof Errno
          ? { stdout: "", stderr: `mount: ${at}: not mount point or bad option.\n`, exitCode: 32 }
          : { stdout: "", stderr: "", exitCode: 0 }
      }
      const [source, target] = positional
      if (source === undefined || target === undefined || positional.length > 2) {
        return { stdout: "", stderr: "mount: bad usage\n", exitCode: 1 }
      }
      if (!isBind && type !== "tmpfs") {
        return { stdout: "", stderr: `mount: ${target}: unknown filesystem type '${type ?? ""}'.\n`, exitCode: 32 }
      }
      const now = yield* Clock.currentTimeMillis
      const r = isBind
        ? MemoryFileSystem.bindMount(state.fs, source, target)
        : MemoryFileSystem.mountTmpfs(state.fs, target, now)
      if (!(r instanceof Errno)) return { stdout: "", stderr: "", exitCode: 0 }
      const which = isBind && MemoryFileSystem.isDirectoryAt(state.fs, target) ? "source" : "target"
      const stderr =
        which === "source"
          ? `mount: ${target}: special device ${source} does not exist.`
          : r.code === "ENOTDIR"
            ? `mount: ${target}: mount point is not a directory.`
            : `mount: ${target}: mount point does not exist.`
      return { stdout: "", stderr: `${stderr}\n`, exitCode: 32 }
    })

/** The `umount` and `mount` interpreters over `state`, for a `MemoryCommands` spawner. */
export const interpreters = (state: HostState): ReadonlyMap<string, MemoryCommands.Interpreter> =>
  new Map([
    ["umount", umountInterpreter(state)],
    ["mount", mountInterpreter(state)]
  ])
