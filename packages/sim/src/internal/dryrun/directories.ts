/**
 * The dry-run `Directory.Directories`: the real `Directories` in context,
 * seen through the dry run's overlay. A handle is a path and, where the
 * overlay has changed nothing at or above it, a real handle on the same
 * node: what the host holds is read through the real layer (its calls
 * bounded by their deadlines, stats to the nanosecond, mount ids as the
 * kernel gives them, names as bytes), and the snapshot's lock is the real
 * one. What the dry run pretended to do (removed, written, renamed, a
 * mount detached and its mount point uncovered) is read from the overlay,
 * with mount ids from the dry run's mount table. Every change goes through
 * the dry run's file system, which records it.
 *
 * Boundary: routing between the real layer and the overlay; the overlay
 * itself is `view.ts`, the recording `writes.ts`.
 */
import { Directory, FileName, type MountInfo } from "@hostnode/core"
import * as Layers from "@hostnode/core/Layers"
import * as Programs from "@hostnode/core/Programs"
import { Lexical } from "@hostnode/core/Programs"
import { Effect, FileSystem, Layer, Option, type Scope } from "effect"
import type * as PlatformError from "effect/PlatformError"
import { longestPrefix, withoutDetached } from "./overlay.ts"
import { type View, viewOf } from "./view.ts"

/** The major and minor of a `dev` number as stat reports it (the kernel's `new_decode_dev`). */
const devNumbers = (dev: number): string => {
  const d = BigInt(dev)
  const major = Number(((d >> 8n) & 0xfffn) | ((d >> 32n) & ~0xfffn))
  const minor = Number((d & 0xffn) | ((d >> 12n) & ~0xffn))
  return `${major}:${minor}`
}

/** Documented where `DryRun.ts` exports it. */
export interface TableOptions {
  readonly mountInfo?: string | undefined
  readonly tableRoot?: string | undefined
}

const DryHandleTypeId: unique symbol = Symbol.for("@hostnode/sim/DryRun/Handle")

/** A handle of the dry run: where it is, and a real handle on the same node while the overlay leaves it alone. */
interface DryHandle extends Directory.Handle {
  readonly [DryHandleTypeId]: typeof DryHandleTypeId
  readonly real: Directory.Handle | undefined
}

const isDry = (h: Directory.Handle): h is DryHandle => DryHandleTypeId in h

/**
 * `Directory.Directories` for a dry run: the real `Directories` in context
 * seen through the dry run's file system (the overlay), so the operations'
 * handle walks see what the dry run pretended to do. What the
 * host holds is read through the real layer (a handle carries a real handle
 * on the same node while the overlay leaves it alone): its calls keep their
 * deadlines, stats are the kernel's to the nanosecond (a restore's dry run
 * finds unchanged files unchanged), mount ids are `statx`'s, names are
 * bytes, and a snapshot's lock is the real lock on its directory. What
 * the dry run removed, wrote, renamed or uncovered (a detached mount's
 * mount point) is read from the overlay, with mount ids from the dry run's
 * mount table. Every change goes through the dry run's file system, which
 * records it. Requires that file system and the real `Directories`.
 */
export const layerDirectoriesWith = (
  options?: TableOptions
): Layer.Layer<Directory.Directories, never, FileSystem.FileSystem | Directory.Directories> =>
  Layer.effect(
    Directory.Directories,
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const real = yield* Directory.Directories
      const view: View | undefined = viewOf(fs)
      const tableRoot = options?.tableRoot ?? "/"
      const child = Programs.childPath

      /** Where `full`'s truth lies; without the dry run's overlay (another FileSystem), the host's. */
      const placeOf = (full: string) => view?.place(full) ?? ({ _tag: "Host", path: full } as const)
      /** True when `full` is the host's, at the same path: the real layer answers for it. */
      const onHost = (full: string) => {
        const at = placeOf(full)
        return at._tag === "Host"
      }

      const dry = (path: string, handle: Directory.Handle | undefined): DryHandle =>
        Programs.handle({ path, real: handle, [DryHandleTypeId]: DryHandleTypeId } as const)
      /**
       * A handle this layer did not make (a caller's own, of another layer) is
       * taken as the host's node at its path: what is below it is opened by
       * path once, then through real handles.
       */
      const asDry = (h: Directory.Handle): DryHandle => (isDry(h) ? h : dry(h.path, undefined))
      /** The real handle of `h`, while the overlay has changed nothing at or above it. */
      const realOf = (h: DryHandle): Directory.Handle | undefined =>
        h.real !== undefined && onHost(h.path) ? h.real : undefined

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
          reason: Directory.SystemError.fromErrno(errno, e.message),
          operation,
          path
        })
      }
      const refuse = (operation: string, path: string, errno: string, detail: string) =>
        new Directory.DirectoryError({ reason: Directory.SystemError.fromErrno(errno, detail), operation, path })

      // The mount table, read once (when a path of the overlay first needs a mount id); what the
      // dry run detached since is taken out of it each time.
      let table: ReadonlyArray<MountInfo.MountEntry> | undefined
      const readTable = Effect.map(
        Effect.suspend(() =>
          table !== undefined
            ? Effect.succeed(table)
            : fs.readFileString(options?.mountInfo ?? Programs.DefaultMountInfo).pipe(
                Effect.flatMap((text) => Layers.parseMountInfo(text)),
                Effect.orElseSucceed((): ReadonlyArray<MountInfo.MountEntry> => []),
                Effect.tap((entries) =>
                  Effect.sync(() => {
                    table = entries
                  })
                )
              )
        ),
        (entries) => (view === undefined ? entries : withoutDetached(entries, view.plan.detached, view.plan.detachedAs))
      )
      /** The mount a path of the overlay is in: the deepest mount containing it, as the dry run's table shows it. */
      const mountIdOf = (full: string) =>
        Effect.map(readTable, (t) => {
          const path = Lexical.relative(tableRoot, full)
          if (path === undefined) return -1
          return longestPrefix(t.filter((e) => Lexical.covers(Lexical.clean(e.mountPoint), path)))?.id ?? -1
        })

      // Nodes of the overlay have no inode on the host: each path gets one of its own, stable for the run.
      const inodes = new Map<string, bigint>()
      const inodeOf = (full: string) => {
        let ino = inodes.get(full)
        if (ino === undefined) {
          ino = (1n << 60n) + BigInt(inodes.size)
          inodes.set(full, ino)
        }
        return ino
      }

      /** The stat of a path of the overlay, through the dry run's file system. */
      const overlayStat = (full: string, operation: string) =>
        Effect.gen(function* () {
          const info = yield* fs.lstat(full).pipe(Effect.mapError(error(operation, full)))
          return {
            type: info.type === "Unknown" ? "Unknown" : info.type,
            mode: info.mode & 0o7777,
            uid: Option.getOrElse(info.uid, () => 0),
            gid: Option.getOrElse(info.gid, () => 0),
            size: Number(info.size),
            nlink: Number(Option.getOrElse(info.nlink, () => 1n)),
            device: devNumbers(Number(info.dev)),
            inode: inodeOf(full),
            mountId: yield* mountIdOf(full),
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
          } satisfies Directory.Stat
        })

      /**
       * Opens `full` (the child `name` of `dir`, or a root) for the dry run:
       * through the real layer where the host's node is there (`viaReal`),
       * else a handle of the overlay after `check` of its stat.
       */
      const open = (
        full: string,
        operation: string,
        viaReal: (
          parent: Directory.Handle | undefined,
          hostPath: string
        ) => Effect.Effect<Directory.Handle, Directory.DirectoryError, Scope.Scope>,
        parent: DryHandle | undefined,
        check: (st: Directory.Stat) => Effect.Effect<void, Directory.DirectoryError>
      ): Effect.Effect<DryHandle, Directory.DirectoryError, Scope.Scope> =>
        Effect.gen(function* () {
          const at = placeOf(full)
          if (at._tag === "Absent") return yield* refuse(operation, full, "ENOENT", "no such file or directory")
          if (at._tag === "Host") {
            const up = parent === undefined ? undefined : realOf(parent)
            // Below a parent the host holds, relative to its real handle; else (renamed by the dry run) by path.
            return dry(full, yield* viaReal(up !== undefined && at.path === full ? up : undefined, at.path))
          }
          yield* check(yield* overlayStat(full, operation))
          return dry(full, undefined)
        })

      const openRoot: Directory.Primitives["openRoot"] = (path) =>
        open(
          path,
          "open",
          (_, hostPath) => real.openRoot(hostPath),
          undefined,
          (st) =>
            st.type === "Directory" ? Effect.void : Effect.fail(refuse("open", path, "ENOTDIR", "not a directory"))
        )

      const openDirectory: Directory.Primitives["openDirectory"] = (dirIn, name, opts) => {
        const dir = asDry(dirIn)
        const path = child(dir.path, name)
        return open(
          path,
          "openat",
          (up, hostPath) =>
            up !== undefined
              ? real.openDirectory(up, name, opts)
              : Effect.gen(function* () {
                  // Renamed in the dry run: the host's node under its old name, checked as openat would.
                  const st = yield* real.stat(
                    yield* real.openRoot(Lexical.dirname(hostPath)),
                    FileName.encode(hostPath.slice(hostPath.lastIndexOf("/") + 1))
                  )
                  if (st.type !== "Directory")
                    return yield* refuse(
                      "openat",
                      path,
                      st.type === "SymbolicLink" ? "ELOOP" : "ENOTDIR",
                      "not a directory"
                    )
                  return yield* real.openRoot(hostPath)
                }),
          dir,
          (st) =>
            Effect.gen(function* () {
              if (st.type === "SymbolicLink") return yield* refuse("openat", path, "ELOOP", "a link")
              if (st.type !== "Directory") return yield* refuse("openat", path, "ENOTDIR", "not a directory")
              if (opts?.sameMount === true) {
                const parentMount = yield* identify(dir)
                if (st.mountId !== parentMount.mountId) {
                  return yield* new Directory.DirectoryError({
                    reason: new Directory.SystemError({
                      _tag: "OtherMount",
                      detail: `the root of mount ${st.mountId}, not of mount ${parentMount.mountId} it is in (dry run)`
                    }),
                    operation: "openat",
                    path
                  })
                }
              }
            })
        )
      }

      const openPath: Directory.Primitives["openPath"] = (dirIn, name) => {
        const dir = asDry(dirIn)
        const path = child(dir.path, name)
        return open(
          path,
          "openat",
          (up, hostPath) =>
            up !== undefined
              ? real.openPath(up, name)
              : Effect.flatMap(real.openRoot(Lexical.dirname(hostPath)), (d) =>
                  real.openPath(d, FileName.encode(hostPath.slice(hostPath.lastIndexOf("/") + 1)))
                ),
          dir,
          () => Effect.void
        )
      }

      const openParent: Directory.Primitives["openParent"] = (dirIn) => {
        const dir = asDry(dirIn)
        const path = Lexical.dirname(dir.path)
        const up = realOf(dir)
        return up !== undefined && onHost(path) ? Effect.map(real.openParent(up), (h) => dry(path, h)) : openRoot(path)
      }

      /** `name` of `dir` (or `dir`) answered by the real layer when the host's node is there, else by the overlay. */
      const route = <A>(
        dirIn: Directory.Handle,
        name: Uint8Array | undefined,
        viaReal: (up: Directory.Handle) => Effect.Effect<A, Directory.DirectoryError>,
        viaOverlay: (full: string) => Effect.Effect<A, Directory.DirectoryError>
      ): Effect.Effect<A, Directory.DirectoryError> =>
        Effect.suspend(() => {
          const dir = asDry(dirIn)
          const full = name === undefined ? dir.path : child(dir.path, name)
          const up = realOf(dir)
          const at = placeOf(full)
          if (up !== undefined && at._tag === "Host" && at.path === full) return viaReal(up)
          if (at._tag === "Absent") return Effect.fail(refuse("statx", full, "ENOENT", "no such file or directory"))
          return viaOverlay(full)
        })

      const stat: Directory.Primitives["stat"] = (dir, name) =>
        route(
          dir,
          name,
          (up) => real.stat(up, name),
          (full) => overlayStat(full, "statx")
        )

      const identify = (dir: Directory.Handle, name?: Uint8Array) =>
        route(
          dir,
          name,
          (up) => real.identify(up, name),
          (full) =>
            Effect.map(overlayStat(full, "statx"), (st) => ({
              type: st.type,
              device: st.device,
              inode: st.inode,
              mountId: st.mountId
            }))
        )

      const list: Directory.Primitives["list"] = (dirIn) =>
        Effect.suspend(() => {
          const dir = asDry(dirIn)
          const up = realOf(dir)
          const added = (view?.overlayChildren(dir.path) ?? []).map(
            (n): Programs.Entry => ({ name: FileName.encode(n), type: "Unknown" })
          )
          if (up === undefined || placeOf(dir.path)._tag !== "Host") {
            // A directory of the overlay: the dry run's file system lists it.
            return fs.readDirectory(dir.path).pipe(
              Effect.map((names) => names.map((n): Programs.Entry => ({ name: FileName.encode(n), type: "Unknown" }))),
              Effect.mapError(error("getdents64", dir.path))
            )
          }
          return Effect.map(real.list(up), (entries) => {
            // What the dry run removed is gone; what it replaced (a file written, a mount point it uncovered)
            // stays, its type looked up by whoever needs it; what it made is added.
            const shown: Array<Programs.Entry> = []
            for (const e of entries) {
              const full = child(dir.path, e.name)
              const at = placeOf(full)
              if (at._tag === "Absent") continue
              shown.push(at._tag === "Host" && at.path === full ? e : { name: e.name, type: "Unknown" })
            }
            const names = new Set(shown.map((e) => FileName.decode(e.name)))
            return [...shown, ...added.filter((e) => !names.has(FileName.decode(e.name)))]
          })
        })

      const readLink: Directory.Primitives["readLink"] = (dir, name) =>
        route(
          dir,
          name,
          (up) => real.readLink(up, name),
          (full) => fs.readLink(full).pipe(Effect.map(FileName.encode), Effect.mapError(error("readlinkat", full)))
        )

      const overlayFile = (
        path: string,
        file: FileSystem.File,
        statOf: Effect.Effect<Directory.Stat, Directory.DirectoryError>
      ): Programs.File => {
        const e = error("file", path)
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
          sync: Effect.void,
          // A file of the overlay is the dry run's own: no other process can hold it.
          tryLock: Effect.succeed(true),
          lockHolder: Effect.succeed(undefined),
          holeAt: (offset) => Effect.map(statOf, (st) => Math.max(offset, st.size))
        }
      }

      const openFile: Directory.Primitives["openFile"] = (dirIn, name, opts) =>
        Effect.gen(function* () {
          const dir = asDry(dirIn)
          const path = child(dir.path, name)
          const up = realOf(dir)
          const at = placeOf(path)
          // Read from the host where its file is there; written (or made) in the overlay, which records it.
          if (opts.mode === "read" && up !== undefined && at._tag === "Host" && at.path === path) {
            return yield* real.openFile(up, name, opts)
          }
          if (opts.mode === "read" && at._tag === "Absent") {
            return yield* refuse("openat", path, "ENOENT", "no such file or directory")
          }
          if (opts.mode !== "create") {
            const st = yield* overlayStat(path, "openat")
            if (st.type === "SymbolicLink") return yield* refuse("openat", path, "ELOOP", "a link")
            if (st.type === "Directory" && opts.mode === "write")
              return yield* refuse("openat", path, "EISDIR", "a directory")
            if (st.type !== "File") {
              return yield* new Directory.DirectoryError({
                reason: new Directory.SystemError({ _tag: "WrongType", detail: `a ${st.type}, not a regular file` }),
                operation: "openat",
                path
              })
            }
          }
          const file = yield* fs
            .open(
              path,
              opts.mode === "read"
                ? { flag: "r" }
                : opts.mode === "write"
                  ? { flag: "r+" }
                  : { flag: "wx", mode: opts.permissions }
            )
            .pipe(Effect.mapError(error("openat", path)))
          return overlayFile(path, file, overlayStat(path, "fstat"))
        })

      return Directory.make({
        openRoot,
        openDirectory,
        openParent,
        openPath,
        list,
        stat,
        identify,
        readLink,
        openFile,
        // Changes go to the dry run's file system, which records them and keeps them in its overlay.
        unlink: (dir, name, opts) => {
          const path = child(asDry(dir).path, name)
          return fs
            .remove(path, opts?.directory === true ? { recursive: true } : {})
            .pipe(Effect.mapError(error("unlinkat", path)))
        },
        makeDirectory: (dir, name, permissions) => {
          const path = child(asDry(dir).path, name)
          return fs.makeDirectory(path, { mode: permissions }).pipe(Effect.mapError(error("mkdirat", path)))
        },
        symlink: (dir, name, target) => {
          const path = child(asDry(dir).path, name)
          return fs.symlink(FileName.decode(target), path).pipe(Effect.mapError(error("symlinkat", path)))
        },
        rename: (from, fromName, to, toName) => {
          const source = child(asDry(from).path, fromName)
          return fs.rename(source, child(asDry(to).path, toName)).pipe(Effect.mapError(error("renameat2", source)))
        },
        chown: (dir, name, uid, gid) => {
          const path = name === undefined ? asDry(dir).path : child(asDry(dir).path, name)
          return fs.chown(path, uid, gid).pipe(Effect.mapError(error("fchownat", path)))
        },
        chmod: (dir, mode) => fs.chmod(asDry(dir).path, mode).pipe(Effect.mapError(error("fchmod", asDry(dir).path))),
        // The lock is the real one where the host holds the directory: a dry run waits for a real operation
        // on the same snapshot as a real run would (a directory lock creates nothing).
        lock: (dirIn) => {
          const up = realOf(asDry(dirIn))
          return up === undefined ? Effect.succeed(true) : real.lock(up)
        },
        lockHolder: (dirIn) => {
          const up = realOf(asDry(dirIn))
          return up === undefined ? Effect.succeed(undefined) : real.lockHolder(up)
        },
        credentials: real.credentials,
        sync: () => Effect.void,
        syncFileSystem: () => Effect.void
      })
    })
  )

/**
 * {@link layerDirectoriesWith} for this process's own mount table.
 */
export const layerDirectories: Layer.Layer<
  Directory.Directories,
  never,
  FileSystem.FileSystem | Directory.Directories
> = layerDirectoriesWith()
