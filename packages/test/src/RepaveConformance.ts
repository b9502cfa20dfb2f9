/**
 * The conformance suites of the repave operations (`Repave.resetCniState`,
 * `Repave.resetKubeletIdentity`, `Repave.teardownKubeletDir`) and of
 * `SafeRemove` under them, on a temporary host root below a `MountFixture`
 * sandbox: each way a removal could delete where it must not (a bind mount, a
 * planted symlink, a mount the table shows at another path), with the whole
 * tree hashed before and after. The `FileSystem` under test is fenced to the
 * sandbox (`FencedFileSystem`), so a wrong implementation cannot delete the
 * machine's files. What a simulated host needs to pass them:
 * docs/design/simulated-host.md.
 *
 * @since 0.1.0
 */
import { layer } from "@effect/vitest"
import type { Directory, Mounter } from "@hostnode/core"
import type { FileSystem, Layer } from "effect"
import { mountTests } from "./internal/repave/mounts.ts"
import * as Properties from "./internal/repave/properties.ts"
import { resetTests } from "./internal/repave/resets.ts"
import type { MountFixture } from "./MountFixture.ts"

/**
 * The reset suite: CNI state and kubelet identity on trees without mounts,
 * the symlink attacks, and each auth mode. `hostLayer` provides the
 * `FileSystem` and a `MountFixture` (only `sandbox` and `mountInfo` are used).
 *
 * @category conformance
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
 * @category conformance
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
 * @category conformance
 * @since 0.1.0
 */
export const properties = (
  name: string,
  hostLayer: Layer.Layer<Mounter.Mounter | MountFixture | FileSystem.FileSystem | Directory.Directories>,
  options?: { readonly runs?: number | undefined }
): void => layer(hostLayer)(`repave properties: ${name}`, (it) => Properties.propertyTests(it, options))
