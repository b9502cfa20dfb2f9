/**
 * Dry runs as layers (the CLI's `--dry-run`, and any program's): each wraps a
 * real service already in context (FileSystem, Mounter, ChildProcessSpawner,
 * Systemd) so that reads go to the host while every write, removal, unmount,
 * command and unit job is appended to the shared {@link DryRunPlan} instead of
 * being performed. The operations of `@hostnode/core` (and an agent's own
 * program built on them) know nothing about it: they run as they would, on
 * services that only pretend to change the host. An agent wraps its program
 * in {@link layer} over its real layers, provides {@link DryRunPlan.layer},
 * and reads the plan with {@link steps}. (The module moved here from
 * `@hostnode/cli` in 0.3.0; the CLI re-exports it.)
 *
 * So that an operation takes the same decisions as a real run, what it
 * pretended to do is visible to what it reads next: the file system is an
 * overlay (a removed path is gone, a written file reads back, a renamed
 * directory appears at its new name), and an unmount hides that mount and
 * everything below it from the mount table the process reads
 * (`/proc/<pid>/mountinfo`), as a lazy detach would. The host underneath is
 * never changed.
 *
 * Boundary: the overlay takes paths literally. The operations resolve
 * symbolic links with `HostPath` before they touch a path, so they hand it
 * resolved paths; a path that reaches a recorded change only through a
 * symbolic link on the host does not see that change. Commands other than
 * read-only queries are recorded and "exit 0" with no output.
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

export {
  /**
   * Whether a command only reads, so a dry run may run it for real: the
   * queries the operations make before they decide what to change.
   *
   * @since 0.1.0
   */
  isReadOnly,
  /**
   * ChildProcessSpawner for a dry run. `ip` and `iptables` run against a
   * simulated copy of the host's network, seeded on first use, so an operation
   * that adds a link and then inspects it sees the link; their changes are
   * recorded. Other read-only commands ({@link isReadOnly}) run for real; any
   * other command is recorded and "exits 0" with no output.
   *
   * @since 0.1.0
   */
  layerSpawner,
  /**
   * Systemd whose queries are real and whose jobs and reloads are recorded.
   * Built with `Systemd.make`, so a bad unit name fails exactly as it would in
   * a real run.
   *
   * @since 0.1.0
   */
  layerSystemd
} from "./internal/dryrun/commands.ts"
export type {
  /**
   * Which mount table a dry run reads to decide what is mounted where, and
   * where that table's `/` is in this process (default: this process's own,
   * `/proc/self/mountinfo` and `/`).
   *
   * @since 0.2.0
   */
  TableOptions
} from "./internal/dryrun/directories.ts"
export {
  /**
   * {@link layerDirectoriesWith} for this process's own mount table.
   *
   * @since 0.2.0
   */
  layerDirectories,
  /**
   * `Directory.Directories` over the dry run's file system (the overlay), so
   * the operations' handle walks see what the dry run pretended to do. A
   * handle here is a path: nothing is changed in a dry run, so there is no
   * race to close, and a path-based view of the overlay is what a run that
   * changes nothing can offer. Mount ids come from the overlay's mount table
   * (the deepest mount containing a path, as its `/proc/self/mountinfo`
   * shows it), names through the FileSystem's strings (a name that is not
   * UTF-8 is seen as Node decodes it).
   *
   * @since 0.2.0
   */
  layerDirectoriesWith
} from "./internal/dryrun/directories.ts"
export {
  /**
   * FileSystem whose reads see the host plus what the dry run pretended to do,
   * and whose changes are recorded in order and kept in an in-memory overlay.
   *
   * Built with `FileSystem.make` from primitives over the overlay, so that the
   * methods Effect derives from them (`exists`, `readFileString`, `stream`,
   * `sink`, `writeFileString`, `glob`) see the overlay too; nothing of the real
   * service is passed through unwrapped. Its failures are Node's layer's (the
   * same reason for each errno, the same syscall names), and the shared
   * FileSystem conformance suite runs over it. Boundaries: `utimes` of a
   * host path is only recorded (the overlay keeps times of its own files),
   * a hard link to a host file copies it into the overlay, and `watch` sees
   * the host's events only.
   *
   * @since 0.1.0
   */
  layerFileSystem
} from "./internal/dryrun/fileSystem.ts"
export {
  /**
   * {@link layerMounterWith} for this process's own mount table.
   *
   * @since 0.1.0
   */
  layerMounter,
  /**
   * Mounter that records each unmount and hides it from the mount table the
   * dry run's file system serves: the newest mount at the target goes, with
   * every mount below it (what a lazy detach does). Each target is verified
   * first as the real mounters verify it, on the host's paths and the table as
   * the dry run left it: outside the root handle is `OutsideRoot`, a missing
   * component `Gone`, a symbolic link on the way `LinkInPath`, a path that
   * leads to another mount `Moved` (all `Unverified`, nothing recorded). Where
   * the table lists nothing at all, the target fails as umount2 would, with
   * EINVAL. A dry run cannot know that a mount is busy: a strict (not lazy)
   * unmount of a mount some process holds is `Unmounted` here and `EBUSY` for
   * real.
   *
   * @since 0.1.0
   */
  layerMounterWith
} from "./internal/dryrun/mounter.ts"
export {
  /**
   * The plan a dry run builds, shared by every wrapping layer so that the steps
   * of all services come out in the order they were asked for. It also holds
   * the mounts the dry run pretended to detach, which the file system layer
   * hides from the mount table.
   *
   * @since 0.1.0
   */
  DryRunPlan,
  /**
   * One recorded step: which service was asked, what for, on which target.
   *
   * @since 0.1.0
   */
  PlanStep,
  /**
   * Renders one step for a person: `FileSystem remove /etc/cni/net.d/10-x.conf`.
   *
   * @since 0.1.0
   */
  renderStep,
  /**
   * The recorded steps so far, oldest first.
   *
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
  FileSystem.FileSystem | ChildProcessSpawner.ChildProcessSpawner | Systemd.Systemd | DryRunPlan
> =>
  Layer.mergeAll(
    Layer.provideMerge(layerDirectoriesWith(options), layerFileSystem),
    layerMounterWith(options),
    layerSpawner,
    layerSystemd
  )

/**
 * All four wrappers over the real services in context, sharing the
 * {@link DryRunPlan} in context ({@link layerWith} for this process's own
 * mount table: the real host, or a `--host-root` below it).
 *
 * @since 0.1.0
 */
export const layer = layerWith()
