/**
 * `hostnode snapshot take|restore|recover|discard`'s work, loaded only when
 * one of them runs. Boundary: the operations and their output; the flags are
 * declared in `commands.ts`.
 */
import { ConfSnap, Snapshot } from "@hostnode/core"
import { Duration, Effect } from "effect"
import { plural } from "../../text.ts"
import { operate, type Work, withRoot } from "../operate.ts"

const handleJson = (s: Snapshot.Snapshot) => ({ dir: s.dir, hostRoot: s.hostRoot, paths: s.paths, absent: s.absent })

/** Records the paths (default: the node's shared configuration) into a new snapshot directory. */
export const take = ({
  dir,
  paths,
  lockTimeout
}: {
  readonly dir: string
  readonly paths: ReadonlyArray<string>
  readonly lockTimeout: number
}): Work =>
  operate(
    "snapshot take",
    withRoot("snapshot take", (hostRoot) =>
      Snapshot.takeOf({
        dir,
        hostRoot,
        paths: paths.length === 0 ? ConfSnap.DefaultPaths : paths,
        lockTimeout: Duration.seconds(lockTimeout)
      }).pipe(Effect.map(handleJson))
    ),
    (s) =>
      `snapshot taken in ${s.dir} of ${plural(s.paths.length, "path")} below ${s.hostRoot}:\n${s.paths.map((p) => `  ${p}${s.absent.includes(p) ? " (absent)" : ""}`).join("\n")}`,
    {
      warnings: (s) =>
        s.absent.length === s.paths.length
          ? [
              `every recorded path is absent below ${s.hostRoot}: is it the node's root (--host-root, --container)? A restore there would only remove them`
            ]
          : []
    }
  )

/** What restore and recover are given. */
interface RestoreInput {
  readonly dir: string
  readonly allowRootMismatch: boolean
  readonly lockTimeout: number
}

/** Puts the recorded paths back, then removes the snapshot. */
export const restore = ({ dir, allowRootMismatch, lockTimeout }: RestoreInput): Work =>
  operate(
    "snapshot restore",
    withRoot("snapshot restore", (hostRoot) =>
      Effect.gen(function* () {
        const s = yield* Snapshot.open({
          dir,
          hostRoot,
          allowHostRootMismatch: allowRootMismatch,
          lockTimeout: Duration.seconds(lockTimeout)
        })
        yield* s.restore
        return handleJson(s)
      })
    ),
    (s) =>
      `restored ${plural(s.paths.length, "path")} below ${s.hostRoot} from ${s.dir}, and removed the snapshot (a later recover will not apply it again)`
  )

/** Restores a snapshot an earlier process left, then removes it; none there is success. */
export const recover = ({ dir, allowRootMismatch, lockTimeout }: RestoreInput): Work =>
  operate(
    "snapshot recover",
    withRoot("snapshot recover", (hostRoot) =>
      Snapshot.recover({
        dir,
        hostRoot,
        allowHostRootMismatch: allowRootMismatch,
        lockTimeout: Duration.seconds(lockTimeout)
      }).pipe(Effect.map((recovered) => ({ dir, hostRoot: hostRoot.path, recovered })))
    ),
    (r) =>
      r.recovered
        ? `restored below ${r.hostRoot} and removed the snapshot in ${r.dir}`
        : `no snapshot in ${r.dir}; nothing to do`
  )

/** Removes a snapshot without restoring it; none there is success. */
export const discard = ({ dir, lockTimeout }: { readonly dir: string; readonly lockTimeout: number }): Work =>
  operate(
    "snapshot discard",
    withRoot("snapshot discard", (hostRoot) =>
      // A discard restores nothing: the root it was taken below does not matter, and a damaged snapshot goes too;
      // what is not a snapshot is refused by Snapshot.discard itself (NotASnapshot), on the directory's handle.
      Snapshot.discard({ dir, hostRoot, lockTimeout: Duration.seconds(lockTimeout) }).pipe(
        Effect.map((removed) => ({ dir, removed }))
      )
    ),
    (r) => (r.removed ? `removed the snapshot in ${r.dir}` : `no snapshot in ${r.dir}; nothing to do`)
  )
