/**
 * The dry-run file system's changes: open, write, remove, mkdir, rename,
 * links, attributes, temporary files and truncation, each recorded in the
 * plan and kept in the overlay, failing as Node's layer fails. Boundary: the
 * reads they check against are `view.ts`; `copy` is `copy.ts`.
 */
import { tmpdir } from "node:os"
import { Lexical } from "@hostnode/core/Programs"
import { Effect, type FileSystem, Option, Random } from "effect"
import * as PlatformError from "effect/PlatformError"
import {
  type Access,
  fsError,
  infoOf,
  MountInfoPath,
  memoryFile,
  type Node,
  normalize,
  type Options,
  parentOf,
  TempAlphabet
} from "./overlay.ts"
import type { View } from "./view.ts"

/** The changes, over `view`. */
export const makeWrites = (view: View) => {
  const {
    real,
    overlay,
    owner,
    record,
    place,
    detach,
    absentCode,
    absent,
    mustDirSuffix,
    exists,
    lstat,
    follow,
    noFollow,
    statAs,
    stat,
    readDirectory,
    readBytes,
    readLink
  } = view
  /** Fails unless the parent of `path` is an existing directory (as open, mkdir and symlink would). */
  const parentIsDirectory = (path: string, method: string, syscall: string) => {
    const parent = parentOf(normalize(path))
    if (parent === undefined) return Effect.void
    return stat(parent).pipe(
      Effect.catchTag("PlatformError", (e) =>
        Effect.fail(fsError(method, syscall, path, e.reason._tag === "BadResource" ? "ENOTDIR" : absentCode(path)))
      ),
      Effect.flatMap((info) =>
        info.type === "Directory" ? Effect.void : Effect.fail(fsError(method, syscall, path, "ENOTDIR"))
      )
    )
  }

  /** The group of a new entry in `path`'s directory: the directory's own when it is setgid, as on Linux. */
  const inherited = (path: string) =>
    Effect.map(Effect.option(stat(parentOf(normalize(path)) ?? "/")), (parent) =>
      Option.isSome(parent) && (parent.value.mode & 0o2000) !== 0
        ? { gid: Option.getOrElse(parent.value.gid, () => owner.gid), setgid: true }
        : { gid: owner.gid, setgid: false }
    )

  /** What a descriptor opened with `flag` may do. */
  const accessOf = (flag: FileSystem.OpenFlag, directory: boolean): Access => ({
    readable: flag === "r" || flag.endsWith("+"),
    writable: flag !== "r",
    append: flag.startsWith("a"),
    directory
  })

  /**
   * The overlay's own copy of the file at `target`, made on the first
   * write (the host's bytes, mode and owner, or a new empty file).
   */
  const materialize = (target: string, keep: boolean, mode: number | undefined) =>
    Effect.gen(function* () {
      const at = place(target)
      if (at._tag === "Overlay" && at.node.kind === "file") {
        if (!keep) at.node.data = new Uint8Array(0)
        return at.node
      }
      const before = at._tag === "Host" ? yield* stat(target).pipe(Effect.option) : Option.none()
      const group = yield* inherited(target)
      const node: Extract<Node, { kind: "file" }> = Option.isNone(before)
        ? {
            kind: "file",
            data: new Uint8Array(0),
            mode: (mode ?? 0o666) & 0o7777 & ~0o022,
            ...owner,
            gid: group.gid
          }
        : {
            kind: "file",
            data: keep ? yield* readBytes(target) : new Uint8Array(0),
            mode: before.value.mode & 0o7777,
            uid: Option.getOrElse(before.value.uid, () => owner.uid),
            gid: Option.getOrElse(before.value.gid, () => owner.gid)
          }
      overlay.set(normalize(target), node)
      return node
    })

  const openAs = (method: string) => (path: string, options?: Options<"open">) =>
    Effect.gen(function* () {
      const flag = options?.flag ?? "r"
      if (MountInfoPath.test(normalize(path)) && flag === "r") {
        // The mount table as the dry run sees it, for every reader (`stream` too).
        const data = yield* readBytes(path)
        const node = { kind: "file" as const, data, mode: 0o444, uid: 0, gid: 0 }
        return memoryFile(node, () => infoOf(node), accessOf(flag, false))
      }
      const at0 = place(yield* noFollow(path, method, "open"))
      if (options?.noFollow === true && at0._tag === "Overlay" && at0.node.kind === "link") {
        return yield* fsError(method, "open", path, "ELOOP")
      }
      // O_EXCL does not follow a final link: the link itself exists.
      if (flag.includes("x") && Option.isSome(yield* lstat(path).pipe(Effect.option))) {
        return yield* fsError(method, "open", path, "EEXIST")
      }
      const target = yield* follow(path, method, "open")
      const at = place(target)
      if (flag === "r") {
        if (at._tag === "Absent") return yield* absent(method, "open", path)
        if (at._tag === "Host") return yield* real.open(mustDirSuffix(path, at.path), options)
        const node = at.node
        if (node.kind === "link") return yield* fsError(method, "open", path, "ELOOP")
        if (node.kind === "file" && path.endsWith("/")) return yield* fsError(method, "open", path, "ENOTDIR")
        const bytes = node.kind === "file" ? node : { data: new Uint8Array(0) }
        return memoryFile(bytes, () => infoOf(node), accessOf(flag, node.kind === "dir"))
      }
      // Opened for writing: from here on the file lives in the overlay.
      const present = yield* exists(target)
      if (!present && !(flag.startsWith("w") || flag.startsWith("a"))) return yield* absent(method, "open", path)
      if (path.endsWith("/")) return yield* fsError(method, "open", path, "EISDIR")
      if (!present) yield* parentIsDirectory(target, method, "open")
      const before = present ? yield* stat(target) : undefined
      if (before?.type === "Directory") return yield* fsError(method, "open", path, "EISDIR")
      const node = yield* materialize(target, present && !flag.startsWith("w"), options?.mode)
      yield* record(present ? "write" : "create and write", target)
      return memoryFile(node, () => infoOf(node), accessOf(flag, false))
    })
  const open = openAs("open")

  const writeFile = (path: string, data: Uint8Array, options?: Options<"open">) =>
    Effect.scoped(
      Effect.flatMap(openAs("writeFile")(path, { flag: options?.flag ?? "w", mode: options?.mode }), (f) =>
        f.writeAll(data)
      )
    )

  /** One name of an overlay file fewer (what an open descriptor's stat shows). */
  const unlinked = (path: string) => {
    const node = overlay.get(path)
    if (node?.kind === "file" || node?.kind === "link") node.nlink = (node.nlink ?? 1) - 1
  }

  const remove = (path: string, options?: Options<"remove">) =>
    Effect.gen(function* () {
      const target = yield* noFollow(path, "remove", "lstat")
      const info = yield* Effect.result(lstat(target))
      if (info._tag === "Failure") {
        const code = absentCode(target)
        return options?.force === true && code === "ENOENT" ? undefined : yield* fsError("remove", "lstat", path, code)
      }
      // Node's fs.rm refuses any directory without `recursive`, empty or not.
      if (info.success.type === "Directory" && options?.recursive !== true) {
        return yield* fsError("remove", "rm", path, "ERR_FS_EISDIR")
      }
      unlinked(target)
      detach(target)
      overlay.set(target, { kind: "gone" })
      yield* record(
        info.success.type === "Directory" && options?.recursive === true ? "remove recursively" : "remove",
        target
      )
    })

  const makeDirectory = (path: string, options?: Options<"makeDirectory">) =>
    Effect.gen(function* () {
      const target = yield* noFollow(path, "makeDirectory", "mkdir")
      if (Option.isSome(yield* lstat(target).pipe(Effect.option))) {
        const info = yield* stat(target).pipe(Effect.option)
        if (options?.recursive === true && Option.isSome(info) && info.value.type === "Directory") return
        return yield* fsError("makeDirectory", "mkdir", path, "EEXIST")
      }
      const missing: Array<string> = [target]
      if (options?.recursive === true) {
        for (let p = parentOf(target); p !== undefined && !(yield* exists(p)); p = parentOf(p)) missing.unshift(p)
      }
      yield* parentIsDirectory(missing[0] ?? target, "makeDirectory", "mkdir")
      for (const p of missing) {
        const group = yield* inherited(p)
        const mode = ((options?.mode ?? 0o777) & 0o1777 & ~0o022) | (group.setgid ? 0o2000 : 0)
        overlay.set(p, { kind: "dir", mode, ...owner, gid: group.gid })
        yield* record("make directory", p)
      }
    })

  const rename = (from: string, to: string) =>
    Effect.gen(function* () {
      const source = yield* noFollow(from, "rename", "rename")
      const target = yield* noFollow(to, "rename", "rename")
      const at = place(source)
      if (at._tag === "Absent") return yield* absent("rename", "rename", from)
      const info = yield* lstat(from).pipe(
        Effect.mapError((e) =>
          fsError("rename", "rename", from, e.reason._tag === "BadResource" ? "ENOTDIR" : "ENOENT")
        )
      )
      if (source !== target && Lexical.covers(source, target)) {
        return yield* fsError("rename", "rename", from, "EINVAL")
      }
      yield* parentIsDirectory(target, "rename", "rename")
      const existing = yield* lstat(target).pipe(Effect.option)
      if (Option.isSome(existing)) {
        const here = place(target)
        // Two names of one inode: rename(2) does nothing.
        if (source === target || (at._tag === "Overlay" && here._tag === "Overlay" && here.node === at.node)) return
        if (info.type === "Directory" && existing.value.type !== "Directory") {
          return yield* fsError("rename", "rename", from, "ENOTDIR")
        }
        if (info.type !== "Directory" && existing.value.type === "Directory") {
          return yield* fsError("rename", "rename", from, "EISDIR")
        }
        if (existing.value.type === "Directory" && (yield* readDirectory(target)).length > 0) {
          return yield* fsError("rename", "rename", from, "ENOTEMPTY")
        }
        unlinked(target)
      }
      const moved = detach(source)
      detach(target)
      if (at._tag === "Host" && !moved.some(([rel]) => rel === "")) {
        overlay.set(target, { kind: "moved", from: at.path })
      }
      for (const [rel, node] of moved) overlay.set(target + rel, node)
      overlay.set(source, { kind: "gone" })
      yield* record(`rename ${source} to`, target)
    })

  const symlink = (target: string, path: string) =>
    Effect.gen(function* () {
      const at = yield* noFollow(path, "symlink", "symlink")
      if (Option.isSome(yield* lstat(at).pipe(Effect.option))) {
        return yield* fsError("symlink", "symlink", path, "EEXIST")
      }
      yield* parentIsDirectory(at, "symlink", "symlink")
      overlay.set(at, { kind: "link", target })
      yield* record(`symlink to ${target} at`, at)
    })

  /** A hard link: the overlay's node gets a second name (a host file is copied into the overlay first). */
  const link = (from: string, to: string) =>
    Effect.gen(function* () {
      const source = yield* noFollow(from, "link", "link")
      const info = yield* lstat(source).pipe(Effect.mapError(() => absent("link", "link", from)))
      if (info.type === "Directory") return yield* fsError("link", "link", from, "EPERM")
      const target = yield* noFollow(to, "link", "link")
      if (Option.isSome(yield* lstat(target).pipe(Effect.option))) {
        return yield* fsError("link", "link", to, "EEXIST")
      }
      yield* parentIsDirectory(target, "link", "link")
      const at = place(source)
      const node: Node =
        info.type === "SymbolicLink"
          ? at._tag === "Overlay"
            ? at.node
            : { kind: "link", target: yield* readLink(source) }
          : yield* materialize(source, true, undefined)
      if (node.kind !== "dir") node.nlink = (node.nlink ?? 1) + 1
      overlay.set(target, node)
      yield* record(`hard-link ${source} at`, target)
    })

  /** chmod/chown: an overlay node changes; a host path only gets the step recorded. */
  const setAttributes = (
    method: string,
    action: string,
    path: string,
    change: (node: Extract<Node, { kind: "file" | "dir" }>) => void
  ) =>
    Effect.flatMap(follow(path, method, method), (p) => {
      const at = place(p)
      if (at._tag === "Absent") return Effect.fail(absent(method, method, path))
      if (at._tag === "Overlay" && at.node.kind !== "link") change(at.node)
      return record(action, normalize(p))
    })

  /** `prefix` followed by six random letters and digits, as mkdtemp(3) names. */
  const tempName = (directory: string, prefix: string) =>
    Effect.map(
      Effect.forEach(Array.from({ length: 6 }), () =>
        Random.nextIntBetween(0, TempAlphabet.length, { halfOpen: true })
      ),
      (picks) => `${directory}/${prefix}${picks.map((i) => TempAlphabet[i]).join("")}`
    )

  const makeTempDirectoryAs =
    (method: string) => (options?: { readonly directory?: string | undefined; readonly prefix?: string | undefined }) =>
      Effect.gen(function* () {
        const directory = normalize(options?.directory ?? tmpdir())
        const dir = yield* stat(directory).pipe(Effect.option)
        if (Option.isNone(dir) || dir.value.type !== "Directory") {
          return yield* absent(method, "mkdtemp", `${directory}/${options?.prefix ?? ""}XXXXXX`)
        }
        let name = yield* tempName(directory, options?.prefix ?? "")
        while (yield* exists(name)) name = yield* tempName(directory, options?.prefix ?? "")
        overlay.set(name, { kind: "dir", mode: 0o700, ...owner })
        yield* record("make temporary directory", name)
        return name
      })

  const makeTempFileAs =
    (method: string) =>
    (options?: {
      readonly directory?: string | undefined
      readonly prefix?: string | undefined
      readonly suffix?: string | undefined
    }) =>
      Effect.gen(function* () {
        // As Node's layer does: a fresh directory holding one empty file.
        const dir = yield* makeTempDirectoryAs(method)(options)
        const name = yield* tempName(dir, "")
        const file = `${name}${options?.suffix ?? ""}`
        overlay.set(file, { kind: "file", data: new Uint8Array(0), mode: 0o644, ...owner })
        yield* record("make temporary file", file)
        return file
      })

  const removeScoped = (path: string) => Effect.orDie(remove(path, { recursive: true, force: true }))

  const truncate = (path: string, length?: number) =>
    Effect.gen(function* () {
      const target = normalize(yield* follow(path, "truncate", "open"))
      const info = yield* statAs("truncate", "open")(target)
      if (info.type === "Directory") return yield* fsError("truncate", "open", path, "EISDIR")
      const node = yield* materialize(target, true, undefined)
      const size = length ?? 0
      const next = new Uint8Array(size)
      next.set(node.data.subarray(0, Math.min(size, node.data.length)))
      node.data = next
      yield* record("truncate", target)
    })

  const copyFile = (from: string, to: string) =>
    Effect.gen(function* () {
      const info = yield* statAs("copyFile", "copyfile")(from)
      if (info.type === "Directory") return yield* fsError("copyFile", "copyfile", from, "EISDIR")
      const data = yield* readBytes(from)
      const target = normalize(yield* follow(to, "copyFile", "copyfile"))
      const existing = yield* stat(target).pipe(Effect.option)
      if (Option.isSome(existing) && existing.value.type === "Directory") {
        return yield* fsError("copyFile", "copyfile", to, "EISDIR")
      }
      if (Option.isNone(existing)) yield* parentIsDirectory(target, "copyFile", "copyfile")
      const node = yield* materialize(target, false, undefined)
      node.data = data
      node.mode = info.mode & 0o7777
      node.uid = Option.getOrElse(info.uid, () => owner.uid)
      node.gid = Option.getOrElse(info.gid, () => owner.gid)
      yield* record(`copy ${normalize(from)} to`, target)
    })

  const chmod = (path: string, mode: number) =>
    mode < 0 || !Number.isInteger(mode)
      ? Effect.fail(PlatformError.badArgument({ module: "FileSystem", method: "chmod", description: "invalid mode" }))
      : setAttributes("chmod", `chmod ${mode.toString(8)}`, path, (n) => {
          n.mode = mode & 0o7777
        })
  const chown = (path: string, uid: number, gid: number) =>
    setAttributes("chown", `chown ${uid}:${gid}`, path, (n) => {
      // -1 keeps the id, as chown(2) does; chown of a file that is not a
      // directory clears setuid, and setgid when the group may execute.
      if (uid !== -1) n.uid = uid
      if (gid !== -1) n.gid = gid
      if (n.kind === "file") {
        n.mode &= (n.mode & 0o010) !== 0 ? ~0o6000 : ~0o4000
      }
    })

  const utimes = (path: string, atime: Date | number, mtime: Date | number) =>
    Effect.gen(function* () {
      const target = yield* follow(path, "utime", "utime")
      yield* statAs("utime", "utime")(path)
      const at = place(target)
      // A number is seconds, as Node's utimes takes it. The host's own files keep their times.
      const date = (t: Date | number) => (typeof t === "number" ? new Date(t * 1000) : t)
      if (at._tag === "Overlay" && at.node.kind !== "link") at.node.times = { atime: date(atime), mtime: date(mtime) }
      yield* record("set times of", target)
    })

  return {
    parentIsDirectory,
    inherited,
    accessOf,
    materialize,
    openAs,
    open,
    writeFile,
    unlinked,
    remove,
    makeDirectory,
    rename,
    symlink,
    link,
    setAttributes,
    tempName,
    makeTempDirectoryAs,
    makeTempFileAs,
    removeScoped,
    truncate,
    copyFile,
    chmod,
    chown,
    utimes
  }
}

/** What {@link makeWrites} returns. */
export type Writes = ReturnType<typeof makeWrites>
