/**
 * The `Mounter` of another mount namespace, `NodeMounter.layerIn`'s: targets
 * verified here, in-process, below a handle on `/proc/<pid>/root`
 * (`verifyOne`), and detached by an `nsenter ... umount` helper through this
 * process's descriptors of them, in rounds for stacks; which went read from
 * the container's table. Internal: the public constructor, and why the work
 * is split so, are in `NodeMounter`.
 *
 * @since 0.3.0
 */
import { Directory, HostCommand, Mounter, MountInfo } from "@hostnode/core"
import { Effect, FileSystem } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import type { InOptions } from "../../NodeMounter.ts"
import { fdOf } from "../handles.ts"
import type { Libc } from "../libc.ts"
import { unverified, verifyOne } from "./inProcess.ts"

/** The mount ids in a table, or `undefined` when it cannot be read (the process is gone). */
const mountIds = (path: string) =>
  MountInfo.read(path).pipe(
    Effect.map((table) => new Set(table.map((e) => e.id))),
    Effect.orElseSucceed(() => undefined)
  )

/** The `Mounter` of the mount namespace of host process `pid`, over the loaded libc `c` (see `NodeMounter.makeIn`). */
export const namespaceMounter = Effect.fnUntraced(function* (c: Libc, pid: number, options: InOptions | undefined) {
  const context = yield* Effect.context<
    ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem | Directory.Directories
  >()
  const fs = yield* FileSystem.FileSystem
  // This process as its own /proc names it: what the helper, its root set
  // to this process's `/`, reaches the descriptors through.
  const self = yield* fs.readLink("/proc/self").pipe(Effect.orElseSucceed(() => String(process.pid)))
  const rootPath = `/proc/${pid}/root`
  const tablePath = `/proc/${pid}/mountinfo`
  const maxTargets = Math.max(1, options?.maxTargets ?? 256)
  const statBuf = new Uint8Array(256)
  const state = { openat2: true }
  const runHelper = (args: ReadonlyArray<string>, lazy: boolean) =>
    HostCommand.run("nsenter", [
      "-t",
      String(pid),
      "-m",
      "--root=/",
      "--",
      "umount",
      ...(lazy ? ["-l"] : []),
      "-c",
      "--",
      ...args
    ])

  const unmount = Effect.fnUntraced(function* (
    root: Directory.Handle,
    targets: ReadonlyArray<Mounter.Target>,
    opts: Mounter.UnmountOptions
  ) {
    const results: Array<Mounter.UnmountResult | undefined> = targets.map(() => undefined)
    if (targets.length === 0) return []
    const dirs = yield* Directory.Directories
    const container = yield* dirs.openRoot(rootPath).pipe(Effect.result)
    const handle = container._tag === "Success" ? fdOf(container.success) : undefined
    if (handle === undefined) {
      const why = container._tag === "Failure" ? container.failure.message : "not a NodeDirectory handle"
      return targets.map(
        (t): Mounter.UnmountResult => ({
          _tag: "Failed",
          target: t.path,
          failure: { target: t.path, errno: "ESRCH", message: `the container's root ${rootPath}: ${why}` }
        })
      )
    }
    let pending = targets.map((_, i) => i)
    while (pending.length > 0) {
      const verified: Array<{ readonly i: number; readonly fd: number }> = []
      for (const i of pending) {
        const t = targets[i] as Mounter.Target
        // The caller's contract still holds: a target is below the root it passed.
        if (Mounter.below(root.path, t.path) === undefined) {
          results[i] = unverified(t.path, "OutsideRoot", `not below the host root ${root.path}`)
          continue
        }
        const v = verifyOne(c, handle.fd, t.tablePath, t, statBuf, state)
        if (v._tag === "Verified") verified.push({ i, fd: v.fd })
        else results[i] = v
      }
      if (verified.length === 0) break
      const stderr: Array<string> = []
      let spawnFailure: string | undefined
      yield* Effect.gen(function* () {
        for (let at = 0; at < verified.length; at += maxTargets) {
          const part = verified.slice(at, at + maxTargets)
          const args = part.map(({ i, fd }) =>
            opts.lazy ? `/proc/${self}/fd/${fd}` : `${rootPath}${(targets[i] as Mounter.Target).tablePath}`
          )
          if (!opts.lazy) for (const { fd } of part) c.close(fd)
          const r = yield* Effect.result(runHelper(args, opts.lazy))
          if (r._tag === "Failure") spawnFailure ??= r.failure.reason.detail
          else stderr.push(r.success.stderr)
        }
      }).pipe(
        Effect.ensuring(
          Effect.sync(() => {
            if (opts.lazy) for (const { fd } of verified) c.close(fd)
          })
        )
      )
      const after = yield* mountIds(tablePath)
      const said = stderr.join("\n").split("\n")
      const unmountedAt = new Set<string>()
      for (const { i, fd } of verified) {
        const t = targets[i] as Mounter.Target
        if (after !== undefined && !after.has(t.mountId)) {
          results[i] = { _tag: "Unmounted", target: t.path }
          unmountedAt.add(t.tablePath)
          continue
        }
        const arg = opts.lazy ? `/proc/${self}/fd/${fd}` : `${rootPath}${t.tablePath}`
        const line = said.find((l) => l.startsWith(`umount: ${arg}: `))
        const why =
          line !== undefined
            ? Mounter.classifyUmount(line)
            : spawnFailure !== undefined
              ? { errno: "ENOEXEC", message: `the unmount helper could not run: ${spawnFailure}` }
              : after === undefined
                ? { errno: "ESRCH", message: `the container's mount table ${tablePath} is gone` }
                : Mounter.classifyUmount(said.join(" ").trim())
        results[i] = { _tag: "Failed", target: t.path, failure: { target: t.path, ...why } }
      }
      // Only the top of a stack was reachable: the rest is tried again once it is on top.
      pending = pending.filter((i) => {
        const r = results[i]
        return (
          r?._tag === "Unverified" && r.reason === "Moved" && unmountedAt.has((targets[i] as Mounter.Target).tablePath)
        )
      })
    }
    return results.map(
      (r, i): Mounter.UnmountResult =>
        r ?? {
          _tag: "Unverified",
          target: (targets[i] as Mounter.Target).path,
          reason: "Moved",
          detail: "not reached"
        }
    )
  }, Effect.scoped)
  return Mounter.Mounter.of({
    unmount: (root, targets, opts) => unmount(root, targets, opts).pipe(Effect.provide(context))
  })
})
