/**
 * Removing paths below a host root so that nothing is deleted where it must
 * not be: `rm -rf` through a bind mount deletes the mount's source (CSI data
 * has been lost that way), and `rm -rf` through a planted symlink deletes
 * whatever the link points at. Pods' containers keep running after the node
 * stack stops (containerd's unit has `KillMode=process`), so the tree may
 * change between any two system calls of a removal.
 *
 * The rules, in the order they are applied:
 * - Containment: each path is resolved once, below a handle on the host
 *   root (`Directory.resolve`, chroot semantics), its last component never
 *   followed. Everything after works on `(directory handle, name)`.
 * - The mount table first: a path with a mount at or below it, or with the
 *   source of a mount (a bind mount's directory, as the table's `root` field
 *   and the mount of the same device show it) at or below it, is kept whole,
 *   never entered, and the report says which mount keeps it. A table that
 *   does not list the mount the root is on (an empty one, one of another
 *   namespace) is refused before anything is removed.
 * - The mount id second: every directory is opened from its parent's handle
 *   with `O_NOFOLLOW` and refused when it is the root of another mount than
 *   its parent (mount ids compared, so a bind mount of the same device made
 *   after the table was read is seen); a top path on another mount is kept.
 *   A file something is mounted on cannot be unlinked (`EBUSY`) and is kept.
 * - No link is followed: a link is unlinked as a link; a directory is listed
 *   by its handle (names as bytes), emptied, and removed by name from its
 *   parent's handle once empty.
 * - Missing is success. Each removal is logged at debug, each kept path at
 *   warning with its reason.
 *
 * The guarantee, precisely: every name this module unlinks is, at the moment
 * of the `unlinkat`, an entry of a directory it opened by name from the
 * directory above it, without following a link and without crossing into
 * another mount, starting from the host root's handle. A directory swapped
 * for a link, renamed, or mounted over while the walk runs is never entered
 * through that change: what a concurrent writer does can make a removal keep
 * more (reported), never reach outside the directories it opened.
 *
 * Boundary: this module decides what may be removed and removes it through
 * `Directory.Directories`. What to remove on a repave is in `Repave`;
 * unmounting is in `Unmount`.
 *
 * @since 0.1.0
 */
import { Effect, type FileSystem, LogLevel, References, Schema, type Scope } from "effect"
import * as Directory from "./Directory.ts"
import * as FileName from "./FileName.ts"
import * as HostPath from "./HostPath.ts"
import * as MountInfo from "./MountInfo.ts"

/**
 * Why a path was left in place.
 *
 * - `MountBelow`: a mount at or below it (the table says so; `mountPoint` names it).
 * - `MountSourceBelow`: the source of a mount lies at or below it: removing it
 *   would delete files that are still reachable through that mount (`mountPoint`).
 * - `OtherFileSystem`: it is on another mount than the directory it is in (by
 *   mount id: a same-device bind mount counts), a mount the table did not
 *   show; it is not entered.
 * - `NotADirectory`: a directory was to be emptied, but a symlink or a file is
 *   there; it is not followed.
 * - `UnmountFailed`: its mounts could not be unmounted (teardown), so it was
 *   not looked at (`mountPoint` names one that remains).
 * - `Failed`: the file system refused (EACCES, EROFS, ...) or the path
 *   changed while it was being removed; `detail` says how.
 *
 * @since 0.1.0
 */
export const KeptReason = Schema.Literals([
  "MountBelow",
  "MountSourceBelow",
  "OtherFileSystem",
  "NotADirectory",
  "UnmountFailed",
  "Failed"
])

/**
 * Why a path was left in place.
 *
 * @since 0.1.0
 */
export type KeptReason = typeof KeptReason.Type

/**
 * A path left in place, why, and (for the mount reasons) the mount point as the table shows it.
 *
 * @since 0.1.0
 */
export const Kept = Schema.Struct({
  path: Schema.String,
  reason: KeptReason,
  mountPoint: Schema.optionalKey(Schema.String),
  detail: Schema.String
})

/**
 * A path left in place.
 *
 * @since 0.1.0
 */
export type Kept = typeof Kept.Type

/**
 * What a removal did: the paths removed (full paths below the canonical host
 * root, in the order they went, children before their directory) and those
 * kept. A kept path's ancestors stay too and are not listed again.
 *
 * @since 0.1.0
 */
export const Report = Schema.Struct({
  removed: Schema.Array(Schema.String),
  kept: Schema.Array(Kept)
})

/**
 * What a removal did.
 *
 * @since 0.1.0
 */
export type Report = typeof Report.Type

/**
 * The report of a removal that found nothing to do.
 *
 * @since 0.1.0
 */
export const emptyReport: Report = { removed: [], kept: [] }

/**
 * The reports of several removals as one, in order.
 *
 * @since 0.1.0
 */
export const merge = (...reports: ReadonlyArray<Report>): Report => ({
  removed: reports.flatMap((r) => r.removed),
  kept: reports.flatMap((r) => r.kept)
})

/**
 * Options of every removal: the host root the paths are host paths of (the
 * real host by default) and the mount table that describes it (see
 * `HostPath.RootOptions`).
 *
 * @since 0.1.0
 */
export type Options = HostPath.RootOptions

/** A table entry, its mount point and root cleaned once. */
interface Indexed {
  readonly entry: MountInfo.MountEntry
  readonly mountPoint: string
  readonly root: string
}

/**
 * A mount table prepared for {@link blockers}.
 *
 * @since 0.1.0
 */
export interface TableIndex {
  readonly entries: ReadonlyArray<Indexed>
  /** The entries of each device (`major:minor`). */
  readonly byDevice: ReadonlyMap<string, ReadonlyArray<Indexed>>
  /** The distinct (device, root) pairs mounted at each mount point. */
  readonly byMountPoint: ReadonlyMap<string, ReadonlyArray<{ readonly device: string; readonly root: string }>>
}

/**
 * Indexes `table` for {@link blockers}: mount points and roots cleaned, entries grouped by device and mount point.
 *
 * @since 0.1.0
 */
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

/**
 * Why the table keeps a path: which mount, and where (a mount point, or where that mount's source shows).
 *
 * @since 0.1.0
 */
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
 *
 * @since 0.1.0
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

/**
 * Options of {@link Session.empty}.
 *
 * @since 0.1.0
 */
export interface EmptyOptions {
  /** Which entries of the directory to remove, by name in the lossless string form of `FileName` (default: all). */
  readonly select?: ((name: string) => boolean) | undefined
  /**
   * When the path is not a directory (a link, a file), remove it and make an
   * empty directory (mode 0755) in its place, instead of keeping it as
   * `NotADirectory`. The CNI reset uses it: nothing stale may stay where
   * containerd looks.
   */
  readonly replaceNonDirectory?: boolean | undefined
}

/**
 * What {@link Session.children} found: the entries' names (lossless strings), or why the directory was kept.
 *
 * @since 0.2.0
 */
export interface Children {
  readonly names: ReadonlyArray<string>
  readonly kept: ReadonlyArray<Kept>
}

/**
 * Removals against one host root, one handle on it and one reading of its
 * mount table. Read it again (a new session) after anything is mounted or
 * unmounted. The handle closes with the scope the session was opened in.
 *
 * @since 0.1.0
 */
export interface Session {
  /** The canonical host root the reported paths start with. */
  readonly root: HostPath.HostRoot
  /** Removes each host path (a file, a link, a directory tree) under the rules of this module. */
  readonly remove: (paths: ReadonlyArray<string>) => Effect.Effect<Report, HostPath.HostPathError>
  /**
   * Removes the entries of the directory at host path `dir` (those `select`
   * picks), keeping the directory. A symlink or file at `dir` is not followed
   * and is reported `NotADirectory` (unless `replaceNonDirectory`); a mount at
   * `dir` keeps it whole. A bind mount elsewhere whose source is `dir` itself
   * does not keep it: that mount shows the very directory being emptied.
   */
  readonly empty: (dir: string, options?: EmptyOptions) => Effect.Effect<Report, HostPath.HostPathError>
  /** The names in the directory at host path `dir`, through a handle; a link or file there is kept, not followed. */
  readonly children: (dir: string) => Effect.Effect<Children, HostPath.HostPathError>
  /**
   * Removes the entry `name` of a directory the caller already holds open
   * (reached without following links, as every handle here is), under the
   * rules of this module; `path` is its full path, for the mount table and
   * the report. Nothing is resolved: code that walks a tree by handles (a
   * snapshot's restore) removes what is in the way without a path lookup.
   */
  readonly removeAt: (dir: Directory.Handle, name: FileName.Bytes, path: string) => Effect.Effect<Report>
}

/**
 * Options of {@link open}.
 *
 * @since 0.2.0
 */
export interface OpenOptions {
  /**
   * A handle on the root already open (its path must be `root.path`): the
   * session uses it instead of opening the root again, so a caller that
   * holds one trusts the root's path once.
   */
  readonly handle?: Directory.Handle | undefined
}

/**
 * Logs a kept path as a warning with its reason (and the mount that kept it):
 * every keep, here or by the operations built on this module, reads the same.
 *
 * @since 0.1.0
 */
export const logKept = (kept: Kept): Effect.Effect<void> =>
  Effect.logWarning(`kept ${FileName.display(kept.path)}: ${kept.detail}`).pipe(
    Effect.annotateLogs({ path: FileName.display(kept.path), reason: kept.reason, mountPoint: kept.mountPoint ?? "" })
  )

const fullChild = (dir: string, name: FileName.Bytes): string =>
  dir === "/" ? `/${FileName.decode(name)}` : `${dir}/${FileName.decode(name)}`

/** One call's accumulated outcome. Each public call starts a fresh one. */
interface Acc {
  readonly removed: Array<string>
  readonly kept: Array<Kept>
}

/**
 * Opens a session on `root`: reads and indexes its mount table and opens the
 * root's handle, then checks that the table lists the mount the root is on.
 * An unreadable, malformed or foreign table fails here, before anything is
 * removed.
 *
 * @since 0.1.0
 */
export const open: (
  root: HostPath.HostRoot,
  options?: OpenOptions
) => Effect.Effect<
  Session,
  MountInfo.MountInfoError | HostPath.HostPathError,
  FileSystem.FileSystem | Directory.Directories | Scope.Scope
> = Effect.fn("SafeRemove.open")(function* (root, options) {
  const dirs = yield* Directory.Directories
  const table = yield* MountInfo.read(root.mountInfo)
  const index = indexTable(table)
  const unusable = (e: Directory.DirectoryError) =>
    new HostPath.HostPathError({ reason: "Unreadable", root: root.given, path: "/", detail: e.message })
  const rootHandle = options?.handle ?? (yield* dirs.openRoot(root.path).pipe(Effect.mapError(unusable)))
  const rootStat = yield* dirs.stat(rootHandle).pipe(Effect.mapError(unusable))
  if (!table.some((e) => e.id === rootStat.mountId)) {
    return yield* new MountInfo.MountInfoError({
      reason: new MountInfo.DoesNotCover({
        detail: `the host root ${root.path} is on mount ${rootStat.mountId}, which the table does not list (${table.length} entries): it describes another mount namespace, or none`
      }),
      path: root.mountInfo
    })
  }

  const keep = (acc: Acc, kept: Kept) =>
    Effect.sync(() => acc.kept.push(kept)).pipe(Effect.andThen(logKept(kept)), Effect.as(false))

  const failed = (acc: Acc, path: string, what: string, e: Directory.DirectoryError) =>
    keep(acc, { path, reason: "Failed", detail: `${what}: ${e.errno === "" ? e.reason : e.errno} ${e.detail}` })

  // Per path at debug: a teardown removes thousands, and building their lines
  // costs as much as the system calls, so only when debug is on; the
  // operation logs one summary at info.
  const debug = LogLevel.isGreaterThanOrEqualTo("Debug", yield* References.MinimumLogLevel)
  const removed = (acc: Acc, path: string, type: Directory.Type) => {
    acc.removed.push(path)
    return debug
      ? Effect.logDebug(`removed ${FileName.display(path)}`).pipe(Effect.annotateLogs({ type }), Effect.as(true))
      : Effect.succeed(true)
  }

  const otherMount = (path: string, detail: string): Kept => ({
    path,
    reason: "OtherFileSystem",
    detail: `${detail}: a mount the table does not show; not entered`
  })

  // Removes the non-directory `name` of `dir`; true when nothing is left there.
  const unlinkEntry = (acc: Acc, dir: Directory.Handle, name: FileName.Bytes, path: string, mountId: number) =>
    Effect.flatMap(Effect.result(dirs.unlink(dir, name)), (r): Effect.Effect<boolean> => {
      if (r._tag === "Success") return removed(acc, path, "File")
      const e = r.failure
      switch (e.reason) {
        case "NotFound":
          return Effect.succeed(true)
        // A directory now, swapped in since it was listed: removed as one.
        case "IsADirectory":
          return removeDirectory(acc, dir, name, path, mountId)
        case "Busy":
          return keep(acc, otherMount(path, "something is mounted on it"))
        default:
          return failed(acc, path, "unlink", e)
      }
    })

  // Empties and removes the directory `name` of `dir` (on mount `mountId`); true when it is gone.
  const removeDirectory = (
    acc: Acc,
    dir: Directory.Handle,
    name: FileName.Bytes,
    path: string,
    mountId: number
  ): Effect.Effect<boolean> =>
    Effect.gen(function* () {
      const opened = yield* Effect.result(dirs.openDirectory(dir, name, { sameMount: true }))
      if (opened._tag === "Failure") {
        const e = opened.failure
        switch (e.reason) {
          case "NotFound":
            return true
          case "OtherMount":
            return yield* keep(acc, otherMount(path, e.detail))
          // No longer a directory (a link or a file swapped in): unlinked as what it is now, never followed.
          case "SymbolicLink":
          case "NotADirectory":
            return yield* unlinkEntry(acc, dir, name, path, mountId)
          default:
            return yield* failed(acc, path, "open", e)
        }
      }
      const h = opened.success
      const listed = yield* Effect.result(dirs.list(h))
      if (listed._tag === "Failure") return yield* failed(acc, path, "list", listed.failure)
      let gone = true
      const entries = [...listed.success].sort((a, b) => FileName.compare(a.name, b.name))
      // What the listing says is not a directory goes in one batch of unlinks;
      // anything that turns out otherwise is handled one by one below.
      const plain = entries.filter((e) => e.type !== "Directory" && e.type !== "Unknown")
      const outcomes = yield* dirs.unlinkAll(
        h,
        plain.map((e) => e.name)
      )
      for (const [i, entry] of plain.entries()) {
        const child = fullChild(path, entry.name)
        const e = outcomes[i]
        if (e === undefined) {
          yield* removed(acc, child, entry.type)
          continue
        }
        const ok =
          e.reason === "NotFound"
            ? true
            : e.reason === "IsADirectory"
              ? yield* removeDirectory(acc, h, entry.name, child, mountId)
              : e.reason === "Busy"
                ? yield* keep(acc, otherMount(child, "something is mounted on it"))
                : yield* failed(acc, child, "unlink", e)
        if (!ok) gone = false
      }
      for (const entry of entries) {
        if (entry.type !== "Directory" && entry.type !== "Unknown") continue
        const child = fullChild(path, entry.name)
        let type: Directory.Type = entry.type
        if (type === "Unknown") {
          const st = yield* Effect.result(dirs.stat(h, entry.name))
          if (st._tag === "Failure") {
            if (st.failure.reason === "NotFound") continue
            gone = yield* failed(acc, child, "stat", st.failure)
            continue
          }
          type = st.success.type
        }
        const ok =
          type === "Directory"
            ? yield* removeDirectory(acc, h, entry.name, child, mountId)
            : yield* unlinkEntry(acc, h, entry.name, child, mountId)
        if (!ok) gone = false
      }
      if (!gone) return false
      const rmdir = yield* Effect.result(dirs.unlink(dir, name, { directory: true }))
      if (rmdir._tag === "Success") return yield* removed(acc, path, "Directory")
      const e = rmdir.failure
      switch (e.reason) {
        case "NotFound":
          return true
        case "NotEmpty":
          return yield* keep(acc, { path, reason: "Failed", detail: "entries appeared while it was being removed" })
        case "NotADirectory":
          return yield* keep(acc, {
            path,
            reason: "Failed",
            detail: "replaced while it was being removed (now not a directory); not followed"
          })
        case "Busy":
          return yield* keep(acc, otherMount(path, "something was mounted on it"))
        default:
          return yield* failed(acc, path, "rmdir", e)
      }
    }).pipe(Effect.scoped)

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

  // Removes `name` of `dir` (full path `path`), a path that starts a removal:
  // checked against the table, then by mount id, then removed without
  // following anything.
  const removeTop = (acc: Acc, dir: Directory.Handle, name: FileName.Bytes, path: string): Effect.Effect<boolean> =>
    Effect.gen(function* () {
      const blocked = blockedBy(path)
      if (blocked !== undefined) return yield* keep(acc, blocked)
      const parent = yield* Effect.result(dirs.stat(dir))
      if (parent._tag === "Failure") return yield* failed(acc, path, "stat of the directory it is in", parent.failure)
      const st = yield* Effect.result(dirs.stat(dir, name))
      if (st._tag === "Failure") {
        return st.failure.reason === "NotFound" || st.failure.reason === "NotADirectory"
          ? true
          : yield* failed(acc, path, "stat", st.failure)
      }
      if (st.success.mountId !== parent.success.mountId) {
        return yield* keep(
          acc,
          otherMount(path, `on mount ${st.success.mountId}, the directory it is in on mount ${parent.success.mountId}`)
        )
      }
      return st.success.type === "Directory"
        ? yield* removeDirectory(acc, dir, name, path, parent.success.mountId)
        : yield* unlinkEntry(acc, dir, name, path, parent.success.mountId)
    })

  const run = <E>(body: (acc: Acc) => Effect.Effect<void, E, Scope.Scope>) =>
    Effect.gen(function* () {
      const acc: Acc = { removed: [], kept: [] }
      yield* body(acc)
      return { removed: acc.removed, kept: acc.kept } satisfies Report
    }).pipe(Effect.scoped)

  const refuse = (given: string) => (e: Directory.DirectoryError) =>
    new HostPath.HostPathError({ reason: "Unreadable", root: root.given, path: given, detail: e.message })

  /** A resolved path: where it is, its full path, and the (directory, name) the removal acts on. */
  interface Target {
    readonly full: string
    readonly dir: Directory.Handle
    readonly name: FileName.Bytes | undefined
  }

  // Decodes a host path and resolves it once below the root's handle; a
  // missing or non-directory parent means nothing is there (`undefined`).
  const resolveTarget = (given: string, checked: HostPath.Checked | undefined = undefined) =>
    Effect.gen(function* () {
      const decoded = checked ?? (yield* HostPath.checkPath(root, given))
      const r = yield* Effect.result(dirs.resolve(rootHandle, decoded.path, { followFinal: false }))
      if (r._tag === "Failure") {
        const reason = r.failure.reason
        if (reason === "NotFound" || reason === "NotADirectory") return undefined
        if (reason === "TooManyLinks") {
          return yield* new HostPath.HostPathError({
            reason: "TooManyLinks",
            root: root.given,
            path: given,
            detail: r.failure.message
          })
        }
        return yield* refuse(given)(r.failure)
      }
      const full = HostPath.fullPath(root, r.success.path)
      if (r.success.name === undefined || full === root.path) {
        return yield* new HostPath.HostPathError({
          reason: "IsHostRoot",
          root: root.given,
          path: given,
          detail: "the path resolves to the host root itself"
        })
      }
      return { full, dir: r.success.parent, name: r.success.name } satisfies Target
    })

  const remove: Session["remove"] = (paths) =>
    run((acc) =>
      Effect.gen(function* () {
        // Every path is checked before the first removal.
        const checked = yield* Effect.forEach(paths, (p) => HostPath.checkPath(root, p))
        for (const [i, p] of paths.entries()) {
          const t = yield* resolveTarget(p, checked[i])
          if (t === undefined || t.name === undefined) continue
          yield* removeTop(acc, t.dir, t.name, t.full)
        }
      })
    ).pipe(Effect.withSpan("SafeRemove.remove"), Effect.annotateLogs({ hostRoot: root.path }))

  /** The directory at `given`, opened: or why it was kept, or `undefined` when it is not there. */
  const openDir = (acc: Acc, t: Target, options?: EmptyOptions) =>
    Effect.gen(function* () {
      const name = t.name as FileName.Bytes
      const tablePath = HostPath.tablePathOf(root, t.full)
      const at = tablePath === undefined ? undefined : index.entries.find((e) => e.mountPoint === tablePath)
      if (tablePath === undefined || at !== undefined) {
        yield* keep(acc, {
          path: t.full,
          reason: "MountBelow",
          ...(at === undefined ? {} : { mountPoint: at.entry.mountPoint }),
          detail:
            at === undefined
              ? "outside the mount table's root"
              : `${at.entry.fsType} ${JSON.stringify(at.entry.source)} is mounted on it; not emptied`
        })
        return undefined
      }
      const st = yield* Effect.result(dirs.stat(t.dir, name))
      if (st._tag === "Failure") {
        if (st.failure.reason !== "NotFound") yield* failed(acc, t.full, "stat", st.failure)
        return undefined
      }
      if (st.success.type !== "Directory") {
        if (options?.replaceNonDirectory === true) {
          if (!(yield* removeTop(acc, t.dir, name, t.full))) return undefined
          const made = yield* Effect.result(dirs.makeDirectory(t.dir, name, 0o755))
          if (made._tag === "Failure") yield* failed(acc, t.full, "mkdir", made.failure)
          else
            yield* Effect.logInfo(
              `replaced the ${st.success.type} at ${FileName.display(t.full)} with an empty directory`
            )
          return undefined
        }
        const target =
          st.success.type === "SymbolicLink"
            ? yield* dirs.readLink(t.dir, name).pipe(
                Effect.map((b) => ` to ${JSON.stringify(FileName.display(FileName.decode(b)))}`),
                Effect.orElseSucceed(() => "")
              )
            : ""
        yield* keep(acc, {
          path: t.full,
          reason: "NotADirectory",
          detail: `is a ${st.success.type}${target}, not a directory; not followed`
        })
        return undefined
      }
      const opened = yield* Effect.result(dirs.openDirectory(t.dir, name, { sameMount: true }))
      if (opened._tag === "Failure") {
        const e = opened.failure
        if (e.reason === "OtherMount") yield* keep(acc, otherMount(t.full, e.detail))
        else if (e.reason === "SymbolicLink" || e.reason === "NotADirectory") {
          yield* keep(acc, {
            path: t.full,
            reason: "NotADirectory",
            detail: "replaced by something that is not a directory; not followed"
          })
        } else if (e.reason !== "NotFound") yield* failed(acc, t.full, "open", e)
        return undefined
      }
      return opened.success
    })

  const empty: Session["empty"] = (dir, options) =>
    run((acc) =>
      Effect.gen(function* () {
        const t = yield* resolveTarget(dir)
        if (t === undefined) return
        const h = yield* openDir(acc, t, options)
        if (h === undefined) return
        const listed = yield* Effect.result(dirs.list(h))
        if (listed._tag === "Failure") {
          yield* failed(acc, t.full, "list", listed.failure)
          return
        }
        const select = options?.select ?? (() => true)
        for (const entry of [...listed.success].sort((a, b) => FileName.compare(a.name, b.name))) {
          if (select(FileName.decode(entry.name))) yield* removeTop(acc, h, entry.name, fullChild(t.full, entry.name))
        }
      })
    ).pipe(Effect.withSpan("SafeRemove.empty"), Effect.annotateLogs({ hostRoot: root.path }))

  const children: Session["children"] = (dir) =>
    Effect.gen(function* () {
      const acc: Acc = { removed: [], kept: [] }
      const t = yield* resolveTarget(dir)
      if (t === undefined) return { names: [], kept: [] }
      const h = yield* openDir(acc, t)
      if (h === undefined) return { names: [], kept: acc.kept }
      const listed = yield* Effect.result(dirs.list(h))
      if (listed._tag === "Failure") {
        yield* failed(acc, t.full, "list", listed.failure)
        return { names: [], kept: acc.kept }
      }
      return {
        names: [...listed.success].sort((a, b) => FileName.compare(a.name, b.name)).map((e) => FileName.decode(e.name)),
        kept: acc.kept
      }
    }).pipe(Effect.scoped, Effect.withSpan("SafeRemove.children"))

  const removeAt: Session["removeAt"] = (dir, name, path) =>
    run((acc) => Effect.asVoid(removeTop(acc, dir, name, path))).pipe(Effect.withSpan("SafeRemove.removeAt"))

  return { root, remove, empty, children, removeAt } satisfies Session
})

/**
 * Decodes the host root of `options` and opens a session on it (see `HostPath.rootOf` and {@link open}).
 *
 * @since 0.1.0
 */
export const session = (
  options?: Options
): Effect.Effect<
  Session,
  HostPath.HostPathError | MountInfo.MountInfoError,
  FileSystem.FileSystem | Directory.Directories | Scope.Scope
> => Effect.flatMap(HostPath.rootOf(options), open)

/**
 * Removes each host path below `options.hostRoot`: files and links are
 * unlinked (a link is never followed), directory trees are walked through
 * handles and removed bottom-up, and anything with a mount at or below it,
 * the source of a mount below it, or on another mount is kept and reported.
 * Missing is success. Fails only when the root, a path or the mount table
 * cannot be used, before anything is removed.
 *
 * @since 0.1.0
 */
export const remove = (
  paths: ReadonlyArray<string>,
  options?: Options
): Effect.Effect<
  Report,
  HostPath.HostPathError | MountInfo.MountInfoError,
  FileSystem.FileSystem | Directory.Directories
> => Effect.scoped(Effect.flatMap(session(options), (s) => s.remove(paths)))

/**
 * Removes the entries of the directory at host path `dir` (those
 * `options.select` picks) under the rules of {@link remove}; the directory
 * itself stays. A symlink at `dir` is not followed (`NotADirectory`); a mount
 * on `dir` keeps it whole.
 *
 * @since 0.1.0
 */
export const empty = (
  dir: string,
  options?: Options & EmptyOptions
): Effect.Effect<
  Report,
  HostPath.HostPathError | MountInfo.MountInfoError,
  FileSystem.FileSystem | Directory.Directories
> => Effect.scoped(Effect.flatMap(session(options), (s) => s.empty(dir, options)))
