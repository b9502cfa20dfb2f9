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
 *   (since 0.4.0 an exclusive `flock` on the snapshot's parent directory
 *   itself: no file is made for it, so no command, refused, failed or
 *   successful, leaves one behind, even after a crash); a second process
 *   waits up to `lockTimeout`, then fails `Busy` naming the holder's pid.
 *   The lock dies with its process. Snapshots in one directory share it.
 *   A take that is refused creates nothing (its missing parents are made
 *   only once its paths are checked), and one that fails removes the
 *   parents it made.
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
 * The snapshot's own failures are one error, {@link SnapshotError}, naming the
 * snapshot directory and the host root; its `reason` is one of the reason
 * classes exported here (`Corrupt`, `Busy`, `Io`, `RollbackFailed`, ...), each
 * with only the facts of its case, so that
 * `Effect.catchReason("SnapshotError", "Busy", (reason) => ...)` handles one
 * case and sees its fields (`reason.pid`).
 *
 * Boundary: the paths themselves come from the caller or `ConfSnap`; the
 * hash is `Hashing` (portable by default, the platform's from the node
 * layer). The steps are in `internal/snapshot`: the options decoded
 * (`input.ts`), the handle and the locked steps of each operation
 * (`handle.ts`), take, restore, the store on disk, the manifest's checks and
 * the errors.
 *
 * @since 0.1.0
 */
import { type Duration, Effect, Exit, type FileSystem, Option, type Scope } from "effect"
import * as ConfSnap from "./ConfSnap.ts"
import type * as Directory from "./Directory.ts"
import * as FileName from "./FileName.ts"
import type * as HostPath from "./HostPath.ts"
import * as Track from "./internal/metrics.ts"
import { fail } from "./internal/snapshot/context.ts"
import { Missing, type SnapshotError } from "./internal/snapshot/error.ts"
import {
  checkRoot,
  discardAt,
  load,
  makeHandle,
  restoreIn,
  rollbackOn,
  takeHeld,
  takeIn,
  withParent
} from "./internal/snapshot/handle.ts"
import { checkTakeInput, makeCtx, normalizePaths, rootLabel } from "./internal/snapshot/input.ts"
import { checkBeforeMaking } from "./internal/snapshot/overlap.ts"
import * as Store from "./internal/snapshot/store.ts"
import type { Systemd, SystemdError } from "./Systemd.ts"

export {
  /**
   * Another process holds the snapshot's lock past the timeout; `pid` names it when the platform says.
   *
   * @since 0.3.0
   */
  Busy,
  /**
   * A file's bytes do not match their hash, or `data` has the wrong size or holes.
   *
   * @since 0.3.0
   */
  Corrupt,
  /**
   * A take found a snapshot already in the directory (an earlier upgrade did not finish).
   *
   * @since 0.3.0
   */
  Exists,
  /**
   * The snapshot was taken below another host root than the one it is restored below.
   *
   * @since 0.3.0
   */
  HostRootMismatch,
  /**
   * The manifest is not JSON, too large, not of the Schema, or its entries do not form the trees it names.
   *
   * @since 0.3.0
   */
  InvalidManifest,
  /**
   * A path, the snapshot directory or the lock timeout given is not usable, or the snapshot and a recorded path overlap.
   *
   * @since 0.3.0
   */
  InvalidPath,
  /**
   * The file system refused an operation: the errno, the host path and the operation.
   *
   * @since 0.3.0
   */
  Io,
  /**
   * A restore had to remove something it may not (a mount); the host is partly restored.
   *
   * @since 0.3.0
   */
  Kept,
  /**
   * There is no snapshot in the directory (discarded, or consumed by a restore).
   *
   * @since 0.3.0
   */
  Missing,
  /**
   * What is at the snapshot's directory is not one; nothing is changed.
   *
   * @since 0.3.0
   */
  NotASnapshot,
  /**
   * A directory below a recorded path is another mount, which a snapshot does not cross.
   *
   * @since 0.3.0
   */
  OtherMount,
  /**
   * A manifest path is not a clean absolute lossless host path: it could resolve outside the root.
   *
   * @since 0.3.0
   */
  PathOutsideRoot,
  /**
   * An upgrade and its rollback both failed; carries both, the snapshot is kept for `recover`.
   *
   * @since 0.2.0
   */
  RollbackFailed,
  /**
   * A snapshot could not be taken, checked, restored or rolled back; `reason` says why.
   *
   * @since 0.1.0
   */
  SnapshotError,
  /**
   * Why a snapshot operation failed: the union of the reason classes, told apart by `_tag`.
   *
   * @since 0.1.0
   */
  SnapshotErrorReason,
  /**
   * A host path could not be resolved below the root (a symlink loop, an unreadable link).
   *
   * @since 0.3.0
   */
  Unresolvable,
  /**
   * A file or directory of the snapshot is not what a take makes (a link, another owner, writable by others).
   *
   * @since 0.3.0
   */
  Unsafe,
  /**
   * A recorded path is a socket, FIFO or device.
   *
   * @since 0.3.0
   */
  UnsupportedFileType,
  /**
   * The manifest is of a format version this code does not read.
   *
   * @since 0.3.0
   */
  UnsupportedVersion
} from "./internal/snapshot/error.ts"
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
      // Refused before anything is made: a snapshot that would lie inside a recorded path.
      yield* checkBeforeMaking(ctx, yield* normalizePaths(ctx, options.paths))
      const taken = yield* withParent(ctx, { make: true, held: false }, (parent) => takeIn(ctx, parent, options, false))
      return Option.getOrThrow(taken)
    },
    (effect, options) =>
      effect.pipe(
        Effect.annotateLogs({ snapshotDir: options.dir, hostRoot: rootLabel(options.hostRoot) }),
        Track.snapshot("Snapshot.takeOf", "take", () => "taken", Track.snapshotAttributes(options))
      )
  )

/**
 * Saves the shared configuration ({@link ConfSnap.DefaultPaths}, without
 * {@link ConfSnap.Exclude}) below `hostRoot` into `dir` (the Go package's
 * `TakeSnapshot`). See {@link takeOf}.
 *
 * @since 0.1.0
 */
export const take: (
  options: TakeOptions
) => Effect.Effect<Snapshot, SnapshotError | HostPath.HostPathError, FileSystem.FileSystem | Directory.Directories> =
  Effect.fn("Snapshot.take")(function* (options: TakeOptions) {
    return yield* takeOf({ ...options, paths: ConfSnap.DefaultPaths, exclude: ConfSnap.Exclude })
  })

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
    const missing = fail(ctx, new Missing({ detail: "there is no snapshot in this directory" }))
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
    effect.pipe(
      Effect.annotateLogs({ snapshotDir: options.dir, hostRoot: rootLabel(options.hostRoot) }),
      Track.snapshot(
        "Snapshot.recover",
        "recover",
        (r) => (r ? "recovered" : "none"),
        Track.snapshotAttributes(options)
      )
    )
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
 * upgrade's failure and a `SnapshotError` whose reason is
 * {@link RollbackFailed} (which carries the upgrade's cause and the
 * restore's error; `Cause.prettyErrors` shows both). Effect's `catch` sees
 * only the first failure of a cause, the upgrade's: an agent that handles
 * errors by tag should use {@link guarded}, whose only failure is then that
 * `SnapshotError`.
 *
 * @since 0.1.0
 */
export const scoped: (
  options: ScopedOptions
) => Effect.Effect<
  Snapshot,
  SnapshotError | HostPath.HostPathError,
  FileSystem.FileSystem | Directory.Directories | Systemd | Scope.Scope
> = Effect.fn("Snapshot.scoped")(function* (options: ScopedOptions) {
  return yield* Effect.acquireRelease(takeHeld(options), (snapshot, exit) =>
    Exit.isSuccess(exit)
      ? snapshot.discard
      : // A release cannot fail in its type; its failure joins the scope's cause (see above).
        (rollbackOn(snapshot, exit.cause) as Effect.Effect<void>)
  )
})

/**
 * Runs `upgrade` with the snapshot taken around it (as {@link scoped} does,
 * the lock held throughout): on success the snapshot is discarded and the
 * result returned; on failure or interruption it is restored and the
 * upgrade's cause propagates. When the restore fails too, the one failure is
 * a `SnapshotError` whose reason is {@link RollbackFailed}, carrying the
 * upgrade's cause and the restore's error (`Effect.catchReason("SnapshotError",
 * "RollbackFailed", ...)` reaches it), and the snapshot is kept for `recover`.
 *
 * @since 0.2.0
 */
export const guarded: <A, E, R>(
  upgrade: Effect.Effect<A, E, R>,
  options: ScopedOptions
) => Effect.Effect<
  A,
  E | SnapshotError | HostPath.HostPathError,
  R | FileSystem.FileSystem | Directory.Directories | Systemd
> = Effect.fn("Snapshot.guarded")(function* <A, E, R>(upgrade: Effect.Effect<A, E, R>, options: ScopedOptions) {
  yield* Effect.annotateCurrentSpan("dir", options.dir)
  return yield* Effect.scoped(
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
  )
})

/**
 * The lossless string form of a name in a manifest, for a person (bytes that are not UTF-8 as `\xNN`).
 *
 * @since 0.2.0
 */
export const displayPath = (path: string): string => FileName.display(path)
