/**
 * The dry-run `Directory.Directories`: handles that are paths over the dry
 * run's file system, so the operations' handle walks see the overlay, with
 * mount ids from the overlay's mount table. Boundary: it reads through the
 * FileSystem in context (the dry run's) and records nothing itself.
 */
import { Directory, FileName, HostPath, MountInfo } from "@hostnode/core"
import { Effect, FileSystem, Layer, Option } from "effect"
import type * as PlatformError from "effect/PlatformError"
import { longestPrefix } from "./overlay.ts"

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

/** Documented where `DryRun.ts` exports it. */
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
      const child = Directory.childPath
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

/** Documented where `DryRun.ts` exports it. */
export const layerDirectories: Layer.Layer<Directory.Directories, never, FileSystem.FileSystem> = layerDirectoriesWith()
