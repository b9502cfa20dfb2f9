/**
 * A `FileSystem` that refuses to change anything outside chosen directories,
 * so a test that runs deleting code against a real host (say, with `evil -> /`
 * planted below a temporary host root) cannot delete the machine's own files
 * even when the code under test is wrong. Every mutating call is checked first
 * (the directory it acts in resolved with `realPath`, as the kernel will), and
 * a call outside the fence, a path with `.` or `..` components, or a recursive
 * `remove` of a directory that has entries dies before anything happens.
 * Reads pass through. A guard for tests, not a sandbox: the check and the call
 * are two steps.
 *
 * @since 0.1.0
 */

import { Lexical } from "@hostnode/core/Programs"
import { Effect, FileSystem, Sink } from "effect"
import { FenceViolation } from "./internal/fenceViolation.ts"

const dirname = (path: string): string => {
  const i = path.lastIndexOf("/")
  return i <= 0 ? "/" : path.slice(0, i)
}

const hasDotComponent = (path: string): boolean => path.split("/").some((c) => c === "." || c === "..")

/**
 * Wraps `inner` so that every mutating method dies with a
 * {@link FenceViolation} unless the directory it acts in resolves (following
 * symlinks) to one of `allowed` or below. `allowed` are resolved once here.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make: (
  inner: FileSystem.FileSystem,
  allowed: ReadonlyArray<string>
) => Effect.Effect<FileSystem.FileSystem> = Effect.fn("FencedFileSystem.make")(function* (
  inner: FileSystem.FileSystem,
  allowed: ReadonlyArray<string>
) {
  const fences = yield* Effect.forEach(allowed, (a) => Effect.orDie(inner.realPath(a)))
  const violation = (method: string, path: string, why: string) =>
    Effect.die(new FenceViolation(`${method} ${JSON.stringify(path)} refused: ${why} (fence: ${fences.join(", ")})`))

  // The nearest existing ancestor of `dir`, resolved.
  const resolveExisting = (dir: string): Effect.Effect<string> =>
    inner
      .realPath(dir)
      .pipe(
        Effect.catchTag("PlatformError", (e) =>
          e.reason._tag === "NotFound" && dir !== "/" ? resolveExisting(dirname(dir)) : Effect.die(e)
        )
      )

  const check = (method: string, path: string): Effect.Effect<void> =>
    Effect.gen(function* () {
      if (!path.startsWith("/")) return yield* violation(method, path, "not an absolute path")
      if (hasDotComponent(path)) return yield* violation(method, path, "has a . or .. component")
      const parent = yield* resolveExisting(dirname(path))
      if (!fences.some((f) => Lexical.isWithin(f, parent))) {
        return yield* violation(method, path, `its directory resolves to ${parent}`)
      }
    })

  const checkEmptyDirectory = (path: string): Effect.Effect<void> =>
    Effect.gen(function* () {
      const info = yield* Effect.option(inner.lstat(path))
      if (info._tag === "None" || info.value.type !== "Directory") return
      const entries = yield* Effect.orDie(inner.readDirectory(path))
      if (entries.length > 0) {
        return yield* violation("remove", path, `recursive remove of a directory with ${entries.length} entries`)
      }
    })

  const guarded = <A, E, R>(method: string, paths: ReadonlyArray<string>, run: Effect.Effect<A, E, R>) =>
    Effect.andThen(
      Effect.forEach(paths, (p) => check(method, p), { discard: true }),
      run
    )

  const tempDirectory = (method: string, directory: string | undefined) =>
    directory === undefined
      ? violation(method, "(default temporary directory)", "outside the fence")
      : check(method, `${directory}/x`)

  const fs: FileSystem.FileSystem = {
    ...inner,
    chmod: (path, mode) => guarded("chmod", [path], inner.chmod(path, mode)),
    chown: (path, uid, gid) => guarded("chown", [path], inner.chown(path, uid, gid)),
    copy: (from, to, options) => guarded("copy", [to], inner.copy(from, to, options)),
    copyFile: (from, to) => guarded("copyFile", [to], inner.copyFile(from, to)),
    link: (from, to) => guarded("link", [to], inner.link(from, to)),
    makeDirectory: (path, options) => guarded("makeDirectory", [path], inner.makeDirectory(path, options)),
    makeTempDirectory: (options) =>
      Effect.andThen(tempDirectory("makeTempDirectory", options?.directory), inner.makeTempDirectory(options)),
    makeTempDirectoryScoped: (options) =>
      Effect.andThen(
        tempDirectory("makeTempDirectoryScoped", options?.directory),
        inner.makeTempDirectoryScoped(options)
      ),
    makeTempFile: (options) =>
      Effect.andThen(tempDirectory("makeTempFile", options?.directory), inner.makeTempFile(options)),
    makeTempFileScoped: (options) =>
      Effect.andThen(tempDirectory("makeTempFileScoped", options?.directory), inner.makeTempFileScoped(options)),
    open: (path, options) =>
      options?.flag === undefined || options.flag === "r"
        ? inner.open(path, options)
        : guarded("open", [path], inner.open(path, options)),
    remove: (path, options) =>
      guarded(
        "remove",
        [path],
        options?.recursive === true
          ? Effect.andThen(checkEmptyDirectory(path), inner.remove(path, options))
          : inner.remove(path, options)
      ),
    rename: (from, to) => guarded("rename", [from, to], inner.rename(from, to)),
    sink: (path, options) => Sink.unwrap(Effect.as(check("sink", path), inner.sink(path, options))),
    symlink: (target, path) => guarded("symlink", [path], inner.symlink(target, path)),
    truncate: (path, length) => guarded("truncate", [path], inner.truncate(path, length)),
    utimes: (path, atime, mtime) => guarded("utimes", [path], inner.utimes(path, atime, mtime)),
    writeFile: (path, data, options) => guarded("writeFile", [path], inner.writeFile(path, data, options)),
    writeFileString: (path, data, options) =>
      guarded("writeFileString", [path], inner.writeFileString(path, data, options))
  }
  return fs
})

/**
 * Runs `effect` with the `FileSystem` in context fenced to `allowed` (see
 * {@link make}): the way a test runs code under test that removes things.
 *
 * @example
 * ```ts
 * import { FencedFileSystem } from "@hostnode/test"
 * import { Effect, FileSystem } from "effect"
 *
 * // A cleanup under test may change its temporary directory only: a write anywhere else
 * // (a bug, or a link planted below it) dies before it happens.
 * export const cleanup = (tmp: string) =>
 *   Effect.gen(function* () {
 *     const fs = yield* FileSystem.FileSystem
 *     yield* fs.remove(`${tmp}/cache`, { recursive: true })
 *   }).pipe(FencedFileSystem.within([tmp]))
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const within =
  (allowed: ReadonlyArray<string>) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R | FileSystem.FileSystem> =>
    Effect.gen(function* () {
      const fenced = yield* make(yield* FileSystem.FileSystem, allowed)
      return yield* Effect.provideService(effect, FileSystem.FileSystem, fenced)
    })
