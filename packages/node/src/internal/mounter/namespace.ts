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
import { FileName, Mounter } from "@hostnode/core"
import type * as Programs from "@hostnode/core/Programs"
import { Lexical } from "@hostnode/core/Programs"
import { Effect } from "effect"
import type { InOptions } from "../../NodeMounter.ts"
import type { Pinned } from "../container/pin.ts"
import * as Io from "../io/client.ts"
import { holdersWith, settled, unmountThrough } from "./inProcess.ts"

/** What the mounter needs of a pinned process: its namespace and root descriptors, and whether it is gone. */
export type Target = Pick<Pinned, "name" | "fds" | "gone">

/**
 * The `Mounter` of the mount namespace of a pinned process (see
 * `NodeMounter.layerIn`): every call is refused once that process is gone.
 */
export const namespaceMounter = Effect.fnUntraced(function* (target: Target, options: InOptions | undefined) {
  const maxTargets = Math.max(1, options?.maxTargets ?? 256)
  const client = yield* Effect.acquireRelease(
    Io.make({
      name: `the mount namespace of ${target.name}`,
      mountNamespace: target.fds.mnt,
      root: target.fds.root,
      guard: () => {
        const gone = target.gone()
        return gone === undefined ? undefined : { _tag: "Failure", reason: "Gone", errno: "ESRCH", detail: gone.detail }
      }
    }),
    (c) => c.shutdown
  )
  const unmount = (
    root: Parameters<Mounter.Mounter["unmount"]>[0],
    targets: ReadonlyArray<Programs.Target>,
    opts: { readonly lazy: boolean }
  ) =>
    Effect.gen(function* () {
      const results: Array<Programs.UnmountResult | undefined> = targets.map(() => undefined)
      const sent: Array<number> = []
      for (const [i, t] of targets.entries()) {
        // The caller's contract still holds: a target is below the root it passed.
        if (Lexical.below(root.path, t.path) === undefined) {
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
          const t = targets[i] as Programs.Target
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
          const ok = yield* unmountThrough(
            client,
            rootHandle,
            targets,
            sent.slice(at, at + maxTargets),
            (t) => FileName.encode(t.tablePath),
            opts.lazy,
            `the root of ${target.name}`,
            results
          )
          if (!ok) break
        }
        yield* client.release(rootHandle)
      }
      return settled(targets, results)
    })
  return Mounter.Mounter.of({ unmount, holders: holdersWith(client) })
})
