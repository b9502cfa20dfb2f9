/**
 * The snapshot directory and the recorded paths must not overlap: a take
 * whose staging directory lies below a recorded directory records itself,
 * and a restore whose snapshot lies below one removes it as something
 * created since (or, above one, writes into it). Compared by identity
 * (device and inode) after resolution below the root, never by the paths'
 * text: the snapshot directory may be reached through a link into a
 * recorded path, and a recorded path through a link into the snapshot.
 *
 * Internal to `Snapshot`.
 *
 * @since 0.2.0
 */
import { Effect } from "effect"
import * as Directory from "../../Directory.ts"
import * as HostPath from "../../HostPath.ts"
import { type Ctx, fail, fromDirectory, unresolvable } from "./context.ts"
import { InvalidPath } from "./error.ts"

/**
 * Where `path` is below the root: the directory it resolves in and its stat
 * when it exists; with `nearest`, for a path whose parents are missing, the
 * deepest existing directory on its way (where a restore would make them).
 */
const locate = (ctx: Ctx, root: Directory.Handle, path: string, nearest: boolean) =>
  Effect.gen(function* () {
    for (let p = path; ; p = HostPath.dirname(p)) {
      if (p === "/") return { parent: root, entry: undefined }
      const r = yield* Effect.result(ctx.dirs.resolve(root, p, { followFinal: p !== path }))
      if (r._tag === "Failure") {
        if (r.failure.reason._tag === "NotFound" || r.failure.reason._tag === "NotADirectory") {
          if (!nearest) return undefined
          continue
        }
        return yield* Effect.fail(unresolvable(ctx, path, r.failure))
      }
      if (r.success.name === undefined) return { parent: r.success.parent, entry: undefined }
      const st = yield* Effect.result(ctx.dirs.stat(r.success.parent, r.success.name))
      if (st._tag === "Failure") {
        if (st.failure.reason._tag !== "NotFound") return yield* fromDirectory(ctx, path)(st.failure)
        if (p === path) return { parent: r.success.parent, entry: undefined }
        if (!nearest) return undefined
        continue
      }
      if (p === path) return { parent: r.success.parent, entry: st.success }
      if (st.success.type !== "Directory") continue
      const dir = yield* ctx.dirs
        .openDirectory(r.success.parent, r.success.name)
        .pipe(Effect.mapError(fromDirectory(ctx, path)))
      return { parent: dir, entry: undefined }
    }
  })

/**
 * Fails `InvalidPath` when the snapshot and a recorded path overlap.
 * `chain` is the stats of the snapshot's directory (for a take, the
 * directory its staging goes in) and of every directory above it, nearest
 * first. A recorded path at or above any of them holds the snapshot. With
 * `below` (a restore), a recorded path the restore writes whose ancestors
 * include the snapshot directory is inside it; `absent` are the paths it
 * only removes, which matter only where something is there now.
 */
export const checkOverlap = (
  ctx: Ctx,
  root: Directory.Handle,
  paths: ReadonlyArray<string>,
  chain: ReadonlyArray<Directory.Stat>,
  options: { readonly below: boolean; readonly absent?: ReadonlySet<string> | undefined }
) =>
  Effect.scoped(
    Effect.gen(function* () {
      const held = new Set(chain.map(Directory.identity))
      const self = chain[0] === undefined ? undefined : Directory.identity(chain[0])
      // Listed paths share parents: each parent's ancestors are looked up once.
      const inside = new Map<string, boolean>()
      for (const p of paths) {
        const removesOnly = options.absent?.has(p) === true
        const at = yield* locate(ctx, root, p, options.below && !removesOnly)
        if (at === undefined) continue
        // What a restore writes, or removes where something is there now.
        const writes = options.below && (!removesOnly || at.entry !== undefined)
        if (at.entry !== undefined && at.entry.type === "Directory" && held.has(Directory.identity(at.entry))) {
          return yield* fail(
            ctx,
            new InvalidPath({
              path: p,
              detail: `the snapshot directory ${ctx.dir} lies at or below the recorded path ${p} (once resolved below the root): it would ${options.below ? "be removed as created since" : "record itself"}`
            })
          )
        }
        if (writes && self !== undefined) {
          const parent = Directory.identity(
            yield* ctx.dirs.stat(at.parent).pipe(Effect.mapError(fromDirectory(ctx, p)))
          )
          let below = inside.get(parent)
          if (below === undefined) {
            const above = yield* ctx.dirs.ancestors(at.parent).pipe(Effect.mapError(fromDirectory(ctx, p)))
            below = above.some((st) => Directory.identity(st) === self)
            inside.set(parent, below)
          }
          if (below) {
            return yield* fail(
              ctx,
              new InvalidPath({
                path: p,
                detail: `the recorded path ${p} lies inside the snapshot directory ${ctx.dir} (once resolved below the root): a restore would write into the snapshot`
              })
            )
          }
        }
      }
    })
  )
