/**
 * A host root decoded against the node's root in context: what
 * `HostPath.decodeRoot` and every operation's options decode with.
 */
import { Effect, FileSystem } from "effect"
import type { HostRoot } from "../../HostPath.ts"
import { type HostPathError, Refused } from "../../HostPathError.ts"
import { refusal } from "./errors.ts"
import { isRealRoot } from "./lexical.ts"
import { NodeRoot, type RootInput } from "./nodeRoot.ts"
import { decode, isHostRoot } from "./root.ts"

/**
 * Decodes a root as `HostPath.decodeRoot` does: a decoded root as given
 * (asked again whether its process is gone, with `mountInfo` replacing its
 * table when non-empty), else the path decoded. The real host (absent, `""`
 * or `"/"`) is the {@link NodeRoot} in context where one is set, decoded and
 * marked `isReal`, and this process's `/` otherwise: a program written for
 * the host names the container's node when run in a container composition.
 */
export const rootFrom = (
  input: string | RootInput | HostRoot | undefined,
  mountInfo = ""
): Effect.Effect<HostRoot, HostPathError, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    if (isHostRoot(input)) {
      // Decoded earlier: its process may have exited since.
      const gone = input.gone === undefined ? undefined : yield* input.gone
      if (gone !== undefined) return yield* refusal(gone, input.given)
      // This process's own `/`, decoded where no composition named the node's root, handed to an operation
      // that runs in one that does (a container's): that would be the agent's host, not the node asked for.
      const node = input.path === "/" && input.tableRoot === "/" ? yield* NodeRoot : undefined
      if (node !== undefined && !isRealRoot(node.path)) {
        return yield* refusal(
          new Refused({
            _tag: "OutsideTable",
            detail:
              "this process's / was decoded outside the composition that names the node's root (Layers.NodeRoot): leave hostRoot out, or decode it inside"
          }),
          input.given
        )
      }
      return mountInfo === "" ? input : { ...input, mountInfo }
    }
    const fs = yield* FileSystem.FileSystem
    const given: RootInput =
      input === undefined || typeof input === "string"
        ? { path: input ?? "", mountInfo }
        : mountInfo === ""
          ? input
          : { ...input, mountInfo }
    const node = isRealRoot(given.path) ? yield* NodeRoot : undefined
    if (node === undefined) return yield* decode(fs, given)
    const root = yield* decode(
      fs,
      given.mountInfo === undefined || given.mountInfo === "" ? node : { ...node, mountInfo: given.mountInfo }
    )
    return { ...root, isReal: true }
  })
