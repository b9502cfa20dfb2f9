/**
 * Observing the simulated host: its file tree as an image, the differences
 * between two images, and the mounts below a path. Boundary: reads only.
 */
import { ConfSnap } from "@hostnode/core"
import { TreeWalk } from "@hostnode/sim"
import { Effect, FileSystem } from "effect"
import type { PlatformError } from "effect/PlatformError"

/**
 * One path of a configuration {@link Image}: a file's mode and bytes, a directory's mode, a link's target, or nothing.
 */
export type ImageEntry =
  | { readonly type: "File"; readonly mode: number; readonly bytes: Uint8Array }
  | { readonly type: "Directory"; readonly mode: number }
  | { readonly type: "SymbolicLink"; readonly target: string }
  | { readonly type: "Absent" }
  | { readonly type: "Other"; readonly kind: string }

/** Everything at and below some paths, by path: what a byte-for-byte comparison compares. */
export type Image = Readonly<Record<string, ImageEntry>>

/**
 * Reads the image of `paths` from the host in context: each path, and each
 * path below a directory (except `exclude`, as the snapshot's walk skips
 * it), with file bytes read in full. A missing path is `Absent`.
 */
export const captureImage = (
  paths: ReadonlyArray<string>,
  exclude: ReadonlyArray<string> = ConfSnap.Exclude
): Effect.Effect<Image, PlatformError, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const out: Record<string, ImageEntry> = {}
    for (const top of paths) {
      const visited = yield* TreeWalk.walk(top, { skip: (p) => exclude.includes(p) })
      if (visited.length === 0) out[top] = { type: "Absent" }
      for (const v of visited) {
        const mode = v.info.mode & 0o7777
        out[v.path] =
          v.type === "File"
            ? { type: "File", mode, bytes: v.bytes }
            : v.type === "SymbolicLink"
              ? { type: "SymbolicLink", target: v.target }
              : v.type === "Directory"
                ? { type: "Directory", mode }
                : { type: "Other", kind: v.info.type }
      }
    }
    return out
  })

export const sameBytes = (a: Uint8Array, b: Uint8Array): boolean =>
  a.length === b.length && a.every((x, i) => x === b[i])

/** How a path differs between two images. */
export interface Difference {
  readonly path: string
  /** `added`/`removed` (present in only one image), or what differs: `type`, `content`, `mode`, `target`. */
  readonly what: "added" | "removed" | "type" | "content" | "mode" | "target"
}

/** The paths whose entries differ between `before` and `after` (present on one side only, or different), sorted. */
export const diffImages = (before: Image, after: Image): ReadonlyArray<Difference> => {
  const out: Array<Difference> = []
  const present = (e: ImageEntry | undefined) => e !== undefined && e.type !== "Absent"
  for (const path of [...new Set([...Object.keys(before), ...Object.keys(after)])].sort()) {
    const a = before[path]
    const b = after[path]
    if (!present(a) && !present(b)) continue
    if (!present(a)) out.push({ path, what: "added" })
    else if (!present(b)) out.push({ path, what: "removed" })
    else if (a === undefined || b === undefined || a.type !== b.type) out.push({ path, what: "type" })
    else if (a.type === "File" && b.type === "File") {
      if (!sameBytes(a.bytes, b.bytes)) out.push({ path, what: "content" })
      else if (a.mode !== b.mode) out.push({ path, what: "mode" })
    } else if (a.type === "Directory" && b.type === "Directory") {
      if (a.mode !== b.mode) out.push({ path, what: "mode" })
    } else if (a.type === "SymbolicLink" && b.type === "SymbolicLink") {
      if (a.target !== b.target) out.push({ path, what: "target" })
    } else if (a.type === "Other" && b.type === "Other" && a.kind !== b.kind) {
      out.push({ path, what: "type" })
    }
  }
  return out
}

/** How much an image holds: paths present, files among them, and their bytes. */
export const imageSize = (image: Image): { readonly paths: number; readonly files: number; readonly bytes: number } => {
  let paths = 0
  let files = 0
  let bytes = 0
  for (const e of Object.values(image)) {
    if (e.type === "Absent") continue
    paths++
    if (e.type === "File") {
      files++
      bytes += e.bytes.length
    }
  }
  return { paths, files, bytes }
}

/** The mount points strictly below `prefix` in a mount table, in table order. */
export const mountsStrictlyBelow = (
  table: ReadonlyArray<{ readonly mountPoint: string }>,
  prefix: string
): ReadonlyArray<string> => table.map((m) => m.mountPoint).filter((p) => p.startsWith(`${prefix}/`))

/** `onMissing` when `path` does not exist; any other failure stays a failure (it is not evidence of absence). */
const orMissing = <A, B>(effect: Effect.Effect<A, PlatformError>, onMissing: B): Effect.Effect<A | B, PlatformError> =>
  Effect.catchIf(
    effect,
    (e) => e.reason._tag === "NotFound",
    () => Effect.succeed(onMissing)
  )

/** Whether `path` exists (not followed if a link). */
export const exists = (path: string) =>
  Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) => orMissing(Effect.as(fs.lstat(path), true), false))

/** The names in directory `path`, sorted; none when it does not exist. */
export const listDir = (path: string) =>
  Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) =>
    orMissing(
      Effect.map(fs.readDirectory(path), (names) => [...names].sort()),
      [] as ReadonlyArray<string>
    )
  )
