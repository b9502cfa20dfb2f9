/**
 * Removing paths below a host root so that nothing is deleted where it must
 * not be: `rm -rf` through a bind mount deletes the mount's source (CSI data
 * has been lost that way), and `rm -rf` through a planted symlink deletes
 * whatever the link points at.
 *
 * The rules, in the order they are applied:
 * - Containment: a host path is joined below the host root with
 *   `HostPath.resolve`, its parents resolved as though the root were `/`, its
 *   last component never followed.
 * - The mount table first: a path with a mount at or below it, or with the
 *   source of a mount (a bind mount's directory, as the table's `root` field
 *   and the mount of the same device show it) at or below it, is kept whole,
 *   never entered, and the report says which mount keeps it.
 * - The device second: every entry is `lstat`ed and compared with the
 *   directory it is in; one on another device is a mount the table did not
 *   show (a table read from another namespace, a mount made meanwhile) and is
 *   kept, as `rm --one-file-system` would. (A btrfs subvolume has its own
 *   device too and is kept as well.)
 * - No symlink is followed: links and files are unlinked with a
 *   non-recursive `remove`; directories are walked with `lstat` and
 *   `readDirectory` and removed bottom-up, each only once it is verified to be
 *   the directory that was listed and to be empty.
 * - Missing is success; every removal is logged at info, every kept path at
 *   warning.
 *
 * Boundary: this module decides what may be removed and removes it through
 * the `FileSystem`. What to remove on a repave is in `Repave`; unmounting is
 * in `Unmount`.
 *
 * Residual race: the `FileSystem` is path based, so a directory swapped for a
 * symlink between the check of a path and its use is a window no path-based
 * API closes (closing it needs `openat`/`unlinkat` with `O_NOFOLLOW`). Each
 * directory's identity (device, inode, type) is checked again after it is
 * listed and before it is removed, which narrows the window to between two
 * system calls; the operations run while the node stack is stopped, when no
 * pod can write below the kubelet or CNI directories.
 *
 * @since 0.1.0
 */
import { Effect, FileSystem, Option, Schema } from "effect"
import type { PlatformError } from "effect/PlatformError"
import * as HostPath from "./HostPath.ts"
import * as MountInfo from "./MountInfo.ts"

/**
 * Why a path was left in place.
 *
 * - `MountBelow`: a mount at or below it (the table says so; `mountPoint` names it).
 * - `MountSourceBelow`: the source of a mount lies at or below it: removing it
 *   would delete files that are still reachable through that mount (`mountPoint`).
 * - `OtherFileSystem`: it is on another device than the directory it is in, a
 *   mount the table did not show; it is not entered.
 * - `NotADirectory`: a directory was to be emptied, but a symlink or a file is
 *   there; it is not followed.
 * - `UnmountFailed`: its mounts could not be unmounted (teardown), so it was
 *   not looked at (`mountPoint` names one that remains).
 * - `Failed`: the file system refused (EACCES, EBUSY, EROFS, ...) or the path
 *   changed while it was being removed; `detail` says how.
 */
export const KeptReason = Schema.Literals([
  "MountBelow",
  "MountSourceBelow",
  "OtherFileSystem",
  "NotADirectory",
  "UnmountFailed",
  "Failed"
])

/** Why a path was left in place. */
export type KeptReason = typeof KeptReason.Type

/** A path left in place, why, and (for the mount reasons) the mount point as the table shows it. */
export const Kept = Schema.Struct({
  path: Schema.String,
  reason: KeptReason,
  mountPoint: Schema.optionalKey(Schema.String),
  detail: Schema.String
})

/** A path left in place. */
export type Kept = typeof Kept.Type

/**
 * What a removal did: the paths removed (full paths below the canonical host
 * root, in the order they went, children before their directory) and those
 * kept. A kept path's ancestors stay too and are not listed again.
 */
export const Report = Schema.Struct({
  removed: Schema.Array(Schema.String),
  kept: Schema.Array(Kept)
})

/** What a removal did. */
export type Report = typeof Report.Type

/** The report of a removal that found nothing to do. */
export const emptyReport: Report = { removed: [], kept: [] }

/** The reports of several removals as one, in order. */
export const merge = (...reports: ReadonlyArray<Report>): Report => ({
  removed: reports.flatMap((r) => r.removed),
  kept: reports.flatMap((r) => r.kept)
})

/**
 * Options of every removal: the host root the paths are host paths of (the
 * real host by default) and the mount table that describes it (see
 * `HostPath.RootOptions`).
 */
export type Options = HostPath.RootOptions

/** A table entry, its mount point and root cleaned once. */
interface Indexed {
  readonly entry: MountInfo.MountEntry
  readonly mountPoint: string
  readonly root: string
}

/** A mount table prepared for {@link blockers}. */
export interface TableIndex {
  readonly entries: ReadonlyArray<Indexed>
  /** The entries of each device (`major:minor`). */
  readonly byDevice: ReadonlyMap<string, ReadonlyArray<Indexed>>
  /** The distinct (device, root) pairs mounted at each mount point. */
  readonly byMountPoint: ReadonlyMap<string, ReadonlyArray<{ readonly device: string; readonly root: string }>>
}

/** Indexes `table` for {@link blockers}: mount points and roots cleaned, entries grouped by device and mount point. */
export const indexTable = (table: MountInfo.MountTable): TableIndex => {
  const entries: Array<Indexed> = []
  const byDevice = new Map<string, Array<Indexed>>()
  const byMountPoint = new Map<string, Array<{ readonly device: string; readonly root: string }>>()
  for (const entry of table) {
    const e = { entry, mountPoint: HostPath.clean(entry.mountPoint), root: HostPath.clean(entry.root) }
    entries.push(e)
    const device = `${entry.major}:${entry.minor}`
    const group = byDevice.get(device)
    if (group === undefined) byDevice.set(device, [e])
    else group.push(e)
    // Stacked copies of one mount (thousands of binds of the kubelet directory
    // onto itself have been seen) are one pair here.
    const at = byMountPoint.get(e.mountPoint)
    if (at === undefined) byMountPoint.set(e.mountPoint, [{ device, root: e.root }])
    else if (!at.some((x) => x.device === device && x.root === e.root)) at.push({ device, root: e.root })
  }
  return { entries, byDevice, byMountPoint }
}

/** Why the table keeps a path: which mount, and where (a mount point, or where that mount's source shows). */
export interface Blocker {
  readonly reason: "MountBelow" | "MountSourceBelow"
  readonly entry: MountInfo.MountEntry
  /** The table path at or below the examined path that keeps it. */
  readonly at: string
}

// `path` (clean, at or below `ancestor`) relative to `ancestor`: "" or "/...".
const suffix = (ancestor: string, path: string): string =>
  ancestor === "/" ? (path === "/" ? "" : path) : path.slice(ancestor.length)

// `base` (clean) followed by `rest` ("" or "/..."), clean.
const append = (base: string, rest: string): string => (rest === "" ? base : base === "/" ? rest : base + rest)

/**
 * What in the table keeps `path` (a clean table path): every mount at or below
 * it, and every mount whose source lies at or below it. A source is found
 * through the mounts `path` lies in: `path` is, on the device of such a mount,
 * the directory `root + (path - mountPoint)`, and a mount of the same device
 * whose root lies at or below that directory shows files of `path`.
 *
 * Sources above `path` do not keep it: a bind of `/` (a container's
 * `/rootfs`) shows every file of the host, and removing anything would be
 * removing a file reachable through it.
 */
export const blockers = (index: TableIndex, path: string): Array<Blocker> => {
  const out: Array<Blocker> = []
  const seen = new Set<MountInfo.MountEntry>()
  for (const e of index.entries) {
    if (!HostPath.covers(path, e.mountPoint)) continue
    out.push({ reason: "MountBelow", entry: e.entry, at: e.mountPoint })
    seen.add(e.entry)
  }
  if (path === "/") return out
  const looked = new Set<string>()
  // The mounts `path` lies in are at its strict ancestors: "/", "/var", "/var/lib", ...
  for (let end = 0; end !== -1 && end < path.length; end = path.indexOf("/", end + 1)) {
    const mountPoint = end === 0 ? "/" : path.slice(0, end)
    for (const { device, root } of index.byMountPoint.get(mountPoint) ?? []) {
      // Strictly below `root`, since `path` is strictly below `mountPoint`.
      const onDevice = append(root, suffix(mountPoint, path))
      const key = `${device}\0${onDevice}`
      if (looked.has(key)) continue
      looked.add(key)
      for (const e of index.byDevice.get(device) ?? []) {
        if (seen.has(e.entry) || !HostPath.covers(onDevice, e.root)) continue
        seen.add(e.entry)
        out.push({ reason: "MountSourceBelow", entry: e.entry, at: append(path, suffix(onDevice, e.root)) })
      }
    }
  }
  return out
}

/** Options of {@link Session.empty}. */
export interface EmptyOptions {
  /** Which entries of the directory to remove, by name (default: all). */
  readonly select?: ((name: string) => boolean) | undefined
}

/**
 * Removals against one host root and one reading of its mount table. Read it
 * again (a new session) after anything is mounted or unmounted.
 */
export interface Session {
  /** The canonical host root the reported paths start with. */
  readonly root: HostPath.HostRoot
  /** Removes each host path (a file, a link, a directory tree) under the rules of this module. */
  readonly remove: (paths: ReadonlyArray<string>) => Effect.Effect<Report, HostPath.HostPathError>
  /**
   * Removes the entries of the directory at host path `dir` (those `select`
   * picks), keeping the directory. A symlink or file at `dir` is not followed
   * and is reported `NotADirectory`; a mount at `dir` keeps it whole. A bind
   * mount elsewhere whose source is `dir` itself does not keep it: that mount
   * shows the very directory being emptied.
   */
  readonly empty: (dir: string, options?: EmptyOptions) => Effect.Effect<Report, HostPath.HostPathError>
}

// NotFound only: where a directory was expected, ENOTDIR means something other
// than a directory stands there (not that nothing does), so it is a failure.
// For a path looked up or removed, ENOTDIR (a parent is a file) means it cannot
// exist: those call HostPath.isMissing.
const isNotFound = (e: PlatformError): boolean => e.reason._tag === "NotFound"

/**
 * Logs a kept path as a warning with its reason (and the mount that kept it):
 * every keep, here or by the operations built on this module, reads the same.
 */
export const logKept = (kept: Kept): Effect.Effect<void> =>
  Effect.logWarning(`kept ${kept.path}: ${kept.detail}`).pipe(
    Effect.annotateLogs({ path: kept.path, reason: kept.reason, mountPoint: kept.mountPoint ?? "" })
  )

const device = (info: FileSystem.File.Info): string => String(info.dev)

const sameNode = (a: FileSystem.File.Info, b: FileSystem.File.Info): boolean =>
  a.type === b.type && a.dev === b.dev && Option.getOrUndefined(a.ino) === Option.getOrUndefined(b.ino)

/**
 * Opens a session on `root`: reads and indexes its mount table. An unreadable
 * or malformed table fails here, before anything is removed.
 */
export const open: (
  root: HostPath.HostRoot
) => Effect.Effect<Session, MountInfo.MountInfoError, FileSystem.FileSystem> = Effect.fn("SafeRemove.open")(
  function* (root) {
    const fs = yield* FileSystem.FileSystem
    const index = indexTable(yield* MountInfo.read(root.mountInfo))

    // One call's accumulated outcome. Each public call starts a fresh one.
    type Acc = { readonly removed: Array<string>; readonly kept: Array<Kept> }
    const run = (body: (acc: Acc) => Effect.Effect<void>) =>
      Effect.gen(function* () {
        const acc: Acc = { removed: [], kept: [] }
        yield* body(acc)
        return { removed: acc.removed, kept: acc.kept } satisfies Report
      })

    const keep = (acc: Acc, kept: Kept) =>
      Effect.sync(() => acc.kept.push(kept)).pipe(Effect.andThen(logKept(kept)), Effect.as(false))

    const failed = (acc: Acc, path: string, what: string, e: PlatformError) =>
      keep(acc, { path, reason: "Failed", detail: `${what}: ${e.message}` })

    /** What a stat found: the file's info, nothing there, or another error. */
    const found = (info: Effect.Effect<FileSystem.File.Info, PlatformError>) =>
      info.pipe(
        Effect.map((info) => ({ _tag: "Found" as const, info })),
        Effect.catchTag("PlatformError", (e) =>
          Effect.succeed(HostPath.isMissing(e) ? { _tag: "Missing" as const } : { _tag: "Error" as const, error: e })
        )
      )

    const lstat = (path: string) => found(fs.lstat(path))

    // The directory a top path is in, for its device. It was resolved with the
    // path, so it is a directory; `stat` (not `lstat`) because it may be the
    // host root itself, which can be a link (`/proc/<pid>/root`).
    const parentOf = (path: string) => found(fs.stat(HostPath.dirname(path)))

    const removed = (acc: Acc, path: string, type: FileSystem.File.Type) =>
      Effect.sync(() => acc.removed.push(path)).pipe(
        // Per path at debug: a teardown removes thousands; the operation logs one summary at info.
        Effect.andThen(Effect.logDebug(`removed ${path}`).pipe(Effect.annotateLogs({ path, type }))),
        Effect.as(true)
      )

    // Removes what `info` describes at `path`; true when nothing is left there.
    const removeNode = (acc: Acc, path: string, info: FileSystem.File.Info): Effect.Effect<boolean> =>
      info.type === "Directory"
        ? removeDirectory(acc, path, info)
        : fs.remove(path).pipe(
            Effect.andThen(removed(acc, path, info.type)),
            Effect.catchTag("PlatformError", (e) =>
              HostPath.isMissing(e) ? Effect.succeed(true) : failed(acc, path, "remove", e)
            )
          )

    const removeDirectory = (acc: Acc, path: string, info: FileSystem.File.Info): Effect.Effect<boolean> =>
      Effect.gen(function* () {
        const listed = yield* Effect.result(fs.readDirectory(path))
        if (listed._tag === "Failure") {
          return isNotFound(listed.failure) ? true : yield* failed(acc, path, "readDirectory", listed.failure)
        }
        // The directory listed must be the one that was lstat'ed: a directory
        // swapped for a symlink in between would have listed the link's target.
        const listedIt = yield* stillThere(acc, path, info)
        if (listedIt !== "Same") return listedIt === "Gone"
        let gone = true
        for (const name of [...listed.success].sort()) {
          const child = `${path}/${name}`
          const found = yield* lstat(child)
          if (found._tag === "Missing") continue
          if (found._tag === "Error") {
            gone = yield* failed(acc, child, "lstat", found.error)
            continue
          }
          if (found.info.dev !== info.dev) {
            gone = yield* keep(acc, otherFileSystem(child, found.info, info))
            continue
          }
          if (!(yield* removeNode(acc, child, found.info))) gone = false
        }
        if (!gone) return false
        const emptied = yield* stillThere(acc, path, info)
        if (emptied !== "Same") return emptied === "Gone"
        const left = yield* Effect.result(fs.readDirectory(path))
        if (left._tag === "Failure") {
          return isNotFound(left.failure) ? true : yield* failed(acc, path, "readDirectory", left.failure)
        }
        if (left.success.length > 0) {
          return yield* keep(acc, {
            path,
            reason: "Failed",
            detail: `entries appeared while it was being removed: ${left.success.slice(0, 5).join(", ")}`
          })
        }
        // Verified empty: `remove` is then rmdir (a recursive remove is the only
        // way the FileSystem removes a directory).
        return yield* fs.remove(path, { recursive: true }).pipe(
          Effect.andThen(removed(acc, path, "Directory")),
          Effect.catchTag("PlatformError", (e) =>
            isNotFound(e) ? Effect.succeed(true) : failed(acc, path, "rmdir", e)
          )
        )
      })

    // Whether `path` is still the directory `info` describes, is gone, or has
    // changed (reported as kept: nothing more is done there).
    const stillThere = (acc: Acc, path: string, info: FileSystem.File.Info) =>
      Effect.gen(function* () {
        const now = yield* lstat(path)
        if (now._tag === "Found" && sameNode(now.info, info)) return "Same" as const
        if (now._tag === "Missing") return "Gone" as const
        yield* keep(acc, {
          path,
          reason: "Failed",
          detail:
            now._tag === "Error"
              ? `lstat: ${now.error.message}`
              : `replaced while it was being removed (now a ${now.info.type}); not followed`
        })
        return "Changed" as const
      })

    const otherFileSystem = (path: string, info: FileSystem.File.Info, parent: FileSystem.File.Info): Kept => ({
      path,
      reason: "OtherFileSystem",
      detail: `on device ${device(info)}, the directory it is in on ${device(parent)}: a mount the table does not show`
    })

    const blockedBy = (path: string): Kept | undefined => {
      const t = HostPath.tablePathOf(root, path)
      // A path the table cannot show is not removed: nothing is known about its mounts.
      if (t === undefined) return { path, reason: "Failed", detail: "outside the mount table's root" }
      const b = blockers(index, t)[0]
      if (b === undefined) return undefined
      const where = `${b.entry.fsType} ${JSON.stringify(b.entry.source)} mounted at ${b.entry.mountPoint}`
      return b.reason === "MountBelow"
        ? { path, reason: "MountBelow", mountPoint: b.entry.mountPoint, detail: `a mount at or below it: ${where}` }
        : {
            path,
            reason: "MountSourceBelow",
            mountPoint: b.entry.mountPoint,
            detail: `${b.at} is the source of ${where}`
          }
    }

    // Removes one path that starts a removal: checked against the table, then
    // against its parent's device, then removed without following anything.
    const removeTop = (acc: Acc, path: string): Effect.Effect<boolean> =>
      Effect.gen(function* () {
        const blocked = blockedBy(path)
        if (blocked !== undefined) return yield* keep(acc, blocked)
        const found = yield* lstat(path)
        if (found._tag === "Missing") return true
        if (found._tag === "Error") return yield* failed(acc, path, "lstat", found.error)
        const parent = yield* parentOf(path)
        if (parent._tag === "Missing") return true
        if (parent._tag === "Error") return yield* failed(acc, HostPath.dirname(path), "lstat", parent.error)
        if (found.info.dev !== parent.info.dev) return yield* keep(acc, otherFileSystem(path, found.info, parent.info))
        return yield* removeNode(acc, path, found.info)
      })

    // A link in the last component is the thing removed, never followed.
    const resolveBelow = (path: string) =>
      Effect.map(HostPath.decodePath(root, path, { followFinal: false }), (r) => r.full)

    const remove: Session["remove"] = (paths) =>
      Effect.gen(function* () {
        // Every path is decoded before the first removal.
        const full = yield* Effect.forEach(paths, resolveBelow)
        return yield* run((acc) => Effect.forEach(full, (f) => removeTop(acc, f), { discard: true }))
      }).pipe(
        Effect.provideService(FileSystem.FileSystem, fs),
        Effect.withSpan("SafeRemove.remove"),
        Effect.annotateLogs({ hostRoot: root.path })
      )

    const empty: Session["empty"] = (dir, options) =>
      Effect.gen(function* () {
        const full = yield* resolveBelow(dir)
        const select = options?.select ?? (() => true)
        return yield* run((acc) =>
          Effect.gen(function* () {
            const t = HostPath.tablePathOf(root, full)
            const at = t === undefined ? undefined : index.entries.find((e) => e.mountPoint === t)
            if (t === undefined || at !== undefined) {
              yield* keep(acc, {
                path: full,
                reason: "MountBelow",
                ...(at === undefined ? {} : { mountPoint: at.entry.mountPoint }),
                detail:
                  at === undefined
                    ? "outside the mount table's root"
                    : `${at.entry.fsType} ${JSON.stringify(at.entry.source)} is mounted on it; not emptied`
              })
              return
            }
            const found = yield* lstat(full)
            if (found._tag === "Missing") return
            if (found._tag === "Error") {
              yield* failed(acc, full, "lstat", found.error)
              return
            }
            if (found.info.type !== "Directory") {
              const target =
                found.info.type === "SymbolicLink"
                  ? yield* fs.readLink(full).pipe(
                      Effect.map((t) => ` to ${JSON.stringify(t)}`),
                      Effect.orElseSucceed(() => "")
                    )
                  : ""
              yield* keep(acc, {
                path: full,
                reason: "NotADirectory",
                detail: `is a ${found.info.type}${target}, not a directory; not followed`
              })
              return
            }
            const parent = yield* parentOf(full)
            if (parent._tag === "Found" && parent.info.dev !== found.info.dev) {
              yield* keep(acc, otherFileSystem(full, found.info, parent.info))
              return
            }
            const listed = yield* Effect.result(fs.readDirectory(full))
            if (listed._tag === "Failure") {
              if (!isNotFound(listed.failure)) yield* failed(acc, full, "readDirectory", listed.failure)
              return
            }
            if ((yield* stillThere(acc, full, found.info)) !== "Same") return
            for (const name of [...listed.success].sort()) {
              if (select(name)) yield* removeTop(acc, `${full}/${name}`)
            }
          })
        )
      }).pipe(
        Effect.provideService(FileSystem.FileSystem, fs),
        Effect.withSpan("SafeRemove.empty"),
        Effect.annotateLogs({ hostRoot: root.path })
      )

    return { root, remove, empty } satisfies Session
  }
)

/** Decodes the host root of `options` and opens a session on it (see `HostPath.rootOf` and {@link open}). */
export const session = (
  options?: Options
): Effect.Effect<Session, HostPath.HostPathError | MountInfo.MountInfoError, FileSystem.FileSystem> =>
  Effect.flatMap(HostPath.rootOf(options), open)

/**
 * Removes each host path below `options.hostRoot`: files and links are
 * unlinked (a link is never followed), directory trees are walked and removed
 * bottom-up, and anything with a mount at or below it, the source of a mount
 * below it, or on another device is kept and reported. Missing is success.
 * Fails only when the root, a path or the mount table cannot be used, before
 * anything is removed.
 */
export const remove = (
  paths: ReadonlyArray<string>,
  options?: Options
): Effect.Effect<Report, HostPath.HostPathError | MountInfo.MountInfoError, FileSystem.FileSystem> =>
  Effect.flatMap(session(options), (s) => s.remove(paths))

/**
 * Removes the entries of the directory at host path `dir` (those
 * `options.select` picks) under the rules of {@link remove}; the directory
 * itself stays. A symlink at `dir` is not followed (`NotADirectory`); a mount
 * on `dir` keeps it whole.
 */
export const empty = (
  dir: string,
  options?: Options & EmptyOptions
): Effect.Effect<Report, HostPath.HostPathError | MountInfo.MountInfoError, FileSystem.FileSystem> =>
  Effect.flatMap(session(options), (s) => s.empty(dir, options))
