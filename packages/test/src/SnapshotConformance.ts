/**
 * The conformance suite of `Snapshot` (take, restore, discard, recover,
 * scoped, guarded) on any `FileSystem` with its `Directory.Directories`: the
 * real ones in a scoped temporary directory and `MemoryHost` both pass it.
 * Every test runs on a fresh host in its own sandbox: the host root is
 * `<sandbox>/root`, the snapshot goes to `<sandbox>/snaps/s`, and
 * `<sandbox>/outside` stands for what lies beyond the host root.
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

/**
 * Options of {@link suite}.
 *
 * @category conformance
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
 * @example
 * ```ts
 * import { MemoryHost } from "@hostnode/test"
 * import { SnapshotConformance } from "@hostnode/test/conformance"
 *
 * // Called at the top of a test file: the simulated host passes the suite, the tests on its root `/` included.
 * export const register = () => SnapshotConformance.suite("MemoryHost", MemoryHost.layer(), { realRootIsSafe: true })
 * ```
 *
 * @category conformance
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
