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
   * `Directory.Directories` for a dry run: the real `Directories` in context
   * seen through the dry run's file system (the overlay), so the operations'
   * handle walks see what the dry run pretended to do. Since 0.4.0 what the
   * host holds is read through the real layer (a handle carries a real handle
   * on the same node while the overlay leaves it alone): its calls keep their
   * deadlines, stats are the kernel's to the nanosecond (a restore's dry run
   * finds unchanged files unchanged), mount ids are `statx`'s, names are
   * bytes, and a snapshot's lock is the real lock on its directory. What
   * the dry run removed, wrote, renamed or uncovered (a detached mount's
   * mount point) is read from the overlay, with mount ids from the dry run's
   * mount table. Every change goes through the dry run's file system, which
   * records it. Requires that file system and the real `Directories`.
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
   * dry run's file system serves: the mount at the target goes, with every
   * mount below it (what a lazy detach does) and the copies the kernel
   * detaches by propagation (on the peers and slaves of its parent, named by
   * `shared:N` and `master:N` in the table: `Programs.propagatedUnmounts`),
   * each recorded as `detach by propagation (mount N, a copy of mount M)` on
   * its mount point. Each target is verified first with the very
   * verification the real mounters run (`Mounter.verify`, since 0.4.0; a
   * mount on a regular file is verified as the kernel reaches it), through
   * the `Directories` in context (the dry run's, so what the dry run
   * detached is gone): outside the root handle is `OutsideRoot`, a missing
   * component `Gone`, a symbolic link or a non-directory on the way
   * `LinkInPath`, a path that leads to another mount `Moved` (all
   * `Unverified`, nothing recorded). A dry run cannot know that a mount is
   * busy: a strict (not lazy) unmount of a mount some process holds is
   * `Unmounted` here and `EBUSY` for real. Requires the dry run's file
   * system and `Directories` (as {@link layerWith} composes them).
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
 * @since 0.1.0
 */
export const layer = layerWith()
