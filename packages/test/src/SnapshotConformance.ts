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
 * are exported for the crash tests that need a particular host. The tests
 * themselves are in `internal/snapshot`, one part per concern (restore,
 * tampering, lifecycle, hostile names, files and processes, systemd), each
 * registered by {@link suite}.
 *
 * Safety: generated symlink targets are relative and never contain `..`, and
 * mutations never write through a link (they `lstat` first), so nothing a
 * test does can leave its sandbox even if the code under test were wrong.
 *
 * @since 0.1.0
 */
import { describe } from "@effect/vitest"
import type { Directory } from "@hostnode/core"
import type { FileSystem, Layer } from "effect"
import { makeSuite } from "./internal/snapshot/fixtures.ts"
import * as Hostile from "./internal/snapshot/hostile.ts"
import * as Lifecycle from "./internal/snapshot/lifecycle.ts"
import * as Restore from "./internal/snapshot/restore.ts"
import * as SystemdTests from "./internal/snapshot/systemd.ts"
import * as Tampering from "./internal/snapshot/tampering.ts"
import type * as Trees from "./internal/snapshot/trees.ts"

export {
  /**
   * `dirs` with `rename` failing (EACCES, changing nothing) while `failing` is true.
   *
   * @since 0.1.0
   */
  failingRenames,
  /**
   * The names beside the snapshot directory (since 0.4.0 every name: the lock is the directory's own, no file).
   *
   * @since 0.2.0
   */
  leftIn,
  /**
   * A `Systemd` whose every call is a defect: for restores below a root that is not the real one, which must not reload.
   *
   * @since 0.1.0
   */
  noSystemd,
  /**
   * A `Systemd` that records daemon reloads, and fails them while `failing` is true.
   *
   * @since 0.1.0
   */
  recordingSystemd
} from "./internal/snapshot/fixtures.ts"

export {
  /**
   * Asserts the tree below `<root>/cfg` is rolled back: the snapshot's paths as
   * in `original`, everything else (`/cfg` itself, `/cfg/d`) as in `mutated`.
   *
   * @since 0.1.0
   */
  assertRolledBack,
  /**
   * True when `path` is `ancestor` or below it.
   *
   * @since 0.1.0
   */
  atOrBelow,
  /**
   * Builds the generated tree below `<root>/cfg` (`/cfg` always exists); specs that conflict with earlier ones are skipped.
   *
   * @since 0.1.0
   */
  build,
  /**
   * True for the host paths a snapshot of {@link SnapshotPaths} records.
   *
   * @since 0.1.0
   */
  inSnapshot,
  /**
   * One change after the take: edit, delete, create, chmod, chown, or replace a path by a directory, a link or a file.
   *
   * @since 0.1.0
   */
  MutationSpec,
  /**
   * Random mutation sequences.
   *
   * @since 0.1.0
   */
  Mutations,
  /**
   * Applies `mutations` below `<root>/cfg`, never writing through a link.
   *
   * @since 0.1.0
   */
  mutate,
  /**
   * One path of a generated tree: a file, an (often empty) directory or a symlink, with mode and owner.
   *
   * @since 0.1.0
   */
  NodeSpec,
  /**
   * The entries of `tree` whose key satisfies `keep`.
   *
   * @since 0.1.0
   */
  pick,
  /**
   * The listed snapshot paths of the generated trees; `/cfg/d` and `/cfg` itself lie outside the snapshot.
   *
   * @since 0.1.0
   */
  SnapshotPaths,
  /**
   * Random trees below `/cfg`.
   *
   * @since 0.1.0
   */
  Trees,
  /**
   * The tree at host path `path` below `root`, keyed by host path, without
   * following any link. A missing path gives an empty record.
   *
   * @since 0.1.0
   */
  treeOf
} from "./internal/snapshot/trees.ts"

/**
 * What a path holds, for comparing trees: permission bits, owner, bytes (base64) and link targets.
 *
 * @since 0.1.0
 */
export type Node = Trees.Node

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
    const parts = makeSuite(host, options)
    Restore.register(parts)
    Tampering.register(parts)
    Lifecycle.register(parts)
    Hostile.register(parts)
    SystemdTests.register(parts)
  })
}
