/**
 * `--dry-run` as layers: each wraps a real service already in context
 * (FileSystem, Mounter, ChildProcessSpawner, Systemd) so that reads go to the
 * host while every write, removal, unmount, command and unit job is appended
 * to the shared {@link DryRunPlan} instead of being performed. The operations
 * of @hostnode/core know nothing about it: they run as they would, on
 * services that only pretend to change the host.
 *
 * So that an operation takes the same decisions as a real run, what it
 * pretended to do is visible to what it reads next: the file system is an
 * overlay (a removed path is gone, a written file reads back, a renamed
 * directory appears at its new name), and an unmount hides that mount and
 * everything below it from the mount table the process reads
 * (`/proc/<pid>/mountinfo`), as a lazy detach would. The host underneath is
 * never changed.
 *
 * Boundary: the overlay takes paths literally. The operations resolve
 * symbolic links with `HostPath` before they touch a path, so they hand it
 * resolved paths; a path that reaches a recorded change only through a
 * symbolic link on the host does not see that change. Commands other than
 * read-only queries are recorded and "exit 0" with no output.
 *
 * @since 0.1.0
 */
import { Directory, FileName, HostCommand, HostPath, LocalDns, Mounter, MountInfo, Systemd } from "@hostnode/core"
import { MemoryCommands, MemoryNetwork } from "@hostnode/test"
import { ByteSize, Context, Effect, FileSystem, Layer, Option, Ref, Schema, Sink, Stream } from "effect"
import * as PlatformError from "effect/PlatformError"
import { ChildProcess, ChildProcessSpawner } from "effect/process"

/**
 * One recorded step: which service was asked, what for, on which target.
 *
 * @since 0.1.0
 */
export const PlanStep = Schema.Struct({
  service: Schema.Literals(["FileSystem", "Mounter", "ChildProcessSpawner", "Systemd"]),
  action: Schema.String,
  target: Schema.String
})

/**
 * One recorded step of a dry run.
 *
 * @since 0.1.0
 */
export type PlanStep = typeof PlanStep.Type

/**
 * The plan a dry run builds, shared by every wrapping layer so that the steps
 * of all services come out in the order they were asked for. It also holds
 * the mounts the dry run pretended to detach, which the file system layer
 * hides from the mount table.
 *
 * @since 0.1.0
 */
export class DryRunPlan extends Context.Service<
  DryRunPlan,
  {
    readonly steps: Ref.Ref<ReadonlyArray<PlanStep>>
    readonly record: (step: PlanStep) => Effect.Effect<void>
    /** Mount ids detached so far (a lazy unmount takes the mounts below with it). */
    readonly detached: Set<number>
    /**
     * Mount points a detach uncovered, with the device of the directory that
     * now shows there: the directory of the file system underneath, which the
     * dry run presents as empty (kubelet's mount points are).
     */
    readonly uncovered: Map<string, bigint>
  }
>()("@hostnode/cli/DryRunPlan") {
  /** An empty plan. */
  static readonly layer = Layer.effect(
    DryRunPlan,
    Effect.gen(function* () {
      const steps = yield* Ref.make<ReadonlyArray<PlanStep>>([])
      return DryRunPlan.of({
        steps,
        record: (step) => Ref.update(steps, (s) => [...s, step]),
        detached: new Set(),
        uncovered: new Map()
      })
    })
  )
}

/**
 * The recorded steps so far, oldest first.
 *
 * @since 0.1.0
 */
export const steps: Effect.Effect<ReadonlyArray<PlanStep>, never, DryRunPlan> = Effect.flatMap(
  Effect.service(DryRunPlan),
  (plan) => Ref.get(plan.steps)
)

/**
 * Renders one step for a person: `FileSystem remove /etc/cni/net.d/10-x.conf`.
 *
 * @since 0.1.0
 */
export const renderStep = (step: PlanStep): string =>
  step.target === "" ? `${step.service} ${step.action}` : `${step.service} ${step.action} ${step.target}`

// ---------------------------------------------------------------------------
// the file system overlay

/** What the overlay knows of one path; a path it does not know is the host's. */
type Node =
  | { readonly kind: "gone" }
  | { readonly kind: "file"; data: Uint8Array; mode: number; uid: number; gid: number }
  | { readonly kind: "dir"; mode: number; uid: number; gid: number; readonly dev?: bigint }
  | { readonly kind: "link"; readonly target: string }
  /** The host's path `from` (a file or a whole tree) now appears here: it was renamed. */
  | { readonly kind: "moved"; readonly from: string }

/** Where a path's truth lies: in the overlay, on the host (under another name after a rename), or nowhere. */
type Place =
  | { readonly _tag: "Overlay"; readonly node: Exclude<Node, { kind: "gone" | "moved" }> }
  | { readonly _tag: "Host"; readonly path: string }
  | { readonly _tag: "Absent" }

const normalize = (path: string): string => {
  const p = path.replace(/\/+/g, "/")
  return p.length > 1 && p.endsWith("/") ? p.slice(0, -1) : p
}

const parentOf = (path: string): string | undefined => {
  if (path === "/" || !path.includes("/")) return undefined
  const i = path.lastIndexOf("/")
  return i === 0 ? "/" : path.slice(0, i)
}

const TypeBits = { file: 0o100000, dir: 0o040000, link: 0o120000 } as const

const errnoTag: Record<string, PlatformError.SystemErrorTag> = {
  ENOENT: "NotFound",
  ENOTDIR: "NotFound",
  EEXIST: "AlreadyExists",
  ENOTEMPTY: "Unknown",
  EISDIR: "Unknown",
  ELOOP: "Unknown",
  EINVAL: "BadResource"
}

/** A PlatformError as the host's file system would report it, errno code included (the operations look at it). */
const fsError = (method: string, path: string, code: string) =>
  PlatformError.systemError({
    _tag: errnoTag[code] ?? "Unknown",
    module: "FileSystem",
    method,
    pathOrDescriptor: path,
    description: `${code}: dry run`,
    cause: { code }
  })

const infoOf = (node: Exclude<Node, { kind: "gone" | "moved" }>): FileSystem.File.Info => {
  const common = {
    mtime: Option.none(),
    atime: Option.none(),
    birthtime: Option.none(),
    dev: 0n,
    ino: Option.none(),
    nlink: Option.some(1n),
    rdev: Option.none(),
    blksize: Option.none(),
    blocks: Option.none()
  }
  switch (node.kind) {
    case "file":
      return {
        ...common,
        type: "File",
        mode: TypeBits.file | node.mode,
        uid: Option.some(node.uid),
        gid: Option.some(node.gid),
        size: ByteSize.bytes(node.data.length)
      }
    case "dir":
      return {
        ...common,
        dev: node.dev ?? 0n,
        type: "Directory",
        mode: TypeBits.dir | node.mode,
        uid: Option.some(node.uid),
        gid: Option.some(node.gid),
        size: ByteSize.bytes(4096)
      }
    case "link":
      return {
        ...common,
        type: "SymbolicLink",
        mode: TypeBits.link | 0o777,
        uid: Option.some(0),
        gid: Option.some(0),
        size: ByteSize.bytes(node.target.length)
      }
  }
}

/** An open file of the overlay: reads and writes its bytes in memory; `sync` has nothing to do. */
const memoryFile = (node: { data: Uint8Array }, info: () => FileSystem.File.Info, append: boolean): FileSystem.File => {
  let position = append ? node.data.length : 0
  const readAt = (buffer: Uint8Array, at: number) => {
    const n = Math.max(0, Math.min(buffer.length, node.data.length - at))
    if (n > 0) buffer.set(node.data.subarray(at, at + n))
    return n
  }
  const write = (buffer: Uint8Array) =>
    Effect.sync(() => {
      const end = position + buffer.length
      if (end > node.data.length) {
        const grown = new Uint8Array(end)
        grown.set(node.data)
        node.data = grown
      }
      node.data.set(buffer, position)
      position = end
      return buffer.length
    })
  return {
    [FileSystem.FileTypeId]: FileSystem.FileTypeId,
    stat: Effect.sync(info),
    seek: (offset, from) =>
      Effect.sync(() => {
        position = from === "start" ? Number(offset) : position + Number(offset)
        return BigInt(position)
      }),
    sync: Effect.void,
    read: (buffer, options) =>
      Effect.sync(() => {
        if (options?.position !== undefined) return readAt(buffer, Number(options.position))
        const n = readAt(buffer, position)
        position += n
        return n
      }),
    readAlloc: (size, options) =>
      Effect.sync(() => {
        const buffer = new Uint8Array(size)
        const at = options?.position === undefined ? position : Number(options.position)
        const n = readAt(buffer, at)
        if (options?.position === undefined) position += n
        return n === 0 ? Option.none() : Option.some(buffer.subarray(0, n))
      }),
    truncate: (length = 0) =>
      Effect.sync(() => {
        const next = new Uint8Array(length)
        next.set(node.data.subarray(0, Math.min(length, node.data.length)))
        node.data = next
      }),
    write,
    writeAll: (buffer) => Effect.asVoid(write(buffer))
  }
}

/** The options argument of a FileSystem method. */
type Options<K extends keyof FileSystem.FileSystem> = FileSystem.FileSystem[K] extends (
  path: string,
  options?: infer O
) => unknown
  ? O
  : never

/** The kernel's `new_encode_dev`: the `dev` stat reports for a mount's major:minor. */
const deviceNumber = (major: number, minor: number): bigint =>
  BigInt((minor & 0xff) | (major << 8)) | (BigInt(minor & ~0xff) << 12n)

/** The entry whose mount point is the longest (the deepest mount containing a path), newest among equals. */
const longestPrefix = (entries: MountInfo.MountTable): MountInfo.MountEntry | undefined => {
  let best: MountInfo.MountEntry | undefined
  for (const e of entries) if (best === undefined || e.mountPoint.length >= best.mountPoint.length) best = e
  return best
}

const MountInfoPath = /^\/proc\/(?:self|thread-self|\d+)\/mountinfo$/

/** The table without the mounts a dry run detached. */
const withoutDetached = (table: MountInfo.MountTable, detached: ReadonlySet<number>) =>
  detached.size === 0 ? table : table.filter((e) => !detached.has(e.id))

const processIds = () => ({
  uid: typeof process.getuid === "function" ? process.getuid() : 0,
  gid: typeof process.getgid === "function" ? process.getgid() : 0
})

/**
 * FileSystem whose reads see the host plus what the dry run pretended to do,
 * and whose changes are recorded in order and kept in an in-memory overlay.
 *
 * @since 0.1.0
 */
export const layerFileSystem: Layer.Layer<FileSystem.FileSystem, never, FileSystem.FileSystem | DryRunPlan> =
  Layer.effect(
    FileSystem.FileSystem,
    Effect.gen(function* () {
      const real = yield* FileSystem.FileSystem
      const plan = yield* DryRunPlan
      const overlay = new Map<string, Node>()
      const owner = processIds()
      let temps = 0
      const record = (action: string, target: string) => plan.record({ service: "FileSystem", action, target })

      /** Where `path`'s truth lies: its own entry, else the nearest ancestor's, else the host. */
      const place = (raw: string): Place => {
        const path = normalize(raw)
        for (let p: string | undefined = path; p !== undefined; p = parentOf(p)) {
          const dev = plan.uncovered.get(p)
          const node =
            overlay.get(p) ??
            (dev === undefined ? undefined : ({ kind: "dir", mode: 0o755, uid: 0, gid: 0, dev } satisfies Node))
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

      /** Removes every overlay entry at or below `path` and returns them, keyed relative to it. */
      const detach = (path: string) => {
        const taken: Array<readonly [string, Node]> = []
        for (const [p, node] of overlay) {
          if (HostPath.covers(path, p)) {
            taken.push([p.slice(path.length), node])
            overlay.delete(p)
          }
        }
        return taken
      }

      const exists = (path: string): Effect.Effect<boolean, PlatformError.PlatformError> => {
        const at = place(path)
        return at._tag === "Absent"
          ? Effect.succeed(false)
          : at._tag === "Overlay"
            ? Effect.succeed(true)
            : real.exists(at.path)
      }

      const lstat = (path: string): Effect.Effect<FileSystem.File.Info, PlatformError.PlatformError> => {
        const at = place(path)
        return at._tag === "Absent"
          ? Effect.fail(fsError("lstat", path, "ENOENT"))
          : at._tag === "Overlay"
            ? Effect.succeed(infoOf(at.node))
            : real.lstat(at.path)
      }

      /** Follows overlay links (the host's own links are the host's business). */
      const follow = (path: string, method: string, depth = 0): Effect.Effect<string, PlatformError.PlatformError> => {
        const at = place(path)
        if (at._tag !== "Overlay" || at.node.kind !== "link") return Effect.succeed(path)
        if (depth >= 40) return Effect.fail(fsError(method, path, "ELOOP"))
        const target = at.node.target.startsWith("/")
          ? at.node.target
          : HostPath.child(parentOf(normalize(path)) ?? "/", at.node.target)
        return follow(target, method, depth + 1)
      }

      const stat = (path: string) =>
        Effect.flatMap(follow(path, "stat"), (p) => {
          const at = place(p)
          return at._tag === "Absent"
            ? Effect.fail(fsError("stat", path, "ENOENT"))
            : at._tag === "Overlay"
              ? Effect.succeed(infoOf(at.node))
              : real.stat(at.path)
        })

      const readDirectory = (path: string, options?: Options<"readDirectory">) => {
        const dir = normalize(path)
        const at = place(dir)
        if (at._tag === "Absent") return Effect.fail(fsError("readDirectory", path, "ENOENT"))
        if (at._tag === "Overlay") {
          return at.node.kind === "dir"
            ? Effect.succeed(overlayChildren(dir))
            : Effect.fail(fsError("readDirectory", path, "ENOTDIR"))
        }
        return real.readDirectory(at.path, options).pipe(
          Effect.map((names) => {
            const shown = names.filter((name) => place(HostPath.child(dir, name))._tag !== "Absent")
            const added = overlayChildren(dir).filter((name) => !shown.includes(name))
            return [...shown, ...added]
          })
        )
      }

      const readBytes = (path: string): Effect.Effect<Uint8Array, PlatformError.PlatformError> =>
        Effect.flatMap(follow(path, "readFile"), (p) => {
          const at = place(p)
          if (at._tag === "Absent") return Effect.fail(fsError("readFile", path, "ENOENT"))
          if (at._tag === "Overlay") {
            return at.node.kind === "file"
              ? Effect.succeed(at.node.data.slice())
              : Effect.fail(fsError("readFile", path, "EISDIR"))
          }
          return real.readFile(at.path)
        })

      /** The host's mount table read through the dry run: detached mounts are gone. */
      const mountTableText = (path: string) =>
        real.readFileString(path).pipe(
          Effect.flatMap((text) =>
            plan.detached.size === 0
              ? Effect.succeed(text)
              : MountInfo.parse(text, path).pipe(
                  Effect.map((table) => MountInfo.render(withoutDetached(table, plan.detached))),
                  // An unparsable table is returned as read: the operation reports it.
                  Effect.orElseSucceed(() => text)
                )
          )
        )

      const readFileString = (path: string, encoding?: string) =>
        MountInfoPath.test(normalize(path))
          ? mountTableText(path)
          : Effect.map(readBytes(path), (bytes) => new TextDecoder(encoding ?? "utf-8").decode(bytes))

      const readFile = (path: string) =>
        MountInfoPath.test(normalize(path)) ? Effect.map(mountTableText(path), FileName.encode) : readBytes(path)

      const readLink = (path: string) => {
        const at = place(path)
        return at._tag === "Absent"
          ? Effect.fail(fsError("readLink", path, "ENOENT"))
          : at._tag === "Overlay"
            ? at.node.kind === "link"
              ? Effect.succeed(at.node.target)
              : Effect.fail(fsError("readLink", path, "EINVAL"))
            : real.readLink(at.path)
      }

      const realPath = (path: string) => {
        const at = place(path)
        return at._tag === "Absent"
          ? Effect.fail(fsError("realPath", path, "ENOENT"))
          : at._tag === "Overlay"
            ? Effect.succeed(normalize(path))
            : at.path === normalize(path)
              ? real.realPath(path)
              : Effect.succeed(normalize(path))
      }

      /** Fails unless the parent of `path` is an existing directory (as open, mkdir and symlink would). */
      const parentIsDirectory = (path: string, method: string) => {
        const parent = parentOf(normalize(path))
        if (parent === undefined) return Effect.void
        return stat(parent).pipe(
          Effect.catchTag("PlatformError", () => Effect.fail(fsError(method, path, "ENOENT"))),
          Effect.flatMap((info) =>
            info.type === "Directory" ? Effect.void : Effect.fail(fsError(method, path, "ENOTDIR"))
          )
        )
      }

      const isWriteFlag = (flag: FileSystem.OpenFlag | undefined): boolean => flag !== undefined && flag !== "r"

      const open = (path: string, options?: Options<"open">) =>
        Effect.gen(function* () {
          const flag = options?.flag ?? "r"
          const at0 = place(path)
          if (options?.noFollow === true && at0._tag === "Overlay" && at0.node.kind === "link") {
            return yield* fsError("open", path, "ELOOP")
          }
          const target = normalize(yield* follow(path, "open"))
          const at = place(target)
          if (!isWriteFlag(flag)) {
            if (at._tag === "Absent") return yield* fsError("open", path, "ENOENT")
            if (at._tag === "Host") return yield* real.open(at.path, options)
            const node = at.node
            if (node.kind === "link") return yield* fsError("open", path, "ELOOP")
            const bytes = node.kind === "file" ? node : { data: new Uint8Array(0) }
            return memoryFile(bytes, () => infoOf(node), false)
          }
          // Opened for writing: from here on the file lives in the overlay.
          const present = yield* exists(target)
          if (present && flag.includes("x")) return yield* fsError("open", path, "EEXIST")
          if (!present && !(flag.startsWith("w") || flag.startsWith("a"))) return yield* fsError("open", path, "ENOENT")
          if (!present) yield* parentIsDirectory(target, "open")
          const before = present ? yield* stat(target) : undefined
          if (before?.type === "Directory") return yield* fsError("open", path, "EISDIR")
          const keep = present && !flag.startsWith("w")
          const node: Extract<Node, { kind: "file" }> = {
            kind: "file",
            data: keep ? yield* readBytes(target) : new Uint8Array(0),
            mode: before === undefined ? (options?.mode ?? 0o666) & 0o7777 & ~0o022 : before.mode & 0o7777,
            uid: before === undefined ? owner.uid : Option.getOrElse(before.uid, () => owner.uid),
            gid: before === undefined ? owner.gid : Option.getOrElse(before.gid, () => owner.gid)
          }
          overlay.set(target, node)
          yield* record(present ? "write" : "create and write", target)
          return memoryFile(node, () => infoOf(node), flag.startsWith("a"))
        })

      const remove = (path: string, options?: Options<"remove">) =>
        Effect.gen(function* () {
          const target = normalize(path)
          const info = yield* lstat(target).pipe(Effect.option)
          if (Option.isNone(info)) {
            return options?.force === true ? undefined : yield* fsError("remove", path, "ENOENT")
          }
          if (info.value.type === "Directory" && options?.recursive !== true) {
            const children = yield* readDirectory(target)
            if (children.length > 0) return yield* fsError("remove", path, "ENOTEMPTY")
          }
          detach(target)
          overlay.set(target, { kind: "gone" })
          yield* record(
            info.value.type === "Directory" && options?.recursive === true ? "remove recursively" : "remove",
            target
          )
        })

      const makeDirectory = (path: string, options?: Options<"makeDirectory">) =>
        Effect.gen(function* () {
          const target = normalize(path)
          const info = yield* stat(target).pipe(Effect.option)
          if (Option.isSome(info)) {
            if (options?.recursive === true && info.value.type === "Directory") return
            return yield* fsError("makeDirectory", path, "EEXIST")
          }
          const missing: Array<string> = [target]
          if (options?.recursive === true) {
            for (let p = parentOf(target); p !== undefined && !(yield* exists(p)); p = parentOf(p)) missing.unshift(p)
          }
          yield* parentIsDirectory(missing[0] ?? target, "makeDirectory")
          for (const p of missing) {
            overlay.set(p, { kind: "dir", mode: (options?.mode ?? 0o777) & 0o7777 & ~0o022, ...owner })
            yield* record("make directory", p)
          }
        })

      const rename = (from: string, to: string) =>
        Effect.gen(function* () {
          const source = normalize(from)
          const target = normalize(to)
          const at = place(source)
          if (at._tag === "Absent") return yield* fsError("rename", from, "ENOENT")
          yield* parentIsDirectory(target, "rename")
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
          const at = normalize(path)
          if (yield* exists(at)) return yield* fsError("symlink", path, "EEXIST")
          yield* parentIsDirectory(at, "symlink")
          overlay.set(at, { kind: "link", target })
          yield* record(`symlink to ${target} at`, at)
        })

      /** chmod/chown: an overlay node changes; a host path only gets the step recorded. */
      const setAttributes = (
        action: string,
        path: string,
        change: (node: { mode: number; uid: number; gid: number }) => void
      ) =>
        Effect.flatMap(follow(path, action), (p) => {
          const at = place(p)
          if (at._tag === "Absent") return Effect.fail(fsError(action, path, "ENOENT"))
          if (at._tag === "Overlay" && at.node.kind !== "link") change(at.node)
          return record(action, normalize(p))
        })

      const tempName = (options?: { readonly directory?: string | undefined; readonly prefix?: string | undefined }) =>
        `${normalize(options?.directory ?? "/tmp")}/${options?.prefix ?? ""}hostnode-dry-run-${++temps}`

      const makeTemp =
        (kind: "dir" | "file") =>
        (options?: { readonly directory?: string | undefined; readonly prefix?: string | undefined }) =>
          Effect.gen(function* () {
            const name = tempName(options)
            overlay.set(
              name,
              kind === "dir"
                ? { kind: "dir", mode: 0o700, ...owner }
                : { kind: "file", data: new Uint8Array(0), mode: 0o600, ...owner }
            )
            yield* record(kind === "dir" ? "make temporary directory" : "make temporary file", name)
            return name
          })

      const writeBytes = (path: string, data: Uint8Array) =>
        Effect.scoped(Effect.flatMap(open(path, { flag: "w" }), (f) => f.writeAll(data)))

      return FileSystem.FileSystem.of({
        ...real,
        access: (path, options) =>
          Effect.flatMap(exists(path), (present) =>
            present
              ? place(path)._tag === "Host"
                ? real.access(path, options)
                : Effect.void
              : Effect.fail(fsError("access", path, "ENOENT"))
          ),
        exists,
        lstat,
        stat,
        readDirectory,
        readFile,
        readFileString,
        readLink,
        realPath,
        open,
        remove,
        makeDirectory,
        rename,
        symlink,
        chmod: (path, mode) =>
          setAttributes(`chmod ${mode.toString(8)}`, path, (n) => {
            n.mode = mode & 0o7777
          }),
        chown: (path, uid, gid) =>
          setAttributes(`chown ${uid}:${gid}`, path, (n) => {
            n.uid = uid
            n.gid = gid
          }),
        makeTempDirectory: makeTemp("dir"),
        makeTempDirectoryScoped: makeTemp("dir"),
        makeTempFile: makeTemp("file"),
        makeTempFileScoped: makeTemp("file"),
        writeFile: (path, data) => writeBytes(path, data),
        writeFileString: (path, data) => writeBytes(path, new TextEncoder().encode(data)),
        copy: (from, to) => Effect.andThen(stat(from), record(`copy ${normalize(from)} to`, normalize(to))),
        copyFile: (from, to) =>
          Effect.flatMap(readBytes(from), (data) =>
            Effect.andThen(writeBytes(to, data), record(`(that write is a copy of ${normalize(from)})`, normalize(to)))
          ),
        link: (from, to) => Effect.andThen(stat(from), record(`hard-link ${normalize(from)} at`, normalize(to))),
        truncate: (path) => record("truncate", normalize(path)),
        utimes: (path) => record("set times of", normalize(path)),
        sink: (path) => Sink.drain.pipe(Sink.mapEffect(() => record("write", normalize(path))))
      })
    })
  )

// ---------------------------------------------------------------------------
// mounts, commands, units

/**
 * Mounter that records each unmount and hides it from the mount table the
 * dry run's file system serves: the newest mount at the target goes, with
 * every mount below it (what a lazy detach does). A target where nothing is
 * mounted fails as umount2 would, with EINVAL.
 *
 * @since 0.1.0
 */
export const layerMounterWith = (
  options?: TableOptions
): Layer.Layer<Mounter.Mounter, never, FileSystem.FileSystem | DryRunPlan> =>
  Layer.effect(
    Mounter.Mounter,
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const plan = yield* DryRunPlan
      const tableRoot = options?.tableRoot ?? "/"
      const table = fs.readFileString(options?.mountInfo ?? MountInfo.DefaultPath).pipe(
        Effect.flatMap((text) => MountInfo.parse(text)),
        Effect.map((t) => withoutDetached(t, plan.detached)),
        Effect.orElseSucceed((): MountInfo.MountTable => [])
      )
      /** Detaches the newest mount at `target` (and every mount below it) from `entries`; false when none is there. */
      const detach = (entries: Array<MountInfo.MountEntry>, target: string): boolean => {
        const top = entries.findLast((e) => e.mountPoint === target)
        if (top === undefined) return false
        // A lazy detach takes the whole subtree: every mount whose parent chain reaches `top`.
        const gone = new Set([top.id])
        for (let grew = true; grew; ) {
          grew = false
          for (const e of entries) {
            if (!gone.has(e.id) && gone.has(e.parentId)) {
              gone.add(e.id)
              grew = true
            }
          }
        }
        for (const id of gone) plan.detached.add(id)
        // The file system sees this process's paths: the table's, below the table's root.
        const full = HostPath.join(tableRoot, target)
        for (const point of plan.uncovered.keys())
          if (point !== full && HostPath.covers(full, point)) plan.uncovered.delete(point)
        const left = entries.filter((e) => !gone.has(e.id))
        entries.splice(0, entries.length, ...left)
        // What shows at the mount point now: the next mount of a stack, or the
        // directory of the mount it sits in.
        const covering = left.filter((e) => HostPath.covers(e.mountPoint, target))
        const under = covering.findLast((e) => e.mountPoint === target) ?? longestPrefix(covering)
        if (under !== undefined) plan.uncovered.set(full, deviceNumber(under.major, under.minor))
        return true
      }
      return Mounter.Mounter.of({
        unmount: (_root, targets, options) =>
          Effect.gen(function* () {
            // One read per call, kept up to date as the targets are detached.
            const entries = [...(yield* table)]
            return yield* Effect.forEach(targets, (t): Effect.Effect<Mounter.UnmountResult> => {
              // Verified against the table a real run would read: the path must lead to the listed mount.
              const top = entries.findLast((e) => e.mountPoint === t.tablePath)
              if (top !== undefined && top.id !== t.mountId) {
                return Effect.succeed({
                  _tag: "Unverified" as const,
                  target: t.path,
                  reason: "Moved" as const,
                  detail: `the path leads to mount ${top.id}, not to mount ${t.mountId} (dry run)`
                })
              }
              return detach(entries, t.tablePath)
                ? plan
                    .record({ service: "Mounter", action: options.lazy ? "unmount (lazy)" : "unmount", target: t.path })
                    .pipe(Effect.as({ _tag: "Unmounted" as const, target: t.path }))
                : Effect.succeed({
                    _tag: "Failed" as const,
                    target: t.path,
                    failure: { target: t.path, errno: "EINVAL", message: "not mounted (dry run)" }
                  })
            })
          })
      })
    })
  )

/**
 * {@link layerMounterWith} for this process's own mount table.
 *
 * @since 0.1.0
 */
export const layerMounter: Layer.Layer<Mounter.Mounter, never, FileSystem.FileSystem | DryRunPlan> = layerMounterWith()

/** The major and minor of a `dev` number as stat reports it (the kernel's `new_decode_dev`). */
const devNumbers = (dev: number): string => {
  const d = BigInt(dev)
  const major = Number(((d >> 8n) & 0xfffn) | ((d >> 32n) & ~0xfffn))
  const minor = Number((d & 0xffn) | ((d >> 12n) & ~0xffn))
  return `${major}:${minor}`
}

/**
 * Which mount table a dry run reads to decide what is mounted where, and
 * where that table's `/` is in this process (default: this process's own,
 * `/proc/self/mountinfo` and `/`).
 *
 * @since 0.2.0
 */
export interface TableOptions {
  readonly mountInfo?: string | undefined
  readonly tableRoot?: string | undefined
}

/**
 * `Directory.Directories` over the dry run's file system (the overlay), so
 * the operations' handle walks see what the dry run pretended to do. A
 * handle here is a path: nothing is changed in a dry run, so there is no
 * race to close, and a path-based view of the overlay is what a run that
 * changes nothing can offer. Mount ids come from the overlay's mount table
 * (the deepest mount containing a path, as its `/proc/self/mountinfo`
 * shows it), names through the FileSystem's strings (a name that is not
 * UTF-8 is seen as Node decodes it).
 *
 * @since 0.2.0
 */
export const layerDirectoriesWith = (
  options?: TableOptions
): Layer.Layer<Directory.Directories, never, FileSystem.FileSystem> =>
  Layer.effect(
    Directory.Directories,
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const tableRoot = options?.tableRoot ?? "/"
      type PathHandle = Directory.Handle & { readonly table: MountInfo.MountTable }
      const asPath = (h: Directory.Handle) => h as PathHandle
      const child = (dir: string, name: Uint8Array) =>
        dir === "/" ? `/${FileName.decode(name)}` : `${dir}/${FileName.decode(name)}`
      const error = (operation: string, path: string) => (e: PlatformError.PlatformError) => {
        const code = (e.reason.cause as { readonly code?: unknown } | undefined)?.code
        const errno =
          typeof code === "string"
            ? code
            : e.reason._tag === "NotFound"
              ? "ENOENT"
              : e.reason._tag === "AlreadyExists"
                ? "EEXIST"
                : "EIO"
        return new Directory.DirectoryError({
          reason: Directory.reasonOf(errno),
          operation,
          path,
          errno,
          detail: e.message
        })
      }
      const readTable = fs.readFileString(options?.mountInfo ?? MountInfo.DefaultPath).pipe(
        Effect.flatMap((text) => MountInfo.parse(text)),
        Effect.orElseSucceed((): MountInfo.MountTable => [])
      )
      const mountIdOf = (table: MountInfo.MountTable, full: string): number => {
        const path = HostPath.relative(tableRoot, full)
        if (path === undefined) return -1
        return longestPrefix(table.filter((e) => HostPath.covers(HostPath.clean(e.mountPoint), path)))?.id ?? -1
      }
      const statPath = (table: MountInfo.MountTable, path: string) =>
        Effect.map(
          fs.lstat(path).pipe(Effect.mapError(error("statx", path))),
          (info): Directory.Stat => ({
            type: info.type === "Unknown" ? "Unknown" : info.type,
            mode: info.mode & 0o7777,
            uid: Option.getOrElse(info.uid, () => 0),
            gid: Option.getOrElse(info.gid, () => 0),
            size: Number(info.size),
            nlink: Number(Option.getOrElse(info.nlink, () => 1n)),
            device: devNumbers(Number(info.dev)),
            inode: BigInt(Option.getOrElse(info.ino, () => 0)),
            mountId: mountIdOf(table, path),
            atimeNs:
              BigInt(
                Option.getOrElse(
                  Option.map(info.atime, (d) => d.getTime()),
                  () => 0
                )
              ) * 1_000_000n,
            mtimeNs:
              BigInt(
                Option.getOrElse(
                  Option.map(info.mtime, (d) => d.getTime()),
                  () => 0
                )
              ) * 1_000_000n
          })
        )
      const openAt = (table: MountInfo.MountTable, path: string): PathHandle =>
        Object.assign(Directory.handle({ path }), { table })
      return Directory.make({
        openRoot: (path) => Effect.map(readTable, (table) => openAt(table, path)),
        openDirectory: (dir, name, options) =>
          Effect.gen(function* () {
            const path = child(dir.path, name)
            const { table } = asPath(dir)
            const st = yield* statPath(table, path).pipe(
              Effect.mapError((e) => ({ ...e, operation: "openat" }) as typeof e)
            )
            if (st.type === "SymbolicLink")
              return yield* new Directory.DirectoryError({
                reason: "SymbolicLink",
                operation: "openat",
                path,
                errno: "ELOOP",
                detail: "a link"
              })
            if (st.type !== "Directory")
              return yield* new Directory.DirectoryError({
                reason: "NotADirectory",
                operation: "openat",
                path,
                errno: "ENOTDIR",
                detail: "not a directory"
              })
            if (options?.sameMount === true && st.mountId !== mountIdOf(table, dir.path)) {
              return yield* new Directory.DirectoryError({
                reason: "OtherMount",
                operation: "openat",
                path,
                errno: "",
                detail: `the root of mount ${st.mountId} (dry run)`
              })
            }
            return openAt(table, path)
          }),
        openPath: (dir, name) => Effect.succeed(openAt(asPath(dir).table, child(dir.path, name))),
        // Through the overlay's readDirectory, which knows what the dry run removed, wrote and
        // renamed; types are looked up by whoever needs them (a listing may say DT_UNKNOWN).
        list: (dir) =>
          fs.readDirectory(dir.path).pipe(
            Effect.map((names) =>
              names.map((name): Directory.Entry => ({ name: FileName.encode(name), type: "Unknown" }))
            ),
            Effect.mapError(error("getdents64", dir.path))
          ),
        stat: (dir, name) => statPath(asPath(dir).table, name === undefined ? dir.path : child(dir.path, name)),
        readLink: (dir, name) =>
          fs
            .readLink(child(dir.path, name))
            .pipe(Effect.map(FileName.encode), Effect.mapError(error("readlinkat", child(dir.path, name)))),
        unlink: (dir, name, options) => {
          const path = child(dir.path, name)
          return fs
            .remove(path, options?.directory === true ? { recursive: true } : {})
            .pipe(Effect.mapError(error("unlinkat", path)))
        },
        makeDirectory: (dir, name, permissions) =>
          fs
            .makeDirectory(child(dir.path, name), { mode: permissions })
            .pipe(Effect.mapError(error("mkdirat", child(dir.path, name)))),
        symlink: (dir, name, target) =>
          fs
            .symlink(FileName.decode(target), child(dir.path, name))
            .pipe(Effect.mapError(error("symlinkat", child(dir.path, name)))),
        rename: (from, fromName, to, toName) =>
          fs
            .rename(child(from.path, fromName), child(to.path, toName))
            .pipe(Effect.mapError(error("renameat2", child(from.path, fromName)))),
        chown: (dir, name, uid, gid) => {
          const path = name === undefined ? dir.path : child(dir.path, name)
          return fs.chown(path, uid, gid).pipe(Effect.mapError(error("fchownat", path)))
        },
        chmod: (dir, mode) => fs.chmod(dir.path, mode).pipe(Effect.mapError(error("fchmod", dir.path))),
        openFile: (dir, name, options) =>
          Effect.gen(function* () {
            const path = child(dir.path, name)
            const file = yield* fs
              .open(
                path,
                options.mode === "read"
                  ? { flag: "r" }
                  : options.mode === "write"
                    ? { flag: "r+" }
                    : { flag: "wx", mode: options.permissions }
              )
              .pipe(Effect.mapError(error("openat", path)))
            const e = error("file", path)
            const statOf = statPath(asPath(dir).table, path)
            return {
              path,
              stat: statOf,
              read: (buffer, position) =>
                file.read(buffer, { position: BigInt(position) }).pipe(Effect.map(Number), Effect.mapError(e)),
              write: (bytes, position) =>
                Effect.asVoid(
                  file.seek(BigInt(position), "start").pipe(Effect.andThen(file.writeAll(bytes)), Effect.mapError(e))
                ),
              truncate: (size) => file.truncate(size).pipe(Effect.mapError(e)),
              chmod: (mode) => fs.chmod(path, mode).pipe(Effect.mapError(e)),
              chown: (uid, gid) => fs.chown(path, uid, gid).pipe(Effect.mapError(e)),
              setTimes: (atimeNs, mtimeNs) =>
                fs
                  .utimes(path, new Date(Number(atimeNs / 1_000_000n)), new Date(Number(mtimeNs / 1_000_000n)))
                  .pipe(Effect.mapError(e)),
              sync: file.sync.pipe(Effect.mapError(e)),
              // Nothing else runs against a dry run's overlay: every lock is free.
              tryLock: Effect.succeed(true),
              lockHolder: Effect.succeed(undefined),
              holeAt: (offset) => Effect.map(statOf, (st) => Math.max(offset, st.size))
            } satisfies Directory.File
          }),
        openParent: (dir) => Effect.succeed(openAt(asPath(dir).table, HostPath.dirname(dir.path))),
        credentials: Effect.sync(() => ({
          uid: process.geteuid?.() ?? 0,
          gid: process.getegid?.() ?? 0,
          pid: process.pid
        })),
        sync: () => Effect.void,
        syncFileSystem: () => Effect.void
      })
    })
  )

/**
 * {@link layerDirectoriesWith} for this process's own mount table.
 *
 * @since 0.2.0
 */
export const layerDirectories: Layer.Layer<Directory.Directories, never, FileSystem.FileSystem> = layerDirectoriesWith()

/**
 * Whether a command only reads, so a dry run may run it for real: the
 * queries the operations make before they decide what to change.
 *
 * @since 0.1.0
 */
export const isReadOnly = (command: string, args: ReadonlyArray<string>): boolean => {
  const name = command.split("/").pop() ?? command
  if (name === "nsenter") {
    const dashes = args.indexOf("--")
    const rest = dashes < 0 ? [] : args.slice(dashes + 1)
    const [head, ...tail] = rest
    return head !== undefined && isReadOnly(head, tail)
  }
  const verbs = args.filter((a) => !a.startsWith("-"))
  switch (name) {
    case "systemctl":
      return ["show", "is-active", "status", "cat", "list-units"].includes(verbs[0] ?? "")
    case "ip":
      return verbs.includes("show") || verbs.includes("list") || (verbs.length === 1 && verbs[0] !== undefined)
    case "iptables":
    case "ip6tables":
      return ["-S", "-L", "--list", "--list-rules", "-C", "--check"].some((flag) => args.includes(flag))
    case "findmnt":
    case "cat":
    case "stat":
      return true
    default:
      return false
  }
}

const succeeded = (pid: number): ChildProcessSpawner.ChildProcessHandle =>
  ChildProcessSpawner.makeHandle({
    pid: ChildProcessSpawner.ProcessId(pid),
    exitCode: Effect.succeed(ChildProcessSpawner.ExitCode(0)),
    isRunning: Effect.succeed(false),
    kill: () => Effect.void,
    stdin: Sink.drain,
    stdout: Stream.empty,
    stderr: Stream.empty,
    all: Stream.empty,
    getInputFd: () => Sink.drain,
    getOutputFd: () => Stream.empty,
    unref: Effect.succeed(Effect.void)
  })

const commandLine = (command: ChildProcess.Command): { readonly name: string; readonly args: Array<string> } =>
  ChildProcess.isStandardCommand(command)
    ? { name: command.command, args: command.args.map((a) => (typeof a === "string" ? a : "<redacted>")) }
    : {
        name: "|",
        args: [commandLine(command.left), commandLine(command.right)].map((c) => [c.name, ...c.args].join(" "))
      }

/** The commands whose state a dry run simulates, so that what they change is what their queries see next. */
const NetworkCommands = new Set(["ip", "iptables"])

/**
 * A simulated copy of the host's network as far as the operations look at it
 * (links, their kinds, IPv4 addresses and up state; the `raw` table), seeded
 * from the host with the read-only queries `ip -j -d addr show` and
 * `iptables -S`. Link kinds the simulation lacks are copied as `dummy`: only
 * the LocalDNS interface's kind matters to the operations, and that is a
 * dummy or a bridge.
 */
const seedNetwork = (real: ChildProcessSpawner.ChildProcessSpawner["Service"]) =>
  Effect.gen(function* () {
    const query = (command: string, args: ReadonlyArray<string>) =>
      HostCommand.run(command, args).pipe(
        Effect.provideService(ChildProcessSpawner.ChildProcessSpawner, real),
        Effect.option
      )
    const rules = yield* query("iptables", ["-w", "-t", LocalDns.Table, "-S"])
    const noTable = Option.isSome(rules) && rules.value.exitCode !== 0 && /does not exist/.test(rules.value.stderr)
    const simulation = yield* MemoryNetwork.make(noTable ? { missingTables: [LocalDns.Table] } : {})
    const admin = (command: "ip" | "iptables", args: ReadonlyArray<string>) =>
      Effect.asVoid(simulation.service.admin(command, args))
    const links = yield* query("ip", ["-j", "-d", "addr", "show"])
    if (Option.isSome(links) && links.value.exitCode === 0) {
      const listed = yield* Effect.try({
        try: () => JSON.parse(links.value.stdout) as ReadonlyArray<ListedLink>,
        catch: () => "unparsable"
      }).pipe(Effect.orElseSucceed((): ReadonlyArray<ListedLink> => []))
      for (const link of listed) {
        if (typeof link.ifname !== "string" || link.ifname === "lo") continue
        const kind = link.linkinfo?.info_kind === "bridge" ? "bridge" : "dummy"
        yield* admin("ip", ["link", "add", "name", link.ifname, "type", kind])
        for (const a of link.addr_info ?? []) {
          if (a.family === "inet") yield* admin("ip", ["addr", "add", `${a.local}/${a.prefixlen}`, "dev", link.ifname])
        }
        if (link.flags?.includes("UP") === true) yield* admin("ip", ["link", "set", "dev", link.ifname, "up"])
      }
    }
    if (Option.isSome(rules) && rules.value.exitCode === 0) {
      for (const line of rules.value.stdout.split("\n")) {
        const words = LocalDns.parseRuleLine(line)
        if (words[0] === "-N" || words[0] === "-A") yield* admin("iptables", ["-t", LocalDns.Table, ...words])
      }
    }
    return MemoryCommands.makeSpawner(
      new Map([
        ["ip", simulation.ip],
        ["iptables", simulation.iptables]
      ])
    )
  })

/** The parts of one link of `ip -j -d addr show` the seed copies. */
interface ListedLink {
  readonly ifname?: string
  readonly flags?: ReadonlyArray<string>
  readonly linkinfo?: { readonly info_kind?: string }
  readonly addr_info?: ReadonlyArray<{ readonly family?: string; readonly local?: string; readonly prefixlen?: number }>
}

/**
 * ChildProcessSpawner for a dry run. `ip` and `iptables` run against a
 * simulated copy of the host's network, seeded on first use, so an operation
 * that adds a link and then inspects it sees the link; their changes are
 * recorded. Other read-only commands ({@link isReadOnly}) run for real; any
 * other command is recorded and "exits 0" with no output.
 *
 * @since 0.1.0
 */
export const layerSpawner: Layer.Layer<
  ChildProcessSpawner.ChildProcessSpawner,
  never,
  ChildProcessSpawner.ChildProcessSpawner | DryRunPlan
> = Layer.effect(
  ChildProcessSpawner.ChildProcessSpawner,
  Effect.gen(function* () {
    const real = yield* ChildProcessSpawner.ChildProcessSpawner
    const plan = yield* DryRunPlan
    const network = yield* Effect.cached(seedNetwork(real))
    let pid = 0
    return ChildProcessSpawner.make((command) => {
      const line = commandLine(command)
      const readOnly = ChildProcess.isStandardCommand(command) && isReadOnly(line.name, line.args)
      const recorded = plan.record({
        service: "ChildProcessSpawner",
        action: "run",
        target: [line.name, ...line.args].join(" ")
      })
      if (ChildProcess.isStandardCommand(command) && NetworkCommands.has(line.name.split("/").pop() ?? "")) {
        return Effect.flatMap(readOnly ? Effect.void : recorded, () =>
          Effect.flatMap(network, (simulated) => simulated.spawn(command))
        )
      }
      if (readOnly) return real.spawn(command)
      return recorded.pipe(Effect.andThen(Effect.sync(() => succeeded(++pid))))
    })
  })
)

/**
 * Systemd whose queries are real and whose jobs and reloads are recorded.
 * Built with `Systemd.make`, so a bad unit name fails exactly as it would in
 * a real run.
 *
 * @since 0.1.0
 */
export const layerSystemd: Layer.Layer<Systemd.Systemd, never, Systemd.Systemd | DryRunPlan> = Layer.effect(
  Systemd.Systemd,
  Effect.gen(function* () {
    const real = yield* Systemd.Systemd
    const plan = yield* DryRunPlan
    return Systemd.make({
      job: (verb, unit) => plan.record({ service: "Systemd", action: verb, target: unit }),
      daemonReload: plan.record({ service: "Systemd", action: "daemon-reload", target: "" }),
      show: (unit, properties) => real.show(unit, properties).pipe(Effect.catchTag("UnitNameError", Effect.die))
    })
  })
)

/**
 * All four wrappers over the real services in context, sharing the
 * {@link DryRunPlan} in context, deciding mounts from the table `options`
 * names (a container's `/proc/<pid>/mountinfo`, whose `/` is
 * `/proc/<pid>/root` here: `--container`).
 *
 * @since 0.1.0
 */
export const layerWith = (
  options?: TableOptions
): Layer.Layer<
  | FileSystem.FileSystem
  | Directory.Directories
  | Mounter.Mounter
  | ChildProcessSpawner.ChildProcessSpawner
  | Systemd.Systemd,
  never,
  FileSystem.FileSystem | ChildProcessSpawner.ChildProcessSpawner | Systemd.Systemd | DryRunPlan
> =>
  Layer.mergeAll(
    Layer.provideMerge(layerDirectoriesWith(options), layerFileSystem),
    layerMounterWith(options),
    layerSpawner,
    layerSystemd
  )

/**
 * All four wrappers over the real services in context, sharing the
 * {@link DryRunPlan} in context ({@link layerWith} for this process's own
 * mount table: the real host, or a `--host-root` below it).
 *
 * @since 0.1.0
 */
export const layer = layerWith()
