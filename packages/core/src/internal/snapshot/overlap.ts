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
import type * as Directory from "../../Directory.ts"
import { Failure } from "../../SnapshotError.ts"
import { identity } from "../directory/handle.ts"
import * as Lexical from "../hostPath/lexical.ts"
import { type Ctx, fail, fromDirectory, unresolvable } from "./context.ts"

/**
 * Where `path` is below the root: the directory it resolves in and its stat
 * when it exists; with `nearest`, for a path whose parents are missing, the
 * deepest existing directory on its way (where a restore would make them).
 */
const locate = (ctx: Ctx, root: Directory.Handle, path: string, nearest: boolean) =>
  Effect.gen(function* () {
    for (let p = path; ; p = Lexical.dirname(p)) {
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
      const held = new Set(chain.map(identity))
      const self = chain[0] === undefined ? undefined : identity(chain[0])
      // Listed paths share parents: each parent's ancestors are looked up once.
      const inside = new Map<string, boolean>()
      for (const p of paths) {
        const removesOnly = options.absent?.has(p) === true
        const at = yield* locate(ctx, root, p, options.below && !removesOnly)
        if (at === undefined) continue
        // What a restore writes, or removes where something is there now.
        const writes = options.below && (!removesOnly || at.entry !== undefined)
        if (at.entry !== undefined && at.entry.type === "Directory" && held.has(identity(at.entry))) {
          return yield* fail(
            ctx,
            new Failure({
              _tag: "InvalidPath",
              path: p,
              detail: `the snapshot directory ${ctx.dir} lies at or below the recorded path ${p} (once resolved below the root): it would ${options.below ? "be removed as created since" : "record itself"}`
            })
          )
        }
        if (writes && self !== undefined) {
          const parent = identity(yield* ctx.dirs.stat(at.parent).pipe(Effect.mapError(fromDirectory(ctx, p))))
          let below = inside.get(parent)
          if (below === undefined) {
            const above = yield* ctx.dirs.ancestors(at.parent).pipe(Effect.mapError(fromDirectory(ctx, p)))
            below = above.some((st) => identity(st) === self)
            inside.set(parent, below)
          }
          if (below) {
            return yield* fail(
              ctx,
              new Failure({
                _tag: "InvalidPath",
                path: p,
                detail: `the recorded path ${p} lies inside the snapshot directory ${ctx.dir} (once resolved below the root): a restore would write into the snapshot`
              })
            )
          }
        }
      }
    })
  )

/**
 * Before a take makes anything (its snapshot's missing parent directories,
 * its lock, its staging directory): fails `InvalidPath` when the snapshot
 * would lie inside a recorded path, by identity. The deepest directory that
 * exists on the way to the snapshot's parent (links in the operator's path
 * followed, as the take follows them) must not be at or below a recorded
 * directory; and where parents are still to be made, a recorded path that
 * is absent now must not be among them (once made, the take would record
 * nothing of it, and a restore would remove it, the snapshot with it). A
 * refused take therefore creates nothing.
 */
export const checkBeforeMaking = (ctx: Ctx, paths: ReadonlyArray<string>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const { dirs } = ctx
      // The deepest existing directory on the way to the snapshot's parent, and the names still to be made below it.
      const missing: Array<string> = []
      let at = ctx.parentPath
      let nearest: Directory.Handle
      for (;;) {
        const r = yield* Effect.result(dirs.openRoot(at))
        if (r._tag === "Success") {
          nearest = r.success
          break
        }
        const tag = r.failure.reason._tag
        if ((tag !== "NotFound" && tag !== "NotADirectory") || at === "/") return yield* fromDirectory(ctx)(r.failure)
        missing.unshift(at.slice(at.lastIndexOf("/") + 1))
        at = Lexical.dirname(at)
      }
      const chain = yield* dirs.ancestors(nearest).pipe(Effect.mapError(fromDirectory(ctx)))
      const root = yield* dirs.openRoot(ctx.root.path).pipe(Effect.mapError(fromDirectory(ctx)))
      yield* checkOverlap(ctx, root, paths, chain, { below: false })
      if (missing.length === 0) return
      const self = identity(chain[0] as Directory.Stat)
      for (const p of paths) {
        // The deepest existing directory of an absent recorded path, and what is missing below it.
        const rest: Array<string> = []
        let q = p
        let found: Directory.Stat | undefined
        let gaveUp = false
        while (found === undefined && !gaveUp) {
          if (q === "/") {
            found = yield* dirs.stat(root).pipe(Effect.mapError(fromDirectory(ctx, p)))
            break
          }
          // The recorded path itself is not followed (a link there is what is recorded); its parents are.
          const r = yield* Effect.result(dirs.resolve(root, q, { followFinal: q !== p }))
          if (r._tag === "Success") {
            const st =
              r.success.name === undefined
                ? yield* Effect.result(dirs.stat(r.success.parent))
                : yield* Effect.result(dirs.stat(r.success.parent, r.success.name))
            if (st._tag === "Success") {
              // There (not absent), or something other than a directory on the way: nothing will be made inside it.
              if (st.success.type === "Directory" && q !== p) found = st.success
              else gaveUp = true
              break
            }
            if (st.failure.reason._tag !== "NotFound") gaveUp = true
          } else if (r.failure.reason._tag !== "NotFound" && r.failure.reason._tag !== "NotADirectory") {
            // A link loop or an unreadable directory on the way: the take itself reports it where it meets it.
            gaveUp = true
          }
          if (gaveUp) break
          rest.unshift(q.slice(q.lastIndexOf("/") + 1))
          q = Lexical.dirname(q)
        }
        if (found === undefined || rest.length === 0 || identity(found) !== self) continue
        if (rest.length <= missing.length && rest.every((name, i) => name === missing[i])) {
          return yield* fail(
            ctx,
            new Failure({
              _tag: "InvalidPath",
              path: p,
              detail: `the snapshot directory ${ctx.dir} would be made inside the recorded path ${p} (absent now, once resolved below the root): a restore would remove it as created since`
            })
          )
        }
      }
    })
  )
