/**
 * The conformance suite of `Snapshot` (take, restore, discard, recover,
 * scoped, guarded) on any `FileSystem` with its `Directory.Directories`: the
 * real ones in a scoped temporary directory and `MemoryHost` both pass it. Every test runs on a fresh host with its own
 * sandbox: the host root is `<sandbox>/root` (or the simulated host's `/` for
 * the real-root tests, which only a simulated host may run), the snapshot
 * goes to `<sandbox>/snaps/s`, and `<sandbox>/outside` stands for what lies
 * beyond the host root.
 *
 * The random trees and mutations, the tree reader and the `Systemd` doubles
 * are exported for the crash tests that need a particular host.
 *
 * Safety: generated symlink targets are relative and never contain `..`, and
 * mutations never write through a link (they `lstat` first), so nothing a
 * test does can leave its sandbox even if the code under test were wrong.
 *
 * @since 0.1.0
 */
import { Buffer } from "node:buffer"
import { assert, describe, it } from "@effect/vitest"
import { Directory, FileName, Snapshot, Systemd } from "@hostnode/core"
import {
  Arbitrary,
  Cause,
  Deferred,
  Effect,
  Exit,
  Fiber,
  FileSystem,
  Layer,
  Logger,
  Option,
  type PlatformError,
  Ref,
  Schema,
  type Scope
} from "effect"
import * as RefusingSystemd from "./RefusingSystemd.ts"
import * as TreeWalk from "./TreeWalk.ts"

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

// ---------------------------------------------------------------------------
// Doubles
// ---------------------------------------------------------------------------

const unexpected = (what: string) => Effect.die(new Error(`unexpected systemd call: ${what}`))

/**
 * A `Systemd` whose every call is a defect: for restores below a root that is not the real one, which must not reload.
 *
 * @since 0.1.0
 */
export const noSystemd: Systemd.Systemd = RefusingSystemd.make("the host root is not the real root")

/**
 * A `Systemd` that records daemon reloads, and fails them while `failing` is true.
 *
 * @since 0.1.0
 */
export const recordingSystemd = Effect.gen(function* () {
  const calls = yield* Ref.make<ReadonlyArray<string>>([])
  const failing = yield* Ref.make(false)
  const systemd = Systemd.make({
    job: (verb, unit) => unexpected(`${verb} ${unit}`),
    daemonReload: Effect.flatMap(Ref.get(failing), (f) =>
      f
        ? Effect.fail(
            new Systemd.SystemdError({
              reason: new Systemd.Other({ exitCode: 1, stderr: "injected failure" }),
              verb: "daemon-reload"
            })
          )
        : Ref.update(calls, (xs) => [...xs, "daemon-reload"])
    ),
    show: (unit) => unexpected(`show ${unit}`)
  })
  return { systemd, calls, failing }
})

/**
 * `dirs` with `rename` failing (EACCES, changing nothing) while `failing` is true.
 *
 * @since 0.1.0
 */
export const failingRenames = (dirs: Directory.Directories, failing: Ref.Ref<boolean>): Directory.Directories => ({
  ...dirs,
  rename: (from, fromName, to, toName, options) =>
    Effect.flatMap(Ref.get(failing), (f) =>
      f
        ? Effect.fail(
            new Directory.DirectoryError({
              reason: new Directory.PermissionDenied({ errno: "EACCES", detail: "injected failure" }),
              operation: "renameat2",
              path: Directory.childPath(from.path, fromName)
            })
          )
        : dirs.rename(from, fromName, to, toName, options)
    )
})

/**
 * The names beside the snapshot directory other than its lock file (which stays, so every process locks one inode).
 *
 * @since 0.2.0
 */
export const leftIn = (box: string) =>
  Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) =>
    Effect.map(fs.readDirectory(`${box}/snaps`), (names) => names.filter((n) => !n.endsWith(".lock")).sort())
  )

// ---------------------------------------------------------------------------
// The suite
// ---------------------------------------------------------------------------

/**
 * Options of {@link suite}.
 *
 * @since 0.1.0
 */
export interface SuiteOptions {
  /** Cases of each property (default 100). */
  readonly runs?: number | undefined
  /**
   * True for a simulated host, where host root `/` is not the machine's:
   * runs the tests that restore on the real root and check the reload.
   */
  readonly realRootIsSafe?: boolean | undefined
}

/** A sandbox on a fresh host: `root` (the host root), `dir` (the snapshot), `outside` (beyond the root). */
const sandbox = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const box = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-snapshot-" })
  yield* fs.makeDirectory(`${box}/root`)
  yield* fs.makeDirectory(`${box}/snaps`)
  yield* fs.makeDirectory(`${box}/outside`)
  yield* fs.writeFileString(`${box}/outside/victim`, "must stay")
  return { box, root: `${box}/root`, dir: `${box}/snaps/s`, outside: `${box}/outside` }
})

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

/** A small fixed tree for the example-based tests: files, a link, an empty dir, odd modes and owners. */
const fixed: ReadonlyArray<NodeSpec> = [
  { top: "a", rest: ["a"], kind: "file", content: "version = 2\n", mode: 0o644, owner: 0, target: "a" },
  { top: "a", rest: ["b"], kind: "file", content: "hello\n", mode: 0o4755, owner: 1000, target: "a" },
  { top: "a", rest: ["c", "a"], kind: "dir", content: "", mode: 0o2750, owner: 1000, target: "a" },
  { top: "b", rest: [], kind: "link", content: "", mode: 0o644, owner: 0, target: "b/c" },
  { top: "c", rest: [], kind: "file", content: "x", mode: 0o600, owner: 0, target: "a" },
  { top: "d", rest: ["a"], kind: "file", content: "x", mode: 0o644, owner: 0, target: "a" }
]

/** Mutations touching every listed path and the outside one. */
const everyKind: ReadonlyArray<MutationSpec> = [
  { top: "a", rest: ["a"], op: "edit", content: "x", mode: 0o644, owner: 0, target: "a" },
  { top: "a", rest: ["b"], op: "chmod", content: "x", mode: 0o600, owner: 0, target: "a" },
  { top: "a", rest: ["c", "b"], op: "create", content: "x", mode: 0o600, owner: 0, target: "a" },
  { top: "a", rest: ["c", "a"], op: "toFile", content: "x", mode: 0o600, owner: 0, target: "a" },
  { top: "b", rest: [], op: "toDir", content: "x", mode: 0o600, owner: 0, target: "a" },
  { top: "c", rest: [], op: "toLink", content: "x", mode: 0o600, owner: 0, target: "missing" },
  { top: "d", rest: ["a"], op: "edit", content: "x", mode: 0o600, owner: 0, target: "a" }
]

/**
 * Registers the suite under `name`. `host` provides the `FileSystem`; it is
 * built afresh for every test and every property case.
 *
 * @since 0.1.0
 */
export const suite = (
  name: string,
  host: Layer.Layer<FileSystem.FileSystem | Directory.Directories>,
  options: SuiteOptions = {}
): void => {
  describe(`Snapshot conformance: ${name}`, () => {
    const runs = options.runs ?? 100
    const onHost = <A, E>(
      effect: Effect.Effect<A, E, FileSystem.FileSystem | Directory.Directories | Systemd.Systemd | Scope.Scope>
    ) => effect.pipe(Effect.scoped, Effect.provideService(Systemd.Systemd, noSystemd), Effect.provide(host))

    /** A taken snapshot of the fixed tree, then every kind of mutation: the state a rollback starts from. */
    const takenAndMutated = Effect.gen(function* () {
      const s = yield* sandbox
      yield* build(s.root, fixed)
      const original = yield* treeOf(s.root, "/cfg")
      const snapshot = yield* Snapshot.takeOf({ dir: s.dir, hostRoot: s.root, paths: SnapshotPaths })
      yield* mutate(s.root, everyKind)
      const mutated = yield* treeOf(s.root, "/cfg")
      return { ...s, original, snapshot, mutated }
    })

    it.effect.prop(
      "restore gives back exactly the tree that was taken; paths outside keep their mutated state",
      [Trees(), Mutations()],
      ([specs, mutations]) =>
        onHost(
          Effect.gen(function* () {
            const s = yield* sandbox
            yield* build(s.root, specs)
            const before = yield* treeOf(s.root, "/cfg")
            const snapshot = yield* Snapshot.takeOf({ dir: s.dir, hostRoot: s.root, paths: SnapshotPaths })
            yield* mutate(s.root, mutations)
            const mutated = yield* treeOf(s.root, "/cfg")
            assert.isFalse(yield* snapshot.restored)
            yield* snapshot.restore
            const after = yield* treeOf(s.root, "/cfg")
            assert.deepStrictEqual(pick(after, inSnapshot), pick(before, inSnapshot))
            assert.deepStrictEqual(
              pick(after, (k) => !inSnapshot(k)),
              pick(mutated, (k) => !inSnapshot(k))
            )
            assert.isTrue(yield* snapshot.restored)
            // A restore consumes the snapshot: nothing is left to put back over newer configuration.
            assert.deepStrictEqual(yield* leftIn(s.box), [])
            const again = yield* Effect.flip(snapshot.restore)
            assert.strictEqual(again._tag === "SnapshotError" ? again.reason : again._tag, "Missing")
            assert.isTrue(yield* snapshot.restored)
            yield* snapshot.discard
            assert.isFalse(yield* Snapshot.recover({ dir: s.dir, hostRoot: s.root }))
            assert.deepStrictEqual(yield* treeOf(s.root, "/cfg"), after)
          })
        ),
      { timeout: 300_000, arbitrary: { runs } }
    )

    it.effect("a snapshot is a manifest and a data file, private, with nothing left beside it", () =>
      onHost(
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const s = yield* sandbox
          yield* build(s.root, fixed)
          yield* Snapshot.takeOf({ dir: s.dir, hostRoot: s.root, paths: SnapshotPaths })
          assert.deepStrictEqual((yield* fs.readDirectory(`${s.box}/snaps`)).sort(), ["s", "s.lock"])
          assert.deepStrictEqual((yield* fs.readDirectory(s.dir)).sort(), [Snapshot.DataName, Snapshot.ManifestName])
          for (const f of [Snapshot.DataName, Snapshot.ManifestName, "../s.lock"]) {
            assert.strictEqual((yield* fs.stat(`${s.dir}/${f}`)).mode & 0o777, 0o600, f)
          }
          assert.strictEqual((yield* fs.stat(s.dir)).mode & 0o777, 0o700)
          const manifest = Schema.decodeUnknownSync(Schema.fromJsonString(Snapshot.Manifest))(
            yield* fs.readFileString(`${s.dir}/${Snapshot.ManifestName}`)
          )
          assert.strictEqual(manifest.version, Snapshot.FormatVersion)
          assert.deepStrictEqual(
            manifest.entries.map((e) => [e.path, e.type]),
            [
              ["/cfg/a", "Directory"],
              ["/cfg/a/a", "File"],
              ["/cfg/a/b", "File"],
              ["/cfg/a/c", "Directory"],
              ["/cfg/a/c/a", "Directory"],
              ["/cfg/b", "SymbolicLink"],
              ["/cfg/c", "File"]
            ]
          )
          const b = manifest.entries.find((e) => e.path === "/cfg/a/b")
          assert.deepInclude(b, { mode: 0o4755, uid: 1000, gid: 1000, size: 6 })
          const info = yield* fs.lstat(`${s.root}/cfg/a/b`)
          assert.strictEqual(
            b?.type === "File" && b.mtimeNs !== undefined ? BigInt(b.mtimeNs) / 1_000_000n : -1n,
            BigInt(Option.getOrThrow(info.mtime).getTime()),
            "the modification time is recorded (to the nanosecond; compared here to the millisecond)"
          )
          assert.strictEqual(
            b?.type === "File" ? b.sha256 : "",
            // sha256("hello\n")
            "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
          )
        })
      )
    )

    it.effect("a listed path that does not exist is recorded absent, and what is created there later is removed", () =>
      onHost(
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const s = yield* sandbox
          yield* build(s.root, fixed)
          const snapshot = yield* Snapshot.takeOf({
            dir: s.dir,
            hostRoot: s.root,
            paths: ["/cfg/a", "/cfg/none/deeper", "/cfg/a/b"]
          })
          assert.deepStrictEqual(snapshot.paths, ["/cfg/a", "/cfg/none/deeper"])
          yield* fs.makeDirectory(`${s.root}/cfg/none/deeper/x`, { recursive: true })
          yield* snapshot.restore
          // The created parent is outside the recorded path and stays.
          assert.deepStrictEqual(Object.keys(yield* treeOf(s.root, "/cfg/none")), ["/cfg/none"])
        })
      )
    )

    it.effect("a listed path below a missing parent is restored with its parents", () =>
      onHost(
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const s = yield* sandbox
          yield* build(s.root, fixed)
          const before = yield* treeOf(s.root, "/cfg/a")
          const snapshot = yield* Snapshot.takeOf({ dir: s.dir, hostRoot: s.root, paths: ["/cfg/a/c/a", "/cfg/a/a"] })
          yield* fs.remove(`${s.root}/cfg/a`, { recursive: true })
          yield* snapshot.restore
          const after = yield* treeOf(s.root, "/cfg/a")
          assert.deepStrictEqual(after["/cfg/a/c/a"], before["/cfg/a/c/a"])
          assert.deepStrictEqual(after["/cfg/a/a"], before["/cfg/a/a"])
          assert.deepStrictEqual(Object.keys(after).sort(), ["/cfg/a", "/cfg/a/a", "/cfg/a/c", "/cfg/a/c/a"])
        })
      )
    )

    it.effect("excluded paths are not copied, and a restore leaves them as they are", () =>
      onHost(
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const s = yield* sandbox
          yield* build(s.root, fixed)
          yield* fs.makeDirectory(`${s.root}/cfg/a/pki`)
          yield* fs.writeFileString(`${s.root}/cfg/a/pki/ca.key`, "PRIVATE KEY")
          const before = yield* treeOf(s.root, "/cfg/a")
          const snapshot = yield* Snapshot.takeOf({
            dir: s.dir,
            hostRoot: s.root,
            paths: ["/cfg/a"],
            exclude: ["/cfg/a/pki"]
          })
          const data = yield* fs.readFileString(`${s.dir}/${Snapshot.DataName}`)
          assert.notInclude(data, "PRIVATE KEY")
          // Rotated during the upgrade, and something new beside it.
          yield* fs.writeFileString(`${s.root}/cfg/a/pki/ca.key`, "ROTATED KEY")
          yield* fs.writeFileString(`${s.root}/cfg/a/pki/new.crt`, "NEW")
          yield* fs.writeFileString(`${s.root}/cfg/a/a`, "changed")
          yield* snapshot.restore
          const after = yield* treeOf(s.root, "/cfg/a")
          assert.deepStrictEqual(
            pick(after, (k) => !atOrBelow("/cfg/a/pki", k)),
            pick(before, (k) => !atOrBelow("/cfg/a/pki", k))
          )
          assert.strictEqual(yield* fs.readFileString(`${s.root}/cfg/a/pki/ca.key`), "ROTATED KEY")
          assert.strictEqual(yield* fs.readFileString(`${s.root}/cfg/a/pki/new.crt`), "NEW")
          // Even when the whole directory must go, the excluded path stays.
          yield* fs.remove(s.dir, { recursive: true, force: true })
          yield* fs.remove(`${s.root}/cfg/a/pki`, { recursive: true })
          const empty = yield* Snapshot.takeOf({
            dir: s.dir,
            hostRoot: s.root,
            paths: ["/cfg/x"],
            exclude: ["/cfg/x/pki"]
          })
          yield* fs.makeDirectory(`${s.root}/cfg/x/pki`, { recursive: true })
          yield* fs.writeFileString(`${s.root}/cfg/x/pki/k`, "K")
          yield* fs.writeFileString(`${s.root}/cfg/x/other`, "O")
          yield* empty.restore
          assert.deepStrictEqual(Object.keys(yield* treeOf(s.root, "/cfg/x")).sort(), [
            "/cfg/x",
            "/cfg/x/pki",
            "/cfg/x/pki/k"
          ])
        })
      )
    )

    it.effect("links planted at or above recorded paths are replaced, never followed out of the root", () =>
      onHost(
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const s = yield* sandbox
          yield* build(s.root, fixed)
          const original = yield* treeOf(s.root, "/cfg")
          const outsideBefore = yield* treeOf(s.box, "/outside")
          const snapshot = yield* Snapshot.takeOf({ dir: s.dir, hostRoot: s.root, paths: SnapshotPaths })
          // A restore consumes its snapshot: a second one for the second attack.
          const second = yield* Snapshot.takeOf({ dir: `${s.dir}2`, hostRoot: s.root, paths: SnapshotPaths })
          // A recorded file replaced by a link to a file outside the root.
          yield* fs.remove(`${s.root}/cfg/c`)
          yield* fs.symlink(`${s.outside}/victim`, `${s.root}/cfg/c`)
          // A recorded directory replaced by a link to a directory outside.
          yield* fs.remove(`${s.root}/cfg/a`, { recursive: true })
          yield* fs.symlink(s.outside, `${s.root}/cfg/a`)
          yield* snapshot.restore
          assert.deepStrictEqual(yield* treeOf(s.box, "/outside"), outsideBefore)
          assert.deepStrictEqual(yield* treeOf(s.root, "/cfg"), original)
          // The parent of the listed paths made a link outside: resolved as
          // though the root were "/", so the restore stays inside the root.
          yield* fs.rename(`${s.root}/cfg`, `${s.root}/cfg-moved`)
          yield* fs.symlink(s.outside, `${s.root}/cfg`)
          yield* second.restore
          assert.deepStrictEqual(yield* treeOf(s.box, "/outside"), outsideBefore)
          const inRoot = yield* treeOf(s.root, `${s.outside}`)
          assert.deepStrictEqual(inRoot[`${s.outside}/c`], original["/cfg/c"])
        })
      )
    )

    it.effect("take refuses a relative path, a snapshot inside a recorded path, and an existing snapshot", () =>
      onHost(
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const s = yield* sandbox
          yield* build(s.root, fixed)
          const relative = yield* Effect.flip(Snapshot.takeOf({ dir: s.dir, hostRoot: s.root, paths: ["cfg/a"] }))
          assert.strictEqual(relative.reason, "InvalidPath")
          const inside = yield* Effect.flip(
            Snapshot.takeOf({ dir: `${s.root}/cfg/a/snap`, hostRoot: s.root, paths: SnapshotPaths })
          )
          assert.strictEqual(inside.reason, "InvalidPath")
          assert.include(inside.message, "/cfg/a")
          yield* Snapshot.takeOf({ dir: s.dir, hostRoot: s.root, paths: SnapshotPaths })
          const manifest = yield* fs.readFileString(`${s.dir}/${Snapshot.ManifestName}`)
          const again = yield* Effect.flip(Snapshot.takeOf({ dir: s.dir, hostRoot: s.root, paths: ["/cfg/d"] }))
          assert.strictEqual(again.reason, "Exists")
          assert.strictEqual(yield* fs.readFileString(`${s.dir}/${Snapshot.ManifestName}`), manifest)
          assert.deepStrictEqual(yield* leftIn(s.box), ["s"])
        })
      )
    )

    // -- tampering -----------------------------------------------------------

    const tamperCases: ReadonlyArray<{
      readonly name: string
      readonly reason: Snapshot.SnapshotErrorReason
      readonly names?: string
      readonly tamper: (dir: string) => Effect.Effect<void, PlatformError.PlatformError, FileSystem.FileSystem>
    }> = [
      {
        name: "a byte of a file changed",
        reason: "Corrupt",
        names: "/cfg/a/b",
        tamper: (dir) =>
          editManifestAndData(dir, (m, data) => {
            const e = m.entries.find((x) => x.path === "/cfg/a/b") as { offset: number }
            data[e.offset] = (data[e.offset] ?? 0) ^ 1
          })
      },
      {
        name: "the data file truncated",
        reason: "Corrupt",
        tamper: (dir) => Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) => fs.truncate(`${dir}/data`, 3))
      },
      {
        name: "a recorded hash replaced",
        reason: "Corrupt",
        names: "/cfg/c",
        tamper: (dir) =>
          editManifestAndData(dir, (m) => {
            const e = m.entries.find((x) => x.path === "/cfg/c") as { sha256: string }
            e.sha256 = "0".repeat(64)
          })
      },
      {
        name: "a file's range beyond the data file",
        reason: "Corrupt",
        names: "/cfg/c",
        tamper: (dir) =>
          editManifestAndData(dir, (m) => {
            const e = m.entries.find((x) => x.path === "/cfg/c") as { offset: number }
            e.offset = 1_000_000
          })
      },
      {
        name: "the manifest truncated",
        reason: "InvalidManifest",
        tamper: (dir) =>
          Effect.gen(function* () {
            const fs = yield* FileSystem.FileSystem
            const text = yield* fs.readFileString(`${dir}/${Snapshot.ManifestName}`)
            yield* fs.writeFileString(`${dir}/${Snapshot.ManifestName}`, text.slice(0, Math.floor(text.length / 2)))
          })
      },
      {
        name: "the manifest emptied",
        reason: "InvalidManifest",
        tamper: (dir) =>
          Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) => fs.writeFileString(`${dir}/manifest.json`, ""))
      },
      {
        name: "the manifest removed",
        reason: "InvalidManifest",
        tamper: (dir) =>
          Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) => fs.remove(`${dir}/manifest.json`))
      },
      {
        name: "a mode that is not a number",
        reason: "InvalidManifest",
        tamper: (dir) =>
          editManifestAndData(dir, (m) => {
            ;(m.entries[1] as { mode: unknown }).mode = "rwxr-xr-x"
          })
      },
      {
        name: "an entry that belongs to no recorded directory",
        reason: "InvalidManifest",
        names: "/cfg/d/x",
        tamper: (dir) =>
          editManifestAndData(dir, (m) => {
            m.entries.push({ type: "SymbolicLink", path: "/cfg/d/x", target: "y" })
          })
      },
      {
        name: "an entry path climbing out with ..",
        reason: "PathOutsideRoot",
        names: "/cfg/a/../../../outside/victim",
        tamper: (dir) =>
          editManifestAndData(dir, (m) => {
            const e = m.entries.find((x) => x.path === "/cfg/a/b") as { path: string }
            e.path = "/cfg/a/../../../outside/victim"
          })
      },
      {
        name: "a listed path that is relative",
        reason: "PathOutsideRoot",
        names: "../outside",
        tamper: (dir) =>
          editManifestAndData(dir, (m) => {
            m.paths[2] = "../outside"
            const e = m.entries.find((x) => x.path === "/cfg/c") as { path: string }
            e.path = "../outside"
          })
      },
      {
        name: "a format version from the future",
        reason: "UnsupportedVersion",
        tamper: (dir) =>
          editManifestAndData(dir, (m) => {
            ;(m as { version: number }).version = 3
          })
      }
    ]

    for (const c of tamperCases) {
      it.effect(`tampering: ${c.name} is ${c.reason} and nothing is written`, () =>
        onHost(
          Effect.gen(function* () {
            const fs = yield* FileSystem.FileSystem
            const t = yield* takenAndMutated
            yield* c.tamper(t.dir)
            const snapshotBytes = yield* treeOf(t.box, "/snaps")
            const hostBefore = yield* treeOf(t.root, "/")
            const e = yield* Effect.flip(t.snapshot.restore)
            assert.strictEqual(e._tag, "SnapshotError")
            if (e._tag !== "SnapshotError") return
            assert.strictEqual(e.reason, c.reason, e.message)
            assert.strictEqual(e.dir, t.dir)
            if (c.names !== undefined) assert.strictEqual(e.path, c.names)
            assert.deepStrictEqual(yield* treeOf(t.root, "/"), hostBefore)
            assert.deepStrictEqual(yield* treeOf(t.root, "/cfg"), t.mutated)
            assert.isFalse(yield* t.snapshot.restored)
            // recover says the same and keeps the snapshot as it is.
            const r = yield* Effect.flip(Snapshot.recover({ dir: t.dir, hostRoot: t.root }))
            assert.strictEqual(r._tag === "SnapshotError" ? r.reason : r._tag, c.reason)
            assert.deepStrictEqual(yield* treeOf(t.root, "/"), hostBefore)
            assert.deepStrictEqual(yield* treeOf(t.box, "/snaps"), snapshotBytes)
            assert.deepStrictEqual(yield* fs.readDirectory(`${t.box}/outside`), ["victim"])
          })
        )
      )
    }

    // -- discard, recover and the scoped resource -----------------------------

    it.effect("discard removes the saved copy; restoring it afterwards is Missing; discarding twice is fine", () =>
      onHost(
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const t = yield* takenAndMutated
          yield* t.snapshot.discard
          yield* t.snapshot.discard
          assert.deepStrictEqual(yield* fs.readDirectory(`${t.box}/snaps`), ["s.lock"])
          // The module's discard, of a snapshot that is not there, is success too.
          assert.isFalse(yield* Snapshot.discard({ dir: t.dir }))
          const e = yield* Effect.flip(t.snapshot.restore)
          assert.strictEqual(e._tag === "SnapshotError" ? e.reason : e._tag, "Missing")
          assert.deepStrictEqual(yield* treeOf(t.root, "/cfg"), t.mutated)
        })
      )
    )

    it.effect(
      "discard and take refuse what is not a snapshot (a file, a directory of other things) and change nothing",
      () =>
        onHost(
          Effect.gen(function* () {
            const fs = yield* FileSystem.FileSystem
            const s = yield* sandbox
            // `--dir /etc` typed for `--dir /etc/snap`: a directory of the operator's files.
            const notOne = `${s.box}/snaps/s`
            yield* fs.makeDirectory(`${notOne}/kubernetes`, { recursive: true })
            yield* fs.writeFileString(`${notOne}/kubernetes/admin.conf`, "keep me")
            yield* fs.writeFileString(`${notOne}/${Snapshot.ManifestName}`, "{}")
            const before = yield* treeOf(s.box, "/snaps/s")
            const e = yield* Effect.flip(Snapshot.discard({ dir: notOne }))
            assert.strictEqual(e._tag === "SnapshotError" && e.reason, "NotASnapshot")
            assert.include(e.message, "kubernetes")
            assert.deepStrictEqual(yield* treeOf(s.box, "/snaps/s"), before)
            // A take into it is told the same, not that a snapshot is there, and writes nothing.
            const t = yield* Effect.flip(Snapshot.takeOf({ dir: notOne, hostRoot: s.root, paths: SnapshotPaths }))
            assert.strictEqual(t._tag === "SnapshotError" && t.reason, "NotASnapshot")
            assert.deepStrictEqual(yield* treeOf(s.box, "/snaps/s"), before)
            // A file at the snapshot's name.
            yield* fs.remove(notOne, { recursive: true })
            yield* fs.writeFileString(notOne, "a file")
            const f = yield* Effect.flip(Snapshot.discard({ dir: notOne }))
            assert.strictEqual(f._tag === "SnapshotError" && f.reason, "NotASnapshot")
            assert.strictEqual(yield* fs.readFileString(notOne), "a file")
            // A damaged snapshot (its data alone) is still one: discarded.
            yield* fs.remove(notOne)
            yield* fs.makeDirectory(notOne, { mode: 0o700 })
            yield* fs.writeFileString(`${notOne}/${Snapshot.DataName}`, "partial")
            assert.isTrue(yield* Snapshot.discard({ dir: notOne }))
            assert.isFalse(yield* fs.exists(notOne))
          })
        )
    )

    it.effect("recover restores a snapshot an earlier process left, then removes it; with none it does nothing", () =>
      onHost(
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const t = yield* takenAndMutated
          // What a take killed before its commit leaves: a temporary sibling.
          yield* fs.makeDirectory(`${t.box}/snaps/s.tmp-abc123`)
          yield* fs.writeFileString(`${t.box}/snaps/s.tmp-abc123/data`, "partial")
          assert.isTrue(yield* Snapshot.recover({ dir: t.dir, hostRoot: t.root }))
          yield* assertRolledBack(t.root, t.original, t.mutated)
          assert.deepStrictEqual(yield* leftIn(t.box), [])
          const after = yield* treeOf(t.root, "/")
          assert.isFalse(yield* Snapshot.recover({ dir: t.dir, hostRoot: t.root }))
          assert.deepStrictEqual(yield* treeOf(t.root, "/"), after)
        })
      )
    )

    it.effect("a snapshot records its canonical host root; restoring it below another root is refused", () =>
      onHost(
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const t = yield* takenAndMutated
          const canonical = yield* fs.realPath(t.root)
          const manifest = Schema.decodeUnknownSync(Schema.fromJsonString(Snapshot.Manifest))(
            yield* fs.readFileString(`${t.dir}/${Snapshot.ManifestName}`)
          )
          assert.strictEqual(manifest.hostRoot, canonical)
          // Another tree (the operator mistyped --host-root): nothing is written there, the snapshot stays.
          const other = `${t.box}/other`
          yield* fs.makeDirectory(`${other}/cfg/a`, { recursive: true })
          yield* fs.writeFileString(`${other}/cfg/c`, "another node's file")
          const otherBefore = yield* treeOf(other, "/")
          for (const attempt of [
            Effect.flatMap(Snapshot.open({ dir: t.dir, hostRoot: other }), (h) => h.restore),
            Snapshot.recover({ dir: t.dir, hostRoot: other })
          ]) {
            const e = yield* Effect.flip(attempt)
            assert.strictEqual(e._tag === "SnapshotError" && e.reason, "HostRootMismatch")
            assert.include(e.message, canonical)
            assert.include(e.message, yield* fs.realPath(other))
          }
          assert.deepStrictEqual(yield* treeOf(other, "/"), otherBefore)
          assert.deepStrictEqual(yield* treeOf(t.root, "/cfg"), t.mutated)
          assert.isTrue(yield* fs.exists(`${t.dir}/${Snapshot.ManifestName}`))
          // The same tree under another name (a link to it) is the same canonical root.
          yield* fs.symlink(t.root, `${t.box}/rootlink`)
          assert.isTrue(yield* Snapshot.recover({ dir: t.dir, hostRoot: `${t.box}/rootlink` }))
          yield* assertRolledBack(t.root, t.original, t.mutated)
        })
      )
    )

    it.effect("allowHostRootMismatch restores below another root on purpose", () =>
      onHost(
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const t = yield* takenAndMutated
          const copy = `${t.box}/copy`
          yield* fs.makeDirectory(copy)
          assert.isTrue(yield* Snapshot.recover({ dir: t.dir, hostRoot: copy, allowHostRootMismatch: true }))
          assert.deepStrictEqual(pick(yield* treeOf(copy, "/cfg"), inSnapshot), pick(t.original, inSnapshot))
        })
      )
    )

    it.effect("a take in which every listed path is absent says so", () =>
      onHost(
        Effect.gen(function* () {
          const s = yield* sandbox
          const empty = yield* Snapshot.takeOf({ dir: s.dir, hostRoot: s.root, paths: SnapshotPaths })
          assert.deepStrictEqual(empty.absent, SnapshotPaths)
          yield* empty.discard
          yield* build(s.root, fixed)
          const taken = yield* Snapshot.takeOf({ dir: s.dir, hostRoot: s.root, paths: [...SnapshotPaths, "/cfg/none"] })
          assert.deepStrictEqual(taken.absent, ["/cfg/none"])
          const opened = yield* Snapshot.open({ dir: s.dir, hostRoot: s.root })
          assert.deepStrictEqual(opened.absent, ["/cfg/none"])
        })
      )
    )

    it.effect("a take that never committed leaves the originals and is cleaned up by recover", () =>
      onHost(
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const s = yield* sandbox
          yield* build(s.root, fixed)
          const before = yield* treeOf(s.root, "/")
          yield* fs.makeDirectory(`${s.box}/snaps/s.tmp-XYZ`)
          yield* fs.writeFileString(`${s.box}/snaps/s.tmp-XYZ/manifest.json`, '{"format":')
          yield* fs.makeDirectory(`${s.box}/snaps/s.discarding`)
          assert.isFalse(yield* Snapshot.recover({ dir: s.dir, hostRoot: s.root }))
          assert.deepStrictEqual(yield* leftIn(s.box), [])
          assert.deepStrictEqual(yield* treeOf(s.root, "/"), before)
        })
      )
    )

    it.effect("scoped: success discards and keeps the new configuration", () =>
      onHost(
        Effect.gen(function* () {
          const s = yield* sandbox
          yield* build(s.root, fixed)
          yield* Effect.scoped(
            Effect.gen(function* () {
              const snapshot = yield* Snapshot.scoped({ dir: s.dir, hostRoot: s.root, paths: SnapshotPaths })
              assert.strictEqual(snapshot.dir, s.dir)
              yield* mutate(s.root, everyKind)
            })
          )
          const mutated = yield* treeOf(s.root, "/cfg")
          assert.strictEqual(mutated["/cfg/b"]?.type, "Directory")
          assert.deepStrictEqual(yield* leftIn(s.box), [])
        })
      )
    )

    it.effect("scoped: a failure restores, then discards", () =>
      onHost(
        Effect.gen(function* () {
          const s = yield* sandbox
          yield* build(s.root, fixed)
          const original = yield* treeOf(s.root, "/cfg")
          let mutated: Record<string, Node> = {}
          const exit = yield* Effect.exit(
            Effect.scoped(
              Effect.gen(function* () {
                yield* Snapshot.scoped({ dir: s.dir, hostRoot: s.root, paths: SnapshotPaths })
                yield* mutate(s.root, everyKind)
                mutated = yield* treeOf(s.root, "/cfg")
                return yield* Effect.fail("upgrade failed" as const)
              })
            )
          )
          assert.deepStrictEqual(exit, Exit.fail("upgrade failed" as const))
          yield* assertRolledBack(s.root, original, mutated)
          assert.deepStrictEqual(yield* leftIn(s.box), [])
        })
      )
    )

    it.effect("scoped: an interruption mid-scope restores, then discards", () =>
      onHost(
        Effect.gen(function* () {
          const s = yield* sandbox
          yield* build(s.root, fixed)
          const original = yield* treeOf(s.root, "/cfg")
          const ready = yield* Deferred.make<void>()
          const fiber = yield* Effect.forkChild(
            Effect.scoped(
              Effect.gen(function* () {
                yield* Snapshot.scoped({ dir: s.dir, hostRoot: s.root, paths: SnapshotPaths })
                yield* mutate(s.root, everyKind)
                yield* Deferred.succeed(ready, undefined)
                return yield* Effect.never
              })
            )
          )
          yield* Deferred.await(ready)
          const mutated = yield* treeOf(s.root, "/cfg")
          const exit = yield* Fiber.interrupt(fiber).pipe(Effect.andThen(Fiber.await(fiber)))
          assert.isTrue(Exit.hasInterrupts(exit))
          yield* assertRolledBack(s.root, original, mutated)
          assert.deepStrictEqual(yield* leftIn(s.box), [])
        })
      )
    )

    /** An upgrade that mutates the fixed tree, then fails, with every rename failing from then on. */
    const failingUpgrade = Effect.gen(function* () {
      const dirs = yield* Directory.Directories
      const failing = yield* Ref.make(false)
      const logs: Array<unknown> = []
      const capture = Logger.layer([Logger.map(Logger.formatStructured, (entry) => void logs.push(entry))])
      const s = yield* sandbox
      yield* build(s.root, fixed)
      const original = yield* treeOf(s.root, "/cfg")
      const state = { mutated: {} as Record<string, Node> }
      const upgrade = Effect.gen(function* () {
        yield* mutate(s.root, everyKind)
        state.mutated = yield* treeOf(s.root, "/cfg")
        yield* Ref.set(failing, true)
        return yield* Effect.fail("upgrade failed" as const)
      })
      const failingDirs = Layer.succeed(Directory.Directories, failingRenames(dirs, failing))
      return { s, original, state, upgrade, failingDirs, capture, logs }
    })

    /** After a failed rollback: half restored, the snapshot kept, and recover finishes the job. */
    const assertKeptForRecover = (t: Effect.Success<typeof failingUpgrade>) =>
      Effect.gen(function* () {
        const logged = JSON.stringify(t.logs)
        assert.include(logged, "rolling back the configuration failed")
        assert.include(logged, t.s.dir)
        assert.include(logged, "injected failure")
        const half = yield* treeOf(t.s.root, "/cfg")
        assert.notDeepEqual(pick(half, inSnapshot), pick(t.original, inSnapshot))
        assert.deepStrictEqual(yield* leftIn(t.s.box), ["s"])
        // Later (a new process, or the next attempt) recover finishes the job.
        assert.isTrue(yield* Snapshot.recover({ dir: t.s.dir, hostRoot: t.s.root }))
        yield* assertRolledBack(t.s.root, t.original, t.state.mutated)
        assert.deepStrictEqual(yield* leftIn(t.s.box), [])
      })

    it.effect("scoped: a rollback that fails makes the scope fail with the upgrade's error and RollbackFailed", () =>
      Effect.gen(function* () {
        const t = yield* failingUpgrade
        const exit = yield* Effect.exit(
          Effect.scoped(
            Effect.andThen(Snapshot.scoped({ dir: t.s.dir, hostRoot: t.s.root, paths: SnapshotPaths }), t.upgrade)
          ).pipe(Effect.provide(t.failingDirs), Effect.provide(t.capture))
        )
        assert.isTrue(Exit.isFailure(exit))
        if (!Exit.isFailure(exit)) return
        const failures = exit.cause.reasons.filter(Cause.isFailReason).map((r) => r.error)
        assert.strictEqual(failures[0], "upgrade failed")
        const rollback = failures[1]
        assert.instanceOf(rollback, Snapshot.RollbackFailed)
        if (!(rollback instanceof Snapshot.RollbackFailed)) return
        assert.strictEqual(rollback.rollback._tag, "SnapshotError")
        assert.strictEqual(rollback.rollback._tag === "SnapshotError" ? rollback.rollback.errno : "", "EACCES")
        assert.deepStrictEqual(
          rollback.upgrade.reasons.filter(Cause.isFailReason).map((r) => r.error),
          ["upgrade failed"]
        )
        assert.include(Cause.pretty(exit.cause), "RollbackFailed")
        yield* assertKeptForRecover(t)
      }).pipe(onHost)
    )

    it.effect("guarded: a rollback that fails is the one failure, RollbackFailed, carrying the upgrade's cause", () =>
      Effect.gen(function* () {
        const t = yield* failingUpgrade
        const e = yield* Effect.flip(
          Snapshot.guarded(t.upgrade, { dir: t.s.dir, hostRoot: t.s.root, paths: SnapshotPaths }).pipe(
            Effect.provide(t.failingDirs),
            Effect.provide(t.capture)
          )
        )
        assert.instanceOf(e, Snapshot.RollbackFailed)
        if (!(e instanceof Snapshot.RollbackFailed)) return
        assert.deepStrictEqual(
          e.upgrade.reasons.filter(Cause.isFailReason).map((r) => r.error),
          ["upgrade failed"]
        )
        assert.include(e.message, t.s.dir)
        yield* assertKeptForRecover(t)
      }).pipe(onHost)
    )

    it.effect("guarded: success discards; a failure restores and the upgrade's error is the failure", () =>
      Effect.gen(function* () {
        const s = yield* sandbox
        yield* build(s.root, fixed)
        const original = yield* treeOf(s.root, "/cfg")
        const value = yield* Snapshot.guarded(Effect.succeed(42), {
          dir: s.dir,
          hostRoot: s.root,
          paths: SnapshotPaths
        })
        assert.strictEqual(value, 42)
        assert.deepStrictEqual(yield* leftIn(s.box), [])
        const state = { mutated: {} as Record<string, Node> }
        const e = yield* Effect.flip(
          Snapshot.guarded(
            Effect.gen(function* () {
              yield* mutate(s.root, everyKind)
              state.mutated = yield* treeOf(s.root, "/cfg")
              return yield* Effect.fail("upgrade failed" as const)
            }),
            { dir: s.dir, hostRoot: s.root, paths: SnapshotPaths }
          )
        )
        assert.strictEqual(e, "upgrade failed")
        yield* assertRolledBack(s.root, original, state.mutated)
        assert.deepStrictEqual(yield* leftIn(s.box), [])
      }).pipe(onHost)
    )

    it.effect("a failed restore keeps the snapshot and can be run again; the error names the errno", () =>
      Effect.gen(function* () {
        const dirs = yield* Directory.Directories
        const failing = yield* Ref.make(false)
        const t = yield* takenAndMutated
        const again = yield* Snapshot.open({ dir: t.dir, hostRoot: t.root }).pipe(
          Effect.provideService(Directory.Directories, failingRenames(dirs, failing))
        )
        yield* Ref.set(failing, true)
        const e = yield* Effect.flip(again.restore)
        assert.strictEqual(e._tag === "SnapshotError" ? e.reason : e._tag, "Io")
        assert.strictEqual(e._tag === "SnapshotError" ? e.errno : "", "EACCES")
        assert.include(e.message, "injected failure")
        assert.isFalse(yield* again.restored)
        assert.deepStrictEqual(yield* leftIn(t.box), ["s"])
        yield* Ref.set(failing, false)
        yield* again.restore
        assert.isTrue(yield* again.restored)
        yield* assertRolledBack(t.root, t.original, t.mutated)
      }).pipe(onHost)
    )

    // -- names as bytes, the lock, hostile files, overlap --------------------

    it.effect("names that are not UTF-8 are recorded and restored exactly, as are link targets", () =>
      Effect.gen(function* () {
        const dirs = yield* Directory.Directories
        const s = yield* sandbox
        yield* build(s.root, fixed)
        const h = yield* dirs.openRoot(`${s.root}/cfg/a`)
        const cafe = new Uint8Array([0x63, 0x61, 0x66, 0xe9])
        const odd = new Uint8Array([0xff, 0x2e, 0x64])
        const target = new Uint8Array([0x80, 0x2f, 0x61])
        const write = (dir: Directory.Handle, name: Uint8Array, text: string) =>
          Effect.scoped(
            Effect.flatMap(dirs.openFile(dir, name, { mode: "create", permissions: 0o640 }), (f) =>
              f.write(FileName.encode(text), 0)
            )
          )
        yield* write(h, cafe, "latin-1 name")
        yield* dirs.makeDirectory(h, odd, 0o750)
        const oddDir = yield* dirs.openDirectory(h, odd)
        yield* write(oddDir, cafe, "below an odd directory")
        yield* dirs.symlink(h, new Uint8Array([0x6c, 0xfe]), target)
        const listing = (dir: Directory.Handle) =>
          Effect.map(dirs.list(dir), (es) => es.map((e) => FileName.decode(e.name)).sort())
        const before = { top: yield* listing(h), odd: yield* listing(oddDir) }
        const snapshot = yield* Snapshot.takeOf({ dir: s.dir, hostRoot: s.root, paths: SnapshotPaths })
        yield* dirs.unlink(h, cafe)
        yield* dirs.unlink(oddDir, cafe)
        yield* write(oddDir, cafe, "changed")
        yield* write(h, new Uint8Array([0xfe]), "created since: removed")
        yield* snapshot.restore
        assert.deepStrictEqual({ top: yield* listing(h), odd: yield* listing(oddDir) }, before)
        const read = (dir: Directory.Handle, name: Uint8Array) =>
          Effect.scoped(
            Effect.gen(function* () {
              const f = yield* dirs.openFile(dir, name, { mode: "read" })
              const buf = new Uint8Array(64)
              return { text: FileName.decode(buf.subarray(0, yield* f.read(buf, 0))), mode: (yield* f.stat).mode }
            })
          )
        assert.deepStrictEqual(yield* read(h, cafe), { text: "latin-1 name", mode: 0o640 })
        assert.deepStrictEqual(yield* read(oddDir, cafe), { text: "below an odd directory", mode: 0o640 })
        assert.deepStrictEqual(yield* dirs.readLink(h, new Uint8Array([0x6c, 0xfe])), target)
        // A FileSystem (Node's, and the simulated one) cannot name these to remove them: removed by handle.
        yield* dirs.unlink(oddDir, cafe)
        yield* dirs.unlink(h, odd, { directory: true })
        yield* dirs.unlink(h, cafe)
        yield* dirs.unlink(h, new Uint8Array([0x6c, 0xfe]))
      }).pipe(onHost)
    )

    /** Holds the snapshot's lock as another process would, for the rest of the scope. */
    const holdLock = (s: { readonly box: string }) =>
      Effect.gen(function* () {
        const dirs = yield* Directory.Directories
        const parent = yield* dirs.openRoot(`${s.box}/snaps`)
        const name = FileName.encode("s.lock")
        const file = yield* dirs
          .openFile(parent, name, { mode: "create", permissions: 0o600 })
          .pipe(Effect.catchTag("DirectoryError", () => dirs.openFile(parent, name, { mode: "read" })))
        assert.isTrue(yield* file.tryLock)
      })

    it.live("a second process waits for the lock, and after the timeout fails Busy naming the holder", () =>
      Effect.gen(function* () {
        const dirs = yield* Directory.Directories
        const t = yield* takenAndMutated
        const holder = yield* Effect.forkChild(Effect.scoped(Effect.andThen(holdLock(t), Effect.sleep("300 millis"))))
        yield* Effect.sleep("20 millis")
        const busy = yield* Effect.flip(Snapshot.recover({ dir: t.dir, hostRoot: t.root, lockTimeout: "50 millis" }))
        assert.strictEqual(busy._tag === "SnapshotError" ? busy.reason : busy._tag, "Busy")
        assert.strictEqual(busy._tag === "SnapshotError" ? busy.pid : -1, (yield* dirs.credentials).pid)
        assert.deepStrictEqual(yield* treeOf(t.root, "/cfg"), t.mutated)
        // Waited for, within the timeout, it runs once the holder is done.
        assert.isTrue(yield* Snapshot.recover({ dir: t.dir, hostRoot: t.root, lockTimeout: "10 seconds" }))
        yield* Fiber.join(holder)
        yield* assertRolledBack(t.root, t.original, t.mutated)
        const take = yield* Effect.flip(
          Effect.scoped(
            Effect.andThen(
              holdLock(t),
              Snapshot.takeOf({ dir: t.dir, hostRoot: t.root, paths: SnapshotPaths, lockTimeout: 0 })
            )
          )
        )
        assert.strictEqual(take._tag === "SnapshotError" ? take.reason : take._tag, "Busy")
        assert.deepStrictEqual(yield* leftIn(t.box), [])
      }).pipe(onHost)
    )

    const unsafeCases: ReadonlyArray<{
      readonly name: string
      readonly tamper: (dir: string) => Effect.Effect<void, PlatformError.PlatformError, FileSystem.FileSystem>
    }> = [
      {
        name: "the manifest a link to a copy of itself",
        tamper: (dir) =>
          Effect.gen(function* () {
            const fs = yield* FileSystem.FileSystem
            yield* fs.rename(`${dir}/${Snapshot.ManifestName}`, `${dir}/../m.json`)
            yield* fs.symlink("../m.json", `${dir}/${Snapshot.ManifestName}`)
          })
      },
      {
        name: "the manifest writable by its group",
        tamper: (dir) =>
          Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) =>
            fs.chmod(`${dir}/${Snapshot.ManifestName}`, 0o660)
          )
      },
      {
        name: "the data owned by another user",
        tamper: (dir) =>
          Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) =>
            fs.chown(`${dir}/${Snapshot.DataName}`, 1000, 1000)
          )
      },
      {
        name: "the snapshot directory writable by others",
        tamper: (dir) => Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) => fs.chmod(dir, 0o777))
      },
      {
        name: "the data a directory",
        tamper: (dir) =>
          Effect.gen(function* () {
            const fs = yield* FileSystem.FileSystem
            yield* fs.remove(`${dir}/${Snapshot.DataName}`)
            yield* fs.makeDirectory(`${dir}/${Snapshot.DataName}`, { mode: 0o700 })
          })
      }
    ]

    for (const c of unsafeCases) {
      it.effect(`hostile snapshot files: ${c.name} is Unsafe and nothing is written`, () =>
        Effect.gen(function* () {
          const t = yield* takenAndMutated
          yield* c.tamper(t.dir)
          const snapshotBytes = yield* treeOf(t.box, "/snaps")
          const e = yield* Effect.flip(Snapshot.recover({ dir: t.dir, hostRoot: t.root }))
          assert.strictEqual(e._tag === "SnapshotError" ? e.reason : e._tag, "Unsafe", e.message)
          assert.deepStrictEqual(yield* treeOf(t.root, "/cfg"), t.mutated)
          assert.deepStrictEqual(yield* treeOf(t.box, "/snaps"), snapshotBytes)
        }).pipe(onHost)
      )
    }

    it.effect(
      "a manifest of 40,000 paths is checked in time (O(n log n)); one listing a path below another is refused as fast",
      () =>
        Effect.gen(function* () {
          const t = yield* takenAndMutated
          const many = Array.from({ length: 40_000 }, (_, i) => `/cfg/n${i % 200}/p${i}`)
          yield* editManifestAndData(t.dir, (m) => {
            m.paths.push(...many)
            m.entries.push(...many.map((path) => ({ type: "Absent" as const, path })))
          })
          const opened = yield* Snapshot.open({ dir: t.dir, hostRoot: t.root })
          assert.strictEqual(opened.paths.length, SnapshotPaths.length + 40_000)
          yield* editManifestAndData(t.dir, (m) => {
            m.paths.push("/cfg/n1/p1/below")
            m.entries.push({ type: "Absent", path: "/cfg/n1/p1/below" })
          })
          const e = yield* Effect.flip(Snapshot.recover({ dir: t.dir, hostRoot: t.root }))
          assert.strictEqual(e._tag === "SnapshotError" ? e.reason : e._tag, "InvalidManifest")
          assert.include(e.message, "below another listed path")
          assert.deepStrictEqual(yield* treeOf(t.root, "/cfg"), t.mutated)
        }).pipe(onHost),
      // A bound on a hang, not a speed measurement: the pairwise check this replaces took minutes.
      60_000
    )

    it.effect("a snapshot directory reached through a link into a recorded path is refused, by take and recover", () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const t = yield* takenAndMutated
        yield* fs.symlink(`${t.root}/cfg/a`, `${t.box}/into-recorded`)
        const before = yield* treeOf(t.root, "/")
        const taken = yield* Effect.flip(
          Snapshot.takeOf({ dir: `${t.box}/into-recorded/s`, hostRoot: t.root, paths: SnapshotPaths })
        )
        assert.strictEqual(taken.reason, "InvalidPath", taken.message)
        assert.deepStrictEqual(
          Object.keys(yield* treeOf(t.root, "/")).filter((k) => k.includes(".tmp-")),
          [],
          "no staging directory left in the recorded path"
        )
        // The snapshot moved into the recorded directory, reached through the link.
        yield* fs.rename(t.dir, `${t.root}/cfg/a/s`)
        const withSnapshot = yield* treeOf(t.root, "/")
        const e = yield* Effect.flip(Snapshot.recover({ dir: `${t.box}/into-recorded/s`, hostRoot: t.root }))
        assert.strictEqual(e._tag === "SnapshotError" ? e.reason : e._tag, "InvalidPath", e.message)
        assert.deepStrictEqual(yield* treeOf(t.root, "/"), withSnapshot)
        assert.notDeepEqual(withSnapshot, before)
      }).pipe(onHost)
    )

    it.effect("a recorded path that now leads into the snapshot directory is refused before anything is written", () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const s = yield* sandbox
        yield* build(s.root, fixed)
        yield* fs.makeDirectory(`${s.root}/var`)
        const dir = `${s.root}/var/snap`
        yield* Snapshot.takeOf({ dir, hostRoot: s.root, paths: SnapshotPaths })
        // /cfg becomes a link to the snapshot (resolved below the root): /cfg/a would be written into it.
        yield* fs.rename(`${s.root}/cfg`, `${s.root}/cfg-moved`)
        yield* fs.symlink("/var/snap", `${s.root}/cfg`)
        const before = yield* treeOf(s.root, "/")
        const e = yield* Effect.flip(Snapshot.recover({ dir, hostRoot: s.root }))
        assert.strictEqual(e._tag === "SnapshotError" ? e.reason : e._tag, "InvalidPath", e.message)
        assert.include(e.message, "inside the snapshot directory")
        assert.deepStrictEqual(yield* treeOf(s.root, "/"), before)
      }).pipe(onHost)
    )

    if (options.realRootIsSafe === true) {
      for (const realRoot of ["/", ""]) {
        it.effect(`on the real root (${JSON.stringify(realRoot)}) restore and recover end with daemon-reload`, () =>
          Effect.gen(function* () {
            const { systemd, calls, failing } = yield* recordingSystemd
            const fs = yield* FileSystem.FileSystem
            yield* build("", fixed)
            const original = yield* treeOf("/", "/cfg")
            const dir = "/var/lib/hostnode/snapshots/upgrade"
            const snapshot = yield* Snapshot.takeOf({ dir, hostRoot: realRoot, paths: SnapshotPaths })
            yield* mutate("", everyKind)
            const mutated = yield* treeOf("/", "/cfg")
            yield* Ref.set(failing, true)
            const e = yield* Effect.flip(snapshot.restore.pipe(Effect.provideService(Systemd.Systemd, systemd)))
            assert.strictEqual(e._tag, "SystemdError")
            assert.isFalse(yield* snapshot.restored)
            yield* assertRolledBack("", original, mutated)
            assert.isTrue(yield* fs.exists(dir))
            yield* Ref.set(failing, false)
            yield* snapshot.restore.pipe(Effect.provideService(Systemd.Systemd, systemd))
            assert.deepStrictEqual(yield* Ref.get(calls), ["daemon-reload"])
            assert.isTrue(yield* snapshot.restored)
            assert.isFalse(yield* fs.exists(dir), "a restore that succeeded consumed the snapshot")
            yield* Snapshot.takeOf({ dir, hostRoot: realRoot, paths: SnapshotPaths })
            yield* mutate("", everyKind)
            assert.isTrue(
              yield* Snapshot.recover({ dir, hostRoot: realRoot }).pipe(Effect.provideService(Systemd.Systemd, systemd))
            )
            assert.deepStrictEqual(yield* Ref.get(calls), ["daemon-reload", "daemon-reload"])
            yield* assertRolledBack("", original, mutated)
            assert.isFalse(yield* fs.exists(dir))
          }).pipe(onHost)
        )
      }
    }

    it.effect("below any other root there is no daemon-reload", () =>
      Effect.gen(function* () {
        const { systemd, calls } = yield* recordingSystemd
        const t = yield* takenAndMutated
        yield* t.snapshot.restore.pipe(Effect.provideService(Systemd.Systemd, systemd))
        yield* Snapshot.takeOf({ dir: t.dir, hostRoot: t.root, paths: SnapshotPaths })
        yield* mutate(t.root, everyKind)
        assert.isTrue(
          yield* Snapshot.recover({ dir: t.dir, hostRoot: t.root }).pipe(
            Effect.provideService(Systemd.Systemd, systemd)
          )
        )
        yield* assertRolledBack(t.root, t.original, t.mutated)
        assert.deepStrictEqual(yield* Ref.get(calls), [])
      }).pipe(onHost)
    )
  })
}

type MutableManifest = {
  -readonly [K in keyof Snapshot.Manifest]: K extends "entries" | "paths"
    ? Array<Snapshot.Manifest[K][number]>
    : Snapshot.Manifest[K]
}

/** Rewrites a snapshot's manifest and data in place, as someone tampering with it would. */
const editManifestAndData = (dir: string, edit: (manifest: MutableManifest, data: Uint8Array) => void) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const manifest = JSON.parse(yield* fs.readFileString(`${dir}/${Snapshot.ManifestName}`)) as MutableManifest
    const data = yield* fs.readFile(`${dir}/${Snapshot.DataName}`)
    edit(manifest, data)
    yield* fs.writeFileString(`${dir}/${Snapshot.ManifestName}`, JSON.stringify(manifest))
    yield* fs.writeFile(`${dir}/${Snapshot.DataName}`, data)
  })
