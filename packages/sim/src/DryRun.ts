/**
 * Dry runs as layers (the CLI's `--dry-run`, and any program's): each wraps a
 * real service already in context (FileSystem, Directories, Mounter,
 * ChildProcessSpawner, Systemd) so that reads go to the host while every
 * change is appended to the shared {@link DryRunPlan} instead of being made.
 * What the run pretended to do is visible to what it reads next (an overlay:
 * a removed path is gone, a written file reads back, an unmounted mount leaves
 * the table); the host is never changed. Wrap a program in {@link layer} over
 * the real layers, provide `DryRunPlan.layer`, read the plan with {@link steps}.
 * Design and limits: docs/design/dry-run.md.
 *
 * @since 0.1.0
 */
import type { Directory, Mounter, Systemd } from "@hostnode/core"
import { type FileSystem, Layer } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import { layerSpawner, layerSystemd } from "./internal/dryrun/commands.ts"
import { layerDirectoriesWith, type TableOptions } from "./internal/dryrun/directories.ts"
import { layerFileSystem } from "./internal/dryrun/fileSystem.ts"
import { layerMounterWith } from "./internal/dryrun/mounter.ts"
import type { DryRunPlan } from "./internal/dryrun/plan.ts"

export type {
  /**
   * Which mount table a dry run reads to decide what is mounted where, and
   * where that table's `/` is in this process (default: this process's own,
   * `/proc/self/mountinfo` and `/`).
   *
   * @category models
   * @since 0.2.0
   */
  TableOptions
} from "./internal/dryrun/directories.ts"
export {
  /**
   * The plan a dry run builds, shared by every wrapping layer so that the steps
   * of all services come out in the order they were asked for. It also holds
   * the mounts the dry run pretended to detach, which the file system layer
   * hides from the mount table.
   *
   * @category services
   * @since 0.1.0
   */
  DryRunPlan,
  /**
   * One recorded step: which service was asked, what for, on which target.
   *
   * @category models
   * @since 0.1.0
   */
  PlanStep,
  /**
   * Renders one step for a person: `FileSystem remove /etc/cni/net.d/10-x.conf`.
   *
   * @example
   * ```ts
   * import { DryRun } from "@hostnode/sim"
   * import { Effect } from "effect"
   *
   * // The plan so far as the lines a person reads, one per change.
   * export const printed = Effect.map(DryRun.steps, (steps) => steps.map(DryRun.renderStep).join("\n"))
   * ```
   *
   * @category operations
   * @since 0.1.0
   */
  renderStep,
  /**
   * The recorded steps so far, oldest first.
   *
   * @example
   * ```ts
   * import { Repave } from "@hostnode/core"
   * import { DryRun, MemoryNode } from "@hostnode/sim"
   * import { Effect } from "effect"
   *
   * // What a CNI reset would change, without changing it: the dry run over the services in
   * // context (on a real host, `NodeHost.layer` from `@hostnode/node`), then its steps.
   * export const plan = Effect.gen(function* () {
   *   yield* Repave.resetCniState().pipe(Effect.provide(DryRun.layer))
   *   return yield* DryRun.steps
   * }).pipe(
   *   Effect.provide(DryRun.DryRunPlan.layer),
   *   Effect.provide(MemoryNode.layer({ files: { "/var/lib/cni/networks/cbr0/10.244.0.7": "c0ffee" } }))
   * )
   * ```
   *
   * @category operations
   * @since 0.1.0
   */
  steps
} from "./internal/dryrun/plan.ts"

/**
 * All four wrappers over the real services in context, sharing the
 * {@link DryRunPlan} in context, deciding mounts from the table `options`
 * names (a container's `/proc/<pid>/mountinfo`, whose `/` is
 * `/proc/<pid>/root` here: `--container`).
 *
 * @category layers
 * @since 0.1.0
 */
export const layerWith = (
  options?: TableOptions
): Layer.Layer<
  | FileSystem.FileSystem
  | Directory.Directories
  | Mounter.Mounter
  | ChildProcessSpawner.ChildProcessSpawner
  | Systemd.Systemd,
  never,
  FileSystem.FileSystem | Directory.Directories | ChildProcessSpawner.ChildProcessSpawner | Systemd.Systemd | DryRunPlan
> => {
  // The program's file system and directory handles, both over the one overlay; the mounter reads through them.
  const files = Layer.provideMerge(layerDirectoriesWith(options), layerFileSystem)
  return Layer.mergeAll(Layer.provideMerge(layerMounterWith(options), files), layerSpawner, layerSystemd)
}

/**
 * All four wrappers over the real services in context, sharing the
 * {@link DryRunPlan} in context ({@link layerWith} for this process's own
 * mount table: the real host, or a `--host-root` below it).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = layerWith()
