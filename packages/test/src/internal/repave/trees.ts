/**
 * The trees of the repave suites: planting a tree below a directory, hashing
 * one into a flat image (`snapshot`), and comparing two images. Internal:
 * `RepaveConformance` re-exports `plant`, `snapshot`, `isUnder` and
 * `differences` (other suites use them too); the rest serves its parts.
 *
 * @since 0.3.0
 */
import { createHash } from "node:crypto"
import type { MountInfo } from "@hostnode/core"
import { Lexical } from "@hostnode/core/Programs"
import { TreeWalk } from "@hostnode/sim"
import { Effect, FileSystem } from "effect"

/**
 * What to plant at a path: file contents, a symlink, or an empty directory.
 */
export type Plant = string | { readonly link: string } | { readonly dir: true }

const parentOf = (path: string): string => path.slice(0, Math.max(1, path.lastIndexOf("/")))

/**
 * Plants `tree` (paths relative to `base`) below `base`, parents created as needed.
 */
export const plant = (base: string, tree: Readonly<Record<string, Plant>>) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    for (const [rel, what] of Object.entries(tree)) {
      const path = `${base}/${rel}`
      yield* fs.makeDirectory(parentOf(path), { recursive: true })
      if (typeof what === "string") yield* fs.writeFileString(path, what)
      else if ("link" in what) yield* fs.symlink(what.link, path)
      else yield* fs.makeDirectory(path, { recursive: true })
    }
  }).pipe(Effect.orDie)

/**
 * A tree as a flat record, relative path to a description: `d <mode>` for a
 * directory, `f <mode> <sha256>` for a file, `l <target>` for a symlink (`""`
 * is `dir` itself). Symlinks are not followed; mounts are crossed, as any
 * path walk crosses them, so a file reachable through a mount is in it.
 */
export const snapshot = (dir: string) =>
  Effect.map(TreeWalk.walk(dir), (visited) => {
    const out: Record<string, string> = {}
    for (const v of visited) {
      const rel = v.path === dir ? "" : v.path.slice(dir.length + 1)
      const mode = (v.info.mode & 0o7777).toString(8)
      out[rel] =
        v.type === "Directory"
          ? `d ${mode}`
          : v.type === "File"
            ? `f ${mode} ${createHash("sha256").update(v.bytes).digest("hex")}`
            : v.type === "SymbolicLink"
              ? `l ${v.target}`
              : v.info.type
    }
    return out
  }).pipe(Effect.orDie)

/**
 * True when `path` is `prefix` or below it (relative or absolute paths, on component boundaries).
 */
export const isUnder = (prefix: string, path: string): boolean =>
  prefix === "" || path === prefix || path.startsWith(`${prefix}/`)

/**
 * The keys on which two snapshots differ, except those `ignore` selects, as readable lines.
 */
export const differences = (
  before: Readonly<Record<string, string>>,
  after: Readonly<Record<string, string>>,
  ignore: (rel: string) => boolean = () => false
): Array<string> => {
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort()
  return keys
    .filter((k) => !ignore(k) && before[k] !== after[k])
    .map((k) => `${JSON.stringify(k)}: ${before[k] ?? "(absent)"} -> ${after[k] ?? "(absent)"}`)
}

export const relativeTo = (base: string, full: string): string => (full === base ? "" : full.slice(base.length + 1))

export const mountsBelow = (table: ReadonlyArray<MountInfo.MountEntry>, dir: string) =>
  table.filter((e) => {
    const mp = Lexical.clean(e.mountPoint)
    return mp !== dir && Lexical.covers(dir, mp)
  })
