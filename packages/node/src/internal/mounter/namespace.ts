/**
 * The `Mounter` of another mount namespace, `NodeMounter.layerIn`'s: a
 * helper process of its own, entered into that namespace with the root of
 * the process named (`setns` on its `/proc/PID/ns/mnt`, `chroot` to its
 * `/proc/PID/root`, both opened once when the layer is built), verifies each
 * target there as the table names it and detaches it through what it
 * verified, exactly as the host's helper does (see `internal/io/mounts.ts`).
 * No program of the container's image runs, and nothing outside that
 * namespace can be detached: the kernel refuses it.
 *
 * Internal: the public constructor, and what it guarantees, are in `NodeMounter`.
 *
 * @since 0.3.0
 */
import { closeSync, openSync } from "node:fs"
import { Directory, FileName, Mounter } from "@hostnode/core"
import { Effect } from "effect"
import type { InOptions } from "../../NodeMounter.ts"
import * as Io from "../io/client.ts"
import type { Outcome } from "../io/mounts.ts"
import { holdersWith, resultOf } from "./inProcess.ts"

const O_PATH = 0o10000000
const O_DIRECTORY = 0o200000

/** A procfs descriptor of the agent (none is opened through another file system), or the failure to name. */
const procfsFd = (path: string, flags: number) =>
  Effect.try({ try: () => openSync(path, flags), catch: (e) => (e instanceof Error ? e.message : String(e)) })

/** The `Mounter` of the mount namespace of host process `pid` (see `NodeMounter.makeIn`). */
export const namespaceMounter = Effect.fnUntraced(function* (pid: number, options: InOptions | undefined) {
  const maxTargets = Math.max(1, options?.maxTargets ?? 256)
  const opened = yield* Effect.result(
    Effect.all([procfsFd(`/proc/${pid}/ns/mnt`, 0), procfsFd(`/proc/${pid}/root`, O_PATH | O_DIRECTORY)])
  )
  if (opened._tag === "Failure") {
    const why = opened.failure
    return Mounter.Mounter.of({
      unmount: (_root, targets) =>
        Effect.succeed(
          targets.map(
            (t): Mounter.UnmountResult => ({
              _tag: "Failed",
              target: t.path,
              failure: { target: t.path, errno: "ESRCH", message: `the mount namespace of process ${pid}: ${why}` }
            })
          )
        )
    })
  }
  const [ns, rootDir] = opened.success
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      closeSync(ns)
      closeSync(rootDir)
    })
  )
  const client = yield* Effect.acquireRelease(
    Io.make({ name: `the mount namespace of process ${pid}`, mountNamespace: ns, root: rootDir }),
    (c) => c.shutdown
  )
  const unmount = (
    root: Parameters<Mounter.Mounter["unmount"]>[0],
    targets: ReadonlyArray<Mounter.Target>,
    opts: Mounter.UnmountOptions
  ) =>
    Effect.gen(function* () {
      const results: Array<Mounter.UnmountResult | undefined> = targets.map(() => undefined)
      const sent: Array<number> = []
      for (const [i, t] of targets.entries()) {
        // The caller's contract still holds: a target is below the root it passed.
        if (Mounter.below(root.path, t.path) === undefined) {
          results[i] = {
            _tag: "Unverified",
            target: t.path,
            reason: "OutsideRoot",
            detail: `not below the host root ${root.path}`
          }
        } else sent.push(i)
      }
      // The namespace's own root, in its helper: the table's paths are below it.
      const nsRoot = yield* Effect.result(
        client.request("openRoot", [], () => [FileName.encode("/")], { call: "open", path: "/" })
      )
      if (nsRoot._tag === "Failure") {
        for (const i of sent) {
          const t = targets[i] as Mounter.Target
          results[i] =
            nsRoot.failure.reason === "Hung"
              ? {
                  _tag: "Hung",
                  target: t.path,
                  call: nsRoot.failure.call ?? "open",
                  seconds: nsRoot.failure.seconds ?? 0,
                  detail: nsRoot.failure.detail
                }
              : {
                  _tag: "Failed",
                  target: t.path,
                  failure: { target: t.path, errno: nsRoot.failure.errno ?? "ESRCH", message: nsRoot.failure.detail }
                }
        }
      } else {
        const rootHandle = client.handle(
          (nsRoot.success.value as { readonly fd: number }).fd,
          -1,
          "/",
          nsRoot.success.gen
        )
        for (let at = 0; at < sent.length; at += maxTargets) {
          const part = sent.slice(at, at + maxTargets)
          const r = yield* Effect.result(
            client.request(
              "unmount",
              [rootHandle],
              ([fd]) => [
                fd,
                part.map((i) => ({
                  components: Directory.components(FileName.encode((targets[i] as Mounter.Target).tablePath)),
                  mountId: (targets[i] as Mounter.Target).mountId
                })),
                opts.lazy
              ],
              {
                call: "umount2",
                path: `/proc/${pid}/root`,
                program: true,
                onProgress: (p) => {
                  for (const [k, o] of p as ReadonlyArray<readonly [number, Outcome]>) {
                    const i = part[k] as number
                    results[i] = resultOf(targets[i] as Mounter.Target, o)
                  }
                }
              }
            )
          )
          if (r._tag === "Success") {
            for (const [k, o] of (r.success.value as ReadonlyArray<Outcome>).entries()) {
              const i = part[k] as number
              results[i] = resultOf(targets[i] as Mounter.Target, o)
            }
          } else {
            const hungAt = part.find((i) => results[i] === undefined)
            if (hungAt !== undefined) {
              const t = targets[hungAt] as Mounter.Target
              const f = r.failure
              results[hungAt] =
                f.reason === "Hung"
                  ? {
                      _tag: "Hung",
                      target: t.path,
                      call: f.call ?? "umount2",
                      seconds: f.seconds ?? 0,
                      detail: f.detail
                    }
                  : {
                      _tag: "Failed",
                      target: t.path,
                      failure: { target: t.path, errno: f.errno ?? "EIO", message: f.detail }
                    }
            }
            break
          }
        }
        yield* client.release(rootHandle)
      }
      return results.map(
        (r, i): Mounter.UnmountResult =>
          r ?? {
            _tag: "Unverified",
            target: (targets[i] as Mounter.Target).path,
            reason: "Moved",
            detail: "not reached: an earlier call did not return"
          }
      )
    })
  return Mounter.Mounter.of({ unmount, holders: holdersWith(client) })
})
