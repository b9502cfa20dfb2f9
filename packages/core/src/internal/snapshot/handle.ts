/**
 * A snapshot's handle and the steps behind every operation, each in the
 * snapshot's lock: taking into the locked parent, loading and checking a
 * snapshot before a restore, restoring then consuming it, discarding it,
 * and the rollback `scoped` and `guarded` run when an upgrade fails.
 *
 * Internal to `Snapshot`, whose exported operations decode their options
 * (`input.ts`) and call these.
 *
 * @since 0.3.0
 */
import { type Cause, Effect, Option, Ref, Semaphore } from "effect"
import * as ConfSnap from "../../ConfSnap.ts"
import type * as Directory from "../../Directory.ts"
import type { Snapshot, TakeOptions } from "../../Snapshot.ts"
import { Failure, RollbackFailed, type SnapshotError } from "../../SnapshotError.ts"
import { Systemd, type SystemdError } from "../../Systemd.ts"
import * as Lexical from "../hostPath/lexical.ts"
import * as Track from "../metrics.ts"
import { type Ctx, error, fail, fromDirectory, isHostPath, prefixed } from "./context.ts"
import { checkTakeInput, makeCtx, normalizePaths } from "./input.ts"
import * as ManifestCodec from "./manifest.ts"
import { DataName, type Manifest, ManifestName } from "./model.ts"
import { checkBeforeMaking } from "./overlap.ts"
import * as Restore from "./restore.ts"
import * as Store from "./store.ts"
import * as Take from "./take.ts"

/** The options of `Snapshot.takeOf`: the paths given. */
type TakeOfOptions = TakeOptions & { readonly paths: ReadonlyArray<string> }

/**
 * Runs `body` with the snapshot's parent open and, unless the caller holds
 * it already, its lock: in a scope of its own, so the lock is released when
 * `body` ends. `undefined` when the parent does not exist (and `make` is
 * false). Directories made on the way to the parent are removed again when
 * `body` fails (while they are empty): a failed take leaves nothing.
 */
export const withParent = <A, E, R>(
  ctx: Ctx,
  options: { readonly make: boolean; readonly held: boolean },
  body: (parent: Directory.Handle) => Effect.Effect<A, E, R>
) =>
  Effect.scoped(
    Effect.gen(function* () {
      const made: Array<Store.Made> = []
      const parent = yield* Store.openParent(ctx, options.make, made)
      if (parent === undefined) return Option.none<A>()
      return yield* Effect.gen(function* () {
        if (!options.held) yield* Store.lock(ctx, parent)
        return Option.some(yield* body(parent))
      }).pipe(Effect.onError(() => Store.unmake(ctx, made)))
    })
  )

/** Reads and checks the manifest of the snapshot directory `snapshot`. */
export const load = (ctx: Ctx, snapshot: Directory.Handle) =>
  Effect.scoped(
    Effect.gen(function* () {
      const opened = yield* Store.openChecked(ctx, snapshot, ManifestName)
      if (opened === undefined)
        return yield* fail(ctx, new Failure({ _tag: "InvalidManifest", detail: `${ManifestName} is missing` }))
      if (opened.stat.size > ManifestCodec.MaxManifestBytes) {
        return yield* fail(
          ctx,
          new Failure({
            _tag: "InvalidManifest",
            detail: `${ManifestName} is ${opened.stat.size} bytes, more than the ${ManifestCodec.MaxManifestBytes} a take ever writes`
          })
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
    if (opened === undefined)
      return yield* fail(ctx, new Failure({ _tag: "Corrupt", detail: `${DataName} is missing` }))
    if (opened.stat.size !== manifest.dataSize) {
      return yield* fail(
        ctx,
        new Failure({
          _tag: "Corrupt",
          detail: `${DataName} is ${opened.stat.size} bytes; the manifest says ${manifest.dataSize}`
        })
      )
    }
    const hole = yield* opened.file.holeAt(0).pipe(Effect.mapError(fromDirectory(ctx)))
    if (hole < opened.stat.size) {
      // A take writes every byte: a hole means someone else made this file (a sparse
      // file claims any size for free; hashing it would read zeros for hours).
      return yield* fail(
        ctx,
        new Failure({ _tag: "Corrupt", detail: `${DataName} has a hole at byte ${hole}: it was not written by a take` })
      )
    }
    return opened.file
  })

/**
 * Fails with `HostRootMismatch` when `manifest` was taken below another host
 * root than the one of `ctx`, unless the caller allowed it: the host root is
 * an operator's input, and a restore below the wrong tree removes every
 * recorded path that is not there.
 */
export const checkRoot = (ctx: Ctx, manifest: Manifest) => {
  const recorded = manifest.hostRoot === "" ? "/" : manifest.hostRoot
  // The root's identity, not its path: a container's root is reached through
  // a pid that changes when it restarts, and that another process may reuse.
  const here = ctx.root.identity
  return recorded === here || ctx.allowHostRootMismatch
    ? Effect.void
    : fail(
        ctx,
        new Failure({
          _tag: "HostRootMismatch",
          detail: `it was taken below host root ${JSON.stringify(recorded)}, not ${JSON.stringify(here)}; pass allowHostRootMismatch (--allow-root-mismatch) if that is the same tree under another name`
        })
      )
}

/**
 * Restores the snapshot in `parent` (the lock held), reloads systemd on the
 * real root, then consumes it. `false` when there is no snapshot.
 */
export const restoreIn = (ctx: Ctx, parent: Directory.Handle) =>
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
          prefixed(
            e.reason,
            "the configuration was restored, but the snapshot could not be removed (remove it before anything runs recover): "
          )
        )
      )
    )
    yield* Effect.logInfo("configuration snapshot restored").pipe(
      Effect.annotateLogs({ entries: checked.manifest.entries.length, changes })
    )
    return true
  }).pipe(Effect.scoped)

export const restoreAt = (ctx: Ctx, held: boolean): Effect.Effect<void, SnapshotError | SystemdError, Systemd> =>
  withParent(ctx, { make: false, held }, (parent) => restoreIn(ctx, parent)).pipe(
    Effect.flatMap((found) =>
      Option.isSome(found) && found.value
        ? Effect.void
        : fail(
            ctx,
            new Failure({
              _tag: "Missing",
              detail: "there is no snapshot in this directory (discarded, or consumed by a restore)"
            })
          )
    ),
    Effect.annotateLogs({ snapshotDir: ctx.dir, hostRoot: ctx.hostRoot }),
    Track.snapshot("Snapshot.restore", "restore", () => "restored"),
    Effect.withSpan("Snapshot.restore", { attributes: { dir: ctx.dir, hostRoot: ctx.hostRoot } })
  )

export const discardAt = (ctx: Ctx, held: boolean) =>
  withParent(ctx, { make: false, held }, (parent) => Store.discard(ctx, parent)).pipe(
    Effect.map((found) => Option.isSome(found) && found.value),
    Effect.annotateLogs({ snapshotDir: ctx.dir, hostRoot: ctx.hostRoot }),
    Track.snapshot("Snapshot.discard", "discard", (found: boolean) => (found ? "discarded" : "none")),
    Effect.withSpan("Snapshot.discard", { attributes: { dir: ctx.dir, hostRoot: ctx.hostRoot } })
  )

export const makeHandle = (ctx: Ctx, manifest: Manifest, held: boolean) =>
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
            Effect.logWarning("could not discard the configuration snapshot; remove it by hand").pipe(
              Effect.annotateLogs({ error: e.message, snapshotDir: ctx.dir, hostRoot: ctx.hostRoot })
            )
          )
        )
      ),
      restored: Ref.get(restored)
    }
    return snapshot
  })

/** Takes the snapshot in `parent` (the lock held) and makes its handle. */
export const takeIn = (ctx: Ctx, parent: Directory.Handle, options: TakeOfOptions, held: boolean) =>
  Effect.gen(function* () {
    const exclude = (options.exclude ?? ConfSnap.Exclude).map(Lexical.clean)
    for (const x of exclude) {
      if (!isHostPath(x))
        return yield* fail(
          ctx,
          new Failure({
            _tag: "InvalidPath",
            path: x,
            detail: "an exclusion must be an absolute host path other than /"
          })
        )
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

/** The release of {@link scoped} and {@link guarded}: discard on success, restore (consuming) on failure. */
export const rollbackOn = (snapshot: Snapshot, cause: Cause.Cause<unknown>) =>
  snapshot.restore.pipe(
    Effect.tapError((rollback) =>
      Effect.logError("rolling back the configuration failed; the snapshot is kept for Snapshot.recover").pipe(
        Effect.annotateLogs({ error: rollback.message, snapshotDir: snapshot.dir, hostRoot: snapshot.hostRoot })
      )
    ),
    Effect.mapError((rollback) => error(snapshot, new RollbackFailed({ upgrade: cause, rollback }))),
    Track.snapshotAction("rollback", () => "rolled_back")
  )

/** Opens the parent in the caller's scope and holds the lock there, then takes: the lock lasts as long as the scope. */
export const takeHeld = (options: TakeOptions) =>
  Effect.gen(function* () {
    const ctx = yield* makeCtx(options)
    const takeOptions: TakeOfOptions = {
      dir: options.dir,
      hostRoot: options.hostRoot,
      paths: options.paths ?? ConfSnap.DefaultPaths,
      exclude: options.exclude
    }
    yield* checkTakeInput(ctx, takeOptions)
    yield* checkBeforeMaking(ctx, yield* normalizePaths(ctx, takeOptions.paths))
    const made: Array<Store.Made> = []
    const parent = yield* Store.openParent(ctx, true, made)
    if (parent === undefined)
      return yield* fail(ctx, new Failure({ _tag: "Io", detail: `${ctx.parentPath} could not be made` }))
    return yield* Effect.gen(function* () {
      yield* Store.lock(ctx, parent)
      return yield* takeIn(ctx, parent, takeOptions, true)
    }).pipe(Effect.onError(() => Store.unmake(ctx, made)))
  }).pipe(Track.snapshotAction("take", () => "taken"))
