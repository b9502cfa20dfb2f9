/**
 * What `Directory.make` derives from an implementation's primitives: path
 * resolution below a root handle (the layer's one-call `resolveDirectory`
 * where it has one, else the walk from handle to handle), `unlinkAll` from
 * `unlink`, and `ancestors` by `..` from a handle.
 *
 * Internal: `Directory.make` is the public entry; the contract (the
 * interface and its errors) is in `Directory`.
 *
 * @since 0.3.0
 */
import { Effect, Exit, Scope } from "effect"
import type { Directories, Handle, Primitives, Stat } from "../../Directory.ts"
import { type DirectoryError, SystemError } from "../../DirectoryError.ts"
import * as FileName from "../../FileName.ts"
import type { BatchResult, CopyFile, File, Move, OpenedDirectory, ReadFile } from "../../Programs.ts"
import { isRootShaped } from "../hostPath/lexical.ts"
import { run as runProgram } from "../programs/effect.ts"
import * as programs from "../programs/removeTree.ts"
import { fail } from "./errors.ts"
import {
  childPath,
  components,
  endsInSlash,
  isAbsolute,
  isDot,
  isDotDot,
  MaxSymlinks,
  NameMax,
  PathMax
} from "./names.ts"

/** A directory the walk holds: its handle and where it is below the root. */
interface Held {
  readonly handle: Handle
  readonly path: string
}

/** Why a path cannot be resolved at all, before anything is looked at: too long, a component too long, a NUL byte. */
const pathProblem = (path: string, bytes: Uint8Array, names: ReadonlyArray<Uint8Array>): DirectoryError | undefined => {
  const invalid = (errno: string, detail: string) =>
    fail(new SystemError({ _tag: "InvalidName", errno, detail }), "resolve", path)
  if (bytes.includes(0)) return invalid("EINVAL", "the path contains a NUL byte")
  if (bytes.length >= PathMax) return invalid("ENAMETOOLONG", `the path is ${bytes.length} bytes, ${PathMax} or more`)
  const long = names.find((c) => c.length > NameMax)
  if (long !== undefined) return invalid("ENAMETOOLONG", `a component is ${long.length} bytes, more than ${NameMax}`)
  return undefined
}

const notADirectory = (path: string) =>
  fail(new SystemError({ _tag: "NotADirectory", errno: "ENOTDIR", detail: "not a directory" }), "resolve", path)

/**
 * The walk: one component at a time from the handle before it, every
 * directory opened with `O_NOFOLLOW`, so a link swapped in meanwhile is met
 * as a link (and resolved below the root), never followed by the kernel.
 */
const walk = (
  p: Primitives,
  start: ReadonlyArray<Held>,
  names: ReadonlyArray<Uint8Array>,
  options: NonNullable<Parameters<Directories["resolve"]>[2]>,
  trailingSlash: boolean
): ReturnType<Directories["resolve"]> =>
  Effect.gen(function* () {
    const followFinal = options.followFinal ?? false
    const noSymlinks = options.noSymlinks ?? false
    // A trailing slash: the last component must be a directory (a link there is followed).
    let mustDir = trailingSlash
    const stack = [...start]
    let pending = [...names]
    let links = 0
    let retries = 0
    const top = () => stack[stack.length - 1] as Held
    while (pending.length > 0) {
      const c = pending.shift() as Uint8Array
      if (isDot(c)) continue
      if (isDotDot(c)) {
        // As RESOLVE_BENEATH: back up the directories walked, never above the root.
        if (stack.length > 1) stack.pop()
        continue
      }
      const here = top()
      const last = pending.length === 0
      if (last && !followFinal && !mustDir) return { parent: here.handle, name: c, path: childPath(here.path, c) }
      const st = yield* Effect.result(p.stat(here.handle, c))
      if (st._tag === "Failure") {
        const tag = st.failure.reason._tag
        if (last && tag === "NotFound") return { parent: here.handle, name: c, path: childPath(here.path, c) }
        if (tag === "NotFound" && options.makeMissing !== undefined && retries < 8) {
          const made = yield* Effect.result(p.makeDirectory(here.handle, c, options.makeMissing))
          if (made._tag === "Failure" && made.failure.reason._tag !== "Exists") return yield* made.failure
          // Made (or made by someone else meanwhile): looked at again, as anything met on the way.
          retries++
          pending = [c, ...pending]
          continue
        }
        return yield* st.failure
      }
      if (st.success.type === "SymbolicLink") {
        const at = childPath(here.path, c)
        if (noSymlinks) {
          return yield* fail(
            new SystemError({ _tag: "SymbolicLink", errno: "ELOOP", detail: "a link where none may be" }),
            "resolve",
            at
          )
        }
        links++
        if (links > MaxSymlinks) {
          return yield* fail(
            new SystemError({ _tag: "TooManyLinks", errno: "ELOOP", detail: `more than ${MaxSymlinks} links` }),
            "resolve",
            at
          )
        }
        const target = yield* p.readLink(here.handle, c)
        if (target.length === 0)
          return yield* fail(new SystemError({ _tag: "NotFound", detail: "an empty link" }), "resolve", at)
        // A link that ends the path and whose target ends in a slash: what it leads to must be a directory.
        if (last && endsInSlash(target)) mustDir = true
        if (isAbsolute(target)) stack.length = 1
        pending = [...components(target), ...pending]
        continue
      }
      if (last) {
        if (mustDir && st.success.type !== "Directory") return yield* notADirectory(childPath(here.path, c))
        return { parent: here.handle, name: c, path: childPath(here.path, c) }
      }
      if (st.success.type !== "Directory") return yield* notADirectory(childPath(here.path, c))
      const opened = yield* Effect.result(p.openDirectory(here.handle, c))
      if (opened._tag === "Failure") {
        // Swapped between the stat and the open (a link is ENOTDIR here, O_DIRECTORY
        // being set): look at it again, a few times.
        const tag = opened.failure.reason._tag
        if ((tag === "SymbolicLink" || tag === "NotADirectory") && retries < 8) {
          retries++
          pending = [c, ...pending]
          continue
        }
        return yield* opened.failure
      }
      stack.push({ handle: opened.success, path: childPath(here.path, c) })
    }
    const at = top()
    return { parent: at.handle, name: undefined, path: at.path }
  })

/** `Directories.resolve` over `p`: the layer's one call for the directories where it has it, else the walk. */
const resolveWith =
  (p: Primitives): Directories["resolve"] =>
  (root, path, options = {}) =>
    Effect.gen(function* () {
      const bytes = FileName.encode(path)
      const names = components(bytes)
      const problem = pathProblem(path, bytes, names)
      if (problem !== undefined) return yield* problem
      const trailingSlash = endsInSlash(bytes)
      const base = [{ handle: root, path: "/" }]
      const last = names[names.length - 1]
      const fast = p.resolveDirectory
      // One kernel call for the directories; the last component looked at here.
      if (fast !== undefined && last !== undefined && !isDot(last) && !isDotDot(last) && names.length > 1) {
        const fastResult = yield* Effect.result(
          fast(root, names.slice(0, -1), { noSymlinks: options.noSymlinks ?? false })
        )
        // A missing directory to make: the walk makes it.
        const dir =
          fastResult._tag === "Success"
            ? fastResult.success
            : fastResult.failure.reason._tag === "NotFound" && options.makeMissing !== undefined
              ? undefined
              : yield* fastResult.failure
        if (dir !== undefined) {
          const found = { parent: dir.handle, name: last, path: childPath(dir.path, last) }
          if (!(options.followFinal ?? false) && !trailingSlash) return found
          const st = yield* Effect.result(p.stat(dir.handle, last))
          if (st._tag === "Failure") {
            if (st.failure.reason._tag === "NotFound") return found
            return yield* st.failure
          }
          if (st.success.type !== "SymbolicLink") {
            if (trailingSlash && st.success.type !== "Directory") return yield* notADirectory(childPath(dir.path, last))
            return found
          }
          // A link to follow: its `..` needs the directories on the way, which the walk keeps.
        }
      }
      return yield* walk(p, base, names, options, trailingSlash)
    })

/** `Directories.ancestors` over `p`: the stats of `dir` and every directory above it, by `..` from the handle. */
const ancestorsWith =
  (p: Primitives): Directories["ancestors"] =>
  (dir) =>
    Effect.scoped(
      Effect.gen(function* () {
        const out: Array<Stat> = [yield* p.stat(dir)]
        // A directory bind-mounted below itself shows one identity (device and
        // inode, as `Programs.identity`) twice; with the mount id it is a loop only at the root.
        const where = (st: Stat) => `${st.device}:${st.inode}@${st.mountId}`
        const seen = new Set([where(out[0] as Stat)])
        let here = dir
        // Bounded by PATH_MAX / 2: a deeper chain is a loop no kernel makes.
        for (let depth = 0; depth < 2048; depth++) {
          const up = yield* p.openParent(here)
          const st = yield* p.stat(up)
          const id = where(st)
          if (seen.has(id)) return out
          seen.add(id)
          out.push(st)
          here = up
        }
        return out
      })
    )

/** `openBeneath` by the walk: each component held with `openPath`, each before the last a directory, none a link. */
const openBeneathWith =
  (p: Primitives, identify: Directories["identify"]): Directories["openBeneath"] =>
  (root, names) =>
    Effect.gen(function* () {
      const path = (upTo: number) => names.slice(0, upTo).reduce((at: string, n) => childPath(at, n), root.path)
      let at: Handle = root
      let identity = yield* identify(root)
      for (const [i, name] of names.entries()) {
        if (isDot(name) || isDotDot(name)) {
          return yield* fail(
            new SystemError({
              _tag: "CrossDevice",
              errno: "EXDEV",
              detail: "`.` or `..` in a path resolved beneath its root"
            }),
            "openat2",
            path(i + 1)
          )
        }
        const next: Handle = yield* p.openPath(at, name)
        identity = yield* identify(next)
        if (identity.type === "SymbolicLink") {
          return yield* fail(
            new SystemError({ _tag: "SymbolicLink", errno: "ELOOP", detail: "a symbolic link on the way" }),
            "openat2",
            path(i + 1)
          )
        }
        if (i < names.length - 1 && identity.type !== "Directory") {
          return yield* fail(
            new SystemError({ _tag: "NotADirectory", errno: "ENOTDIR", detail: "not a directory" }),
            "openat2",
            path(i + 1)
          )
        }
        at = next
      }
      // The root itself: held again, as the kernel's `openat2(".")` would.
      if (names.length === 0) at = yield* p.openPath(root, dotName).pipe(Effect.catch(() => Effect.succeed(root)))
      return { handle: at, identity }
    })

const dotName = FileName.encode(".")

/** The service from an implementation's primitives (see `Directory.make`). */
export const derive = (p: Primitives): Directories => {
  const unlinkAll: Directories["unlinkAll"] =
    p.unlinkAll ??
    ((dir, names) =>
      Effect.forEach(names, (name) =>
        Effect.match(p.unlink(dir, name), { onFailure: (e) => e, onSuccess: () => undefined })
      ))
  const identify: Directories["identify"] =
    p.identify ??
    ((dir, name) =>
      Effect.map(p.stat(dir, name), (st) => ({
        type: st.type,
        device: st.device,
        inode: st.inode,
        mountId: st.mountId
      })))
  const openBeneath: Directories["openBeneath"] = p.openBeneath ?? openBeneathWith(p, identify)
  const driver = {
    identify,
    openDirectory: p.openDirectory,
    openParent: p.openParent,
    openBeneath,
    list: p.list,
    unlink: p.unlink,
    unlinkAll
  }
  const run: Directories["run"] = (program) => runProgram(driver, program)
  const removeTree: Directories["removeTree"] =
    p.removeTree ??
    ((dir, name, path, options) =>
      runProgram(driver, programs.removeTree({ dir, name, path, events: options?.events, limits: options?.limits })))
  const statAll: Directories["statAll"] =
    p.statAll ??
    ((dir, names) =>
      Effect.forEach(names, (name) =>
        Effect.match(p.stat(dir, name), { onFailure: (e): Stat | DirectoryError => e, onSuccess: (st) => st })
      ))
  // The root is a path trusted once (a decoded host root's): a relative, empty or climbing one would be taken from
  // the working directory or name a place nobody wrote, so it is refused before anything is opened.
  const openRoot: Directories["openRoot"] = (path) =>
    isRootShaped(path)
      ? p.openRoot(path)
      : Effect.fail(
          fail(
            new SystemError({
              _tag: "InvalidName",
              errno: "EINVAL",
              detail: "a root is an absolute path without a `..` component (a decoded host root's)"
            }),
            "open",
            path
          )
        )
  const openDirectories: Directories["openDirectories"] = p.openDirectories ?? openDirectoriesWith(p, statAll)
  return {
    ...p,
    openRoot,
    resolve: resolveWith(p),
    statAll,
    openDirectories,
    readFiles: p.readFiles ?? readFilesWith(p),
    copyFiles: p.copyFiles ?? copyFilesWith(p),
    renameAll: p.renameAll ?? renameAllWith(p),
    unlinkAll,
    ancestors: p.ancestors ?? ancestorsWith(p),
    identify,
    openBeneath,
    removeTree,
    run
  }
}

/**
 * `Directories.openDirectories` from `openDirectory`, `list` and `statAll`:
 * each directory opened in a scope of its own, closed again when its listing
 * fails, else kept until the caller's scope closes.
 */
const openDirectoriesWith =
  (p: Primitives, statAll: Directories["statAll"]): Directories["openDirectories"] =>
  (dir, directories, options) =>
    Effect.gen(function* () {
      const outer = yield* Effect.scope
      const out: Array<OpenedDirectory | DirectoryError> = []
      for (const d of directories) {
        const own = yield* Scope.fork(outer)
        const r = yield* Effect.result(
          Effect.gen(function* () {
            const handle = yield* p.openDirectory(dir, d.name, options)
            const entries = yield* p.list(handle)
            return { handle, entries }
          }).pipe(Scope.provide(own))
        )
        if (r._tag === "Failure") {
          yield* Scope.close(own, Exit.void)
          out.push(r.failure)
          continue
        }
        out.push({ ...r.success, stats: yield* statAll(r.success.handle, d.stat) })
      }
      return out
    })

/** `Directories.readFiles` from `openFile` and the open file's `stat` and `read`. */
const readFilesWith =
  (p: Primitives): Directories["readFiles"] =>
  (dir, names, maxBytes) =>
    Effect.gen(function* () {
      const out: Array<ReadFile | DirectoryError> = []
      let total = 0
      for (const name of names) {
        const r = yield* Effect.result(
          Effect.scoped(
            Effect.gen(function* () {
              const f = yield* p.openFile(dir, name, { mode: "read" })
              const stat = yield* f.stat
              if (total + stat.size > maxBytes) return undefined
              const bytes = new Uint8Array(stat.size)
              let got = 0
              while (got < bytes.length) {
                const n = yield* f.read(bytes.subarray(got), got)
                if (n === 0) break
                got += n
              }
              return { stat, bytes: got === bytes.length ? bytes : bytes.slice(0, got) } satisfies ReadFile
            })
          )
        )
        if (r._tag === "Failure") out.push(r.failure)
        else if (r.success === undefined) break
        else {
          total += r.success.bytes.length
          out.push(r.success)
        }
      }
      return out
    })

/** The most bytes the derived `copyFiles` moves in one read and write. */
const CopyChunk = 1024 * 1024

/** `Directories.copyFiles` from `openFile` and the open files' calls. */
const copyFilesWith =
  (p: Primitives): Directories["copyFiles"] =>
  (from, files) =>
    Effect.gen(function* () {
      const buffer = new Uint8Array(Math.min(CopyChunk, Math.max(1, ...files.map((f) => f.size))))
      for (const [i, c] of files.entries()) {
        const r = yield* Effect.result(Effect.scoped(copyOne(p, from, c, buffer)))
        if (r._tag === "Failure") return { done: i, failure: r.failure } satisfies BatchResult
      }
      return { done: files.length } satisfies BatchResult
    })

const copyOne = (p: Primitives, from: File, c: CopyFile, buffer: Uint8Array) =>
  Effect.gen(function* () {
    const f = yield* p.openFile(c.dir, c.name, { mode: "create", permissions: c.permissions })
    for (let at = 0; at < c.size; ) {
      const want = Math.min(buffer.length, c.size - at)
      const n = yield* from.read(buffer.subarray(0, want), c.offset + at)
      if (n === 0) {
        return yield* fail(
          new SystemError({
            _tag: "Other",
            errno: "EIO",
            detail: `the source ends at ${c.offset + at}, before the file's ${c.size} bytes`
          }),
          "pread",
          childPath(c.dir.path, c.name)
        )
      }
      yield* f.write(buffer.subarray(0, n), at)
      at += n
    }
    const st = yield* f.stat
    if (st.uid !== c.uid || st.gid !== c.gid) yield* f.chown(c.uid, c.gid)
    // After chown, which clears setuid and setgid.
    yield* f.chmod(c.mode)
    if (c.times !== undefined) yield* f.setTimes(c.times.atimeNs, c.times.mtimeNs)
  })

/** `Directories.renameAll` from `rename`. */
const renameAllWith =
  (p: Primitives): Directories["renameAll"] =>
  (moves: ReadonlyArray<Move>) =>
    Effect.gen(function* () {
      for (const [i, m] of moves.entries()) {
        const r = yield* Effect.result(p.rename(m.from, m.fromName, m.to, m.toName))
        if (r._tag === "Failure") return { done: i, failure: r.failure } satisfies BatchResult
      }
      return { done: moves.length } satisfies BatchResult
    })
