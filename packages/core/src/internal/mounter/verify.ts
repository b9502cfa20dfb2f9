/**
 * The verification of a target before it is detached (`Layers.verifyTarget`), for
 * every `Mounter` that detaches by other means than the in-process program.
 *
 * @since 0.4.0
 */
import { Effect } from "effect"
import * as Directory from "../../Directory.ts"
import * as FileName from "../../FileName.ts"
import type { Target, UnmountResult } from "../../Programs.ts"
import * as Names from "../directory/names.ts"
import { below } from "../hostPath/lexical.ts"
import { verifyMount } from "../programs/verifyMount.ts"

/**
 * Verifies `target` below `root` through the `Directories` in context, with
 * the program every `Mounter` runs (`Programs.verifyMount`: held without
 * following a link, the mount id compared without asking the file system):
 * `undefined` when it leads to its mount (the handle is closed again), else
 * the result to report. For a `Mounter` that detaches by other means (a
 * command) and for the simulated and dry-run hosts.
 *
 * @since 0.4.0
 * @category operations
 */
export const verifyTarget = (
  root: Directory.Handle,
  target: Target
): Effect.Effect<Exclude<UnmountResult, { readonly _tag: "Unmounted" }> | undefined, never, Directory.Directories> =>
  Effect.gen(function* () {
    const rel = below(root.path, target.path)
    if (rel === undefined) {
      return {
        _tag: "Unverified" as const,
        target: target.path,
        reason: "OutsideRoot" as const,
        detail: `not below the host root ${root.path}`
      }
    }
    const dirs = yield* Directory.Directories
    // The driver closes what the program still holds when it ends: the verified handle too.
    const outcome = yield* dirs.run(
      verifyMount(root, { components: Names.components(FileName.encode(rel)), mountId: target.mountId })
    )
    switch (outcome._tag) {
      case "Verified":
        return undefined
      case "Unverified":
        return { _tag: "Unverified" as const, target: target.path, reason: outcome.reason, detail: outcome.detail }
      case "Failed":
        return {
          _tag: "Failed" as const,
          target: target.path,
          failure: { target: target.path, errno: outcome.errno, message: outcome.message }
        }
      case "Hung":
        return {
          _tag: "Hung" as const,
          target: target.path,
          call: outcome.call,
          seconds: outcome.seconds,
          detail: outcome.detail
        }
    }
  })
