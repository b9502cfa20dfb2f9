/**
 * An operation's options decoded before anything is read or written: the
 * context of one operation (the host root decoded, the snapshot directory
 * and the lock timeout checked) and a take's paths and exclusions checked
 * and cleaned. Bad input fails here, with nothing changed.
 *
 * Internal to `Snapshot`.
 *
 * @since 0.3.0
 */
import { Duration, Effect, FileSystem, Option } from "effect"
import * as Directory from "../../Directory.ts"
import * as Hashing from "../../Hashing.ts"
import type * as HostPath from "../../HostPath.ts"
import { Failure } from "../../SnapshotError.ts"
import * as Lexical from "../hostPath/lexical.ts"
import * as HostRoots from "../hostPath/root.ts"
import { rootFrom } from "../hostPath/rootFrom.ts"
import { type Ctx, DefaultLockTimeout, fail, isBelow, isHostPath } from "./context.ts"

/**
 * The context of one operation: the host root decoded, the snapshot
 * directory checked (absolute, not `/`), the lock timeout decoded; a bad
 * one fails here, before anything is read or written.
 */
export const makeCtx = (options: {
  readonly dir: string
  // A string is still decoded: a caller without types gets the same checks.
  readonly hostRoot?: string | HostPath.HostRoot | undefined
  readonly allowHostRootMismatch?: boolean | undefined
  readonly lockTimeout?: Duration.Input | undefined
}) =>
  Effect.gen(function* () {
    const dirs = yield* Directory.Directories
    const fs = yield* FileSystem.FileSystem
    const hashing = yield* Hashing.Hashing
    const root = yield* rootFrom(options.hostRoot)
    const dir = options.dir.startsWith("/") ? Lexical.clean(options.dir) : options.dir
    const label = { dir: options.dir, hostRoot: root.path }
    if (!options.dir.startsWith("/") || !isHostPath(dir)) {
      return yield* fail(
        label,
        new Failure({
          _tag: "InvalidPath",
          detail: `the snapshot directory ${JSON.stringify(options.dir)} must be an absolute path other than /`
        })
      )
    }
    const lockTimeout = Duration.fromInput(options.lockTimeout ?? DefaultLockTimeout)
    if (Option.isNone(lockTimeout) || Duration.toMillis(lockTimeout.value) < 0) {
      return yield* fail(
        label,
        new Failure({
          _tag: "InvalidPath",
          detail: `the lock timeout ${String(options.lockTimeout)} is not a duration`
        })
      )
    }
    const ctx: Ctx = {
      dirs,
      fs,
      hashing,
      credentials: yield* dirs.credentials,
      dir,
      parentPath: Lexical.dirname(dir),
      base: dir.slice(dir.lastIndexOf("/") + 1),
      root,
      hostRoot: root.path,
      allowHostRootMismatch: options.allowHostRootMismatch ?? false,
      lockTimeout: lockTimeout.value
    }
    return ctx
  })

/**
 * The listed paths, checked and cleaned; a path at or below another listed
 * one is dropped (sorted component by component, a path's descendants follow
 * it: O(n log n)). The snapshot directory may not lie, by its text, at,
 * below or above a recorded path's place below the root; the take checks
 * again by identity once both are resolved.
 */
export const normalizePaths = (ctx: Ctx, paths: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const cleaned: Array<string> = []
    for (const p of paths) {
      if (!p.startsWith("/") || p.includes("\0")) {
        return yield* fail(
          ctx,
          new Failure({
            _tag: "InvalidPath",
            path: p,
            detail: "a snapshot path must be an absolute host path without NUL bytes"
          })
        )
      }
      const c = Lexical.clean(p)
      if (c === "/")
        return yield* fail(
          ctx,
          new Failure({ _tag: "InvalidPath", path: p, detail: "the whole host root cannot be snapshotted" })
        )
      cleaned.push(c)
    }
    const key = (p: string) => p.replaceAll("/", "\0")
    const covered = new Set<string>()
    let top: string | undefined
    for (const p of [...new Set(cleaned)].sort((a, b) => (key(a) < key(b) ? -1 : 1))) {
      if (top !== undefined && isBelow(top, p)) covered.add(p)
      else top = p
    }
    const kept = [...new Set(cleaned)].filter((p) => !covered.has(p))
    for (const p of kept) {
      const full = HostRoots.fullPath(ctx.root, p)
      if (Lexical.covers(full, ctx.dir) || Lexical.covers(ctx.dir, full)) {
        return yield* fail(
          ctx,
          new Failure({
            _tag: "InvalidPath",
            path: p,
            detail: `the snapshot directory and the recorded path ${full} overlap`
          })
        )
      }
    }
    return kept
  })

/** Checks the paths before the parent is made or the lock taken: bad input changes nothing. */
export const checkTakeInput = (
  ctx: Ctx,
  options: { readonly paths: ReadonlyArray<string>; readonly exclude?: ReadonlyArray<string> | undefined }
) =>
  Effect.gen(function* () {
    for (const x of options.exclude ?? []) {
      if (!x.startsWith("/") || !isHostPath(Lexical.clean(x))) {
        return yield* fail(
          ctx,
          new Failure({
            _tag: "InvalidPath",
            path: x,
            detail: "an exclusion must be an absolute host path other than /"
          })
        )
      }
    }
    yield* normalizePaths(ctx, options.paths)
  })
