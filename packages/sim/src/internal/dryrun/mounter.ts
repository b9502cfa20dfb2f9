/**
 * The dry-run `Mounter`: verifies each target with the verification every
 * real mounter runs (`Layers.verifyTarget`, over the dry run's `Directories`:
 * one decision, one code path), then records the unmount and hides the
 * mount, with those below it and the copies the kernel would detach by
 * propagation (`Programs.propagatedUnmounts`, the same rule the real
 * unmount names them by), from the table the dry run's file system serves.
 * Boundary: the detached mounts and the uncovered mount points are kept in
 * the plan, where the file system reads them.
 */
import { Directory, Mounter, type MountInfo } from "@hostnode/core"
import * as Layers from "@hostnode/core/Layers"
import * as Programs from "@hostnode/core/Programs"
import { Lexical } from "@hostnode/core/Programs"
import { Effect, FileSystem, Layer } from "effect"
import type { TableOptions } from "./directories.ts"
import { deviceNumber, longestPrefix, mountIdentity, withoutDetached } from "./overlay.ts"
import { DryRunPlan } from "./plan.ts"

/**
 * Mounter that records each unmount and hides it from the mount table the
 * dry run's file system serves: the mount at the target goes, with every
 * mount below it (what a lazy detach does) and the copies the kernel
 * detaches by propagation (on the peers and slaves of its parent, named by
 * `shared:N` and `master:N` in the table: `Programs.propagatedUnmounts`),
 * each recorded as `detach by propagation (mount N, a copy of mount M)` on
 * its mount point. Each target is verified first with the very
 * verification the real mounters run (`Layers.verifyTarget`; a
 * mount on a regular file is verified as the kernel reaches it), through
 * the `Directories` in context (the dry run's, so what the dry run
 * detached is gone): outside the root handle is `OutsideRoot`, a missing
 * component `Gone`, a symbolic link or a non-directory on the way
 * `LinkInPath`, a path that leads to another mount `Moved` (all
 * `Unverified`, nothing recorded). A dry run cannot know that a mount is
 * busy: a strict (not lazy) unmount of a mount some process holds is
 * `Unmounted` here and `EBUSY` for real. Requires the dry run's file
 * system and `Directories` (as {@link layerWith} composes them).
 */
export const layerMounterWith = (
  options?: TableOptions
): Layer.Layer<Mounter.Mounter, never, FileSystem.FileSystem | Directory.Directories | DryRunPlan> =>
  Layer.effect(
    Mounter.Mounter,
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dirs = yield* Directory.Directories
      const plan = yield* DryRunPlan
      const tableRoot = options?.tableRoot ?? "/"
      // The table as the dry run left it (the dry run's file system hides what it detached; a plain one does not).
      const table = fs.readFileString(options?.mountInfo ?? Programs.DefaultMountInfo).pipe(
        Effect.flatMap((text) => Layers.parseMountInfo(text)),
        Effect.map((t) => withoutDetached(t, plan.detached, plan.detachedAs)),
        Effect.orElseSucceed((): ReadonlyArray<MountInfo.MountEntry> => [])
      )
      /** The full path (this process's) of a table path. */
      const fullOf = (tablePath: string) => Lexical.join(tableRoot, tablePath)
      /**
       * Records what shows at `tablePath` once the mounts `gone` left: the next
       * mount of a stack, else the directory (or file) of the mount it sits in,
       * which the dry run presents empty.
       */
      const uncover = (
        entries: ReadonlyArray<MountInfo.MountEntry>,
        gone: ReadonlySet<number>,
        tablePath: string,
        file: boolean
      ) => {
        const full = fullOf(tablePath)
        for (const point of plan.uncovered.keys())
          if (point !== full && Lexical.covers(full, point)) {
            plan.uncovered.delete(point)
            plan.uncoveredFiles.delete(point)
          }
        const covering = entries.filter((e) => Lexical.covers(Lexical.clean(e.mountPoint), tablePath))
        const shown = longestPrefix(covering)
        if (shown !== undefined && !gone.has(shown.id)) {
          // What the host shows there stays (a mount stacked on a departing copy, moved down onto its place).
          plan.uncovered.delete(full)
          plan.uncoveredFiles.delete(full)
          return
        }
        // The next mount of a stack, or the mount the point is in: the dry run cannot show what it holds there.
        const under = longestPrefix(covering.filter((e) => !gone.has(e.id)))
        if (under === undefined) return
        plan.uncovered.set(full, deviceNumber(under.major, under.minor))
        if (file) plan.uncoveredFiles.add(full)
        else plan.uncoveredFiles.delete(full)
      }
      return Mounter.Mounter.of({
        unmount: (root, targets, options) =>
          Effect.gen(function* () {
            // One read per call, kept up to date as the targets are detached.
            const entries = [...(yield* table)]
            return yield* Effect.forEach(
              targets,
              (t): Effect.Effect<Programs.UnmountResult> =>
                Effect.gen(function* () {
                  // The very verification a real mounter runs, through the dry run's view of the host.
                  const refused = yield* Layers.verifyTarget(root, t).pipe(
                    Effect.provideService(Directory.Directories, dirs)
                  )
                  if (refused !== undefined) return refused
                  const top = entries.find((e) => e.id === t.mountId)
                  // umount2 of a path inside a mount, not at its root, is EINVAL: the path is not a mount point.
                  if (top === undefined || Lexical.clean(top.mountPoint) !== Lexical.clean(t.tablePath)) {
                    return {
                      _tag: "Failed" as const,
                      target: t.path,
                      failure: { target: t.path, errno: "EINVAL", message: "Invalid argument" }
                    }
                  }
                  const file = yield* fs.lstat(t.path).pipe(
                    Effect.map((info) => info.type !== "Directory"),
                    Effect.orElseSucceed(() => false)
                  )
                  // A lazy detach takes the whole subtree; the kernel takes the copies on peers and slaves too.
                  const gone = new Set<number>([top.id])
                  if (options.lazy) {
                    for (let grew = true; grew; ) {
                      grew = false
                      for (const e of entries) {
                        if (!gone.has(e.id) && gone.has(e.parentId) && e.id !== e.parentId) {
                          gone.add(e.id)
                          grew = true
                        }
                      }
                    }
                  }
                  const copies = Programs.propagatedUnmounts(entries, [top.id])
                  for (const c of copies) gone.add(c.entry.id)
                  // What each was: the kernel gives a freed id to the next mount, which is another one.
                  for (const e of entries) {
                    if (!gone.has(e.id)) continue
                    plan.detached.add(e.id)
                    plan.detachedAs?.set(e.id, mountIdentity(e))
                  }
                  uncover(entries, gone, Lexical.clean(t.tablePath), file)
                  const left = entries.filter((e) => !gone.has(e.id))
                  yield* plan.record({
                    service: "Mounter",
                    action: options.lazy ? "unmount (lazy)" : "unmount",
                    target: t.path
                  })
                  for (const c of copies) {
                    const copyIsFile = yield* fs.lstat(fullOf(c.entry.mountPoint)).pipe(
                      Effect.map((info) => info.type !== "Directory"),
                      Effect.orElseSucceed(() => false)
                    )
                    uncover(entries, gone, Lexical.clean(c.entry.mountPoint), copyIsFile)
                    yield* plan.record({
                      service: "Mounter",
                      action: `detach by propagation (mount ${c.entry.id}, a copy of mount ${c.cognateOf})`,
                      target: fullOf(c.entry.mountPoint)
                    })
                  }
                  entries.splice(0, entries.length, ...left)
                  return { _tag: "Unmounted" as const, target: t.path }
                })
            )
          })
      })
    })
  )

/**
 * {@link layerMounterWith} for this process's own mount table.
 */
export const layerMounter: Layer.Layer<
  Mounter.Mounter,
  never,
  FileSystem.FileSystem | Directory.Directories | DryRunPlan
> = layerMounterWith()
