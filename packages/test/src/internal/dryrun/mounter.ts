/**
 * The dry-run `Mounter`: verifies each target as the real mounters do,
 * records the unmount and hides the mount (with those below it) from the
 * table the dry run's file system serves. Boundary: the detached mounts and
 * the uncovered mount points are kept in the plan, where the file system
 * reads them.
 */
import { Directory, FileName, HostPath, Mounter, MountInfo } from "@hostnode/core"
import { Effect, FileSystem, Layer, Option } from "effect"
import type { TableOptions } from "./directories.ts"
import { deviceNumber, longestPrefix, mountIdentity, withoutDetached } from "./overlay.ts"
import { DryRunPlan } from "./plan.ts"

/** Documented where `DryRun.ts` exports it. */
export const layerMounterWith = (
  options?: TableOptions
): Layer.Layer<Mounter.Mounter, never, FileSystem.FileSystem | DryRunPlan> =>
  Layer.effect(
    Mounter.Mounter,
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const plan = yield* DryRunPlan
      const tableRoot = options?.tableRoot ?? "/"
      const table = fs.readFileString(options?.mountInfo ?? MountInfo.DefaultPath).pipe(
        Effect.flatMap((text) => MountInfo.parse(text)),
        Effect.map((t) => withoutDetached(t, plan.detached, plan.detachedAs)),
        Effect.orElseSucceed((): MountInfo.MountTable => [])
      )
      /** Detaches the newest mount at `target` (and every mount below it) from `entries`; false when none is there. */
      const detach = (entries: Array<MountInfo.MountEntry>, target: string): boolean => {
        const top = entries.findLast((e) => e.mountPoint === target)
        if (top === undefined) return false
        // A lazy detach takes the whole subtree: every mount whose parent chain reaches `top`.
        const gone = new Set([top.id])
        for (let grew = true; grew; ) {
          grew = false
          for (const e of entries) {
            if (!gone.has(e.id) && gone.has(e.parentId)) {
              gone.add(e.id)
              grew = true
            }
          }
        }
        for (const e of entries) {
          if (!gone.has(e.id)) continue
          plan.detached.add(e.id)
          plan.detachedAs?.set(e.id, mountIdentity(e))
        }
        // The file system sees this process's paths: the table's, below the table's root.
        const full = HostPath.join(tableRoot, target)
        for (const point of plan.uncovered.keys())
          if (point !== full && HostPath.covers(full, point)) plan.uncovered.delete(point)
        const left = entries.filter((e) => !gone.has(e.id))
        entries.splice(0, entries.length, ...left)
        // What shows at the mount point now: the next mount of a stack, or the
        // directory of the mount it sits in.
        const covering = left.filter((e) => HostPath.covers(e.mountPoint, target))
        const under = covering.findLast((e) => e.mountPoint === target) ?? longestPrefix(covering)
        if (under !== undefined) plan.uncovered.set(full, deviceNumber(under.major, under.minor))
        return true
      }
      /**
       * The path checks of a real mounter, on the host's paths: below the root handle, every component a
       * directory reached without a link. Undefined when the path passes them.
       */
      const verifyPath = (
        root: Directory.Handle,
        t: Mounter.Target
      ): Effect.Effect<Mounter.UnmountResult | undefined> =>
        Effect.gen(function* () {
          const unverified = (reason: Mounter.UnverifiedReason, detail: string): Mounter.UnmountResult => ({
            _tag: "Unverified",
            target: t.path,
            reason,
            detail: `${detail} (dry run)`
          })
          const rel = Mounter.below(root.path, t.path)
          if (rel === undefined) return unverified("OutsideRoot", `not below the host root ${root.path}`)
          let at = root.path
          for (const bytes of Directory.components(FileName.encode(rel))) {
            const name = FileName.decode(bytes)
            at = HostPath.child(at, name)
            const info = yield* Effect.option(fs.lstat(at))
            if (Option.isNone(info)) return unverified("Gone", "the path no longer exists")
            if (info.value.type === "SymbolicLink") {
              return unverified("LinkInPath", `${FileName.display(name)} is a symbolic link`)
            }
            if (info.value.type !== "Directory") {
              return unverified("Moved", `${FileName.display(name)} is not a directory: the path leads to no mount`)
            }
          }
          return undefined
        })
      return Mounter.Mounter.of({
        unmount: (root, targets, options) =>
          Effect.gen(function* () {
            // One read per call, kept up to date as the targets are detached.
            const entries = [...(yield* table)]
            return yield* Effect.forEach(
              targets,
              (t): Effect.Effect<Mounter.UnmountResult> =>
                Effect.gen(function* () {
                  const refused = yield* verifyPath(root, t)
                  if (refused !== undefined) return refused
                  // Verified against the table a real run would read: the path must lead to the listed mount (the
                  // newest of those at the longest mount point on the way to it).
                  const reached = longestPrefix(entries.filter((e) => HostPath.covers(e.mountPoint, t.tablePath)))
                  if (reached !== undefined && reached.id !== t.mountId) {
                    return {
                      _tag: "Unverified" as const,
                      target: t.path,
                      reason: "Moved" as const,
                      detail: `the path leads to mount ${reached.id}, not to mount ${t.mountId} (dry run)`
                    }
                  }
                  return detach(entries, t.tablePath)
                    ? yield* plan
                        .record({
                          service: "Mounter",
                          action: options.lazy ? "unmount (lazy)" : "unmount",
                          target: t.path
                        })
                        .pipe(Effect.as({ _tag: "Unmounted" as const, target: t.path }))
                    : {
                        _tag: "Failed" as const,
                        target: t.path,
                        failure: { target: t.path, errno: "EINVAL", message: "not mounted (dry run)" }
                      }
                })
            )
          })
      })
    })
  )

/** Documented where `DryRun.ts` exports it. */
export const layerMounter: Layer.Layer<Mounter.Mounter, never, FileSystem.FileSystem | DryRunPlan> = layerMounterWith()
