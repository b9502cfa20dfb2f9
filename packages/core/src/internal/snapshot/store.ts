/**
 * The snapshot directory on disk, through directory handles: its parent
 * (opened once from the path the caller gave, the one path trusted, and
 * locked: the lock is a `flock` on the parent directory itself, so no file
 * is ever made for it), the snapshot directory and its two files opened
 * without following links and without blocking and checked on the open
 * handle, the staging and half-discarded copies a crash leaves, and the
 * discard itself (renamed aside, then removed by `SafeRemove`'s handle walk).
 *
 * Internal to `Snapshot`.
 *
 * @since 0.2.0
 */
import { Clock, Duration, Effect, FileSystem, Option, type Scope } from "effect"
import * as Directory from "../../Directory.ts"
import * as FileName from "../../FileName.ts"
import * as HostPath from "../../HostPath.ts"
import type { File } from "../../Programs.ts"
import * as SafeRemove from "../../SafeRemove.ts"
import { Busy, Failure } from "../../SnapshotError.ts"
import * as Names from "../directory/names.ts"
import * as Lexical from "../hostPath/lexical.ts"
import { type Ctx, error, fail, fromDirectory } from "./context.ts"
import { DataName, ManifestName } from "./model.ts"

/** The staging directories of a take start with this; `recover` and the next take remove them. */
export const stagingPrefix = (ctx: Ctx) => `${ctx.base}.tmp-`

/** A discarded snapshot is renamed to this before it is removed. */
export const discardingName = (ctx: Ctx) => `${ctx.base}.discarding`

const bytes = FileName.encode

/** A directory a take made on the way to its snapshot's parent: removed again (when still empty) if the take fails. */
export interface Made {
  readonly parent: Directory.Handle
  readonly name: Uint8Array
}

/**
 * Opens the directory at the full path `path`, making it and its missing
 * parents (mode 0755) when asked; each directory made is added to `made`,
 * outermost first.
 */
const openOrMake = (
  ctx: Ctx,
  path: string,
  make: boolean,
  made: Array<Made>
): Effect.Effect<Directory.Handle | undefined, Directory.DirectoryError, Scope.Scope> =>
  Effect.gen(function* () {
    const opened = yield* Effect.result(ctx.dirs.openRoot(path))
    if (opened._tag === "Success") return opened.success
    if (opened.failure.reason._tag !== "NotFound" || !make || path === "/") {
      return opened.failure.reason._tag === "NotFound" && !make ? undefined : yield* opened.failure
    }
    const parent = yield* openOrMake(ctx, Lexical.dirname(path), true, made)
    if (parent === undefined) return undefined
    const name = bytes(path.slice(path.lastIndexOf("/") + 1))
    const result = yield* Effect.result(ctx.dirs.makeDirectory(parent, name, 0o755))
    if (result._tag === "Failure" && result.failure.reason._tag !== "Exists") return yield* result.failure
    if (result._tag === "Success") made.push({ parent, name })
    return yield* ctx.dirs.openDirectory(parent, name)
  })

/**
 * The snapshot's parent directory, opened from the path the caller gave
 * (links in it followed, once: it is the operator's choice of place), made
 * first when `make` (the directories made are added to `made`);
 * `undefined` when it does not exist and may not be made.
 */
export const openParent = (ctx: Ctx, make: boolean, made: Array<Made> = []) =>
  openOrMake(ctx, ctx.parentPath, make, made).pipe(Effect.mapError(fromDirectory(ctx)))

/**
 * Removes the directories a failed take made on the way to its parent, the
 * deepest first, each only while it is empty (`rmdir`): a take that fails
 * leaves the host as it found it. What cannot go stays, said at debug.
 */
export const unmake = (ctx: Ctx, made: ReadonlyArray<Made>) =>
  Effect.forEach(
    [...made].reverse(),
    (m) =>
      ctx.dirs
        .unlink(m.parent, m.name, { directory: true })
        .pipe(
          Effect.catch((e) =>
            Effect.logDebug(`left ${FileName.display(Names.childPath(m.parent.path, m.name))}: ${e.message}`)
          )
        ),
    { discard: true }
  )

/** Fails `Unsafe` unless `st` is owned by the running user and writable by nobody else. */
const checkOwned = (ctx: Ctx, st: Directory.Stat, what: string) => {
  if (st.uid !== ctx.credentials.uid) {
    return fail(
      ctx,
      new Failure({
        _tag: "Unsafe",
        detail: `${what} is owned by uid ${st.uid}, not by the running user (uid ${ctx.credentials.uid}): another user could have written it`
      })
    )
  }
  if ((st.mode & 0o022) !== 0) {
    return fail(
      ctx,
      new Failure({
        _tag: "Unsafe",
        detail: `${what} is writable by ${(st.mode & 0o020) !== 0 ? "its group" : "others"} (mode ${st.mode.toString(8)}): another user could have written it`
      })
    )
  }
  return Effect.void
}

/**
 * Opens the regular file `name` of `dir` for reading without following a
 * link and without blocking (a FIFO planted there cannot hang), and checks
 * the open file: regular, owned by the running user, writable by nobody
 * else. `undefined` when there is no such name.
 */
export const openChecked = (ctx: Ctx, dir: Directory.Handle, name: string) =>
  Effect.gen(function* () {
    const what = `${ctx.dir}/${name}`
    const opened = yield* Effect.result(ctx.dirs.openFile(dir, bytes(name), { mode: "read" }))
    if (opened._tag === "Failure") {
      const e = opened.failure
      switch (e.reason._tag) {
        case "NotFound":
          return undefined
        case "SymbolicLink":
          return yield* fail(
            ctx,
            new Failure({ _tag: "Unsafe", detail: `${what} is a symbolic link; a snapshot's files are never followed` })
          )
        case "WrongType":
        case "IsADirectory":
          return yield* fail(
            ctx,
            new Failure({ _tag: "Unsafe", detail: `${what} is not a regular file (${e.reason.detail})` })
          )
        default:
          return yield* fromDirectory(ctx)(e)
      }
    }
    const st = yield* opened.success.stat.pipe(Effect.mapError(fromDirectory(ctx)))
    yield* checkOwned(ctx, st, what)
    return { file: opened.success, stat: st }
  })

/** Reads all `size` bytes of an open file (fewer when it ends sooner). */
export const readWhole = (ctx: Ctx, file: File, size: number) =>
  Effect.gen(function* () {
    const buf = new Uint8Array(size)
    let n = 0
    while (n < size) {
      const r = yield* file.read(buf.subarray(n), n).pipe(Effect.mapError(fromDirectory(ctx)))
      if (r === 0) break
      n += r
    }
    return n === size ? buf : buf.subarray(0, n)
  })

/**
 * Holds the snapshot's lock for the rest of the scope: an exclusive `flock`
 * on the snapshot's parent directory itself, which every take, restore,
 * recover and discard of a snapshot in that directory takes, in this
 * process or any other. Nothing is created for it, so no command (refused,
 * failed or successful) leaves a lock file, none lands inside a recorded
 * path or beside a mistyped `--dir`, and a crash leaves nothing either: the
 * lock dies with its process, so a crashed holder never blocks the recover
 * after it. Snapshots that share a parent directory share its lock: one
 * of them at a time. Another holder is waited for, polling, up to the
 * timeout; then `Busy`, naming the holder's pid when the platform can.
 */
export const lock = (ctx: Ctx, parent: Directory.Handle) =>
  Effect.gen(function* () {
    const timeout = Duration.toMillis(ctx.lockTimeout)
    const start = yield* Clock.currentTimeMillis
    for (;;) {
      if (yield* ctx.dirs.lock(parent).pipe(Effect.mapError(fromDirectory(ctx)))) return
      const waited = (yield* Clock.currentTimeMillis) - start
      if (waited >= timeout) {
        const pid = yield* ctx.dirs.lockHolder(parent)
        const who =
          pid === undefined
            ? "another process"
            : pid === ctx.credentials.pid
              ? `this process (pid ${pid}: another snapshot of ${ctx.parentPath} is in use; nested snapshots need directories of their own)`
              : `process ${pid}`
        return yield* fail(
          ctx,
          new Busy({
            ...(pid === undefined ? {} : { pid }),
            detail: `${who} holds the lock of ${ctx.parentPath} (a take, restore, recover or discard of a snapshot in it); waited ${Math.round(waited)} ms`
          })
        )
      }
      yield* Effect.sleep(Duration.millis(Math.min(25, timeout - waited)))
    }
  }).pipe(Effect.withSpan("Snapshot.lock"))

/**
 * The snapshot directory in `parent`, opened without following a link and
 * checked (a directory, owned by the running user, writable by nobody else);
 * `undefined` when there is none.
 */
export const openSnapshot = (ctx: Ctx, parent: Directory.Handle) =>
  Effect.gen(function* () {
    const opened = yield* Effect.result(ctx.dirs.openDirectory(parent, bytes(ctx.base)))
    if (opened._tag === "Failure") {
      const e = opened.failure
      if (e.reason._tag === "NotFound") return undefined
      if (e.reason._tag === "SymbolicLink" || e.reason._tag === "NotADirectory") {
        const st = yield* Effect.option(ctx.dirs.stat(parent, bytes(ctx.base)))
        return yield* fail(
          ctx,
          new Failure({
            _tag: "Unsafe",
            detail: `${ctx.dir} is a ${Option.match(st, { onNone: () => "node", onSome: (s) => s.type })}, not a directory; it is never followed`
          })
        )
      }
      return yield* fromDirectory(ctx)(e)
    }
    const st = yield* ctx.dirs.stat(opened.success).pipe(Effect.mapError(fromDirectory(ctx)))
    yield* checkOwned(ctx, st, ctx.dir)
    return opened.success
  })

/** A removal session below the snapshot's parent, on its open handle. */
const parentSession = (ctx: Ctx, parent: Directory.Handle) =>
  HostPath.decodeRoot(ctx.parentPath).pipe(
    Effect.flatMap((root) => SafeRemove.session({ hostRoot: root, handle: parent })),
    provide(ctx),
    Effect.mapError((e) =>
      error(
        ctx,
        new Failure({ _tag: "Io", detail: `the snapshot's directory ${ctx.parentPath} cannot be used: ${e.message}` })
      )
    )
  )

/** Provides the operation's own services to an effect of the modules it builds on. */
export const provide =
  (ctx: Ctx) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    effect.pipe(
      Effect.provideService(Directory.Directories, ctx.dirs),
      Effect.provideService(FileSystem.FileSystem, ctx.fs)
    ) as Effect.Effect<A, E, Exclude<R, Directory.Directories | FileSystem.FileSystem>>

/** Removes `names` of the parent through the session; anything kept fails with what kept it. */
const removeNames = (ctx: Ctx, parent: Directory.Handle, names: ReadonlyArray<string>, leftover: boolean) =>
  Effect.gen(function* () {
    if (names.length === 0) return
    const session = yield* parentSession(ctx, parent)
    for (const name of names) {
      const report = yield* session.removeAt(parent, bytes(name), Lexical.child(session.root.path, name))
      const kept = report.kept[0]
      if (kept !== undefined) {
        return yield* fail(
          ctx,
          new Failure({ _tag: "Io", detail: `${FileName.display(kept.path)} could not be removed: ${kept.detail}` })
        )
      }
      if (leftover) {
        yield* Effect.logInfo("removed an uncommitted or half-discarded snapshot").pipe(
          Effect.annotateLogs({ path: `${ctx.parentPath}/${name}` })
        )
      }
    }
    yield* ctx.dirs.sync(parent).pipe(Effect.mapError(fromDirectory(ctx)))
  })

/** Removes what a take that never committed, or a discard that never finished, left beside the snapshot. */
export const removeLeftovers = (ctx: Ctx, parent: Directory.Handle) =>
  Effect.gen(function* () {
    const listed = yield* ctx.dirs.list(parent).pipe(Effect.mapError(fromDirectory(ctx)))
    const prefix = stagingPrefix(ctx)
    const aside = discardingName(ctx)
    const names = listed.map((e) => FileName.decode(e.name)).filter((n) => n.startsWith(prefix) || n === aside)
    yield* removeNames(ctx, parent, names, true)
  })

/**
 * Fails `NotASnapshot` unless the node `st` at the snapshot's name is a
 * directory holding nothing but what a take writes (`manifest.json` and
 * `data`; `complete`: both, else either may be missing, as in a damaged
 * snapshot). A discard removes the whole directory, so `--dir /etc` typed
 * for `--dir /etc/snap` must be refused, not emptied; a take into such a
 * directory is told it is not a snapshot rather than that one is there.
 */
export const checkIsSnapshot = (ctx: Ctx, parent: Directory.Handle, st: Directory.Stat, complete: boolean) =>
  Effect.gen(function* () {
    if (st.type !== "Directory") {
      return yield* fail(
        ctx,
        new Failure({
          _tag: "NotASnapshot",
          detail: `it is a ${st.type}, not a snapshot directory; nothing was changed`
        })
      )
    }
    const dir = yield* ctx.dirs.openDirectory(parent, bytes(ctx.base)).pipe(Effect.mapError(fromDirectory(ctx)))
    const names = (yield* ctx.dirs.list(dir).pipe(Effect.mapError(fromDirectory(ctx)))).map((e) =>
      FileName.decode(e.name)
    )
    const foreign = names.filter((n) => n !== ManifestName && n !== DataName)
    if (foreign.length > 0) {
      const shown = foreign.slice(0, 3).map((n) => FileName.display(n))
      const more = foreign.length > 3 ? ` and ${foreign.length - 3} more` : ""
      return yield* fail(
        ctx,
        new Failure({
          _tag: "NotASnapshot",
          detail: `it holds ${shown.join(", ")}${more}, which no take writes (a snapshot holds only ${ManifestName} and ${DataName}); nothing was changed`
        })
      )
    }
    if (complete && !names.includes(ManifestName)) {
      return yield* fail(
        ctx,
        new Failure({ _tag: "NotASnapshot", detail: `it is a directory without ${ManifestName}; nothing was changed` })
      )
    }
  }).pipe(Effect.scoped)

/**
 * Discards the snapshot in `parent`: renamed aside first (a crash while
 * removing leaves a name `recover` removes, never a half-deleted snapshot it
 * would try to restore), the rename made durable, then removed. True when
 * there was one.
 */
export const discard = (ctx: Ctx, parent: Directory.Handle) =>
  Effect.gen(function* () {
    yield* removeLeftovers(ctx, parent)
    const present = yield* Effect.result(ctx.dirs.stat(parent, bytes(ctx.base)))
    if (present._tag === "Failure") {
      if (present.failure.reason._tag === "NotFound") return false
      return yield* fromDirectory(ctx)(present.failure)
    }
    yield* checkIsSnapshot(ctx, parent, present.success, false)
    yield* ctx.dirs
      .rename(parent, bytes(ctx.base), parent, bytes(discardingName(ctx)), { noReplace: true })
      .pipe(Effect.mapError(fromDirectory(ctx)))
    yield* ctx.dirs.sync(parent).pipe(Effect.mapError(fromDirectory(ctx)))
    yield* removeNames(ctx, parent, [discardingName(ctx)], false)
    return true
  })
