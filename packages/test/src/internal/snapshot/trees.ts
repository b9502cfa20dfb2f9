/**
 * The trees the Snapshot conformance suite compares and generates: a tree
 * read below a root (modes, owners, bytes, link targets; never following a
 * link), the random trees and mutations below `<root>/cfg`, and the
 * rollback assertion over them.
 *
 * Internal to `SnapshotConformance`, which re-exports what crash tests need.
 *
 * @since 0.3.0
 */
import { Buffer } from "node:buffer"
import { assert } from "@effect/vitest"
import { TreeWalk } from "@hostnode/sim"
import { Arbitrary, Effect, FileSystem, Option, type PlatformError, Schema } from "effect"

// ---------------------------------------------------------------------------
// Reading a tree
// ---------------------------------------------------------------------------

/**
 * What a path holds, for comparing trees: permission bits, owner, bytes (base64) and link targets.
 *
 * @since 0.1.0
 */
export type Node =
  | {
      readonly type: "File"
      readonly mode: number
      readonly uid: number
      readonly gid: number
      readonly content: string
    }
  | { readonly type: "Directory"; readonly mode: number; readonly uid: number; readonly gid: number }
  | { readonly type: "SymbolicLink"; readonly target: string }
  | { readonly type: "Other"; readonly kind: string }

const base64 = (bytes: Uint8Array): string =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64")

/**
 * The tree at host path `path` below `root`, keyed by host path, without
 * following any link. A missing path gives an empty record.
 *
 * @since 0.1.0
 */
export const treeOf = (
  root: string,
  path: string
): Effect.Effect<Record<string, Node>, PlatformError.PlatformError, FileSystem.FileSystem> =>
  Effect.suspend(() => {
    // Host paths are keys: the walk's full paths without the root before them.
    const base = root === "/" || root === "" ? "" : root
    const top = path === "/" ? base || "/" : `${base}${path}`
    return Effect.map(TreeWalk.walk(top), (visited) => treeFrom(visited, base))
  })

const treeFrom = (visited: ReadonlyArray<TreeWalk.Visited>, base: string): Record<string, Node> => {
  const out: Record<string, Node> = {}
  for (const v of visited) {
    const p = base === "" ? v.path : v.path === base ? "/" : v.path.slice(base.length)
    const uid = Option.getOrElse(v.info.uid, () => -1)
    const gid = Option.getOrElse(v.info.gid, () => -1)
    const mode = v.info.mode & 0o7777
    out[p] =
      v.type === "File"
        ? { type: "File", mode, uid, gid, content: base64(v.bytes) }
        : v.type === "SymbolicLink"
          ? { type: "SymbolicLink", target: v.target }
          : v.type === "Directory"
            ? { type: "Directory", mode, uid, gid }
            : { type: "Other", kind: v.info.type }
  }
  return out
}

/**
 * The entries of `tree` whose key satisfies `keep`.
 *
 * @since 0.1.0
 */
export const pick = (tree: Record<string, Node>, keep: (path: string) => boolean): Record<string, Node> =>
  Object.fromEntries(Object.entries(tree).filter(([k]) => keep(k)))

/**
 * True when `path` is `ancestor` or below it.
 *
 * @since 0.1.0
 */
export const atOrBelow = (ancestor: string, path: string): boolean =>
  path === ancestor || path.startsWith(`${ancestor}/`)

// ---------------------------------------------------------------------------
// Random trees and mutations
// ---------------------------------------------------------------------------

/**
 * The listed snapshot paths of the generated trees; `/cfg/d` and `/cfg` itself lie outside the snapshot.
 *
 * @since 0.1.0
 */
export const SnapshotPaths: ReadonlyArray<string> = ["/cfg/a", "/cfg/b", "/cfg/c"]

const Top = Schema.Literals(["a", "b", "c", "d"])
const Rest = Schema.Array(Schema.Literals(["a", "b", "c"])).check(Schema.isMaxLength(2))
const Content = Schema.Literals(["", "x", "hello\n", "[Service]\nExecStart=/usr/bin/kubelet\n", "version = 2\n"])
const Mode = Schema.Literals([0o644, 0o600, 0o755, 0o700, 0o4755, 0o2750, 0o1777, 0o400])
const Owner = Schema.Literals([0, 1000])
// Relative and without "..": a link can never lead out of the sandbox.
const Target = Schema.Literals(["a", "b/c", "missing", ".", "c/"])

/**
 * One path of a generated tree: a file, an (often empty) directory or a symlink, with mode and owner.
 *
 * @since 0.1.0
 */
export const NodeSpec = Schema.Struct({
  top: Top,
  rest: Rest,
  kind: Schema.Literals(["file", "dir", "link"]),
  content: Content,
  mode: Mode,
  owner: Owner,
  target: Target
})

/**
 * One path of a generated tree.
 *
 * @since 0.1.0
 */
export type NodeSpec = typeof NodeSpec.Type

/**
 * One change after the take: edit, delete, create, chmod, chown, or replace a path by a directory, a link or a file.
 *
 * @since 0.1.0
 */
export const MutationSpec = Schema.Struct({
  top: Top,
  rest: Rest,
  op: Schema.Literals(["edit", "delete", "create", "chmod", "chown", "toDir", "toLink", "toFile", "parentChmod"]),
  content: Content,
  mode: Mode,
  owner: Owner,
  target: Target
})

/**
 * One change after the take.
 *
 * @since 0.1.0
 */
export type MutationSpec = typeof MutationSpec.Type

/**
 * Random trees below `/cfg`.
 *
 * @since 0.1.0
 */
export const Trees = (maxLength = 14) => Arbitrary.array(Arbitrary.schema(NodeSpec), { maxLength })

/**
 * Random mutation sequences.
 *
 * @since 0.1.0
 */
export const Mutations = (maxLength = 8) => Arbitrary.array(Arbitrary.schema(MutationSpec), { minLength: 1, maxLength })

const lstatOption = (full: string) =>
  Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) =>
    fs.lstat(full).pipe(
      Effect.map(Option.some),
      Effect.catchTag("PlatformError", (e) =>
        e.reason._tag === "NotFound" || e.reason._tag === "BadResource"
          ? Effect.succeed(Option.none<FileSystem.File.Info>())
          : Effect.fail(e)
      )
    )
  )

const typeAt = (full: string) =>
  Effect.map(lstatOption(full), (o) => (Option.isSome(o) ? o.value.type : ("Missing" as const)))

/**
 * Builds the generated tree below `<root>/cfg` (`/cfg` always exists); specs that conflict with earlier ones are skipped.
 *
 * @since 0.1.0
 */
export const build = (root: string, specs: ReadonlyArray<NodeSpec>) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    yield* fs.makeDirectory(`${root}/cfg`, { recursive: true })
    for (const s of specs) {
      const parts = ["cfg", s.top, ...s.rest]
      let ok = true
      for (let i = 2; i < parts.length && ok; i++) {
        const anc = `${root}/${parts.slice(0, i).join("/")}`
        const t = yield* typeAt(anc)
        if (t === "Missing") yield* fs.makeDirectory(anc)
        else if (t !== "Directory") ok = false
      }
      const full = `${root}/${parts.join("/")}`
      if (!ok || (yield* typeAt(full)) !== "Missing") continue
      if (s.kind === "link") {
        yield* fs.symlink(s.target, full)
        continue
      }
      if (s.kind === "file") yield* fs.writeFileString(full, s.content)
      else yield* fs.makeDirectory(full)
      // chown first: it clears setuid and setgid.
      yield* fs.chown(full, s.owner, s.owner)
      yield* fs.chmod(full, s.mode)
    }
  }).pipe(Effect.orDie)

/**
 * Applies `mutations` below `<root>/cfg`, never writing through a link.
 *
 * @since 0.1.0
 */
export const mutate = (root: string, mutations: ReadonlyArray<MutationSpec>) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    for (const m of mutations) {
      const full = `${root}/cfg/${[m.top, ...m.rest].join("/")}`
      const parent = full.slice(0, full.lastIndexOf("/"))
      const t = yield* typeAt(full)
      const parentIsDir = (yield* typeAt(parent)) === "Directory"
      switch (m.op) {
        case "edit":
          if (t === "File") yield* fs.writeFileString(full, `${m.content}~edited`)
          break
        case "delete":
          if (t !== "Missing") yield* fs.remove(full, { recursive: true })
          break
        case "create":
          if (t === "Missing" && parentIsDir) yield* fs.writeFileString(full, `${m.content}~created`)
          break
        case "chmod":
          if (t === "File" || t === "Directory") yield* fs.chmod(full, m.mode)
          break
        case "chown":
          if (t === "File" || t === "Directory") yield* fs.chown(full, m.owner + 7, m.owner + 7)
          break
        case "toDir":
          if (t !== "Missing" && t !== "Directory") yield* fs.remove(full)
          if (t !== "Directory" && parentIsDir) {
            yield* fs.makeDirectory(full)
            yield* fs.writeFileString(`${full}/new`, m.content)
          }
          break
        case "toLink":
          if (t !== "Missing") yield* fs.remove(full, { recursive: true })
          if (parentIsDir) yield* fs.symlink(m.target, full)
          break
        case "toFile":
          if (t === "Directory") yield* fs.remove(full, { recursive: true })
          if ((t === "Directory" || t === "Missing") && parentIsDir) yield* fs.writeFileString(full, m.content)
          break
        case "parentChmod":
          yield* fs.chmod(`${root}/cfg`, 0o750)
          break
      }
    }
  }).pipe(Effect.orDie)

/**
 * True for the host paths a snapshot of {@link SnapshotPaths} records.
 *
 * @since 0.1.0
 */
export const inSnapshot = (k: string) => SnapshotPaths.some((p) => atOrBelow(p, k))

/**
 * Asserts the tree below `<root>/cfg` is rolled back: the snapshot's paths as
 * in `original`, everything else (`/cfg` itself, `/cfg/d`) as in `mutated`.
 *
 * @since 0.1.0
 */
export const assertRolledBack = (
  root: string,
  original: Record<string, Node>,
  mutated: Record<string, Node>,
  options: { readonly requireChange?: boolean } = {}
) =>
  Effect.gen(function* () {
    const now = yield* treeOf(root, "/cfg")
    assert.deepStrictEqual(pick(now, inSnapshot), pick(original, inSnapshot))
    assert.deepStrictEqual(
      pick(now, (k) => !inSnapshot(k)),
      pick(mutated, (k) => !inSnapshot(k))
    )
    if (options.requireChange !== false) {
      assert.notDeepEqual(pick(mutated, inSnapshot), pick(original, inSnapshot), "the mutations changed nothing")
    }
  })
