/**
 * Resolving a host path below a root through the FileSystem, as though the
 * root were `/` (chroot semantics, as filepath-securejoin does), and telling
 * what a failed `lstat`, `stat` or `realpath` means from the PlatformError's
 * reason tag and the tree itself, never from the platform's error code.
 *
 * Internal: `HostPath.resolve` and `HostPath.decodeRoot` are the public
 * entries.
 *
 * @since 0.3.0
 */
import { Effect, type FileSystem } from "effect"
import type { PlatformError } from "effect/PlatformError"
import * as FileName from "../../FileName.ts"
import { type HostPathError, Refused } from "../../HostPathError.ts"
import { NameMax, PathMax } from "../directory/names.ts"
import { refusal } from "./errors.ts"
import { components, normalizeRoot, under } from "./lexical.ts"

/** Linux follows at most 40 symbolic links in one resolution (MAXSYMLINKS). */
export const MaxSymlinks = 40

/**
 * What a failed call on `full` means:
 * - `Missing`: nothing is there. `NotFound` (ENOENT), or a `BadResource` that
 *   is not a loop: ENOTDIR, a component is a file and more follow, so nothing
 *   below it can exist.
 * - `Loop`: a `BadResource` that is ELOOP, the links on the way to `full`
 *   never end (or are more than {@link MaxSymlinks}).
 * - `Other`: anything else (EACCES, EIO, ...).
 *
 * A PlatformError names ENOTDIR, ELOOP (and EISDIR) all `BadResource`; which
 * one it was is told by resolving `full` again from `/` ({@link loops}),
 * whose own loop detection says whether its links end.
 */
export type Outcome = "Missing" | "Loop" | "Other"

/**
 * True when resolving `full` from `/`, every link followed, never ends or
 * meets more than {@link MaxSymlinks} links: the kernel's ELOOP, found by
 * walking the tree rather than read from an error code.
 */
export const loops = (fs: FileSystem.FileSystem, full: string): Effect.Effect<boolean> =>
  walk(fs, "/", full, { followFinal: true }, false).pipe(
    Effect.match({
      onFailure: (e) => e.reason._tag === "SymlinkLoop" || e.reason._tag === "TooManyLinks",
      onSuccess: () => false
    })
  )

/** What the failure `e` of a call on `full` (which follows every link on the way) means (see {@link Outcome}). */
export const outcome = (fs: FileSystem.FileSystem, full: string, e: PlatformError): Effect.Effect<Outcome> => {
  if (e.reason._tag === "NotFound") return Effect.succeed("Missing")
  if (e.reason._tag !== "BadResource") return Effect.succeed("Other")
  return Effect.map(loops(fs, full), (l) => (l ? "Loop" : "Missing"))
}

/** What `lstat` said of a component: its type, or that nothing is there. */
type Kind = FileSystem.File.Type | "Missing"

/**
 * Resolves `path` below `root` (see `HostPath.resolve`). `exact`: a failed
 * `lstat` that is a `BadResource` is told apart (ENOTDIR: missing; ELOOP in
 * the root's own path: refused) by resolving the directory it is in again
 * from `/` ({@link loops}); without it (that resolution itself, from `/`,
 * where every component before the last was looked at and is no link), a
 * `BadResource` is ENOTDIR.
 */
export const walk = (
  fs: FileSystem.FileSystem,
  root: string,
  path: string,
  options: { readonly followFinal: boolean },
  exact: boolean
): Effect.Effect<string, HostPathError> =>
  Effect.gen(function* () {
    const refuse = (reason: HostPathError["reason"]) => refusal(reason, root, path)
    const base = normalizeRoot(root)
    if (path.includes("\0") || root.includes("\0")) {
      return yield* refuse(new Refused({ _tag: "InvalidPath", detail: "contains a NUL byte" }))
    }
    const current: Array<string> = []
    // What each component of `current` was when it was looked at.
    const kinds: Array<Kind> = []
    let pending = components(path)
    const size = FileName.encode(path).length
    if (size >= PathMax) {
      return yield* refuse(
        new Refused({ _tag: "InvalidPath", detail: `the path is ${size} bytes, ${PathMax} or more (PATH_MAX)` })
      )
    }
    const long = pending.find((c) => FileName.encode(c).length > NameMax)
    if (long !== undefined) {
      return yield* refuse(
        new Refused({
          _tag: "InvalidPath",
          detail: `a component is ${FileName.encode(long).length} bytes, more than ${NameMax} (NAME_MAX)`
        })
      )
    }
    // A trailing slash: a link in the last component is followed whatever `followFinal` says.
    let mustDir = path.endsWith("/")
    let links = 0
    // A resolution is deterministic in (the link being expanded, what remains to
    // resolve after it): meeting the same pair twice means it can never end.
    const seen = new Set<string>()
    // Whether a failed lstat of a name in the directory `current` names means nothing is there.
    const missing = (e: PlatformError): Effect.Effect<boolean> => {
      const last = kinds[kinds.length - 1]
      // Below a file (or a device, ...) looked at on the way: ENOTDIR, whatever the tag says.
      const belowFile = last !== undefined && last !== "Directory" && last !== "Missing"
      if (e.reason._tag === "BadResource" && (!exact || belowFile)) return Effect.succeed(true)
      return Effect.map(outcome(fs, under(base, current), e), (o) => o === "Missing")
    }
    while (pending.length > 0) {
      const [part, ...rest] = pending as [string, ...Array<string>]
      pending = rest
      if (part === "..") {
        current.pop()
        kinds.pop()
        continue
      }
      const candidate = under(base, [...current, part])
      if (rest.length === 0 && !options.followFinal && !mustDir) {
        current.push(part)
        break
      }
      const info: Kind = yield* fs.lstat(candidate).pipe(
        Effect.map((i) => i.type),
        Effect.catchTag("PlatformError", (e) =>
          Effect.flatMap(missing(e), (m) =>
            m
              ? Effect.succeed("Missing" as const)
              : Effect.fail(refuse(new Refused({ _tag: "Unreadable", detail: `lstat ${candidate}: ${e.message}` })))
          )
        )
      )
      if (info !== "SymbolicLink") {
        // A missing component: nothing below it exists, but a later `..` can
        // climb back into what does, so resolution goes on rather than joining
        // the rest lexically (`missing/../link` must still resolve `link`).
        current.push(part)
        kinds.push(info)
        continue
      }
      const key = `${candidate}\0${rest.join("/")}`
      if (seen.has(key))
        return yield* refuse(new Refused({ _tag: "SymlinkLoop", detail: `${candidate} leads back to itself` }))
      seen.add(key)
      links++
      if (links > MaxSymlinks) {
        return yield* refuse(new Refused({ _tag: "TooManyLinks", detail: `more than ${MaxSymlinks} symbolic links` }))
      }
      const target = yield* fs
        .readLink(candidate)
        .pipe(
          Effect.mapError((e) =>
            refuse(new Refused({ _tag: "Unreadable", detail: `readlink ${candidate}: ${e.message}` }))
          )
        )
      if (rest.length === 0 && target.endsWith("/")) mustDir = true
      if (target.startsWith("/")) {
        current.length = 0
        kinds.length = 0
      }
      pending = [...components(target), ...rest]
    }
    return under(base, current)
  })
