/**
 * The command-based `Mounter` of `Mounter.layerCommand`: each target
 * verified through the `Directories` in context, then `umount [-l] -c --
 * targets...` through the spawner in context, many targets per process, and
 * which went decided from the mount table. Also the reading of util-linux's
 * messages (`classify`), which
 * `NodeMounter.layerIn`'s helper shares. Internal: the public constructor and
 * its guarantees are in `Mounter`.
 *
 * @since 0.3.0
 */
import { Effect, type FileSystem } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import type * as Directory from "../../Directory.ts"
import * as HostCommand from "../../HostCommand.ts"
import type * as Mounter from "../../Mounter.ts"
import * as MountInfo from "../../MountInfo.ts"
import * as Programs from "../../Programs.ts"
import { verifyTarget } from "./verify.ts"

// util-linux umount's messages for the failures a teardown meets.
export const classify = (text: string): { readonly errno: string; readonly message: string } => {
  const t = text.toLowerCase()
  if (t.includes("busy")) return { errno: "EBUSY", message: "Device or resource busy" }
  if (t.includes("not mounted")) return { errno: "EINVAL", message: "Invalid argument (not mounted)" }
  // util-linux says "no mount point specified" for a path that does not exist
  if (t.includes("no such file") || t.includes("no mount point specified"))
    return { errno: "ENOENT", message: "No such file or directory" }
  if (t.includes("superuser") || t.includes("not permitted") || t.includes("permission")) {
    return { errno: "EPERM", message: "Operation not permitted" }
  }
  return { errno: "EUNKNOWN", message: text.trim() === "" ? "umount failed" : text.trim() }
}

const chunk = (targets: ReadonlyArray<string>, maxBytes: number): Array<Array<string>> => {
  const out: Array<Array<string>> = []
  let current: Array<string> = []
  let bytes = 0
  for (const t of targets) {
    const size = t.length * 3 + 1
    if (current.length > 0 && bytes + size > maxBytes) {
      out.push(current)
      current = []
      bytes = 0
    }
    current.push(t)
    bytes += size
  }
  if (current.length > 0) out.push(current)
  return out
}

const countByMountPoint = (table: ReadonlyArray<MountInfo.MountEntry>): Map<string, number> => {
  const m = new Map<string, number>()
  for (const e of table) m.set(e.mountPoint, (m.get(e.mountPoint) ?? 0) + 1)
  return m
}

/** The command-based `Mounter` (see `Mounter.layerCommand`). */
export const commandMounter = Effect.fnUntraced(function* (options: Parameters<typeof Mounter.layerCommand>[0]) {
  const context = yield* Effect.context<
    ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem | Directory.Directories
  >()
  const tablePath = options?.mountInfo ?? Programs.DefaultMountInfo
  const maxBytes = options?.maxArgBytes ?? 64 * 1024
  const countNow = MountInfo.read(tablePath).pipe(
    Effect.map(countByMountPoint),
    Effect.orElseSucceed(() => undefined)
  )
  const unmount = Effect.fnUntraced(function* (
    root: Directory.Handle,
    targets: ReadonlyArray<Programs.Target>,
    opts: { readonly lazy: boolean }
  ) {
    if (targets.length === 0) return []
    // A stack is verified at its top: the first target of each path, with the program every Mounter runs.
    const checked = new Map<string, Exclude<Programs.UnmountResult, { readonly _tag: "Unmounted" }> | undefined>()
    for (const t of targets) if (!checked.has(t.tablePath)) checked.set(t.tablePath, yield* verifyTarget(root, t))
    const verified = targets.filter((t) => checked.get(t.tablePath) === undefined).map((t) => t.tablePath)
    const before = yield* countNow
    const messages = new Map<string, string>()
    let spawnFailure: string | undefined
    for (const part of chunk(verified, maxBytes)) {
      const args = [...(opts.lazy ? ["-l"] : []), "-c", "--", ...part]
      const result = yield* Effect.result(HostCommand.run("umount", args))
      if (result._tag === "Failure") {
        spawnFailure ??= result.failure.reason.detail
        continue
      }
      for (const line of result.success.stderr.split("\n")) {
        for (const t of part) if (line.startsWith(`umount: ${t}: `)) messages.set(t, line)
      }
    }
    const after = yield* countNow
    // How many mounts left each mount point: that many of its targets succeeded
    // (a stacked mount point is a target once per mount).
    const gone = new Map<string, number>()
    if (before !== undefined && after !== undefined) {
      for (const [point, n] of before) gone.set(point, Math.max(0, n - (after.get(point) ?? 0)))
    }
    return targets.map((t): Programs.UnmountResult => {
      const problem = checked.get(t.tablePath)
      if (problem !== undefined) return { ...problem, target: t.path }
      const left = gone.get(t.tablePath) ?? 0
      if (left > 0) {
        gone.set(t.tablePath, left - 1)
        return { _tag: "Unmounted", target: t.path }
      }
      const why =
        spawnFailure !== undefined && !messages.has(t.tablePath)
          ? { errno: "ENOEXEC", message: `umount could not run: ${spawnFailure}` }
          : classify(messages.get(t.tablePath) ?? "")
      return { _tag: "Failed", target: t.path, failure: { target: t.path, ...why } }
    })
  })
  const mounter: Mounter.Mounter = {
    unmount: (root, targets, opts) => unmount(root, targets, opts).pipe(Effect.provide(context))
  }
  return mounter
})
