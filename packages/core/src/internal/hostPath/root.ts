/**
 * Decoding a host root: the real host, or an absolute path to an existing
 * directory, made canonical once (`realpath`, or a resolution below the
 * mount table's root for a root in another mount namespace), with the mount
 * table that describes it.
 *
 * Internal: `HostPath.decodeRoot` is the public entry; the `HostRoot` it
 * returns is declared there.
 *
 * @since 0.3.0
 */
import { Effect, type FileSystem } from "effect"
import type { PlatformError } from "effect/PlatformError"
import type { HostRoot } from "../../HostPath.ts"
import { type HostPathError, Refused } from "../../HostPathError.ts"
import { DefaultMountInfo } from "../../Programs.ts"
import { refusal } from "./errors.ts"
import { clean, isRootShaped, isWithin, join, relative } from "./lexical.ts"
import type { RootInput } from "./nodeRoot.ts"
import { outcome, walk } from "./resolve.ts"

/** What marks a decoded `HostRoot`. */
export const HostRootTypeId: unique symbol = Symbol.for("@hostnode/core/HostPath/HostRoot")

// `/proc/<pid>/root` is a magic link to another process's root; realpath would
// resolve it as a link to `/` and lose the namespace.
const procRoot = /^\/proc\/(\d+)\/root(?=\/|$)/

const rootError = (given: string, reason: HostPathError["reason"]) => refusal(reason, given)

/** What is wrong with `path` as an absolute path, or `undefined`. */
export const absoluteProblem = (path: string, what: string): HostPathError["reason"] | undefined => {
  if (path === "") return new Refused({ _tag: "InvalidPath", detail: `${what} is empty` })
  if (path.includes("\0")) return new Refused({ _tag: "InvalidPath", detail: `${what} contains a NUL byte` })
  if (!path.startsWith("/")) return new Refused({ _tag: "NotAbsolute", detail: `${what} is not an absolute path` })
  return undefined
}

/** Decodes a host root (see `HostPath.decodeRoot`). */
export const decode = (fs: FileSystem.FileSystem, input: string | RootInput): Effect.Effect<HostRoot, HostPathError> =>
  Effect.gen(function* () {
    const given = typeof input === "string" ? input : input.path
    // A root whose process has exited is refused before anything is looked up below it.
    const gone = typeof input === "string" || input.gone === undefined ? undefined : yield* input.gone
    if (gone !== undefined) return yield* rootError(given, gone)
    const wanted = given === "" ? "/" : given
    const problem = absoluteProblem(wanted, "the host root")
    if (problem !== undefined) return yield* rootError(given, problem)
    // A root that climbs names a place the caller did not write (as filepath-securejoin refuses an unsafe root):
    // `/srv/node/../etc` is `/srv/etc`, never what was meant. `.` and repeated or trailing slashes are cleaned.
    if (!isRootShaped(wanted)) {
      return yield* rootError(
        given,
        new Refused({ _tag: "InvalidPath", detail: `the host root has a ".." component: give the directory itself` })
      )
    }
    const cleaned = clean(wanted)
    const proc = procRoot.exec(cleaned)
    const explicitTable = typeof input === "string" ? undefined : input.tableRoot
    let tableRoot = proc === null ? "/" : proc[0]
    if (explicitTable !== undefined && explicitTable !== "") {
      const p = absoluteProblem(explicitTable, "the mount table's root")
      if (p !== undefined) return yield* rootError(given, p)
      tableRoot = clean(explicitTable)
    }
    if (!isWithin(tableRoot, cleaned)) {
      return yield* rootError(
        given,
        new Refused({
          _tag: "OutsideTable",
          detail: `the host root is not below the mount table's root ${tableRoot}${proc === null ? "" : ` (it is below ${proc[0]}, another mount namespace)`}`
        })
      )
    }
    // A failed call on `full` (which follows links): missing, or unreadable (a loop on the way included).
    const failed = (what: string, full: string) => (e: PlatformError) =>
      Effect.flatMap(outcome(fs, full, e), (o) =>
        Effect.fail(
          rootError(
            given,
            o === "Missing"
              ? new Refused({ _tag: "NotFound", detail: `${what} does not exist` })
              : new Refused({ _tag: "Unreadable", detail: `${what}: ${e.message}` })
          )
        )
      )
    let path: string
    if (tableRoot === "/" && proc === null) {
      path = yield* fs.realPath(cleaned).pipe(
        Effect.map(clean),
        Effect.catchTag("PlatformError", (e) =>
          Effect.flatMap(outcome(fs, cleaned, e), (o) =>
            Effect.fail(
              rootError(
                given,
                // realpath's ELOOP is a loop in the root's own links.
                o === "Loop"
                  ? new Refused({ _tag: "SymlinkLoop", detail: `the host root's links never end: ${e.message}` })
                  : o === "Missing"
                    ? new Refused({ _tag: "NotFound", detail: "the host root does not exist" })
                    : new Refused({ _tag: "Unreadable", detail: `the host root: ${e.message}` })
              )
            )
          )
        )
      )
    } else {
      const tableInfo = yield* fs
        .stat(tableRoot)
        .pipe(Effect.catchTag("PlatformError", failed(`the mount table's root ${tableRoot}`, tableRoot)))
      if (tableInfo.type !== "Directory") {
        return yield* rootError(
          given,
          new Refused({ _tag: "NotADirectory", detail: `the mount table's root ${tableRoot} is not a directory` })
        )
      }
      path = yield* walk(fs, tableRoot, relative(tableRoot, cleaned) ?? "/", { followFinal: true }, true).pipe(
        Effect.mapError((e) => rootError(given, e.reason))
      )
    }
    const info = yield* fs.stat(path).pipe(Effect.catchTag("PlatformError", failed(`the host root ${path}`, path)))
    if (info.type !== "Directory") {
      return yield* rootError(
        given,
        new Refused({ _tag: "NotADirectory", detail: `the host root ${path} is a ${info.type}, not a directory` })
      )
    }
    const mountInfo = typeof input === "string" ? undefined : input.mountInfo
    return {
      [HostRootTypeId]: HostRootTypeId,
      given,
      path,
      mountInfo:
        mountInfo !== undefined && mountInfo !== ""
          ? mountInfo
          : proc !== null && tableRoot === proc[0]
            ? `/proc/${proc[1]}/mountinfo`
            : DefaultMountInfo,
      tableRoot,
      isReal: path === "/" && tableRoot === "/",
      identity: typeof input !== "string" && input.identity !== undefined ? input.identity : path,
      ...(typeof input !== "string" && input.gone !== undefined ? { gone: input.gone } : {})
    } satisfies HostRoot
  })

/**
 * A host root as given, for messages, logs and span attributes, decoded or
 * not (a string a caller without types passed): the decoded root's path, `/`
 * for the real host, else the value.
 */
export const rootLabel = (hostRoot: string | HostRoot | undefined): string =>
  isHostRoot(hostRoot) ? hostRoot.path : hostRoot === undefined || hostRoot === "" ? "/" : String(hostRoot)

/**
 * True when `u` is a decoded {@link HostRoot}.
 */
export const isHostRoot = (u: unknown): u is HostRoot => typeof u === "object" && u !== null && HostRootTypeId in u

/**
 * Host path `hostPath` (absolute) as a full path of this process, below `root`: lexical, for paths never followed.
 */
export const fullPath = (root: HostRoot, hostPath: string): string => join(root.path, hostPath)

/**
 * A full path of this process as a host path of `root`, or `undefined` when it lies outside the root.
 */
export const hostPathOf = (root: HostRoot, full: string): string | undefined => relative(root.path, full)

/**
 * A full path of this process as `root`'s mount table names it, or `undefined` when the table cannot name it.
 */
export const tablePathOf = (root: HostRoot, full: string): string | undefined => relative(root.tableRoot, full)

/**
 * A path of `root`'s mount table as a full path of this process.
 */
export const fromTablePath = (root: HostRoot, tablePath: string): string => join(root.tableRoot, tablePath)

/**
 * A host path that passed {@link checkPath}: as given, and checked.
 */
export interface Checked {
  /** The path exactly as the caller gave it (not cleaned: `..` is resolved against what is there). */
  readonly given: string
  readonly path: string
}

/**
 * Checks a host path given by a caller without looking at the tree: it must
 * be non-empty, absolute and free of NUL bytes, and not `/` (unless
 * `allowRoot`). What it resolves to is for the caller to find out, once,
 * through directory handles (`Directory.resolve`).
 */
export const checkPath: (
  root: HostRoot,
  path: string,
  options?: { readonly allowRoot?: boolean | undefined; readonly what?: string | undefined }
) => Effect.Effect<Checked, HostPathError> = Effect.fn("HostRoots.checkPath")(function* (
  root: HostRoot,
  path: string,
  options?: { readonly allowRoot?: boolean | undefined; readonly what?: string | undefined }
) {
  const what = options?.what ?? "path"
  const problem = absoluteProblem(path, `the ${what}`)
  if (problem !== undefined) return yield* refusal(problem, root.given, path)
  if (clean(path) === "/" && !(options?.allowRoot ?? false)) {
    return yield* refusal(
      new Refused({
        _tag: "IsHostRoot",
        detail: `the ${what} is the host root itself; pass allowRoot to mean the whole host`
      }),
      root.given,
      path
    )
  }
  return { given: path, path }
})
