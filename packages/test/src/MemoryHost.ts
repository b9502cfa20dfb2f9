/**
 * The simulated host that node agents are property-tested against: one
 * layer providing `FileSystem`, `Path` and the `MemoryHost` service for
 * inspection and fault injection, all over a single in-memory host state.
 *
 * Boundary: the host state is the file system with its mount tree (see
 * `MemoryFileSystem`; `/proc/<pid>/mountinfo` serves the table), the journal
 * every simulated operation passes through (operation log, injected faults,
 * the crash seam) and the unmount faults. The layer also provides the
 * in-memory `Mounter` (`MemoryMounts`); the `umount`/`mount` interpreters for
 * a command line are `interpreters(state)`.
 *
 * @since 0.1.0
 */
import { Directory, Mounter, type MountInfo, type Systemd } from "@hostnode/core"
import { Clock, Context, Deferred, Effect, FileSystem, Layer, Path, Schema } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import type * as Errno from "./internal/errno.ts"
import * as Journal_ from "./internal/journal.ts"
import * as MemoryCommands from "./internal/memoryCommands.ts"
import * as MemoryDirectories from "./internal/memoryDirectories.ts"
import * as MemoryFileSystem from "./internal/memoryFileSystem.ts"
import * as MemoryMounts from "./internal/memoryMounts.ts"
import * as RecordingSystemd from "./RecordingSystemd.ts"

/**
 * An errno name (`ENOENT`, `EBUSY`, ...) a simulated call fails with.
 *
 * @since 0.1.0
 */
export type ErrnoCode = Errno.ErrnoCode

/**
 * A fault to inject: which kind of operation, on which path, fails with which errno.
 *
 * @since 0.1.0
 */
export type Fault = Journal_.Fault

/**
 * One operation of the simulated process, as the journal logged it.
 *
 * @since 0.1.0
 */
export type Operation = Journal_.Operation

/**
 * The operation about to run, as the adversary seam shows it.
 *
 * @since 0.2.0
 */
export type Upcoming = Journal_.Upcoming

/**
 * The defect of a crashed simulated process; see `crashAfter` and `isCrash`.
 *
 * @since 0.1.0
 */
export const MemoryHostCrashed = Journal_.MemoryHostCrashed

/**
 * The defect of a crashed simulated process.
 *
 * @since 0.1.0
 */
export type MemoryHostCrashed = Journal_.MemoryHostCrashed

/**
 * Why `MemoryHostCrashed`: the simulated process had crashed when the operation was asked for.
 *
 * @since 0.3.0
 */
export const ProcessCrashed = Journal_.ProcessCrashed

/**
 * Why `MemoryHostCrashed`: the simulated process had crashed when the operation was asked for.
 *
 * @since 0.3.0
 */
export type ProcessCrashed = Journal_.ProcessCrashed

/**
 * Why `MemoryHostCrashed`: an open file of a crashed process was used after `restart` (`fd` is its descriptor).
 *
 * @since 0.3.0
 */
export const StaleHandle = Journal_.StaleHandle

/**
 * Why `MemoryHostCrashed`: an open file of a crashed process was used after `restart` (`fd` is its descriptor).
 *
 * @since 0.3.0
 */
export type StaleHandle = Journal_.StaleHandle

/**
 * Why a simulated operation died with `MemoryHostCrashed`: `ProcessCrashed` or `StaleHandle`.
 *
 * @since 0.3.0
 */
export const MemoryHostCrashedReason = Journal_.MemoryHostCrashedReason

/**
 * Why a simulated operation died with `MemoryHostCrashed`: `ProcessCrashed` or `StaleHandle`.
 *
 * @since 0.3.0
 */
export type MemoryHostCrashedReason = Journal_.MemoryHostCrashedReason

/**
 * Re-exported so a fixture can be written without importing MemoryFileSystem.
 *
 * @since 0.1.0
 */
export type Fixture = MemoryFileSystem.Fixture
/**
 * Re-exported so a fixture can be written without importing MemoryFileSystem.
 *
 * @since 0.1.0
 */
export type FixtureEntry = MemoryFileSystem.FixtureEntry
/**
 * One path of `dump`; re-exported for assertions.
 *
 * @since 0.1.0
 */
export type DumpEntry = MemoryFileSystem.DumpEntry

/**
 * The single state object of a simulated host. Every simulation (files
 * today; mounts, units, links later) keeps its state here so inspection,
 * faults and crashes see one consistent host.
 *
 * @since 0.1.0
 */
export interface HostState {
  readonly fs: MemoryFileSystem.FsState
  readonly journal: Journal_.Journal
  /** Targets (absolute, normalised) every unmount refuses with the errno, until cleared; see `failUnmount`. */
  readonly unmountFaults: Map<string, ErrnoCode>
  /** File systems that do not answer, each with what its waiters wait for; see `hang`. */
  readonly hangs: Map<MemoryFileSystem.Filesystem, Deferred.Deferred<void>>
}

/**
 * How to build a host. Every field is optional: `MemoryHost.layer()` is an empty Linux root.
 *
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
  readonly tmpfs: (target: string) => Effect.Effect<void, MemoryMounts.MountError>
  /**
   * Bind-mounts `source` at `target` (not recursive): a directory on a
   * directory, or (since 0.4.0) a regular file on a regular file, as the
   * kubelet does for a `subPath` of a file; both then show the same inodes. On
   * a shared mount it is propagated to that mount's peers and slaves.
   */
  readonly bind: (source: string, target: string) => Effect.Effect<void, MemoryMounts.MountError>
  /**
   * How the mount whose root `target` is takes part in mount propagation, as
   * `mount --make-shared|--make-slave|--make-private` sets it (since 0.4.0):
   * a mount made on a shared mount is copied onto its peers (`shared:N` in
   * the table) and slaves (`master:N`), and detaching one detaches its
   * copies, as the kernel does.
   */
  readonly propagation: (
    target: string,
    kind: "shared" | "slave" | "private"
  ) => Effect.Effect<void, MemoryMounts.MountError>
  /** The current mount table, what `/proc/self/mountinfo` renders. */
  readonly mountTable: Effect.Effect<MountInfo.MountTable>
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
  readonly adversary: (act: ((upcoming: Upcoming) => void) | undefined) => Effect.Effect<void>
}

/**
 * The key of the inspection service, provided by `layer`.
 *
 * @since 0.1.0
 */
export const MemoryHost = Context.Service<MemoryHost>("@hostnode/test/MemoryHost")

/**
 * The inspection service's shape, the same as {@link MemoryHost}; kept for code written against the former name.
 *
 * @since 0.1.0
 */
export type Service = MemoryHost

/**
 * True when `u` is the defect a crashed simulated process dies with.
 *
 * @since 0.1.0
 */
export const isCrash = (u: unknown): u is MemoryHostCrashed => u instanceof MemoryHostCrashed

/**
 * Why `FixtureError`: a fixture path (or `cwd`) is relative.
 *
 * @since 0.3.0
 */
export class NotAbsolute extends Schema.TaggedError<NotAbsolute>()("NotAbsolute", {}) {
  override get message(): string {
    return "is not absolute"
  }
}

/**
 * Why `FixtureError`: a parent of the path is not a directory (a file or a symlink is in the way).
 *
 * @since 0.3.0
 */
export class ParentNotDirectory extends Schema.TaggedError<ParentNotDirectory>()("ParentNotDirectory", {}) {
  override get message(): string {
    return "has a parent that is not a directory"
  }
}

/**
 * Why `FixtureError`: the path exists already, or the fixture lists it twice.
 *
 * @since 0.3.0
 */
export class AlreadyExists extends Schema.TaggedError<AlreadyExists>()("AlreadyExists", {}) {
  override get message(): string {
    return "already exists (or is listed twice)"
  }
}

/**
 * Why `FixtureError`: a symlink entry has an empty target, which `symlink(2)` refuses.
 *
 * @since 0.3.0
 */
export class EmptySymlinkTarget extends Schema.TaggedError<EmptySymlinkTarget>()("EmptySymlinkTarget", {}) {
  override get message(): string {
    return "is a symlink with an empty target"
  }
}

/**
 * Why a fixture could not be created.
 *
 * @since 0.3.0
 */
export const FixtureErrorReason = Schema.Union([NotAbsolute, ParentNotDirectory, AlreadyExists, EmptySymlinkTarget])

/**
 * Why a fixture could not be created.
 *
 * @since 0.3.0
 */
export type FixtureErrorReason = typeof FixtureErrorReason.Type

/**
 * Raised (as a defect, while building the layer) when `options.files` or
 * `options.cwd` cannot be created: a bad fixture is a bug in the test, not a
 * runtime condition the code under test should handle. `path` is the
 * fixture key (or `cwd`), `reason` says why.
 *
 * @since 0.1.0
 */
export class FixtureError extends Schema.TaggedError<FixtureError>()("MemoryHostFixtureError", {
  reason: FixtureErrorReason,
  path: Schema.String
}) {
  override get message(): string {
    return `MemoryHost fixture: ${JSON.stringify(this.path)} ${this.reason.message}`
  }
}

const fixtureReasons: Record<MemoryFileSystem.SeedProblem["reason"], () => FixtureErrorReason> = {
  NotAbsolute: () => new NotAbsolute(),
  ParentNotDirectory: () => new ParentNotDirectory(),
  AlreadyExists: () => new AlreadyExists(),
  EmptySymlinkTarget: () => new EmptySymlinkTarget()
}

/** The defect for a fixture entry that cannot be created. */
const fixtureError = (problem: MemoryFileSystem.SeedProblem): FixtureError =>
  new FixtureError({ reason: fixtureReasons[problem.reason](), path: problem.path })

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
  tmpfs: (target) => MemoryMounts.tmpfs(state, target),
  bind: (source, target) => MemoryMounts.bind(state, source, target),
  propagation: (target, kind) => MemoryMounts.propagation(state, target, kind),
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
 * The `umount` and `mount` interpreters over `state`, for a `MemoryCommands`
 * spawner (a node composition adds them next to `systemctl`, `ip`, ...).
 *
 * @since 0.1.0
 */
export const interpreters = (state: HostState): ReadonlyMap<string, MemoryCommands.Interpreter> =>
  new Map([
    ["umount", MemoryMounts.umountInterpreter(state)],
    ["mount", MemoryMounts.mountInterpreter(state)]
  ])

/**
 * A spawner with only `umount` and `mount` over `state` (see `interpreters`),
 * so the command-based `Mounter` (`NodeMounter.layerCommand`) runs against
 * the simulated host. `record` sees every invocation.
 *
 * @since 0.1.0
 */
export const mountCommands = (
  state: HostState,
  record?: (invocation: MemoryCommands.Invocation) => void
): ChildProcessSpawner.ChildProcessSpawner["Service"] => MemoryCommands.makeSpawner(interpreters(state), record)

const resolvePath = (state: HostState, path: string): string => MemoryFileSystem.absolute(state.fs, path)

/**
 * Builds a host state: an ext4-like root with `/tmp`, the fixture, and the
 * working directory. Exposed for simulations that compose their own layer.
 *
 * @since 0.1.0
 */
export const makeState: (options?: Options) => Effect.Effect<HostState> = Effect.fn("MemoryHost.makeState")(function* (
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
