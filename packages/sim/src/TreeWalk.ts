/**
 * A walk of a directory tree through the FileSystem in context, never
 * following a link: each path with what `lstat` said of it, a file's bytes
 * and a link's target. The tests' tree images and the demo's byte-for-byte
 * checks are each a description of this walk.
 *
 * @since 0.1.0
 */
import { Effect, FileSystem } from "effect"
import type { PlatformError } from "effect/PlatformError"

/**
 * One path met by a walk.
 *
 * @category models
 * @since 0.1.0
 */
export type Visited =
  | { readonly type: "File"; readonly path: string; readonly info: FileSystem.File.Info; readonly bytes: Uint8Array }
  | {
      readonly type: "SymbolicLink"
      readonly path: string
      readonly info: FileSystem.File.Info
      readonly target: string
    }
  | { readonly type: "Directory"; readonly path: string; readonly info: FileSystem.File.Info }
  | { readonly type: "Other"; readonly path: string; readonly info: FileSystem.File.Info }

/**
 * Options of {@link walk}.
 *
 * @since 0.1.0
 */
interface Options {
  /** Paths below the top not to enter or report (the top itself is always walked). */
  readonly skip?: ((path: string) => boolean) | undefined
  /** How many directory entries are visited at once (default 16). */
  readonly concurrency?: number | undefined
}

const child = (dir: string, name: string) => (dir === "/" ? `/${name}` : `${dir}/${name}`)

/**
 * Every path at and below `top`, the top first, then each directory's entries
 * in name order, depth first. A missing `top` gives none; any other failure
 * fails the walk.
 *
 * @example
 * ```ts
 * import { TreeWalk } from "@hostnode/sim"
 * import { Effect } from "effect"
 *
 * // The files a teardown left below a pod's directory, for a test's assertion.
 * export const filesLeft = (dir: string) =>
 *   Effect.map(TreeWalk.walk(dir), (visited) => visited.filter((v) => v.type === "File").map((v) => v.path))
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const walk = (
  top: string,
  options?: Options
): Effect.Effect<ReadonlyArray<Visited>, PlatformError, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const visit = (path: string, info: FileSystem.File.Info): Effect.Effect<Array<Visited>, PlatformError> =>
      Effect.gen(function* () {
        switch (info.type) {
          case "File":
            return [{ type: "File", path, info, bytes: yield* fs.readFile(path) }]
          case "SymbolicLink":
            return [{ type: "SymbolicLink", path, info, target: yield* fs.readLink(path) }]
          case "Directory": {
            const names = [...(yield* fs.readDirectory(path))].sort()
            const below = yield* Effect.forEach(
              names.map((n) => child(path, n)).filter((p) => options?.skip?.(p) !== true),
              (p) => Effect.flatMap(fs.lstat(p), (i) => visit(p, i)),
              { concurrency: options?.concurrency ?? 16 }
            )
            return [{ type: "Directory" as const, path, info }, ...below.flat()]
          }
          default:
            return [{ type: "Other", path, info }]
        }
      })
    const info = yield* fs.lstat(top).pipe(
      Effect.map((i): FileSystem.File.Info | undefined => i),
      Effect.catchTag("PlatformError", (e) =>
        e.reason._tag === "NotFound" ? Effect.succeed(undefined) : Effect.fail(e)
      )
    )
    return info === undefined ? [] : yield* visit(top, info)
  })
