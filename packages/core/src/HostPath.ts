/**
 * Joining a host path below a host root without ever leaving it.
 *
 * A node agent runs against a host root: `""` or `"/"` for the real host, a
 * temporary tree in tests, `/proc/<pid>/root` for another mount namespace.
 * Every path an operation touches is joined under that root here, so that
 * neither `..` nor a symlink planted in the tree can take an operation outside
 * it. `join` is the lexical join, for paths that are never followed; `resolve`
 * also resolves the symlinks it meets as though the root were `/` (chroot
 * semantics, as filepath-securejoin does), which needs the FileSystem.
 *
 * @since 0.1.0
 */
import { Effect, FileSystem, Schema } from "effect"
import type { PlatformError } from "effect/PlatformError"

/**
 * Linux follows at most 40 symbolic links in one resolution (MAXSYMLINKS);
 * resolving past that is ELOOP there and an error here.
 */
export const MaxSymlinks = 40

/** Why a host path could not be resolved safely. */
export const HostPathErrorReason = Schema.Literals(["SymlinkLoop", "TooManyLinks", "Unreadable", "InvalidPath"])

/** Why a host path could not be resolved safely. */
export type HostPathErrorReason = typeof HostPathErrorReason.Type

/**
 * A path that cannot be resolved safely below its root: a symlink loop, more
 * than {@link MaxSymlinks} links, a link or directory that could not be read,
 * or a path that is not a path (an empty string, a NUL byte). It names the root
 * and the path so a person can look at the tree.
 */
export class HostPathError extends Schema.TaggedError<HostPathError>()("HostPathError", {
  reason: HostPathErrorReason,
  root: Schema.String,
  path: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `cannot resolve ${JSON.stringify(this.path)} below host root ${JSON.stringify(this.root || "/")}: ${this.reason} (${this.detail})`
  }
}

/** True when `root` means the real host (`""` or `"/"`), where operations end with host-wide side effects such as a systemd reload. */
export const isRealRoot = (root: string): boolean => clean(root) === "/" || root === ""

/** The non-empty components of a slash-separated path, `.` dropped, `..` kept. */
export const components = (path: string): Array<string> => path.split("/").filter((c) => c !== "" && c !== ".")

/**
 * The shortest absolute path equivalent to `path`, processed lexically as
 * Go's `path.Clean` does on a rooted path: repeated slashes, `.` and trailing
 * slashes go, `..` removes the previous component and never climbs above `/`.
 */
export const clean = (path: string): string => {
  // Most paths (every mount point the kernel reports) are already clean; this
  // check is much cheaper than splitting and joining thousands of them.
  if (isClean(path)) return path
  const out: Array<string> = []
  for (const c of components(path)) {
    if (c === "..") out.pop()
    else out.push(c)
  }
  return `/${out.join("/")}`
}

const isClean = (path: string): boolean => {
  if (path === "/") return true
  if (path.charCodeAt(0) !== 47 || path.charCodeAt(path.length - 1) === 47) return false
  for (let i = path.indexOf("/"); i !== -1; i = path.indexOf("/", i + 1)) {
    const c1 = path.charCodeAt(i + 1)
    if (c1 === 47) return false
    if (c1 === 46) {
      const c2 = path.charCodeAt(i + 2)
      if (Number.isNaN(c2) || c2 === 47) return false
      if (c2 === 46) {
        const c3 = path.charCodeAt(i + 3)
        if (Number.isNaN(c3) || c3 === 47) return false
      }
    }
  }
  return true
}

/** The root in canonical form: `"/"` for the real host, otherwise a cleaned absolute path without a trailing slash. */
export const normalizeRoot = (root: string): string => (root === "" ? "/" : clean(root))

/** The directory a clean absolute path is in: `/a` for `/a/b`, `/` for `/a` and for `/`. */
export const dirname = (path: string): string => {
  const i = path.lastIndexOf("/")
  return i <= 0 ? "/" : path.slice(0, i)
}

/** `name` (one or more components) inside the clean absolute directory `dir`, without a doubled slash below `/`. */
export const child = (dir: string, name: string): string => (dir === "/" ? `/${name}` : `${dir}/${name}`)

/**
 * True when the clean absolute `ancestor` is `path` or a directory above it,
 * on a `/` boundary: `/var/lib/kubelet` covers itself and
 * `/var/lib/kubelet/pods/x`, not `/var/lib/kubelet2`.
 */
export const covers = (ancestor: string, path: string): boolean =>
  ancestor === "/" || path === ancestor || path.startsWith(`${ancestor}/`)

const under = (root: string, rel: ReadonlyArray<string>): string =>
  rel.length === 0 ? root : child(root, rel.join("/"))

/**
 * Joins `path` below `root` lexically: `..` is cleaned against the host path
 * and can never climb above the root. Symlinks are not looked at, so use this
 * only for paths that are never followed (the name of a link being removed,
 * a path that is about to be created by rename).
 */
export const join = (root: string, path: string): string => under(normalizeRoot(root), components(clean(path)))

/**
 * `full` as a host path, when `full` is at or below `root`: the inverse of
 * {@link join}. `undefined` when it lies outside.
 */
export const relative = (root: string, full: string): string | undefined => {
  const r = normalizeRoot(root)
  const f = clean(full)
  if (r === "/") return f
  if (f === r) return "/"
  return f.startsWith(`${r}/`) ? f.slice(r.length) : undefined
}

/** True when `full` is `root` itself or lies below it, on path boundaries. */
export const isWithin = (root: string, full: string): boolean => relative(root, full) !== undefined

/** Options of {@link resolve}. */
export interface ResolveOptions {
  /**
   * Whether a symlink in the last component is followed (default `true`).
   * Operations that act on a link itself (removing it, reading its target)
   * pass `false`: only the parents are resolved, the last name is kept.
   */
  readonly followFinal?: boolean | undefined
}

/**
 * Whether a file system error means "nothing is there": ENOENT, or ENOTDIR (a
 * component is a file and more follow, so nothing below it can exist). Used
 * by resolution here and by the snapshot's walk, which must agree on it.
 */
export const isMissing = (e: PlatformError): boolean =>
  e.reason._tag === "NotFound" ||
  // ENOTDIR: a component is a file and more follow. Like a missing one, nothing
  // below it can exist, so the rest is joined lexically.
  (e.reason._tag === "BadResource" &&
    typeof e.reason.cause === "object" &&
    e.reason.cause !== null &&
    (e.reason.cause as { readonly code?: unknown }).code === "ENOTDIR")

/**
 * Resolves `path` below `root`, following every symlink it meets as though
 * `root` were `/`: an absolute target is taken relative to the root and `..`
 * never climbs above it, so the result is always `root` or below it. What does
 * not exist is joined lexically. A symlink loop, more than {@link MaxSymlinks}
 * links, or a link that cannot be read is a {@link HostPathError}.
 *
 * The result is a path at the time of the call: a tree that changes afterwards
 * can still swap a component for a link (a check-then-use race no path-based
 * API avoids). Operations that remove things therefore also refuse to follow
 * links at the point of use.
 */
export const resolve = Effect.fn("HostPath.resolve")(function* (root: string, path: string, options?: ResolveOptions) {
  const fs = yield* FileSystem.FileSystem
  const base = normalizeRoot(root)
  if (path.includes("\0") || root.includes("\0")) {
    return yield* new HostPathError({ reason: "InvalidPath", root, path, detail: "contains a NUL byte" })
  }
  const followFinal = options?.followFinal ?? true
  const current: Array<string> = []
  let pending = components(path)
  let links = 0
  // A resolution is deterministic in (the link being expanded, what remains to
  // resolve after it): meeting the same pair twice means it can never end.
  const seen = new Set<string>()
  while (pending.length > 0) {
    const [part, ...rest] = pending as [string, ...Array<string>]
    pending = rest
    if (part === "..") {
      current.pop()
      continue
    }
    const candidate = under(base, [...current, part])
    if (rest.length === 0 && !followFinal) {
      current.push(part)
      break
    }
    const info = yield* fs.lstat(candidate).pipe(
      Effect.map((i) => i.type),
      Effect.catchTag("PlatformError", (e) =>
        isMissing(e)
          ? Effect.succeed("Missing" as const)
          : Effect.fail(
              new HostPathError({ reason: "Unreadable", root, path, detail: `lstat ${candidate}: ${e.message}` })
            )
      )
    )
    if (info === "Missing") {
      // Nothing below a missing component exists, but a later `..` can climb
      // back into what does, so resolution goes on rather than joining the rest
      // lexically (`missing/../link` must still resolve `link`).
      current.push(part)
      continue
    }
    if (info !== "SymbolicLink") {
      current.push(part)
      continue
    }
    const key = `${candidate}\0${rest.join("/")}`
    if (seen.has(key)) {
      return yield* new HostPathError({
        reason: "SymlinkLoop",
        root,
        path,
        detail: `${candidate} leads back to itself`
      })
    }
    seen.add(key)
    links++
    if (links > MaxSymlinks) {
      return yield* new HostPathError({
        reason: "TooManyLinks",
        root,
        path,
        detail: `more than ${MaxSymlinks} symbolic links`
      })
    }
    const target = yield* fs
      .readLink(candidate)
      .pipe(
        Effect.mapError(
          (e) => new HostPathError({ reason: "Unreadable", root, path, detail: `readlink ${candidate}: ${e.message}` })
        )
      )
    if (target.startsWith("/")) current.length = 0
    pending = [...components(target), ...rest]
  }
  return under(base, current)
})
