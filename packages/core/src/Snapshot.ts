/**
 * The saved copy of the shared configuration (the Go package's `Snapshot`,
 * `TakeSnapshot`, `TakeSnapshotOf`, `Restore`, `Discard`, `Restored` and
 * `RestoreSnapshot`): taken before an upgrade rewrites the configuration,
 * restored when the upgrade fails, discarded when it succeeds, and crash safe
 * at every step, so that a node agent killed in the middle of an upgrade can
 * put the host back from a fresh process with {@link recover}.
 *
 * On disk a snapshot is a directory holding `manifest.json` (the
 * {@link Manifest} Schema: versioned, one entry per recorded path with its
 * mode, owner and times, a SHA-256 per file, names as lossless strings) and
 * `data` (every file's bytes, concatenated). A take writes both into a
 * staging directory beside it, makes them durable, then renames it into
 * place: the snapshot exists whole or not at all. A discard renames it aside
 * before removing it, so a half-removed snapshot is never mistaken for one
 * to restore.
 *
 * What holds, whatever else writes below the host root meanwhile (a pod's
 * container keeps running after its node stack stops):
 * - Every read, write and removal goes through directory handles
 *   (`Directory`): a path is resolved once below the root's handle, every
 *   directory is opened from its parent's without following a link (and,
 *   below a listed path, without entering another mount), every file is
 *   created exclusively in a verified parent, its owner, mode and times set
 *   on the open file, and renamed within that handle; what is in the way is
 *   removed by `SafeRemove`'s handle walk. Nothing is written or removed
 *   outside the host root.
 * - One process at a time: take, restore, recover and discard hold a lock
 *   (an exclusive `flock` on `<dir>.lock` beside the snapshot directory); a
 *   second process waits up to `lockTimeout`, then fails `Busy` naming the
 *   holder's pid. The lock dies with its process.
 * - Hostile snapshot files are refused before anything is written: the
 *   snapshot's files are opened without following links and without
 *   blocking, must be regular, owned by the running user and writable by
 *   nobody else; `data` must have the size the manifest says and no holes;
 *   every structural check is O(n log n); every file's hash is checked,
 *   streamed in bounded chunks.
 * - A restore that succeeds consumes the snapshot, as `recover` does: a
 *   later `recover` never re-applies it over newer configuration. One that
 *   fails keeps it, for another try.
 * - Durability is deferred, as dpkg does it: every temporary file is
 *   written, then all are made durable at once (`syncfs` per file system),
 *   then renamed, then the directories are synced once. A SIGKILL at any
 *   point leaves a state `recover` turns into the recorded tree.
 *
 * Memory: a take holds one 4 MiB buffer, a restore two 1 MiB ones, besides
 * the manifest (at most 64 MiB of JSON), whatever the files' sizes.
 *
 * Boundary: the paths themselves come from the caller or `ConfSnap`; the
 * hash is `Hashing` (portable by default, the platform's from the node
 * layer). The steps are in `internal/snapshot`.
 *
 * @since 0.1.0
 */
import { type Cause, Duration, Effect, Exit, FileSystem, Option, Ref, type Scope, Semaphore } from "effect"
import * as ConfSnap from "./ConfSnap.ts"
import * as Directory from "./Directory.ts"
import * as FileName from "./FileName.ts"
import * as Hashing from "./Hashing.ts"
import * as HostPath from "./HostPath.ts"
import {
  type Ctx,
  DefaultLockTimeout,
  error,
  fail,
  fromDirectory,
  isBelow,
  isHostPath
} from "./internal/snapshot/context.ts"
import * as ManifestCodec from "./internal/snapshot/manifest.ts"
import { DataName, type Manifest, ManifestName, RollbackFailed, type SnapshotError } from "./internal/snapshot/model.ts"
import * as Restore from "./internal/snapshot/restore.ts"
import * as Store from "./internal/snapshot/store.ts"
import * as Take from "./internal/snapshot/take.ts"
import { Systemd, type SystemdError } from "./Systemd.ts"

export {
  /**
   * An absent entry's Schema.
   *
   * @since 0.1.0
   */
  AbsentEntry,
  /**
   * The name of the file holding every recorded file's bytes, inside a snapshot directory.
   *
   * @since 0.1.0
   */
  DataName,
  /**
   * A directory entry's Schema.
   *
   * @since 0.1.0
   */
  DirectoryEntry,
  /**
   * One recorded host path's Schema.
   *
   * @since 0.1.0
   */
  Entry,
  /**
   * A regular file entry's Schema.
   *
   * @since 0.1.0
   */
  FileEntry,
  /**
   * The manifest format version written (2: file times); version 1 is still read.
   *
   * @since 0.1.0
   */
  FormatVersion,
  /**
   * A snapshot's manifest Schema.
   *
   * @since 0.1.0
   */
  Manifest,
  /**
   * The manifest's file name inside a snapshot directory.
   *
   * @since 0.1.0
   */
  ManifestName,
  /**
   * The format versions read.
   *
   * @since 0.2.0
   */
  ReadableVersions,
  /**
   * An upgrade and its rollback both failed; carries both.
   *
   * @since 0.2.0
   */
  RollbackFailed,
  /**
   * A snapshot could not be taken, checked or restored.
   *
   * @since 0.1.0
   */
  SnapshotError,
  /**
   * Why a snapshot operation failed.
   *
   * @since 0.1.0
   */
  SnapshotErrorReason,
  /**
   * A symbolic link entry's Schema.
   *
   * @since 0.1.0
   */
  SymlinkEntry
} from "./internal/snapshot/model.ts"

/**
 * A taken snapshot. `restore` puts the recorded paths back (and reloads
 * systemd on the real root), then consumes the snapshot; a failure keeps it
 * for another try or `recover`. `discard` removes the saved copy and never
 * fails: by then the configuration is in its final state, so a failure is
 * logged. `restored` says whether a restore has succeeded.
 *
 * @since 0.1.0
 */
export interface Snapshot {
  /** Where the snapshot is saved. */
  readonly dir: string
  /** The canonical host root it was taken below and restores to. */
  readonly hostRoot: string
  /**
   * The recorded paths that were absent when it was taken. When that is every
   * path, the host root was probably not the node's (a mistyped root): a
   * restore would remove them all there.
   */
  readonly absent: ReadonlyArray<string>
  /** The recorded host paths (cleaned, those below another listed path dropped). */
  readonly paths: ReadonlyArray<string>
  /**
   * Makes every recorded path exactly as recorded, after checking the whole
   * snapshot; on the real root ends with `daemonReload`; then removes the
   * snapshot. A failure keeps it for another try or `recover`; after a
   * success, another `restore` is `Missing`.
   */
  readonly restore: Effect.Effect<void, SnapshotError | SystemdError, Systemd>
  /** Removes the saved copy (nothing once a restore consumed it); a failure is logged, not returned. */
  readonly discard: Effect.Effect<void>
  /** Whether a `restore` of this handle has succeeded. */
  readonly restored: Effect.Effect<boolean>
}

/**
 * Where a snapshot goes and which host root it records.
 *
 * @since 0.1.0
 */
export interface TakeOptions {
  /** The snapshot directory (a real path, not joined below `hostRoot`); it must not exist yet. */
  readonly dir: string
  /**
   * The host root (`""` or `"/"` for the real host, an absolute directory, or
   * a decoded `HostPath.HostRoot`). The manifest records it canonical.
   */
  readonly hostRoot: string | HostPath.HostRoot
  /** How long to wait for another process holding the snapshot's lock before `Busy` (default one minute). */
  readonly lockTimeout?: Duration.Input | undefined
}

/**
 * {@link TakeOptions} with the paths to record.
 *
 * @since 0.1.0
 */
export interface TakeOfOptions extends TakeOptions {
  /**
   * Absolute host paths, each a file, symlink, directory (recorded
   * recursively) or absent. A path below another listed path is covered by
   * it and dropped.
   */
  readonly paths: ReadonlyArray<string>
  /**
   * Host paths a directory walk skips and a restore never touches (default
   * `ConfSnap.Exclude`: the Kubernetes PKI). A listed path is taken even when
   * excluded; exclusion prunes only what a walk finds.
   */
  readonly exclude?: ReadonlyArray<string> | undefined
}

/**
 * Options of {@link scoped} and {@link guarded}: {@link TakeOptions} and, optionally, the paths ({@link ConfSnap.DefaultPaths} by default).
 *
 * @since 0.1.0
 */
export interface ScopedOptions extends TakeOptions {
  readonly paths?: ReadonlyArray<string> | undefined
  readonly exclude?: ReadonlyArray<string> | undefined
}

/**
 * Options of {@link open}, {@link recover} and {@link discard}.
 *
 * @since 0.1.0
 */
export interface OpenOptions {
  /** The snapshot directory an earlier process may have left. */
  readonly dir: string
  /**
   * The host root to restore below (`""` or `"/"` for the real host, an
   * absolute directory, or a decoded `HostPath.HostRoot`). It must be the root
   * the snapshot records, unless `allowHostRootMismatch`.
   */
  readonly hostRoot: string | HostPath.HostRoot
  /** Restore below another host root than the one recorded (default false; see `HostRootMismatch`). */
  readonly allowHostRootMismatch?: boolean | undefined
  /** How long to wait for another process holding the snapshot's lock before `Busy` (default one minute). */
  readonly lockTimeout?: Duration.Input | undefined
}

/**
 * Options of {@link recover}.
 *
 * @since 0.1.0
 */
export type RecoverOptions = OpenOptions

// ---------------------------------------------------------------------------
// The context of one operation
// ---------------------------------------------------------------------------

/** The host root of an operation's options, for log annotations before it is decoded. */
const rootLabel = (hostRoot: string | HostPath.HostRoot): string =>
  HostPath.isHostRoot(hostRoot) ? hostRoot.path : hostRoot === "" ? "/" : hostRoot

/**
 * The context of one operation: the host root decoded, the snapshot
 * directory checked (absolute, not `/`), the lock timeout decoded; a bad
 * one fails here, before anything is read or written.
 */
const makeCtx = (options: {
  readonly dir: string
  readonly hostRoot: string | HostPath.HostRoot
  readonly allowHostRootMismatch?: boolean | undefined
  readonly lockTimeout?: Duration.Input | undefined
}) =>
  Effect.gen(function* () {
    const dirs = yield* Directory.Directories
    const fs = yield* FileSystem.FileSystem
    const hashing = yield* Hashing.Hashing
    const root = yield* HostPath.rootOf({ hostRoot: options.hostRoot })
    const dir = options.dir.startsWith("/") ? HostPath.clean(options.dir) : options.dir
    const label = { dir: options.dir, hostRoot: root.path }
    if (!options.dir.startsWith("/") || !isHostPath(dir)) {
      return yield* fail(
        label,
        "InvalidPath",
        "",
        `the snapshot directory ${JSON.stringify(options.dir)} must be an absolute path other than /`
      )
    }
    const lockTimeout = Duration.fromInput(options.lockTimeout ?? DefaultLockTimeout)
    if (Option.isNone(lockTimeout) || Duration.toMillis(lockTimeout.value) < 0) {
      return yield* fail(label, "InvalidPath", "", `the lock timeout ${String(options.lockTimeout)} is not a duration`)
    }
    const ctx: Ctx = {
      dirs,
      fs,
      hashing,
      credentials: yield* dirs.credentials,
      dir,
      parentPath: HostPath.dirname(dir),
      base: dir.slice(dir.lastIndexOf("/") + 1),
      root,
      hostRoot: root.path,
      allowHostRootMismatch: options.allowHostRootMismatch ?? false,
      lockTimeout: lockTimeout.value
    }
    return ctx
  })

/**
 * The listed paths, checked and cleaned; a path at or below another listed
 * one is dropped (sorted component by component, a path's descendants follow
 * it: O(n log n)). The snapshot directory may not lie, by its text, at,
 * below or above a recorded path's place below the root; the take checks
 * again by identity once both are resolved.
 */
const normalizePaths = (ctx: Ctx, paths: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const cleaned: Array<string> = []
    for (const p of paths) {
      if (!p.startsWith("/") || p.includes("\0")) {
        return yield* fail(ctx, "InvalidPath", p, "a snapshot path must be an absolute host path without NUL bytes")
      }
      const c = HostPath.clean(p)
      if (c === "/") return yield* fail(ctx, "InvalidPath", p, "the whole host root cannot be snapshotted")
      cleaned.push(c)
    }
    const key = (p: string) => p.replaceAll("/", "\0")
    const covered = new Set<string>()
    let top: string | undefined
    for (const p of [...new Set(cleaned)].sort((a, b) => (key(a) < key(b) ? -1 : 1))) {
      if (top !== undefined && isBelow(top, p)) covered.add(p)
      else top = p
    }
    const kept = [...new Set(cleaned)].filter((p) => !covered.has(p))
    for (const p of kept) {
      const full = HostPath.fullPath(ctx.root, p)
      if (HostPath.covers(full, ctx.dir) || HostPath.covers(ctx.dir, full)) {
        return yield* fail(ctx, "InvalidPath", p, `the snapshot directory and the recorded path ${full} overlap`)
      }
    }
    return kept
  })

/**
 * Runs `body` with the snapshot's parent open and, unless the caller holds
 * it already, its lock: in a scope of its own, so the lock is released when
 * `body` ends. `undefined` when the parent does not exist (and `make` is false).
 */
const withParent = <A, E, R>(
  ctx: Ctx,
  options: { readonly make: boolean; readonly held: boolean },
  body: (parent: Directory.Handle) => Effect.Effect<A, E, R>
) =>
  Effect.scoped(
    Effect.gen(function* () {
      const parent = yield* Store.openParent(ctx, options.make)
      if (parent === undefined) return Option.none<A>()
      if (!options.held) yield* Store.lock(ctx, parent)
      return Option.some(yield* body(parent))
    })
  )

/** Reads and checks the manifest of the snapshot directory `snapshot`. */
const load = (ctx: Ctx, snapshot: Directory.Handle) =>
  Effect.scoped(
    Effect.gen(function* () {
      const opened = yield* Store.openChecked(ctx, snapshot, ManifestName)
      if (opened === undefined) return yield* fail(ctx, "InvalidManifest", "", `${ManifestName} is missing`)
      if (opened.stat.size > ManifestCodec.MaxManifestBytes) {
        return yield* fail(
          ctx,
          "InvalidManifest",
          "",
          `${ManifestName} is ${opened.stat.size} bytes, more than the ${ManifestCodec.MaxManifestBytes} a take ever writes`
        )
      }
      const bytes = yield* Store.readWhole(ctx, opened.file, opened.stat.size)
      const manifest = yield* ManifestCodec.decode(ctx, bytes)
      return yield* ManifestCodec.check(ctx, manifest)
    })
  )

/** Opens `data` and checks it against the manifest: the size it says, and no holes. */
const openData = (ctx: Ctx, snapshot: Directory.Handle, manifest: Manifest) =>
  Effect.gen(function* () {
    const opened = yield* Store.openChecked(ctx, snapshot, DataName)
    if (opened === undefined) return yield* fail(ctx, "Corrupt", "", `${DataName} is missing`)
    if (opened.stat.size !== manifest.dataSize) {
      return yield* fail(
        ctx,
        "Corrupt",
        "",
        `${DataName} is ${opened.stat.size} bytes; the manifest says ${manifest.dataSize}`
      )
    }
    const hole = yield* opened.file.holeAt(0).pipe(Effect.mapError(fromDirectory(ctx, "")))
    if (hole < opened.stat.size) {
      // A take writes every byte: a hole means someone else made this file (a sparse
      // file claims any size for free; hashing it would read zeros for hours).
      return yield* fail(ctx, "Corrupt", "", `${DataName} has a hole at byte ${hole}: it was not written by a take`)
    }
    return opened.file
  })

/**
 * Fails with `HostRootMismatch` when `manifest` was taken below another host
 * root than the one of `ctx`, unless the caller allowed it: the host root is
 * an operator's input, and a restore below the wrong tree removes every
 * recorded path that is not there.
 */
const checkRoot = (ctx: Ctx, manifest: Manifest) => {
  const recorded = manifest.hostRoot === "" ? "/" : manifest.hostRoot
  return recorded === ctx.hostRoot || ctx.allowHostRootMismatch
    ? Effect.void
    : fail(
        ctx,
        "HostRootMismatch",
        "",
        `it was taken below host root ${JSON.stringify(recorded)}, not ${JSON.stringify(ctx.hostRoot)}; pass allowHostRootMismatch (--allow-root-mismatch) if that is the same tree under another name`
      )
}

// ---------------------------------------------------------------------------
// Restore and discard, in a held lock
// ---------------------------------------------------------------------------

/**
 * Restores the snapshot in `parent` (the lock held), reloads systemd on the
 * real root, then consumes it. `false` when there is no snapshot.
 */
const restoreIn = (ctx: Ctx, parent: Directory.Handle) =>
  Effect.gen(function* () {
    const snapshot = yield* Store.openSnapshot(ctx, parent)
    if (snapshot === undefined) return false
    const checked = yield* load(ctx, snapshot)
    yield* checkRoot(ctx, checked.manifest)
    const data = yield* openData(ctx, snapshot, checked.manifest)
    const changes = yield* Restore.restore(ctx, checked, data, snapshot)
    if (ctx.root.isReal) {
      // Unit files and drop-ins were rewritten: systemd must read them again.
      yield* Effect.flatMap(Effect.service(Systemd), (s) => s.daemonReload)
    }
    // Consumed: a later recover must not put this state back over newer configuration.
    yield* Store.discard(ctx, parent).pipe(
      Effect.mapError((e) =>
        error(
          ctx,
          e.reason,
          e.path,
          `the configuration was restored, but the snapshot could not be removed (remove it before anything runs recover): ${e.detail}`,
          { ...(e.errno === undefined ? {} : { errno: e.errno }) }
        )
      )
    )
    yield* Effect.logInfo("configuration snapshot restored").pipe(
      Effect.annotateLogs({ entries: checked.manifest.entries.length, changes })
    )
    return true
  }).pipe(Effect.scoped)

const restoreAt = (ctx: Ctx, held: boolean): Effect.Effect<void, SnapshotError | SystemdError, Systemd> =>
  withParent(ctx, { make: false, held }, (parent) => restoreIn(ctx, parent)).pipe(
    Effect.flatMap((found) =>
      Option.isSome(found) && found.value
        ? Effect.void
        : fail(ctx, "Missing", "", "there is no snapshot in this directory (discarded, or consumed by a restore)")
    ),
    Effect.annotateLogs({ snapshotDir: ctx.dir, hostRoot: ctx.hostRoot }),
    Effect.withSpan("Snapshot.restore", { attributes: { dir: ctx.dir, hostRoot: ctx.hostRoot } })
  )

const discardAt = (ctx: Ctx, held: boolean) =>
  withParent(ctx, { make: false, held }, (parent) => Store.discard(ctx, parent)).pipe(
    Effect.map((found) => Option.isSome(found) && found.value),
    Effect.annotateLogs({ snapshotDir: ctx.dir, hostRoot: ctx.hostRoot }),
    Effect.withSpan("Snapshot.discard", { attributes: { dir: ctx.dir } })
  )

const makeHandle = (ctx: Ctx, manifest: Manifest, held: boolean) =>
  Effect.gen(function* () {
    const restored = yield* Ref.make(false)
    const serial = yield* Semaphore.make(1)
    const snapshot: Snapshot = {
      dir: ctx.dir,
      hostRoot: ctx.hostRoot,
      paths: manifest.paths,
      absent: ManifestCodec.absentPaths(manifest),
      restore: serial.withPermits(1)(restoreAt(ctx, held).pipe(Effect.tap(() => Ref.set(restored, true)))),
      discard: serial.withPermits(1)(
        Effect.gen(function* () {
          if (yield* Ref.get(restored)) return
          if (yield* discardAt(ctx, held)) yield* Effect.logDebug("configuration snapshot discarded")
        }).pipe(
          Effect.catch((e) =>
            Effect.logWarning("could not discard the configuration snapshot; remove it by hand", {
              error: e.message
            }).pipe(Effect.annotateLogs({ snapshotDir: ctx.dir, hostRoot: ctx.hostRoot }))
          )
        )
      ),
      restored: Ref.get(restored)
    }
    return snapshot
  })

// ---------------------------------------------------------------------------
// The operations
// ---------------------------------------------------------------------------

/** Takes the snapshot in `parent` (the lock held) and makes its handle. */
const takeIn = (ctx: Ctx, parent: Directory.Handle, options: TakeOfOptions, held: boolean) =>
  Effect.gen(function* () {
    const exclude = (options.exclude ?? ConfSnap.Exclude).map(HostPath.clean)
    for (const x of exclude) {
      if (!isHostPath(x))
        return yield* fail(ctx, "InvalidPath", x, "an exclusion must be an absolute host path other than /")
    }
    const paths = yield* normalizePaths(ctx, options.paths)
    const manifest = yield* Take.take(ctx, parent, paths, exclude)
    yield* Effect.logInfo("configuration snapshot taken").pipe(
      Effect.annotateLogs({ entries: manifest.entries.length, bytes: manifest.dataSize })
    )
    const absent = ManifestCodec.absentPaths(manifest)
    if (absent.length === paths.length) {
      yield* Effect.logWarning(
        `every recorded path is absent below host root ${ctx.hostRoot}: is that the node's root? A restore there would only remove them`
      ).pipe(Effect.annotateLogs({ paths: absent.length }))
    }
    return yield* makeHandle(ctx, manifest, held)
  })

/** Checks the paths before the parent is made or the lock taken: bad input changes nothing. */
const checkTakeInput = (ctx: Ctx, options: TakeOfOptions) =>
  Effect.gen(function* () {
    for (const x of options.exclude ?? []) {
      if (!x.startsWith("/") || !isHostPath(HostPath.clean(x))) {
        return yield* fail(ctx, "InvalidPath", x, "an exclusion must be an absolute host path other than /")
      }
    }
    yield* normalizePaths(ctx, options.paths)
  })

/**
 * Saves `paths` below `hostRoot` into `dir` (the Go package's
 * `TakeSnapshotOf`), for a mode whose node stack writes more of the host in
 * place (see `ConfSnap.pathsFor`). Fails with `Exists` when `dir` already
 * holds a snapshot: that one records the state before an interrupted upgrade
 * and must be recovered first. A take that fails or is killed leaves no
 * snapshot, only a staging directory that the next take or `recover`
 * removes; the recorded paths are only ever read.
 *
 * @since 0.1.0
 */
export const takeOf: (
  options: TakeOfOptions
) => Effect.Effect<Snapshot, SnapshotError | HostPath.HostPathError, FileSystem.FileSystem | Directory.Directories> =
  Effect.fn("Snapshot.takeOf")(
    function* (options: TakeOfOptions) {
      const ctx = yield* makeCtx(options)
      yield* checkTakeInput(ctx, options)
      const taken = yield* withParent(ctx, { make: true, held: false }, (parent) => takeIn(ctx, parent, options, false))
      return Option.getOrThrow(taken)
    },
    (effect, options) =>
      effect.pipe(Effect.annotateLogs({ snapshotDir: options.dir, hostRoot: rootLabel(options.hostRoot) }))
  )

/**
 * Saves the shared configuration ({@link ConfSnap.DefaultPaths}, without
 * {@link ConfSnap.Exclude}) below `hostRoot` into `dir` (the Go package's
 * `TakeSnapshot`). See {@link takeOf}.
 *
 * @since 0.1.0
 */
export const take = (
  options: TakeOptions
): Effect.Effect<Snapshot, SnapshotError | HostPath.HostPathError, FileSystem.FileSystem | Directory.Directories> =>
  takeOf({ ...options, paths: ConfSnap.DefaultPaths, exclude: ConfSnap.Exclude })

/**
 * A handle on a snapshot already in `dir`, for instance one an earlier process
 * took: its manifest is read and checked (content hashes are checked by the
 * restore). Fails with `Missing` when there is none. Unlike {@link recover},
 * nothing is restored or removed until the caller says so.
 *
 * @since 0.1.0
 */
export const open: (
  options: OpenOptions
) => Effect.Effect<Snapshot, SnapshotError | HostPath.HostPathError, FileSystem.FileSystem | Directory.Directories> =
  Effect.fn("Snapshot.open")(function* (options: OpenOptions) {
    const ctx = yield* makeCtx(options)
    const missing = fail(ctx, "Missing", "", "there is no snapshot in this directory")
    const manifest = yield* Effect.scoped(
      Effect.gen(function* () {
        const parent = yield* Store.openParent(ctx, false)
        if (parent === undefined) return yield* missing
        const snapshot = yield* Store.openSnapshot(ctx, parent)
        if (snapshot === undefined) return yield* missing
        return (yield* load(ctx, snapshot)).manifest
      })
    )
    yield* checkRoot(ctx, manifest)
    return yield* makeHandle(ctx, manifest, false)
  })

/**
 * Restores a snapshot an earlier process left in `dir` (the Go package's
 * `RestoreSnapshot`), for instance one a crash interrupted in the middle of
 * an upgrade or of its rollback; reloads systemd on the real root; then
 * removes it. Returns whether there was one. With no snapshot it does
 * nothing; a staging directory from a take that never committed (the
 * recorded paths were only read) and a half-finished discard are removed. A
 * snapshot that fails its checks is a `SnapshotError`, nothing is written and
 * it is kept; so is one whose restore fails. Another process holding the
 * lock is waited for (see `lockTimeout`).
 *
 * @since 0.1.0
 */
export const recover: (
  options: RecoverOptions
) => Effect.Effect<
  boolean,
  SnapshotError | SystemdError | HostPath.HostPathError,
  FileSystem.FileSystem | Directory.Directories | Systemd
> = Effect.fn("Snapshot.recover")(
  function* (options: RecoverOptions) {
    const ctx = yield* makeCtx(options)
    const found = yield* withParent(ctx, { make: false, held: false }, (parent) =>
      Effect.gen(function* () {
        yield* Store.removeLeftovers(ctx, parent)
        if ((yield* Effect.scoped(Store.openSnapshot(ctx, parent))) === undefined) return false
        yield* Effect.logWarning("restoring a configuration snapshot an earlier process left")
        return yield* restoreIn(ctx, parent)
      })
    )
    const recovered = Option.getOrElse(found, () => false)
    if (!recovered) yield* Effect.logDebug("no configuration snapshot to recover")
    return recovered
  },
  (effect, options) =>
    effect.pipe(Effect.annotateLogs({ snapshotDir: options.dir, hostRoot: rootLabel(options.hostRoot) }))
)

/**
 * Options of {@link discard}.
 *
 * @since 0.2.0
 */
export interface DiscardOptions {
  /** The snapshot directory. */
  readonly dir: string
  /** The host root, for messages only (default the real host): a discard touches nothing below it. */
  readonly hostRoot?: string | HostPath.HostRoot | undefined
  /** How long to wait for another process holding the snapshot's lock before `Busy` (default one minute). */
  readonly lockTimeout?: Duration.Input | undefined
}

/**
 * Removes the snapshot in `dir`, whatever state its files are in (a corrupt
 * one too): renamed aside, then removed through handles. Returns whether
 * there was one; none is success. Waits for another process holding the lock.
 *
 * @since 0.2.0
 */
export const discard: (
  options: DiscardOptions
) => Effect.Effect<boolean, SnapshotError | HostPath.HostPathError, FileSystem.FileSystem | Directory.Directories> =
  Effect.fn("Snapshot.discard")(function* (options: DiscardOptions) {
    const ctx = yield* makeCtx({ dir: options.dir, hostRoot: options.hostRoot ?? "", lockTimeout: options.lockTimeout })
    return yield* discardAt(ctx, false)
  })

/** The release of {@link scoped} and {@link guarded}: discard on success, restore (consuming) on failure. */
const rollbackOn = (snapshot: Snapshot, cause: Cause.Cause<unknown>) =>
  snapshot.restore.pipe(
    Effect.mapError(
      (rollback) => new RollbackFailed({ dir: snapshot.dir, hostRoot: snapshot.hostRoot, upgrade: cause, rollback })
    ),
    Effect.tapError((e) =>
      Effect.logError("rolling back the configuration failed; the snapshot is kept for Snapshot.recover", {
        error: e.rollback.message
      }).pipe(Effect.annotateLogs({ snapshotDir: snapshot.dir, hostRoot: snapshot.hostRoot }))
    )
  )

/** Opens the parent in the caller's scope and holds the lock there, then takes: the lock lasts as long as the scope. */
const takeHeld = (options: ScopedOptions) =>
  Effect.gen(function* () {
    const ctx = yield* makeCtx(options)
    const takeOptions: TakeOfOptions = {
      dir: options.dir,
      hostRoot: options.hostRoot,
      paths: options.paths ?? ConfSnap.DefaultPaths,
      exclude: options.exclude
    }
    yield* checkTakeInput(ctx, takeOptions)
    const parent = yield* Store.openParent(ctx, true)
    if (parent === undefined) return yield* fail(ctx, "Io", "", `${ctx.parentPath} could not be made`)
    yield* Store.lock(ctx, parent)
    return yield* takeIn(ctx, parent, takeOptions, true)
  })

/**
 * The snapshot as a scoped resource around an upgrade: acquiring takes it
 * ({@link takeOf}, with `ConfSnap.DefaultPaths` unless `paths` is given) and
 * holds its lock until the scope closes, so no other process restores or
 * discards it mid-upgrade; releasing discards it when the scope succeeds,
 * and restores it (which consumes it) when the scope fails or is
 * interrupted.
 *
 * If that restore fails, the host is partly restored and the snapshot is
 * kept for `recover`; the scope then fails with both: its cause holds the
 * upgrade's failure and a {@link RollbackFailed} (which carries the
 * upgrade's cause and the restore's error; `Cause.prettyErrors` shows both).
 * Effect's `catch` sees only the first failure of a cause, the upgrade's:
 * an agent that handles errors by tag should use {@link guarded}, whose only
 * failure is then the `RollbackFailed`.
 *
 * @since 0.1.0
 */
export const scoped = (
  options: ScopedOptions
): Effect.Effect<
  Snapshot,
  SnapshotError | HostPath.HostPathError | RollbackFailed,
  FileSystem.FileSystem | Directory.Directories | Systemd | Scope.Scope
> =>
  Effect.acquireRelease(takeHeld(options), (snapshot, exit) =>
    Exit.isSuccess(exit)
      ? snapshot.discard
      : // A release cannot fail in its type; its failure joins the scope's cause (see above).
        (rollbackOn(snapshot, exit.cause) as Effect.Effect<void>)
  )

/**
 * Runs `upgrade` with the snapshot taken around it (as {@link scoped} does,
 * the lock held throughout): on success the snapshot is discarded and the
 * result returned; on failure or interruption it is restored and the
 * upgrade's cause propagates. When the restore fails too, the one failure is
 * a {@link RollbackFailed} carrying the upgrade's cause and the restore's
 * error, and the snapshot is kept for `recover`.
 *
 * @since 0.2.0
 */
export const guarded = <A, E, R>(
  upgrade: Effect.Effect<A, E, R>,
  options: ScopedOptions
): Effect.Effect<
  A,
  E | SnapshotError | HostPath.HostPathError | RollbackFailed,
  R | FileSystem.FileSystem | Directory.Directories | Systemd
> =>
  Effect.scoped(
    Effect.uninterruptibleMask((restoreInterruption) =>
      Effect.gen(function* () {
        const snapshot = yield* takeHeld(options)
        const exit = yield* Effect.exit(restoreInterruption(upgrade))
        if (Exit.isSuccess(exit)) {
          yield* snapshot.discard
          return exit.value
        }
        yield* rollbackOn(snapshot, exit.cause)
        return yield* exit
      })
    )
  ).pipe(Effect.withSpan("Snapshot.guarded", { attributes: { dir: options.dir } }))

/**
 * The lossless string form of a name in a manifest, for a person (bytes that are not UTF-8 as `\xNN`).
 *
 * @since 0.2.0
 */
export const displayPath = (path: string): string => FileName.display(path)
