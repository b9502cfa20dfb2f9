/**
 * Dry runs as layers (the CLI's `--dry-run`, and any program's): each wraps a
 * real service already in context (FileSystem, Mounter, ChildProcessSpawner,
 * Systemd) so that reads go to the host while every write, removal, unmount,
 * command and unit job is appended to the shared {@link DryRunPlan} instead of
 * being performed. The operations of `@hostnode/core` (and an agent's own
 * program built on them) know nothing about it: they run as they would, on
 * services that only pretend to change the host. An agent wraps its program
 * in {@link layer} over its real layers, provides {@link DryRunPlan.layer},
 * and reads the plan with {@link steps}. (The module moved here from
 * `@hostnode/cli` in 0.3.0; the CLI re-exports it.)
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
import { tmpdir } from "node:os"
import { posix } from "node:path"
import { Directory, FileName, HostCommand, HostPath, LocalDns, Mounter, MountInfo, Systemd } from "@hostnode/core"
import { ByteSize, Context, Effect, FileSystem, Layer, Option, Random, Ref, Schema, Sink, Stream } from "effect"
import * as PlatformError from "effect/PlatformError"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import * as MemoryCommands from "./MemoryCommands.ts"
import * as MemoryFileSystem from "./MemoryFileSystem.ts"
import * as MemoryNetwork from "./MemoryNetwork.ts"

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
  | {
      readonly kind: "file"
      data: Uint8Array
      mode: number
      uid: number
      gid: number
      /** Names of this file: a hard link made in the dry run shares the node. */
      nlink?: number
      times?: { readonly atime: Date; readonly mtime: Date }
    }
  | {
      readonly kind: "dir"
      mode: number
      uid: number
      gid: number
      readonly dev?: bigint
      times?: { readonly atime: Date; readonly mtime: Date }
    }
  | { readonly kind: "link"; readonly target: string; nlink?: number }
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

/**
 * A PlatformError as the host's file system would report it for `syscall`
 * failing with `code` in `method(path)`, errno code included (the operations
 * look at it). The reason for each code is the simulated host's, which is
 * Node's (`MemoryFileSystem.systemError`): one table, so the dry run, the
 * simulated host and the real layer agree (ENOTDIR is a BadResource).
 */
const fsError = (
  method: string,
  syscall: string,
  path: string,
  code: Parameters<typeof MemoryFileSystem.systemError>[0]
) => MemoryFileSystem.systemError(code, method, syscall, path)

/** The times `utimes` set on an overlay node, if it did. */
const timesOf = (node: { readonly times?: { readonly atime: Date; readonly mtime: Date } }) =>
  node.times === undefined ? {} : { atime: Option.some(node.times.atime), mtime: Option.some(node.times.mtime) }

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
        ...timesOf(node),
        nlink: Option.some(BigInt(node.nlink ?? 1)),
        type: "File",
        mode: TypeBits.file | node.mode,
        uid: Option.some(node.uid),
        gid: Option.some(node.gid),
        size: ByteSize.bytes(node.data.length)
      }
    case "dir":
      return {
        ...common,
        ...timesOf(node),
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
        nlink: Option.some(BigInt(node.nlink ?? 1)),
        type: "SymbolicLink",
        mode: TypeBits.link | 0o777,
        uid: Option.some(0),
        gid: Option.some(0),
        size: ByteSize.bytes(node.target.length)
      }
  }
}

/** How an overlay file was opened: what its descriptor allows (the kernel checks these, with EBADF/EINVAL/EISDIR). */
interface Access {
  readonly readable: boolean
  readonly writable: boolean
  readonly append: boolean
  readonly directory: boolean
}

/**
 * An open file of the overlay: reads and writes its bytes in memory; `sync`
 * has nothing to do. The cursor is the File's own, as in Node's layer: an
 * append does not move it, a truncate clamps it.
 */
const memoryFile = (node: { data: Uint8Array }, info: () => FileSystem.File.Info, access: Access): FileSystem.File => {
  let position = 0
  const badf = (method: string, syscall: string) => fsError(method, syscall, "<file>", "EBADF")
  const readAt = (buffer: Uint8Array, at: number) => {
    const n = Math.max(0, Math.min(buffer.length, node.data.length - at))
    if (n > 0) buffer.set(node.data.subarray(at, at + n))
    return n
  }
  const canRead = (method: string) =>
    access.directory
      ? Effect.fail(fsError(method, "read", "<file>", "EISDIR"))
      : access.readable
        ? Effect.void
        : Effect.fail(badf(method, "read"))
  const negative = (method: string, description: string) =>
    Effect.fail(PlatformError.badArgument({ module: "FileSystem", method, description }))
  const write = (method: string) => (buffer: Uint8Array) =>
    access.writable
      ? Effect.sync(() => {
          const at = access.append ? node.data.length : position
          const end = at + buffer.length
          if (end > node.data.length) {
            const grown = new Uint8Array(end)
            grown.set(node.data)
            node.data = grown
          }
          node.data.set(buffer, at)
          if (!access.append) position = end
          return buffer.length
        })
      : Effect.fail(badf(method, "write"))
  return {
    [FileSystem.FileTypeId]: FileSystem.FileTypeId,
    stat: Effect.sync(info),
    seek: (offset, from) => {
      const next = from === "start" ? Number(offset) : position + Number(offset)
      return next < 0
        ? negative("seek", "negative offset")
        : Effect.sync(() => {
            position = next
            return BigInt(position)
          })
    },
    sync: Effect.void,
    read: (buffer, options) =>
      options?.position !== undefined && options.position < 0
        ? negative("read", "negative position")
        : Effect.andThen(
            canRead("read"),
            Effect.sync(() => {
              if (options?.position !== undefined) return readAt(buffer, Number(options.position))
              const n = readAt(buffer, position)
              position += n
              return n
            })
          ),
    readAlloc: (size, options) =>
      Effect.andThen(
        canRead("readAlloc"),
        Effect.sync(() => {
          const buffer = new Uint8Array(Number(size))
          const at = options?.position === undefined ? position : Number(options.position)
          const n = readAt(buffer, at)
          if (options?.position === undefined) position += n
          return n === 0 ? Option.none() : Option.some(buffer.subarray(0, n))
        })
      ),
    truncate: (length = 0) =>
      access.writable
        ? Effect.sync(() => {
            const size = Number(length)
            const next = new Uint8Array(size)
            next.set(node.data.subarray(0, Math.min(size, node.data.length)))
            node.data = next
            position = Math.min(position, size)
          })
        : Effect.fail(fsError("truncate", "ftruncate", "<file>", "EINVAL")),
    write: write("write"),
    writeAll: (buffer) => Effect.asVoid(write("writeAll")(buffer))
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

/** The alphabet of mkdtemp(3)'s six random characters. */
const TempAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

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
 * Built with `FileSystem.make` from primitives over the overlay, so that the
 * methods Effect derives from them (`exists`, `readFileString`, `stream`,
 * `sink`, `writeFileString`, `glob`) see the overlay too; nothing of the real
 * service is passed through unwrapped. Its failures are Node's layer's (the
 * same reason for each errno, the same syscall names), and the shared
 * FileSystem conformance suite runs over it. Boundaries: `utimes` of a
 * host path is only recorded (the overlay keeps times of its own files),
 * a hard link to a host file copies it into the overlay, and `watch` sees
 * the host's events only.
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
          if (HostPath.covers(path, p)) {
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
          Effect.catchTag("PlatformError", (e) =>
            e.reason._tag === "NotFound" ? Effect.succeed(false) : Effect.fail(e)
          )
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
            const shown = names.filter((name) => place(HostPath.child(dir, name))._tag !== "Absent")
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
                    stat(HostPath.child(dir, name)).pipe(
                      Effect.flatMap((info) =>
                        info.type === "Directory"
                          ? Effect.map(readDirectory(HostPath.child(dir, name), options), (below) => [
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
              lstat(HostPath.child(normalize(path), name)),
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
              : MountInfo.parse(text, path).pipe(
                  Effect.map((table) => MountInfo.render(withoutDetached(table, plan.detached))),
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
            return options?.force === true && code === "ENOENT"
              ? undefined
              : yield* fsError("remove", "lstat", path, code)
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
          if (source !== target && HostPath.covers(source, target)) {
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
        (method: string) =>
        (options?: { readonly directory?: string | undefined; readonly prefix?: string | undefined }) =>
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
          ? Effect.fail(
              PlatformError.badArgument({ module: "FileSystem", method: "chmod", description: "invalid mode" })
            )
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
          if (at._tag === "Overlay" && at.node.kind !== "link")
            at.node.times = { atime: date(atime), mtime: date(mtime) }
          yield* record("set times of", target)
        })

      /**
       * What makes two names one file: the overlay's node itself, or the
       * host's device and inode numbers.
       */
      const identity = (path: string, followLast: boolean) =>
        Effect.gen(function* () {
          const at = place(yield* resolve(path, followLast, "copy", followLast ? "stat" : "lstat"))
          if (at._tag === "Overlay") return at.node as unknown
          const info = yield* followLast ? stat(path) : lstat(path)
          return Option.isSome(info.ino) ? `${info.dev}:${info.ino.value}` : (Symbol() as unknown)
        })

      /** Whether `dest` is `src` or below it, component by component. */
      const isSubdirectory = (src: string, dest: string) => {
        const d = dest.split("/").filter((n) => n !== "")
        return src
          .split("/")
          .filter((n) => n !== "")
          .every((c, i) => d[i] === c)
      }

      const cpError = (
        code:
          | "ERR_FS_CP_EINVAL"
          | "ERR_FS_CP_DIR_TO_NON_DIR"
          | "ERR_FS_CP_NON_DIR_TO_DIR"
          | "ERR_FS_CP_SYMLINK_TO_SUBDIRECTORY",
        path: string
      ) => fsError("copy", "cp", path, code)

      /** Node's checkPaths: the source exists; a destination of another kind, the same file or the source's own subtree is refused. */
      const cpCheckPaths = (src: string, dest: string) =>
        Effect.gen(function* () {
          const s = yield* lstat(src)
          const d = yield* Effect.result(lstat(dest))
          if (d._tag === "Failure" && d.failure.reason._tag !== "NotFound") return yield* d.failure
          const destInfo = d._tag === "Success" ? d.success : undefined
          if (destInfo !== undefined) {
            if ((yield* identity(src, false)) === (yield* identity(dest, false)))
              return yield* cpError("ERR_FS_CP_EINVAL", dest)
            if (s.type === "Directory" && destInfo.type !== "Directory")
              return yield* cpError("ERR_FS_CP_DIR_TO_NON_DIR", dest)
            if (s.type !== "Directory" && destInfo.type === "Directory")
              return yield* cpError("ERR_FS_CP_NON_DIR_TO_DIR", dest)
          }
          if (s.type === "Directory" && isSubdirectory(src, dest)) return yield* cpError("ERR_FS_CP_EINVAL", dest)
          return destInfo
        })

      const cpLink = (destInfo: FileSystem.File.Info | undefined, src: string, dest: string) =>
        Effect.gen(function* () {
          const target = yield* readLink(src)
          // Node makes a relative link target absolute (verbatimSymlinks is false).
          const resolvedSrc = posix.isAbsolute(target) ? target : posix.resolve(posix.dirname(src), target)
          if (destInfo === undefined) return yield* symlink(resolvedSrc, dest)
          const destTarget = yield* Effect.result(readLink(dest))
          if (destTarget._tag === "Failure") return yield* symlink(resolvedSrc, dest)
          const resolvedDest = posix.isAbsolute(destTarget.success)
            ? destTarget.success
            : posix.resolve(posix.dirname(dest), destTarget.success)
          if (isSubdirectory(resolvedSrc, resolvedDest)) return yield* cpError("ERR_FS_CP_EINVAL", dest)
          const srcInfo = yield* stat(src)
          if (srcInfo.type === "Directory" && isSubdirectory(resolvedDest, resolvedSrc)) {
            return yield* cpError("ERR_FS_CP_SYMLINK_TO_SUBDIRECTORY", dest)
          }
          yield* remove(dest)
          yield* symlink(resolvedSrc, dest)
        })

      const cpEntry = (
        destInfo: FileSystem.File.Info | undefined,
        src: string,
        dest: string,
        options: Parameters<FileSystem.FileSystem["copy"]>[2]
      ): Effect.Effect<void, PlatformError.PlatformError> =>
        Effect.gen(function* () {
          const s = yield* lstat(src)
          if (s.type === "SymbolicLink") return yield* cpLink(destInfo, src, dest)
          if (s.type !== "Directory") {
            if (destInfo !== undefined) {
              // Without `overwrite` an existing file is silently left alone (errorOnExist is false).
              if (options?.overwrite !== true) return
              yield* remove(dest)
            }
            yield* copyFile(src, dest)
            if (options?.preserveTimestamps === true && Option.isSome(s.atime) && Option.isSome(s.mtime)) {
              yield* utimes(dest, s.atime.value, s.mtime.value)
            }
            return yield* chmod(dest, s.mode & 0o7777)
          }
          if (destInfo === undefined) yield* makeDirectory(dest)
          for (const name of yield* readDirectory(src)) {
            const from = HostPath.child(src, name)
            const to = HostPath.child(dest, name)
            yield* cpEntry(yield* cpCheckPaths(from, to), from, to, options)
          }
          // A directory the copy made gets the source's mode once its entries are done, as Node does.
          if (destInfo === undefined) yield* chmod(dest, s.mode & 0o7777)
        })

      /**
       * Node's `fs.cp` (recursive, no dereference, errorOnExist false), made
       * of the overlay's own steps, so each is recorded and reads back.
       */
      const copy = (from: string, to: string, options?: Parameters<FileSystem.FileSystem["copy"]>[2]) =>
        Effect.gen(function* () {
          const src = posix.resolve(from)
          const dest = posix.resolve(to)
          const destInfo = yield* cpCheckPaths(src, dest)
          const srcIdentity = yield* identity(src, false)
          // checkParentPaths: the destination must not be inside the source through a link.
          for (let p = posix.dirname(dest); p !== posix.dirname(src) && p !== "/"; p = posix.dirname(p)) {
            const up = yield* Effect.result(identity(p, true))
            if (up._tag === "Failure") {
              if (up.failure.reason._tag === "NotFound") break
              return yield* up.failure
            }
            if (up.success === srcIdentity) return yield* cpError("ERR_FS_CP_EINVAL", dest)
          }
          if (!(yield* exists(posix.dirname(dest)))) yield* makeDirectory(posix.dirname(dest), { recursive: true })
          yield* cpEntry(destInfo, src, dest, options)
        })

      return FileSystem.make({
        access,
        lstat,
        stat,
        readDirectory,
        readDirectoryEntries,
        readFile: readBytes,
        readLink,
        realPath,
        open,
        writeFile,
        remove,
        makeDirectory,
        rename,
        symlink,
        chmod,
        chown,
        makeTempDirectory: makeTempDirectoryAs("makeTempDirectory"),
        makeTempDirectoryScoped: (options) =>
          Effect.acquireRelease(makeTempDirectoryAs("makeTempDirectoryScoped")(options), removeScoped),
        makeTempFile: makeTempFileAs("makeTempFile"),
        makeTempFileScoped: (options) =>
          Effect.acquireRelease(makeTempFileAs("makeTempFileScoped")(options), (file) =>
            removeScoped(HostPath.dirname(file))
          ),
        truncate,
        copyFile,
        copy,
        link,
        utimes,
        // Events of the host only: nothing happens on the overlay's own files.
        watch: (path, options) => real.watch(path, options)
      })
    })
  )

// ---------------------------------------------------------------------------
// mounts, commands, units

/**
 * Mounter that records each unmount and hides it from the mount table the
 * dry run's file system serves: the newest mount at the target goes, with
 * every mount below it (what a lazy detach does). Each target is verified
 * first as the real mounters verify it, on the host's paths and the table as
 * the dry run left it: outside the root handle is `OutsideRoot`, a missing
 * component `Gone`, a symbolic link on the way `LinkInPath`, a path that
 * leads to another mount `Moved` (all `Unverified`, nothing recorded). Where
 * the table lists nothing at all, the target fails as umount2 would, with
 * EINVAL. A dry run cannot know that a mount is busy: a strict (not lazy)
 * unmount of a mount some process holds is `Unmounted` here and `EBUSY` for
 * real.
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
      /**
       * The path checks of a real mounter, on the host's paths: below the root handle, every component a
       * directory reached without a link. Undefined when the path passes them.
       */
      const verifyPath = (
        root: Directory.Handle,
        t: Mounter.Target
      ): Effect.Effect<Mounter.UnmountResult | undefined> =>
        Effect.gen(function* () {
          const unverified = (reason: Mounter.UnverifiedReason, detail: string): Mounter.UnmountResult => ({
            _tag: "Unverified",
            target: t.path,
            reason,
            detail: `${detail} (dry run)`
          })
          const rel = Mounter.below(root.path, t.path)
          if (rel === undefined) return unverified("OutsideRoot", `not below the host root ${root.path}`)
          let at = root.path
          for (const bytes of Directory.components(FileName.encode(rel))) {
            const name = FileName.decode(bytes)
            at = HostPath.child(at, name)
            const info = yield* Effect.option(fs.lstat(at))
            if (Option.isNone(info)) return unverified("Gone", "the path no longer exists")
            if (info.value.type === "SymbolicLink") {
              return unverified("LinkInPath", `${FileName.display(name)} is a symbolic link`)
            }
            if (info.value.type !== "Directory") {
              return unverified("Moved", `${FileName.display(name)} is not a directory: the path leads to no mount`)
            }
          }
          return undefined
        })
      return Mounter.Mounter.of({
        unmount: (root, targets, options) =>
          Effect.gen(function* () {
            // One read per call, kept up to date as the targets are detached.
            const entries = [...(yield* table)]
            return yield* Effect.forEach(
              targets,
              (t): Effect.Effect<Mounter.UnmountResult> =>
                Effect.gen(function* () {
                  const refused = yield* verifyPath(root, t)
                  if (refused !== undefined) return refused
                  // Verified against the table a real run would read: the path must lead to the listed mount (the
                  // newest of those at the longest mount point on the way to it).
                  const reached = longestPrefix(entries.filter((e) => HostPath.covers(e.mountPoint, t.tablePath)))
                  if (reached !== undefined && reached.id !== t.mountId) {
                    return {
                      _tag: "Unverified" as const,
                      target: t.path,
                      reason: "Moved" as const,
                      detail: `the path leads to mount ${reached.id}, not to mount ${t.mountId} (dry run)`
                    }
                  }
                  return detach(entries, t.tablePath)
                    ? yield* plan
                        .record({
                          service: "Mounter",
                          action: options.lazy ? "unmount (lazy)" : "unmount",
                          target: t.path
                        })
                        .pipe(Effect.as({ _tag: "Unmounted" as const, target: t.path }))
                    : {
                        _tag: "Failed" as const,
                        target: t.path,
                        failure: { target: t.path, errno: "EINVAL", message: "not mounted (dry run)" }
                      }
                })
            )
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
        return new Directory.DirectoryError({ reason: Directory.reasonOf(errno, e.message), operation, path })
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
                reason: new Directory.SymbolicLink({ errno: "ELOOP", detail: "a link" }),
                operation: "openat",
                path
              })
            if (st.type !== "Directory")
              return yield* new Directory.DirectoryError({
                reason: new Directory.NotADirectory({ errno: "ENOTDIR", detail: "not a directory" }),
                operation: "openat",
                path
              })
            if (options?.sameMount === true && st.mountId !== mountIdOf(table, dir.path)) {
              return yield* new Directory.DirectoryError({
                reason: new Directory.OtherMount({ detail: `the root of mount ${st.mountId} (dry run)` }),
                operation: "openat",
                path
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
