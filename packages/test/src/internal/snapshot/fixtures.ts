/**
 * What every part of the Snapshot conformance suite shares: the systemd and
 * directory doubles, a sandbox on a fresh host, the fixed tree and the
 * mutations of every kind, a taken-then-mutated snapshot, a manifest
 * tamperer, and the {@link Suite} context each part registers its tests with.
 *
 * Internal to `SnapshotConformance`, which re-exports the doubles.
 *
 * @since 0.3.0
 */
import { Directory, type HostPath, Snapshot, Systemd } from "@hostnode/core"
import * as Programs from "@hostnode/core/Programs"
import { Effect, FileSystem, type Layer, type PlatformError, Ref, type Scope } from "effect"
import * as RefusingSystemd from "../../RefusingSystemd.ts"
import { rootAt } from "../rootAt.ts"
import * as Format from "./format.ts"
import { build, type MutationSpec, mutate, type Node, type NodeSpec, SnapshotPaths, treeOf } from "./trees.ts"

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
              reason: new Systemd.Failure({ _tag: "Other", exitCode: 1, stderr: "injected failure" }),
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
export const failingRenames = (dirs: Directory.Directories, failing: Ref.Ref<boolean>): Directory.Directories =>
  // Rebuilt from the primitives, so the batches made of renames (`renameAll`) fail as `rename` does.
  Directory.make({
    ...dirs,
    renameAll: undefined,
    rename: (from, fromName, to, toName, options) =>
      Effect.flatMap(Ref.get(failing), (f) =>
        f
          ? Effect.fail(
              new Directory.DirectoryError({
                reason: new Directory.SystemError({
                  _tag: "PermissionDenied",
                  errno: "EACCES",
                  detail: "injected failure"
                }),
                operation: "renameat2",
                path: Programs.childPath(from.path, fromName)
              })
            )
          : dirs.rename(from, fromName, to, toName, options)
      )
  })

/**
 * The names beside the snapshot directory (every name: the lock is the directory's own, no file).
 *
 * @since 0.2.0
 */
export const leftIn = (box: string) =>
  Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) =>
    Effect.map(fs.readDirectory(`${box}/snaps`), (names) => [...names].sort())
  )

/** A sandbox on a fresh host: `root` (the host root), `dir` (the snapshot), `outside` (beyond the root). */
export const sandbox = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const box = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-snapshot-" })
  yield* fs.makeDirectory(`${box}/root`)
  yield* fs.makeDirectory(`${box}/snaps`)
  yield* fs.makeDirectory(`${box}/outside`)
  yield* fs.writeFileString(`${box}/outside/victim`, "must stay")
  return { box, root: `${box}/root`, dir: `${box}/snaps/s`, outside: `${box}/outside` }
})

/** A small fixed tree for the example-based tests: files, a link, an empty dir, odd modes and owners. */
export const fixed: ReadonlyArray<NodeSpec> = [
  { top: "a", rest: ["a"], kind: "file", content: "version = 2\n", mode: 0o644, owner: 0, target: "a" },
  { top: "a", rest: ["b"], kind: "file", content: "hello\n", mode: 0o4755, owner: 1000, target: "a" },
  { top: "a", rest: ["c", "a"], kind: "dir", content: "", mode: 0o2750, owner: 1000, target: "a" },
  { top: "b", rest: [], kind: "link", content: "", mode: 0o644, owner: 0, target: "b/c" },
  { top: "c", rest: [], kind: "file", content: "x", mode: 0o600, owner: 0, target: "a" },
  { top: "d", rest: ["a"], kind: "file", content: "x", mode: 0o644, owner: 0, target: "a" }
]

/** Mutations touching every listed path and the outside one. */
export const everyKind: ReadonlyArray<MutationSpec> = [
  { top: "a", rest: ["a"], op: "edit", content: "x", mode: 0o644, owner: 0, target: "a" },
  { top: "a", rest: ["b"], op: "chmod", content: "x", mode: 0o600, owner: 0, target: "a" },
  { top: "a", rest: ["c", "b"], op: "create", content: "x", mode: 0o600, owner: 0, target: "a" },
  { top: "a", rest: ["c", "a"], op: "toFile", content: "x", mode: 0o600, owner: 0, target: "a" },
  { top: "b", rest: [], op: "toDir", content: "x", mode: 0o600, owner: 0, target: "a" },
  { top: "c", rest: [], op: "toLink", content: "x", mode: 0o600, owner: 0, target: "missing" },
  { top: "d", rest: ["a"], op: "edit", content: "x", mode: 0o600, owner: 0, target: "a" }
]

/** A sandbox with the fixed tree taken, then mutated: the trees before and after, and the snapshot's handle. */
export interface TakenAndMutated {
  readonly box: string
  readonly root: string
  readonly dir: string
  readonly outside: string
  readonly original: Record<string, Node>
  readonly snapshot: Snapshot.Snapshot
  readonly mutated: Record<string, Node>
}

/** A taken snapshot of the fixed tree, then every kind of mutation: the state a rollback starts from. */
export const takenAndMutated: Effect.Effect<
  TakenAndMutated,
  Snapshot.SnapshotError | HostPath.HostPathError | PlatformError.PlatformError,
  FileSystem.FileSystem | Directory.Directories | Scope.Scope
> = Effect.gen(function* () {
  const s = yield* sandbox
  yield* build(s.root, fixed)
  const original = yield* treeOf(s.root, "/cfg")
  const snapshot = yield* Snapshot.takeOf({ dir: s.dir, hostRoot: yield* rootAt(s.root), paths: SnapshotPaths })
  yield* mutate(s.root, everyKind)
  const mutated = yield* treeOf(s.root, "/cfg")
  return { ...s, original, snapshot, mutated }
})

type MutableManifest = {
  -readonly [K in keyof Format.Manifest]: K extends "entries" | "paths"
    ? Array<Format.Manifest[K][number]>
    : Format.Manifest[K]
}

/** Rewrites a snapshot's manifest and data in place, as someone tampering with it would. */
export const editManifestAndData = (dir: string, edit: (manifest: MutableManifest, data: Uint8Array) => void) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const manifest = JSON.parse(yield* fs.readFileString(`${dir}/${Format.ManifestName}`)) as MutableManifest
    const data = yield* fs.readFile(`${dir}/${Format.DataName}`)
    edit(manifest, data)
    yield* fs.writeFileString(`${dir}/${Format.ManifestName}`, JSON.stringify(manifest))
    yield* fs.writeFile(`${dir}/${Format.DataName}`, data)
  })

/** The services a test of the suite runs with: the host's, the systemd double's and a scope. */
export type OnHost = FileSystem.FileSystem | Directory.Directories | Systemd.Systemd | Scope.Scope

/** What each part of the suite registers its tests with. */
export interface Suite {
  /** Cases of each property. */
  readonly runs: number
  /** True when host root `/` is not the machine's (a simulated host). */
  readonly realRootIsSafe: boolean
  /** Runs a test on a fresh host (built from the layer for each test), with {@link noSystemd}, in a scope. */
  readonly onHost: <A, E>(effect: Effect.Effect<A, E, OnHost>) => Effect.Effect<A, E>
}

/** The context of a suite on `host`. */
export const makeSuite = (
  host: Layer.Layer<FileSystem.FileSystem | Directory.Directories>,
  options: { readonly runs?: number | undefined; readonly realRootIsSafe?: boolean | undefined }
): Suite => ({
  runs: options.runs ?? 100,
  realRootIsSafe: options.realRootIsSafe === true,
  onHost: (effect) =>
    effect.pipe(Effect.scoped, Effect.provideService(Systemd.Systemd, noSystemd), Effect.provide(host))
})
