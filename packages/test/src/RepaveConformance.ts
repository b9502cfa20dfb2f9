/**
 * The conformance suites of the repave operations (`Repave.resetCniState`,
 * `Repave.resetKubeletIdentity`, `Repave.teardownKubeletDir`) and of
 * `SafeRemove` under them, on a temporary host root below a `MountFixture`
 * sandbox: the ways a removal could delete where it must not (through a bind
 * mount, through a symlink planted in the tree, through a mount the table
 * shows at another path), each with the whole tree hashed before and after.
 *
 * Every operation under test runs with the `FileSystem` fenced to the sandbox
 * (`FencedFileSystem`): a symlink to `/` planted in the tree cannot make a
 * wrong implementation delete the machine's own files.
 *
 * Three suites, by what the host must provide:
 * - {@link resets}: `FileSystem` and a `MountFixture` whose `sandbox` and
 *   `mountInfo` work (no mounts are made);
 * - {@link mounts}: also `Mounter` and real `tmpfs`/`bind` in the fixture;
 * - {@link properties}: the same, for random trees, mount layouts and
 *   refused unmounts.
 *
 * What a simulated host needs for `mounts` and `properties`: `lstat`/`stat`
 * whose `dev` differs per mounted file system (a tmpfs its own, a bind mount
 * its source's, with the same inode at both paths) and whose `ino` is stable;
 * path walks, `readDirectory` and `realPath` that cross mounts; Node's `rm`
 * semantics (EISDIR for a directory without `recursive`, EBUSY for a mount
 * point); a served table at `MountFixture.mountInfo` whose bind entries carry
 * the source's path within its file system as `root` and whose `major:minor`
 * is the same for all mounts of one file system (SafeRemove never compares it
 * with `stat`'s `dev`); a `Mounter` whose lazy unmount removes the top mount
 * of a path and takes the mounts below it along; and a `MountFixture` whose
 * `sandbox` is a fresh file system of its own, with `tmpfs` and `bind`.
 *
 * The suites' tests are in `internal/repave/` (trees, fixtures, and one part
 * per suite); this module is what callers use: the three suites and the tree
 * and layout helpers other suites share.
 *
 * @since 0.1.0
 */
import { layer } from "@effect/vitest"
import type { Directory, Mounter } from "@hostnode/core"
import type { FileSystem, Layer } from "effect"
import * as Fixtures from "./internal/repave/fixtures.ts"
import { mountTests } from "./internal/repave/mounts.ts"
import * as Properties from "./internal/repave/properties.ts"
import { resetTests } from "./internal/repave/resets.ts"
import * as Trees from "./internal/repave/trees.ts"
import type { MountFixture } from "./MountFixture.ts"

// ---------------------------------------------------------------------------
// Trees: planting, hashing, comparing
// ---------------------------------------------------------------------------

/**
 * What to plant at a path: file contents, a symlink, or an empty directory.
 *
 * @since 0.1.0
 */
export type Plant = Trees.Plant

/**
 * Plants `tree` (paths relative to `base`) below `base`, parents created as needed.
 *
 * @since 0.1.0
 */
export const plant = Trees.plant

/**
 * A tree as a flat record, relative path to a description: `d <mode>` for a
 * directory, `f <mode> <sha256>` for a file, `l <target>` for a symlink (`""`
 * is `dir` itself). Symlinks are not followed; mounts are crossed, as any
 * path walk crosses them, so a file reachable through a mount is in it.
 *
 * @since 0.1.0
 */
export const snapshot = Trees.snapshot

/**
 * True when `path` is `prefix` or below it (relative or absolute paths, on component boundaries).
 *
 * @since 0.1.0
 */
export const isUnder = Trees.isUnder

/**
 * The keys on which two snapshots differ, except those `ignore` selects, as readable lines.
 *
 * @since 0.1.0
 */
export const differences = Trees.differences

// ---------------------------------------------------------------------------
// Shared fixtures
// ---------------------------------------------------------------------------

/**
 * A node start with each auth mode.
 *
 * @since 0.1.0
 */
export const nodeStarts = Fixtures.nodeStarts

/**
 * The paths of the kubelet layout built by {@link buildKubeletLayout}.
 *
 * @since 0.1.0
 */
export type KubeletLayout = Fixtures.KubeletLayout

/**
 * Below a fresh sandbox, a host root whose kubelet directory has four pods:
 * `a` with a tmpfs secret and a projected volume (atomic-writer symlinks
 * inside), `b` with a CSI bind mount whose source `csi-data/` lies outside the
 * kubelet directory and a tmpfs secret, `c` with no mounts but symlinks to
 * `/`, outside and upwards, `d` with a tmpfs inside a tmpfs.
 *
 * @since 0.1.0
 */
export const buildKubeletLayout = Fixtures.buildKubeletLayout

/**
 * A generated host: entries, mounts, and which well-known directories are symlinks instead.
 *
 * @since 0.1.0
 */
export const Plan = Properties.Plan

/**
 * A generated host.
 *
 * @since 0.1.0
 */
export type Plan = typeof Plan.Type

/**
 * Builds `plan` below a fresh sandbox; returns the paths and the mounts made.
 *
 * @since 0.1.0
 */
export const buildPlan = Properties.buildPlan

// ---------------------------------------------------------------------------
// The suites
// ---------------------------------------------------------------------------

/**
 * The reset suite: CNI state and kubelet identity on trees without mounts,
 * the symlink attacks, and each auth mode. `hostLayer` provides the
 * `FileSystem` and a `MountFixture` (only `sandbox` and `mountInfo` are used).
 *
 * @since 0.1.0
 */
export const resets = (
  name: string,
  hostLayer: Layer.Layer<MountFixture | FileSystem.FileSystem | Directory.Directories>
): void => layer(hostLayer)(`repave resets: ${name}`, resetTests)

/**
 * The mount suite: `teardownKubeletDir` and `SafeRemove` on real mounts.
 * `hostLayer` provides the `Mounter` under test, a `MountFixture` in the same
 * mount namespace, and the `FileSystem`.
 *
 * @since 0.1.0
 */
export const mounts = (
  name: string,
  hostLayer: Layer.Layer<Mounter.Mounter | MountFixture | FileSystem.FileSystem | Directory.Directories>
): void => layer(hostLayer)(`repave on mounts: ${name}`, mountTests)

/**
 * The property suite: for random trees, mount layouts (binds of outside data
 * and of other pods' directories included) and refused unmounts, after
 * `teardownKubeletDir`, `resetCniState` and `resetKubeletIdentity`:
 * - nothing outside the targets changed, the sentinel outside the root included;
 * - no file reachable through a mount that stayed changed, nor anything in a
 *   kept path (but the contents of mounts that were unmounted);
 * - everything left in the targets is a kept path or an ancestor of one, and
 *   each kept path is kept for a reason the final mount table confirms;
 * - the resets fail exactly when a mount is inside the CNI directories or the
 *   pki directory is a symlink;
 * - the mounts left are exactly the refused ones and those in the CNI directories;
 * - running it all again changes nothing (idempotent).
 *
 * @since 0.1.0
 */
export const properties = (
  name: string,
  hostLayer: Layer.Layer<Mounter.Mounter | MountFixture | FileSystem.FileSystem | Directory.Directories>,
  options?: { readonly runs?: number | undefined }
): void => layer(hostLayer)(`repave properties: ${name}`, (it) => Properties.propertyTests(it, options))
