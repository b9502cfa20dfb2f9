/**
 * The saved copy of the shared configuration: taken before an upgrade rewrites
 * it, restored when the upgrade fails, discarded when it succeeds, and crash
 * safe at every step, so that an agent killed mid-upgrade can put the host back
 * from a fresh process with {@link recover}.
 *
 * - Nothing is written or removed outside the host root (directory handles).
 * - One process at a time holds a snapshot's lock; hostile snapshot files are
 *   refused before anything is written.
 *
 * Boundary: the paths come from the caller or `ConfSnap`; the on-disk format
 * and the steps are in `internal/snapshot` (see docs/design/snapshots.md).
 *
 * @since 0.1.0
 */
import { type Duration, Effect, Exit, type FileSystem, Option, type Scope } from "effect"
import * as ConfSnap from "./ConfSnap.ts"
import type * as Directory from "./Directory.ts"
import type * as HostPath from "./HostPath.ts"
import { rootLabel } from "./internal/hostPath/root.ts"
import * as Track from "./internal/metrics.ts"
import { fail } from "./internal/snapshot/context.ts"
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
import { checkTakeInput, makeCtx, normalizePaths } from "./internal/snapshot/input.ts"
import { checkBeforeMaking } from "./internal/snapshot/overlap.ts"
import * as Store from "./internal/snapshot/store.ts"
import { Failure, type SnapshotError } from "./SnapshotError.ts"
import type { Systemd, SystemdError } from "./Systemd.ts"

/**
 * How the operations fail: `SnapshotError`, its reasons `Failure`, `Busy` (`pid`, `detail`) and
 * `RollbackFailed` (`upgrade`, `rollback`), defined in the `SnapshotError` module, whose page
 * ([SnapshotError.ts.md](SnapshotError.ts.md)) shows each class's fields.
 *
 * @category errors
 * @since 0.4.0
 */
export * from "./SnapshotError.ts"

/**
 * A taken snapshot. `restore` puts the recorded paths back (and reloads
 * systemd on the real root), then consumes the snapshot; a failure keeps it
 * for another try or `recover`. `discard` removes the saved copy and never
 * fails: by then the configuration is in its final state, so a failure is
 * logged. `restored` says whether a restore has succeeded.
 *
 * @category models
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
 * Where a snapshot goes, which host root it records, and what it records
 * (the shared configuration, `ConfSnap.DefaultPaths` without
 * `ConfSnap.Exclude`, unless `paths` and `exclude` say otherwise).
 *
 * @category models
 * @since 0.1.0
 */
export interface TakeOptions {
  /** The snapshot directory (a real path, not joined below `hostRoot`); it must not exist yet. */
  readonly dir: string
  /**
   * The host root, decoded by `HostPath.decodeRoot` (absent: the real host).
   * The manifest records its identity.
   */
  readonly hostRoot?: HostPath.HostRoot | undefined
  /** How long to wait for another process holding the snapshot's lock before `Busy` (default one minute). */
  readonly lockTimeout?: Duration.Input | undefined
  /**
   * Absolute host paths to record (default `ConfSnap.DefaultPaths`), each a
   * file, symlink, directory (recorded recursively) or absent. A path below
   * another listed path is covered by it and dropped.
   */
  readonly paths?: ReadonlyArray<string> | undefined
  /**
   * Host paths a directory walk skips and a restore never touches (default
   * `ConfSnap.Exclude`: the Kubernetes PKI). A listed path is taken even when
   * excluded; exclusion prunes only what a walk finds.
   */
  readonly exclude?: ReadonlyArray<string> | undefined
}

/**
 * Options of {@link open} and {@link recover}.
 *
 * @category models
 * @since 0.1.0
 */
export interface OpenOptions {
  /** The snapshot directory an earlier process may have left. */
  readonly dir: string
  /**
   * The host root to restore below, decoded by `HostPath.decodeRoot` (absent:
   * the real host). It must be the root the snapshot records, unless
   * `allowHostRootMismatch`.
   */
  readonly hostRoot?: HostPath.HostRoot | undefined
  /** Restore below another host root than the one recorded (default false; see `HostRootMismatch`). */
  readonly allowHostRootMismatch?: boolean | undefined
  /** How long to wait for another process holding the snapshot's lock before `Busy` (default one minute). */
  readonly lockTimeout?: Duration.Input | undefined
}

/**
 * Saves `paths` below `hostRoot` into `dir` (the Go package's
 * `TakeSnapshotOf`), for a mode whose node stack writes more of the host in
 * place (see `ConfSnap.pathsFor`). Fails with `Exists` when `dir` already
 * holds a snapshot: that one records the state before an interrupted upgrade
 * and must be recovered first. A take that fails or is killed leaves no
 * snapshot, only a staging directory that the next take or `recover`
 * removes; the recorded paths are only ever read.
 *
 * @example
 * ```ts
 * import { ConfSnap, Snapshot } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // A node stack run directly on the host: its binaries are saved with its configuration, and put back together.
 * const upgradeInPlace = (installNewBinaries: Effect.Effect<void, Error>) =>
 *   Effect.gen(function* () {
 *     const snapshot = yield* Snapshot.takeOf({
 *       dir: "/var/lib/hostnode/snapshot",
 *       paths: ConfSnap.pathsFor("none")
 *     })
 *     yield* installNewBinaries.pipe(Effect.tapError(() => snapshot.restore))
 *     yield* snapshot.discard
 *   })
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const takeOf: (
  options: TakeOptions & { readonly paths: ReadonlyArray<string> }
) => Effect.Effect<Snapshot, SnapshotError | HostPath.HostPathError, FileSystem.FileSystem | Directory.Directories> =
  Effect.fn("Snapshot.takeOf")(
    function* (options: TakeOptions & { readonly paths: ReadonlyArray<string> }) {
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
 * {@link ConfSnap.Exclude}, unless `paths` and `exclude` are given) below
 * `hostRoot` into `dir` (the Go package's `TakeSnapshot`). See {@link takeOf}.
 *
 * @example
 * ```ts
 * import { Snapshot } from "@hostnode/core"
 * import { Effect, Exit } from "effect"
 *
 * // Saved before the upgrade writes; put back if it fails, removed if it succeeds.
 * const upgrade = <E>(writeNewConfig: Effect.Effect<void, E>) =>
 *   Effect.gen(function* () {
 *     const snapshot = yield* Snapshot.take({ dir: "/etc/hostnode/snapshot" })
 *     const written = yield* Effect.exit(writeNewConfig)
 *     yield* Exit.isSuccess(written) ? snapshot.discard : snapshot.restore
 *     return yield* written
 *   })
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const take: (
  options: TakeOptions
) => Effect.Effect<Snapshot, SnapshotError | HostPath.HostPathError, FileSystem.FileSystem | Directory.Directories> =
  Effect.fn("Snapshot.take")(function* (options: TakeOptions) {
    return yield* takeOf({
      ...options,
      paths: options.paths ?? ConfSnap.DefaultPaths,
      exclude: options.exclude ?? ConfSnap.Exclude
    })
  })

/**
 * A handle on a snapshot already in `dir`, for instance one an earlier process
 * took: its manifest is read and checked (content hashes are checked by the
 * restore). Fails with `Missing` when there is none. Unlike {@link recover},
 * nothing is restored or removed until the caller says so.
 *
 * @example
 * ```ts
 * import { Snapshot } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // An operator's restore, looked at first: a snapshot that found every path absent was probably
 * // taken on a mistyped root, and restoring it would remove them all here.
 * const restoreLeftSnapshot = Effect.gen(function* () {
 *   const snapshot = yield* Snapshot.open({ dir: "/etc/hostnode/snapshot" })
 *   if (snapshot.absent.length === snapshot.paths.length) {
 *     return yield* Effect.logWarning(`every recorded path was absent below ${snapshot.hostRoot}; left for a person`)
 *   }
 *   yield* snapshot.restore
 * })
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const open: (
  options: OpenOptions
) => Effect.Effect<Snapshot, SnapshotError | HostPath.HostPathError, FileSystem.FileSystem | Directory.Directories> =
  Effect.fn("Snapshot.open")(function* (options: OpenOptions) {
    const ctx = yield* makeCtx(options)
    const missing = fail(ctx, new Failure({ _tag: "Missing", detail: "there is no snapshot in this directory" }))
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
 * @example
 * ```ts
 * import { Snapshot } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // At start-up: an agent killed mid-upgrade left a snapshot; the host gets it back.
 * const startUp = Snapshot.recover({ dir: "/etc/hostnode/snapshot" }).pipe(
 *   Effect.tap((recovered) => (recovered ? Effect.logWarning("rolled back an interrupted upgrade") : Effect.void))
 * )
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const recover: (
  options: OpenOptions
) => Effect.Effect<
  boolean,
  SnapshotError | SystemdError | HostPath.HostPathError,
  FileSystem.FileSystem | Directory.Directories | Systemd
> = Effect.fn("Snapshot.recover")(
  function* (options: OpenOptions) {
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
 * Removes the snapshot in `dir`, whatever state its files are in (a corrupt
 * one too): renamed aside, then removed through handles. Returns whether
 * there was one; none is success. Waits for another process holding the lock.
 *
 * @example
 * ```ts
 * import { Snapshot } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // The operator keeps the upgraded configuration: the snapshot an interrupted run left goes, even a corrupt one.
 * const keepUpgrade = Snapshot.discard({ dir: "/etc/hostnode/snapshot" }).pipe(
 *   Effect.tap((found) => Effect.logInfo(found ? "snapshot discarded" : "there was no snapshot"))
 * )
 * ```
 *
 * @category operations
 * @since 0.2.0
 */
export const discard: (options: {
  /** The snapshot directory. */
  readonly dir: string
  /** The host root, for messages only (default the real host): a discard touches nothing below it. */
  readonly hostRoot?: HostPath.HostRoot | undefined
  /** How long to wait for another process holding the snapshot's lock before `Busy` (default one minute). */
  readonly lockTimeout?: Duration.Input | undefined
}) => Effect.Effect<boolean, SnapshotError | HostPath.HostPathError, FileSystem.FileSystem | Directory.Directories> =
  Effect.fn("Snapshot.discard")(function* (options) {
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
 * @example
 * ```ts
 * import { RestartChanged, Snapshot } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // The writes and the restarts in one scope: if either fails, the scope's end puts the old configuration back.
 * const upgrade = (writeNewConfig: Effect.Effect<void, Error>) =>
 *   Effect.scoped(
 *     Effect.gen(function* () {
 *       yield* Snapshot.scoped({ dir: "/etc/hostnode/snapshot" })
 *       yield* writeNewConfig
 *       yield* RestartChanged.restartChanged({ wasRunning: true, units: [{ unit: "kubelet.service", changed: true }] })
 *     })
 *   )
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const scoped: (
  options: TakeOptions
) => Effect.Effect<
  Snapshot,
  SnapshotError | HostPath.HostPathError,
  FileSystem.FileSystem | Directory.Directories | Systemd | Scope.Scope
> = Effect.fn("Snapshot.scoped")(function* (options: TakeOptions) {
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
 * @example
 * ```ts
 * import { Snapshot } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // Another agent upgrading the same host is waited for, then reported with its pid.
 * const upgrade = (writeNewConfig: Effect.Effect<void, Error>) =>
 *   Snapshot.guarded(writeNewConfig, { dir: "/etc/hostnode/snapshot" }).pipe(
 *     Effect.catchReason("SnapshotError", "Busy", (busy) =>
 *       Effect.logWarning(`another process (pid ${busy.pid ?? "unknown"}) holds the snapshot`)
 *     )
 *   )
 * ```
 *
 * @category operations
 * @since 0.2.0
 */
export const guarded: <A, E, R>(
  upgrade: Effect.Effect<A, E, R>,
  options: TakeOptions
) => Effect.Effect<
  A,
  E | SnapshotError | HostPath.HostPathError,
  R | FileSystem.FileSystem | Directory.Directories | Systemd
> = Effect.fn("Snapshot.guarded")(function* <A, E, R>(upgrade: Effect.Effect<A, E, R>, options: TakeOptions) {
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
