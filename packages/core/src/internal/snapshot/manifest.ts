/**
 * The manifest as bytes and back, and every structural check a restore makes
 * before it reads a byte of `data`: paths are clean, absolute and lossless
 * names; the entries form the trees the listed paths name, in pre-order;
 * file ranges lie inside `data`. Every check is O(n log n) in the number of
 * entries (a sort, then set lookups), so a hostile manifest of many paths is
 * refused as fast as a real one is accepted.
 *
 * Internal to `Snapshot`.
 *
 * @since 0.2.0
 */
import { Effect, Schema } from "effect"
import * as FileName from "../../FileName.ts"
import { Failure } from "../../SnapshotError.ts"
import * as Lexical from "../hostPath/lexical.ts"
import { baseOf, type Ctx, error, fail, isBelow, isHostPath } from "./context.ts"
import { DataName, type Entry, FormatVersion, Manifest, ManifestName, ReadableVersions } from "./model.ts"

/** The largest manifest read: far above any real one (10,000 files make about 3 MB), far below what hurts. */
export const MaxManifestBytes = 64 * 1024 * 1024

/** Linux's PATH_MAX: no path the kernel takes is longer, in bytes with its NUL. */
const PathMax = 4096

const ManifestJson = Schema.fromJsonString(Manifest)
const UnknownJson = Schema.fromJsonString(Schema.Unknown)

/** The manifest as the bytes of its JSON text (UTF-8; names that are not UTF-8 are JSON escapes). */
export const encode = (ctx: Pick<Ctx, "dir" | "hostRoot">, manifest: Manifest) =>
  Schema.encodeEffect(ManifestJson)(manifest).pipe(
    Effect.map(FileName.encode),
    Effect.mapError((e) =>
      error(ctx, new Failure({ _tag: "InvalidManifest", detail: `the manifest could not be encoded: ${e.message}` }))
    )
  )

/** A manifest's bytes decoded: JSON, then the version, then the Schema. */
export const decode = (ctx: Pick<Ctx, "dir" | "hostRoot">, bytes: Uint8Array) =>
  Effect.gen(function* () {
    const raw = yield* Schema.decodeUnknownEffect(UnknownJson)(FileName.decode(bytes)).pipe(
      Effect.mapError((e) =>
        error(
          ctx,
          new Failure({
            _tag: "InvalidManifest",
            detail: `${ManifestName} is not valid JSON (truncated?): ${e.message}`
          })
        )
      )
    )
    if (
      typeof raw === "object" &&
      raw !== null &&
      "version" in raw &&
      !ReadableVersions.includes(raw.version as number)
    ) {
      return yield* fail(
        ctx,
        new Failure({
          _tag: "UnsupportedVersion",
          detail: `format version ${JSON.stringify(raw.version)}; this code reads versions ${ReadableVersions.join(" and ")} and writes ${FormatVersion}`
        })
      )
    }
    return yield* Schema.decodeUnknownEffect(Manifest)(raw).pipe(
      Effect.mapError((e) =>
        error(
          ctx,
          new Failure({
            _tag: "InvalidManifest",
            detail: `${ManifestName} does not match the manifest Schema: ${e.message}`
          })
        )
      )
    )
  })

/** A manifest with its entries indexed, after every structural check. */
export interface Checked {
  readonly manifest: Manifest
  /** The names (lossless strings) each recorded directory must hold, by directory path. */
  readonly children: ReadonlyMap<string, ReadonlySet<string>>
  readonly topLevel: ReadonlySet<string>
  /** True when an exclusion is at or above the host path. */
  readonly isExcluded: (path: string) => boolean
  /** True when an exclusion lies strictly below the host path (a removal there must keep it). */
  readonly holdsExcluded: (path: string) => boolean
}

/** The key that sorts paths component by component: `/` becomes NUL, which no name holds and every byte follows. */
const sortKey = (p: string) => p.replaceAll("/", "\0")

/** The ancestors of a clean absolute path, nearest first, `/` excluded. */
const ancestorsOf = (p: string): Array<string> => {
  const out: Array<string> = []
  for (let i = p.lastIndexOf("/"); i > 0; i = p.lastIndexOf("/", i - 1)) out.push(p.slice(0, i))
  return out
}

/** The exclusion queries over `exclude`: a set of the paths, and a set of every directory above one. */
export const exclusions = (exclude: ReadonlyArray<string>) => {
  const set = new Set(exclude)
  const above = new Set<string>()
  for (const x of exclude) for (const a of ancestorsOf(x)) above.add(a)
  const isExcluded = (path: string): boolean => {
    if (set.size === 0) return false
    if (set.has(path)) return true
    for (const a of ancestorsOf(path)) if (set.has(a)) return true
    return false
  }
  return { isExcluded, holdsExcluded: (path: string) => above.has(path) }
}

/** True when `p` is a path a manifest may hold: a clean absolute host path, a lossless name, within PATH_MAX. */
const isValidPath = (p: string): boolean => {
  if (!isHostPath(p)) return false
  const bytes = FileName.encode(p)
  return bytes.length < PathMax && FileName.decode(bytes) === p
}

/** Every check that needs no file contents: paths, tree shape, data ranges. */
export const check = (ctx: Pick<Ctx, "dir" | "hostRoot">, manifest: Manifest) =>
  Effect.gen(function* () {
    const invalid = (path: string | undefined, detail: string) =>
      fail(ctx, new Failure({ _tag: "InvalidManifest", ...(path === undefined ? {} : { path }), detail }))
    for (const p of manifest.paths) {
      if (!isValidPath(p)) return yield* outside(p)
    }
    for (const p of manifest.exclude) {
      if (!isValidPath(p)) return yield* outside(p)
    }
    const topLevel = new Set(manifest.paths)
    if (topLevel.size !== manifest.paths.length) return yield* invalid(undefined, "a path is listed twice")
    // Sorted component by component, a path's descendants follow it directly:
    // a listed path below another is below the last one that was not.
    let top: string | undefined
    for (const p of [...manifest.paths].sort((a, b) => (sortKey(a) < sortKey(b) ? -1 : 1))) {
      if (top !== undefined && isBelow(top, p)) {
        return yield* invalid(p, `a listed path lies below another listed path (${top})`)
      }
      top = p
    }
    const { isExcluded, holdsExcluded } = exclusions(manifest.exclude)
    const types = new Map<string, Entry["type"]>()
    const children = new Map<string, Set<string>>()
    for (const e of manifest.entries) {
      if (!topLevel.has(e.path)) {
        if (!isValidPath(e.path)) return yield* outside(e.path)
        const parent = Lexical.dirname(e.path)
        if (types.get(parent) !== "Directory") {
          return yield* invalid(e.path, "neither a listed path nor below a directory recorded before it")
        }
        if (e.type === "Absent") return yield* invalid(e.path, "only a listed path can be absent")
        if (isExcluded(e.path)) return yield* invalid(e.path, "an excluded path cannot be recorded below a directory")
        children.get(parent)?.add(baseOf(e.path))
      }
      if (types.has(e.path)) return yield* invalid(e.path, "recorded twice")
      types.set(e.path, e.type)
      if (e.type === "Directory") children.set(e.path, new Set())
      if (e.type === "SymbolicLink" && FileName.decode(FileName.encode(e.target)) !== e.target) {
        return yield* invalid(e.path, "the link target is not a lossless name")
      }
      if (e.type === "File" && e.offset + e.size > manifest.dataSize) {
        return yield* fail(
          ctx,
          new Failure({
            _tag: "Corrupt",
            path: e.path,
            detail: `its bytes lie outside ${DataName} (${manifest.dataSize} bytes)`
          })
        )
      }
    }
    for (const p of manifest.paths) {
      if (!types.has(p)) return yield* invalid(p, "a listed path has no entry")
    }
    return { manifest, children, topLevel, isExcluded, holdsExcluded } satisfies Checked

    function outside(p: string) {
      return fail(
        ctx,
        new Failure({
          _tag: "PathOutsideRoot",
          path: p,
          detail: "not a clean absolute host path in the lossless name form, so it could resolve outside the host root"
        })
      )
    }
  })

/** The listed paths a manifest records as absent. */
export const absentPaths = (manifest: Manifest): ReadonlyArray<string> => {
  const listed = new Set(manifest.paths)
  return manifest.entries.filter((e) => e.type === "Absent" && listed.has(e.path)).map((e) => e.path)
}
