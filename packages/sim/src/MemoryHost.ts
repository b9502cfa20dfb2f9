/**
 * The simulated host that node agents are property-tested against: one layer
 * providing `FileSystem`, `Path`, `Directory.Directories`, the in-memory
 * `Mounter`, a recording `Systemd` and the `MemoryHost` service for inspection
 * and fault injection, all over a single in-memory host state: the file system
 * with its mount tree (`/proc/<pid>/mountinfo` serves the table), the journal
 * every simulated operation passes through (operation log, injected faults,
 * the crash seam) and the unmount faults.
 *
 * @since 0.1.0
 */
import { Directory, Mounter, type MountInfo, type Systemd } from "@hostnode/core"
import { Clock, Context, Deferred, Effect, FileSystem, Layer, Path, Schema } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import { Errno, type ErrnoCode } from "./internal/errno.ts"
import type { HostState } from "./internal/hostState.ts"
import * as Journal_ from "./internal/journal.ts"
import * as MemoryCommands from "./internal/memoryCommands.ts"
import * as MemoryDirectories from "./internal/memoryDirectories.ts"
import type { DumpEntry, FixtureEntry } from "./internal/memoryFileSystem/seed.ts"
import * as MemoryFileSystem from "./internal/memoryFileSystem.ts"
import * as MemoryMounts from "./internal/memoryMounts.ts"
import * as RecordingSystemd from "./RecordingSystemd.ts"

/**
 * Fail the `nth` (1-based, default 1) operation of `kind` started after the
 * fault is installed, optionally only counting operations that touch `path`,
 * with errno `code`. The failing operation changes nothing. A fault fires once.
 *
 * @category models
 * @since 0.1.0
 */
export interface Fault {
  readonly kind: string
  readonly code: ErrnoCode
  readonly nth?: number | undefined
  readonly path?: string | undefined
  /** The syscall the error names; defaults to the one Node reports for `kind`. */
  readonly syscall?: string | undefined
}

/**
 * One operation of the simulated process, in the order it happened.
 * `kind` is the `FileSystem` method (`"rename"`) or, for an open file,
 * `"File.<method>"` (`"File.writeAll"`); `paths` are the absolute, normalised
 * paths it touched; `outcome` is `"ok"`, the errno code it failed with
 * (`"ENOENT"`, also `"ERR_FS_EISDIR"` and friends), `"BadArgument"`, or
 * `"crashed"` when it was refused because the process had crashed.
 *
 * @category models
 * @since 0.1.0
 */
export interface Operation {
  readonly seq: number
  readonly kind: string
  readonly paths: ReadonlyArray<string>
  readonly outcome: string
  /** True when the failure was injected by a fault rather than simulated. */
  readonly injected: boolean
}

/**
 * A tree as a flat record of absolute paths; missing parents are 0755 root directories.
 *
 * @category models
 * @since 0.1.0
 */
export type Fixture = Readonly<Record<string, FixtureEntry>>

/**
 * How to build a host. Every field is optional: `MemoryHost.layer()` is an empty Linux root.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** Initial tree, e.g. `{ "/etc/kubernetes/kubelet.conf": "text" }`; parents are 0755 root directories. */
  readonly files?: Fixture | undefined
  /** The process's working directory for relative paths (default "/"); created if missing. */
  readonly cwd?: string | undefined
  /** The process umask (default 0o022). */
  readonly umask?: number | undefined
  /** Where `makeTempDirectory` creates directories by default (default "/tmp", created 1777). */
  readonly tmpdir?: string | undefined
  /**
   * How the root file system reports directory sizes (default "ext4"); set
   * "tmpfs" to compare stat results with a real tmpfs.
   */
  readonly flavor?: MemoryFileSystem.Flavor | undefined
}

/**
 * Inspection and fault injection for a simulated host. None of these count
 * as operations of the simulated process, and they work after a crash.
 *
 * @category services
 * @since 0.1.0
 */
export interface MemoryHost {
  /** The host state itself, for the simulations built on top of it. */
  readonly state: HostState
  /** The tree at `root` (default "/") as a flat, deterministically ordered record; see `DumpEntry`. */
  readonly dump: (root?: string) => Effect.Effect<Record<string, DumpEntry>>
  /** Every operation so far, oldest first. */
  readonly operations: Effect.Effect<ReadonlyArray<Operation>>
  /** Forgets the operations logged so far (sequence numbers keep counting). */
  readonly clearOperations: Effect.Effect<void>
  /** Arms a fault: the `nth` matching operation fails with the errno and changes nothing. */
  readonly failNth: (fault: Fault) => Effect.Effect<void>
  /** Disarms all faults that have not fired. */
  readonly clearFaults: Effect.Effect<void>
  /**
   * Crashes the simulated process after `n` more operations: those `n`
   * complete, every later one dies with `MemoryHostCrashed` (reason
   * `ProcessCrashed`) and changes nothing. Scoped finalizers of the dead
   * process (temporary directory removal) do not run. `crashAfter(0)`
   * crashes now.
   */
  readonly crashAfter: (n: number) => Effect.Effect<void>
  /** True once the simulated process has crashed and until `restart`. */
  readonly crashed: Effect.Effect<boolean>
  /**
   * Starts a new process on the same host: operations run again, files
   * opened by the crashed process are dead (using them dies with reason
   * `StaleHandle`), an armed crash countdown is cancelled. The tree is
   * exactly what the crash left.
   */
  readonly restart: Effect.Effect<void>
  /** Mounts a new empty tmpfs (its own device 0:N) on top of whatever is mounted at directory `target`. */
  readonly tmpfs: (target: string) => Effect.Effect<void, MountError>
  /**
   * Bind-mounts `source` at `target` (not recursive): a directory on a
   * directory, or a regular file on a regular file, as the
   * kubelet does for a `subPath` of a file; both then show the same inodes. On
   * a shared mount it is propagated to that mount's peers and slaves.
   */
  readonly bind: (source: string, target: string) => Effect.Effect<void, MountError>
  /**
   * How the mount whose root `target` is takes part in mount propagation, as
   * `mount --make-shared|--make-slave|--make-private` sets it:
   * a mount made on a shared mount is copied onto its peers (`shared:N` in
   * the table) and slaves (`master:N`), and detaching one detaches its
   * copies, as the kernel does.
   */
  readonly propagation: (target: string, kind: "shared" | "slave" | "private") => Effect.Effect<void, MountError>
  /**
   * Unmounts the top mount at `target` as `umount2` would, directly on the
   * host (not an operation of the simulated process, so no fault or crash
   * applies): for fixtures that take down what they mounted. `lazy` detaches
   * the mount and everything below it (`MNT_DETACH`); without it a busy mount
   * (child mounts, open files, a working directory in it) fails with `EBUSY`.
   */
  readonly unmount: (target: string, options?: { readonly lazy?: boolean }) => Effect.Effect<void, MountError>
  /** The current mount table, what `/proc/self/mountinfo` renders. */
  readonly mountTable: Effect.Effect<ReadonlyArray<MountInfo.MountEntry>>
  /**
   * Makes every unmount of `target` (the `Mounter`'s and `umount`'s) fail with
   * `errno` and change nothing, until `clearUnmountFaults`: a mount held busy
   * by something outside the agent's control.
   */
  readonly failUnmount: (target: string, errno: ErrnoCode) => Effect.Effect<void>
  /** Disarms every `failUnmount`. */
  readonly clearUnmountFaults: Effect.Effect<void>
  /**
   * A dead volume: the file system mounted at `path` (the one a lookup of
   * `path` reaches) stops answering, as a dead NFS server or a FUSE daemon
   * that never replies. Every handle call that would ask it waits, until
   * `release` or until its deadline (`Deadline`: the call timeout, or the
   * operation's deadline), then fails `Hung`: a lookup of a name in it, a
   * listing, an open or a fresh `stat` of something on it, a read, a write.
   * What the kernel does without asking a file system does not wait:
   * identifying a node (`Directories.identify`, cached attributes and the
   * mount id), holding it (`openPath`), and unmounting it.
   */
  readonly hang: (path: string) => Effect.Effect<void>
  /** The file system mounted at `path` answers again: the calls waiting on it go on. */
  readonly release: (path: string) => Effect.Effect<void>
  /**
   * The adversary seam: `act` runs before every later operation of the
   * simulated process (file system, directory handles, unmounts), told which
   * one comes next, and may change the host directly (swap a directory for a
   * link, bind-mount something, rename a parent: see `MemoryAdversary`), as a
   * pod's process writing concurrently would between two system calls.
   * `undefined` removes it. Its own changes are not operations of the process.
   */
  readonly adversary: (act: ((upcoming: Journal_.Upcoming) => void) | undefined) => Effect.Effect<void>
}

/**
 * The key of the inspection service, provided by `layer`.
 *
 * @category services
 * @since 0.1.0
 */
export const MemoryHost = Context.Service<MemoryHost>("@hostnode/sim/MemoryHost")

/**
 * True when `u` is the defect a crashed simulated process dies with: a
 * `MemoryHostCrashed` (its `operation` and `paths` name what was refused;
 * reason `ProcessCrashed`, or `StaleHandle` with the `fd` of a file the
 * crashed process opened).
 *
 * @category errors
 * @since 0.1.0
 */
export const isCrash = (u: unknown): u is Journal_.MemoryHostCrashed => u instanceof Journal_.MemoryHostCrashed

const problemMessages = {
  NotAbsolute: "is not absolute",
  ParentNotDirectory: "has a parent that is not a directory",
  AlreadyExists: "already exists (or is listed twice)",
  EmptySymlinkTarget: "is a symlink with an empty target"
} as const

/** Why `FixtureError`: one reason, its tag says which. */
class FixtureProblem extends Schema.Error<FixtureProblem>("@hostnode/sim/MemoryHost/FixtureProblem")({
  _tag: Schema.Literals(["NotAbsolute", "ParentNotDirectory", "AlreadyExists", "EmptySymlinkTarget"])
}) {
  override get message(): string {
    return problemMessages[this._tag]
  }
}

/**
 * Raised (as a defect, while building the layer) when `options.files` or
 * `options.cwd` cannot be created: a bad fixture is a bug in the test, not a
 * runtime condition the code under test should handle. `path` is the
 * fixture key (or `cwd`); `reason._tag` says why: `NotAbsolute`,
 * `ParentNotDirectory` (a file or a symlink is in the way), `AlreadyExists`
 * (or listed twice), `EmptySymlinkTarget` (which `symlink(2)` refuses).
 *
 * @category errors
 * @since 0.1.0
 */
export class FixtureError extends Schema.TaggedError<FixtureError>()("MemoryHostFixtureError", {
  reason: FixtureProblem,
  path: Schema.String
}) {
  override get message(): string {
    return `MemoryHost fixture: ${JSON.stringify(this.path)} ${this.reason.message}`
  }
}

/** The defect for a fixture entry that cannot be created. */
const fixtureError = (problem: MemoryFileSystem.SeedProblem): FixtureError =>
  new FixtureError({ reason: new FixtureProblem({ _tag: problem.reason }), path: problem.path })

/** Why `MountError`: a tmpfs could not be mounted at the target; `errno` says why. */
class Tmpfs extends Schema.Error<Tmpfs>("@hostnode/sim/MemoryHost/Tmpfs")({
  _tag: Schema.tag("Tmpfs"),
  errno: Schema.String
}) {
  override get message(): string {
    return this.errno
  }
}

/** Why `MountError`: `source` (a directory, or a regular file) could not be bind-mounted at the target. */
class Bind extends Schema.Error<Bind>("@hostnode/sim/MemoryHost/Bind")({
  _tag: Schema.tag("Bind"),
  source: Schema.String,
  errno: Schema.String
}) {
  override get message(): string {
    return this.errno
  }
}

/** Why `MountError`: the mount at the target could not be unmounted (`lazy`: with `MNT_DETACH`). */
class Unmount extends Schema.Error<Unmount>("@hostnode/sim/MemoryHost/Unmount")({
  _tag: Schema.tag("Unmount"),
  lazy: Schema.Boolean,
  errno: Schema.String
}) {
  override get message(): string {
    return this.errno
  }
}

/** Why `MountError`: the propagation of the mount at the target could not be changed (it is no mount's root). */
class Propagation extends Schema.Error<Propagation>("@hostnode/sim/MemoryHost/Propagation")({
  _tag: Schema.tag("Propagation"),
  kind: Schema.Literals(["shared", "slave", "private"]),
  errno: Schema.String
}) {
  override get message(): string {
    return `make-${this.kind}: ${this.errno}`
  }
}

/**
 * A mount a fixture asked for (`tmpfs`, `bind`, `propagation`, `unmount`)
 * could not be made or taken down at `target`; `reason` says which kind
 * (`Tmpfs`, `Bind` with its `source`, `Propagation` with its `kind`,
 * `Unmount` with `lazy`), with the `errno`.
 *
 * @category errors
 * @since 0.1.0
 */
export class MountError extends Schema.TaggedError<MountError>()("MemoryHostMountError", {
  reason: Schema.Union([Tmpfs, Bind, Propagation, Unmount]),
  target: Schema.String
}) {
  override get message(): string {
    const r = this.reason
    return r._tag === "Tmpfs"
      ? `MemoryHost: cannot mount a tmpfs at ${JSON.stringify(this.target)}: ${r.message}`
      : r._tag === "Bind"
        ? `MemoryHost: cannot bind ${JSON.stringify(r.source)} at ${JSON.stringify(this.target)}: ${r.message}`
        : r._tag === "Unmount"
          ? `MemoryHost: cannot unmount ${JSON.stringify(this.target)}${r.lazy ? " (lazy)" : ""}: ${r.message}`
          : `MemoryHost: cannot change the propagation of ${JSON.stringify(this.target)}: ${r.message}`
  }
}

const tmpfs = Effect.fn("MemoryHost.tmpfs")(function* (state: HostState, target: string) {
  const now = yield* Clock.currentTimeMillis
  const r = MemoryFileSystem.mountTmpfs(state.fs, target, now)
  if (r instanceof Errno) return yield* new MountError({ reason: new Tmpfs({ errno: r.code }), target })
})

const bind = Effect.fn("MemoryHost.bind")(function* (state: HostState, source: string, target: string) {
  const r = MemoryFileSystem.bindMount(state.fs, source, target)
  if (r instanceof Errno) return yield* new MountError({ reason: new Bind({ source, errno: r.code }), target })
})

const propagation = Effect.fn("MemoryHost.propagation")(function* (
  state: HostState,
  target: string,
  kind: "shared" | "slave" | "private"
) {
  const r = MemoryFileSystem.setPropagation(state.fs, target, kind)
  if (r instanceof Errno) return yield* new MountError({ reason: new Propagation({ kind, errno: r.code }), target })
})

const unmount = Effect.fn("MemoryHost.unmount")(function* (state: HostState, target: string, lazy: boolean) {
  const r = MemoryFileSystem.unmount(state, target, lazy)
  if (r !== undefined) return yield* new MountError({ reason: new Unmount({ lazy, errno: r.code }), target })
})

const makeService = (state: HostState): MemoryHost => ({
  state,
  dump: (root) => Effect.sync(() => MemoryFileSystem.dumpTree(state.fs, root)),
  operations: Effect.sync(() => [...state.journal.operations]),
  clearOperations: Effect.sync(() => {
    state.journal.operations.length = 0
  }),
  failNth: (fault) =>
    Effect.sync(() => {
      // Match faults against the same absolute, normalised paths the journal records.
      const path = fault.path === undefined ? undefined : resolvePath(state, fault.path)
      state.journal.faults.push({ fault: { ...fault, path }, seen: 0 })
    }),
  clearFaults: Effect.sync(() => {
    state.journal.faults.length = 0
  }),
  crashAfter: (n) =>
    Effect.sync(() => {
      if (n <= 0) state.journal.crashed = true
      else state.journal.crashCountdown = n
    }),
  crashed: Effect.sync(() => state.journal.crashed),
  restart: Effect.sync(() => {
    state.journal.crashed = false
    state.journal.crashCountdown = undefined
    state.journal.generation += 1
  }),
  tmpfs: (target) => tmpfs(state, target),
  bind: (source, target) => bind(state, source, target),
  propagation: (target, kind) => propagation(state, target, kind),
  unmount: (target, options) => unmount(state, target, options?.lazy === true),
  mountTable: Effect.sync(() => MemoryFileSystem.mountEntries(state.fs)),
  failUnmount: (target, errno) =>
    Effect.sync(() => {
      state.unmountFaults.set(resolvePath(state, target), errno)
    }),
  clearUnmountFaults: Effect.sync(() => {
    state.unmountFaults.clear()
  }),
  adversary: (act) =>
    Effect.sync(() => {
      state.journal.adversary = act
    }),
  hang: (path) =>
    Effect.sync(() => {
      const fs = fsAt(state, path)
      if (fs !== undefined && !state.hangs.has(fs)) state.hangs.set(fs, Deferred.makeUnsafe<void>())
    }),
  release: (path) =>
    Effect.suspend(() => {
      const fs = fsAt(state, path)
      const waiters = fs === undefined ? undefined : state.hangs.get(fs)
      if (fs === undefined || waiters === undefined) return Effect.void
      state.hangs.delete(fs)
      return Deferred.succeed(waiters, undefined)
    })
})

/** The file system a lookup of `path` reaches (the top mount's, for a mount point). */
const fsAt = (state: HostState, path: string): MemoryFileSystem.Filesystem | undefined => {
  const found = MemoryFileSystem.internals.lookup(state.fs, resolvePath(state, path), true)
  return "node" in found ? found.node.fs : undefined
}

/**
 * A spawner with only `umount` and `mount` over `state` (see `interpreters`),
 * so the command-based `Mounter` (`NodeMounter.layerCommand`) runs against
 * the simulated host. `record` sees every invocation.
 *
 * @category constructors
 * @since 0.1.0
 */
export const mountCommands = (
  state: HostState,
  record?: (invocation: MemoryCommands.Invocation) => void
): ChildProcessSpawner.ChildProcessSpawner["Service"] =>
  MemoryCommands.makeSpawner(MemoryMounts.interpreters(state), record)

const resolvePath = (state: HostState, path: string): string => MemoryFileSystem.absolute(state.fs, path)

/** Builds a host state: an ext4-like root with `/tmp`, the fixture, and the working directory. */
const makeState: (options?: Options) => Effect.Effect<HostState> = Effect.fn("MemoryHost.makeState")(function* (
  options: Options = {}
) {
  const now = yield* Clock.currentTimeMillis
  const fs = MemoryFileSystem.makeState({
    now,
    umask: options.umask,
    tmpdir: options.tmpdir,
    flavor: options.flavor
  })
  const problem = MemoryFileSystem.seed(fs, options.files ?? {}, now)
  if (problem !== undefined) return yield* Effect.die(fixtureError(problem))
  if (options.cwd !== undefined) {
    if (!options.cwd.startsWith("/")) {
      return yield* Effect.die(fixtureError({ reason: "NotAbsolute", path: options.cwd }))
    }
    const cwd = MemoryFileSystem.normalizeAbsolute(options.cwd)
    if (MemoryFileSystem.mkdirAll(fs, cwd, 0o755, now) === undefined) {
      return yield* Effect.die(fixtureError({ reason: "ParentNotDirectory", path: cwd }))
    }
    fs.cwd = cwd
  }
  return { fs, journal: Journal_.makeJournal(), unmountFaults: new Map(), hangs: new Map() }
})

/**
 * A fresh simulated host: `FileSystem` (Linux semantics for root, errors as
 * NodeFileSystem raises them), `Path` (effect's POSIX `Path.layer`), the
 * directory handles (`MemoryDirectories`), the in-memory `Mounter`, a
 * `Systemd` that records its calls (`RecordingSystemd`) and the
 * `MemoryHost` service. Each build of the layer is
 * a new, independent host.
 *
 * @example
 * ```ts
 * import { MemoryHost } from "@hostnode/sim"
 * import { Effect, FileSystem } from "effect"
 *
 * // A host with one file; the program changes it; the dump is the tree after it:
 * // { "/etc/kubernetes/kubelet.conf": { type: "File", mode: 0o644, uid: 0, gid: 0, content: "new" }, ... }
 * export const tree = Effect.gen(function* () {
 *   const fs = yield* FileSystem.FileSystem
 *   yield* fs.writeFileString("/etc/kubernetes/kubelet.conf", "new")
 *   const host = yield* MemoryHost.MemoryHost
 *   return yield* host.dump("/etc/kubernetes")
 * }).pipe(Effect.provide(MemoryHost.layer({ files: { "/etc/kubernetes/kubelet.conf": "old" } })))
 * ```
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (
  options: Options = {}
): Layer.Layer<
  | MemoryHost
  | FileSystem.FileSystem
  | Path.Path
  | Mounter.Mounter
  | Directory.Directories
  | Systemd.Systemd
  | RecordingSystemd.RecordingSystemd
> =>
  Layer.mergeAll(
    Layer.effectContext(
      Effect.map(makeState(options), (state) =>
        Context.make(MemoryHost, makeService(state)).pipe(
          Context.add(FileSystem.FileSystem, MemoryFileSystem.make(state)),
          Context.add(Mounter.Mounter, MemoryMounts.makeMounter(state)),
          Context.add(Directory.Directories, MemoryDirectories.make(state))
        )
      )
    ),
    Path.layer,
    RecordingSystemd.layer
  )
