/**
 * The dry-run file system's state and its reads: the overlay over the host,
 * where a path's truth lies (the overlay, the host under another name, or
 * nowhere), link resolution, stat, directory listings, file contents and the
 * mount table as the dry run left it. Boundary: nothing here changes the
 * overlay but `detach`; the changes are `writes.ts`.
 */
import { FileName } from "@hostnode/core"
import * as Layers from "@hostnode/core/Layers"
import { Lexical } from "@hostnode/core/Programs"
import { Effect, type FileSystem, Option } from "effect"
import type * as PlatformError from "effect/PlatformError"
import {
  fsError,
  infoOf,
  MountInfoPath,
  type Node,
  normalize,
  type Options,
  type Place,
  parentOf,
  processIds,
  withoutDetached
} from "./overlay.ts"
import type { DryRunPlan } from "./plan.ts"

const ViewKey: unique symbol = Symbol.for("@hostnode/sim/DryRun/View")

/** The overlay behind a dry-run `FileSystem` (for the dry run's `Directories`), or undefined for another one. */
export const viewOf = (fs: FileSystem.FileSystem): View | undefined =>
  (fs as FileSystem.FileSystem & { readonly [ViewKey]?: View })[ViewKey]

/** `fs` carrying the overlay it serves, for {@link viewOf}. */
export const withView = (fs: FileSystem.FileSystem, view: View): FileSystem.FileSystem =>
  Object.assign(fs, { [ViewKey]: view })

/** The overlay over `real`, and the reads through it. */
export const makeView = (real: FileSystem.FileSystem, plan: DryRunPlan) => {
  const overlay = new Map<string, Node>()
  const owner = processIds()
  const record = (action: string, target: string) => plan.record({ service: "FileSystem", action, target })

  /** Where `path`'s truth lies: its own entry, else the nearest ancestor's, else the host. */
  const place = (raw: string): Place => {
    const path = normalize(raw)
    for (let p: string | undefined = path; p !== undefined; p = parentOf(p)) {
      const dev = plan.uncovered.get(p)
      const node =
        overlay.get(p) ??
        (dev === undefined
          ? undefined
          : plan.uncoveredFiles.has(p)
            ? ({ kind: "file", data: new Uint8Array(0), mode: 0o644, uid: 0, gid: 0 } satisfies Node)
            : ({ kind: "dir", mode: 0o755, uid: 0, gid: 0, dev } satisfies Node))
      if (node === undefined) continue
      if (node.kind === "moved") return { _tag: "Host", path: node.from + path.slice(p.length) }
      if (p === path) return node.kind === "gone" ? { _tag: "Absent" } : { _tag: "Overlay", node }
      // Below something removed, or below a file, link or directory the
      // dry run made: nothing of the host shows through.
      return { _tag: "Absent" }
    }
    return { _tag: "Host", path }
  }

  /** The overlay's own children of `dir` (not removed). */
  const overlayChildren = (dir: string) => {
    const names: Array<string> = []
    for (const [p, node] of overlay) {
      if (node.kind !== "gone" && parentOf(p) === dir) names.push(p.slice(dir === "/" ? 1 : dir.length + 1))
    }
    return names
  }

  /** `infoOf`, with a directory's link count: its own two names and the ".." of each subdirectory. */
  const nodeInfo = (path: string, node: Exclude<Node, { kind: "gone" | "moved" }>): FileSystem.File.Info => {
    if (node.kind !== "dir") return infoOf(node)
    let subdirectories = 0
    for (const [p, child] of overlay) if (child.kind === "dir" && parentOf(p) === path) subdirectories++
    return { ...infoOf(node), nlink: Option.some(BigInt(2 + subdirectories)) }
  }

  /** Removes every overlay entry at or below `path` and returns them, keyed relative to it. */
  const detach = (path: string) => {
    const taken: Array<readonly [string, Node]> = []
    for (const [p, node] of overlay) {
      if (Lexical.covers(path, p)) {
        taken.push([p.slice(path.length), node])
        overlay.delete(p)
      }
    }
    return taken
  }

  /** ENOTDIR when a proper ancestor of `path` is a file the dry run made, else ENOENT: why an Absent path is absent. */
  const absentCode = (raw: string): "ENOENT" | "ENOTDIR" => {
    const path = normalize(raw)
    for (let p = parentOf(path); p !== undefined; p = parentOf(p)) {
      const node = overlay.get(p)
      if (node !== undefined) return node.kind === "file" ? "ENOTDIR" : "ENOENT"
    }
    return "ENOENT"
  }
  const absent = (method: string, syscall: string, path: string) => fsError(method, syscall, path, absentCode(path))

  /** `path` with the trailing slash of `raw`, which the host must see (it demands a directory). */
  const mustDirSuffix = (raw: string, path: string) =>
    raw.length > 1 && raw.endsWith("/") && path !== "/" ? `${path}/` : path

  /** A path with a trailing slash names a directory: anything else there is ENOTDIR, as in a lookup. */
  const mustBeDirectory = (path: string, info: FileSystem.File.Info, method: string, syscall: string) =>
    path.length > 1 && path.endsWith("/") && info.type !== "Directory"
      ? Effect.fail(fsError(method, syscall, path, "ENOTDIR"))
      : Effect.succeed(info)

  const access = (path: string, options?: Options<"access">): Effect.Effect<void, PlatformError.PlatformError> =>
    Effect.flatMap(follow(path, "access", "access"), (p) => {
      const at = place(p)
      return at._tag === "Absent"
        ? Effect.fail(absent("access", "access", path))
        : at._tag === "Overlay"
          ? mustBeDirectory(path, infoOf(at.node), "access", "access").pipe(Effect.asVoid)
          : real.access(at.path, options)
    })

  // `exists` as FileSystem.make derives it: `access`, false only for NotFound.
  const exists = (path: string): Effect.Effect<boolean, PlatformError.PlatformError> =>
    access(path).pipe(
      Effect.as(true),
      Effect.catchTag("PlatformError", (e) => (e.reason._tag === "NotFound" ? Effect.succeed(false) : Effect.fail(e)))
    )

  const lstat = (path: string): Effect.Effect<FileSystem.File.Info, PlatformError.PlatformError> =>
    Effect.flatMap(noFollow(path, "lstat", "lstat"), (p) => {
      const at = place(p)
      return at._tag === "Absent"
        ? Effect.fail(absent("lstat", "lstat", path))
        : at._tag === "Overlay"
          ? mustBeDirectory(path, nodeInfo(p, at.node), "lstat", "lstat")
          : real.lstat(mustDirSuffix(path, at.path))
    })

  /**
   * Resolves `raw` through the overlay's links, component by component as
   * a lookup does (a link in the middle of a path is followed; "." and
   * ".." are taken on the resolved path; at most 40 links), to the
   * literal path `place` understands. The final link is followed when
   * `followLast` or when the path ends in a slash. The host's own links
   * are the host's business: a host path is handed to it as it is.
   * Suspended, as every read of the overlay is: an operation may build a
   * read once and run it after the dry run changed what it reads.
   */
  const resolve = (
    raw: string,
    followLast: boolean,
    method: string,
    syscall: string
  ): Effect.Effect<string, PlatformError.PlatformError> =>
    Effect.suspend(() => {
      const mustDir = raw.length > 1 && raw.endsWith("/")
      const absolutePath = raw.startsWith("/") ? raw : `${process.cwd()}/${raw}`
      let names = absolutePath.split("/").filter((n) => n !== "")
      let done: Array<string> = []
      let links = 0
      while (names.length > 0) {
        const name = names[0] as string
        names = names.slice(1)
        if (name === ".") continue
        if (name === "..") {
          done.pop()
          continue
        }
        done.push(name)
        const at = place(`/${done.join("/")}`)
        if (at._tag !== "Overlay") continue
        const last = names.length === 0
        if (at.node.kind === "link" && (!last || followLast || mustDir)) {
          if (++links > 40) return Effect.fail(fsError(method, syscall, raw, "ELOOP"))
          done.pop()
          if (at.node.target.startsWith("/")) done = []
          names = [...at.node.target.split("/").filter((n) => n !== ""), ...names]
          continue
        }
        if (at.node.kind === "file" && !last) return Effect.fail(fsError(method, syscall, raw, "ENOTDIR"))
      }
      return Effect.succeed(`/${done.join("/")}`)
    })
  const follow = (path: string, method: string, syscall: string) => resolve(path, true, method, syscall)
  const noFollow = (path: string, method: string, syscall: string) => resolve(path, false, method, syscall)

  const statAs = (method: string, syscall: string) => (path: string) =>
    Effect.flatMap(follow(path, method, syscall), (p) => {
      const at = place(p)
      return at._tag === "Absent"
        ? Effect.fail(absent(method, syscall, path))
        : at._tag === "Overlay"
          ? mustBeDirectory(path, nodeInfo(p, at.node), method, syscall)
          : real.stat(mustDirSuffix(path, at.path))
    })
  const stat = statAs("stat", "stat")

  const readDirectory = (
    path: string,
    options?: Options<"readDirectory">,
    method = "readDirectory"
  ): Effect.Effect<Array<string>, PlatformError.PlatformError> => {
    const listed = (dir: string): Effect.Effect<Array<string>, PlatformError.PlatformError> => {
      const at = place(dir)
      if (at._tag === "Absent") return Effect.fail(absent(method, "scandir", path))
      if (at._tag === "Overlay") {
        return at.node.kind === "dir"
          ? Effect.succeed(overlayChildren(dir))
          : Effect.fail(fsError(method, "scandir", path, "ENOTDIR"))
      }
      return Effect.map(real.readDirectory(at.path), (names) => {
        const shown = names.filter((name) => place(Lexical.child(dir, name))._tag !== "Absent")
        const added = overlayChildren(dir).filter((name) => !shown.includes(name))
        return [...shown, ...added]
      })
    }
    return follow(path, method, "scandir").pipe(
      Effect.flatMap((dir) => Effect.map(listed(dir), (names) => ({ dir, names }))),
      Effect.flatMap(({ dir, names }) =>
        options?.recursive !== true
          ? Effect.succeed(names)
          : Effect.map(
              Effect.forEach(names, (name) =>
                stat(Lexical.child(dir, name)).pipe(
                  Effect.flatMap((info) =>
                    info.type === "Directory"
                      ? Effect.map(readDirectory(Lexical.child(dir, name), options), (below) => [
                          name,
                          ...below.map((b) => `${name}/${b}`)
                        ])
                      : Effect.succeed([name])
                  ),
                  Effect.orElseSucceed(() => [name])
                )
              ),
              (lists) => lists.flat()
            )
      )
    )
  }

  const readDirectoryEntries = (path: string) =>
    Effect.flatMap(readDirectory(path, undefined, "readDirectoryEntries"), (names) =>
      Effect.forEach(names, (name) =>
        Effect.map(
          lstat(Lexical.child(normalize(path), name)),
          (info): FileSystem.DirectoryEntry => ({ name, type: info.type })
        )
      )
    )

  /** The host's mount table read through the dry run: detached mounts are gone. */
  const mountTable = (path: string): Effect.Effect<Uint8Array, PlatformError.PlatformError> =>
    real.readFileString(path).pipe(
      Effect.flatMap((text) =>
        plan.detached.size === 0
          ? Effect.succeed(text)
          : Layers.parseMountInfo(text, path).pipe(
              Effect.map((table) => Layers.renderMountInfo(withoutDetached(table, plan.detached, plan.detachedAs))),
              // An unparsable table is returned as read: the operation reports it.
              Effect.orElseSucceed(() => text)
            )
      ),
      Effect.map(FileName.encode)
    )

  const readBytes = (path: string): Effect.Effect<Uint8Array, PlatformError.PlatformError> => {
    if (MountInfoPath.test(normalize(path))) return mountTable(path)
    return Effect.flatMap(follow(path, "readFile", "open"), (p) => {
      const at = place(p)
      if (at._tag === "Absent") return Effect.fail(absent("readFile", "open", path))
      if (at._tag === "Overlay") {
        return at.node.kind === "file"
          ? path.endsWith("/")
            ? Effect.fail(fsError("readFile", "open", path, "ENOTDIR"))
            : Effect.succeed(at.node.data.slice())
          : Effect.fail(fsError("readFile", "read", path, "EISDIR"))
      }
      return real.readFile(at.path)
    })
  }

  const readLink = (path: string) =>
    Effect.flatMap(noFollow(path, "readLink", "readlink"), (p) => {
      const at = place(p)
      return at._tag === "Absent"
        ? Effect.fail(absent("readLink", "readlink", path))
        : at._tag === "Overlay"
          ? at.node.kind === "link"
            ? Effect.succeed(at.node.target)
            : Effect.fail(fsError("readLink", "readlink", path, "EINVAL"))
          : real.readLink(at.path)
    })

  const realPath = (path: string) =>
    Effect.flatMap(follow(path, "realPath", "realpath"), (p) => {
      const at = place(p)
      return at._tag === "Absent"
        ? Effect.fail(absent("realPath", "realpath", path))
        : at._tag === "Overlay"
          ? Effect.as(mustBeDirectory(path, infoOf(at.node), "realPath", "realpath"), p)
          : at.path === p
            ? real.realPath(p)
            : Effect.succeed(p)
    })

  return {
    real,
    plan,
    overlay,
    owner,
    record,
    place,
    overlayChildren,
    nodeInfo,
    detach,
    absentCode,
    absent,
    mustDirSuffix,
    mustBeDirectory,
    access,
    exists,
    lstat,
    resolve,
    follow,
    noFollow,
    statAs,
    stat,
    readDirectory,
    readDirectoryEntries,
    mountTable,
    readBytes,
    readLink,
    realPath
  }
}

/** What {@link makeView} returns. */
export type View = ReturnType<typeof makeView>
