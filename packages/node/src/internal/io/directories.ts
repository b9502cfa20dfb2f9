/**
 * The real `Directories` over a helper client (`./client.ts`): each
 * primitive one request, its failure the `DirectoryError` the simulated host
 * gives for the same errno. `NodeDirectory.layer` builds it over a client of
 * this host's; the container composition over a client whose every call
 * first asks whether the container still lives.
 *
 * Internal: `NodeDirectory` is the public face.
 *
 * @since 0.4.0
 */
import { Directory, FileName, HostPath } from "@hostnode/core"
import type { Failure, Identity, RemoveResult } from "@hostnode/core/Programs"
import * as Programs from "@hostnode/core/Programs"
import { Effect, type Scope } from "effect"
import type * as Io from "./client.ts"
import type * as Sys from "./sys.ts"

/** A failure of the helper as the `DirectoryError` of `operation` on `path`. */
const toDirectoryError = (f: Failure, operation: string, path: string): Directory.DirectoryError =>
  new Directory.DirectoryError({
    reason:
      f.reason === "Hung"
        ? new Directory.Hung({ call: f.call ?? operation, seconds: f.seconds ?? 0, detail: f.detail })
        : f.reason === "Gone"
          ? new HostPath.Gone({ detail: f.detail })
          : f.reason === "OtherMount"
            ? new Directory.SystemError({ _tag: "OtherMount", detail: f.detail })
            : f.reason === "WrongType"
              ? new Directory.SystemError({
                  _tag: "WrongType",
                  ...(f.errno === undefined ? {} : { errno: f.errno }),
                  detail: f.detail
                })
              : f.errno === undefined
                ? f.reason === "NotFound"
                  ? new Directory.SystemError({ _tag: "NotFound", detail: f.detail })
                  : new Directory.SystemError({ _tag: "Other", errno: "EIO", detail: f.detail })
                : Directory.SystemError.fromErrno(f.errno, f.detail),
    operation,
    path
  })

/**
 * A name that is not one component, refused before the call, as the simulated host refuses it. `path` is
 * where it is, or the directory it is in (then the path is made only for a name refused: a batch asks
 * about thousands).
 */
const badName = (
  operation: string,
  path: string | { readonly in: string },
  name: Uint8Array
): Directory.DirectoryError | undefined => {
  const errno = Programs.nameProblem(name)
  if (errno === undefined) return undefined
  return new Directory.DirectoryError({
    reason: new Directory.SystemError({
      _tag: "InvalidName",
      errno,
      detail:
        errno === "ENAMETOOLONG"
          ? `a name of ${name.length} bytes, more than ${Programs.NameMax}`
          : "not a single path component (empty, `.`, `..`, or with a `/` or NUL byte)"
    }),
    operation,
    path: typeof path === "string" ? path : Programs.childPath(path.in, name)
  })
}

/** Options of {@link build}. */
export interface Options {
  /** Use `openat2` for resolution where the kernel has it (default true); false walks from handle to handle. */
  readonly openat2?: boolean | undefined
}

/** The service over a helper client (see the module comment). */
export const build = (client: Io.Client, options?: Options): Directory.Directories => {
  const useOpenat2 = options?.openat2 ?? true

  /** One call: `op` on `handles`, its failure the `DirectoryError` of `operation` on `path`. */
  const call = (
    op: string,
    handles: ReadonlyArray<Directory.Handle>,
    args: (fds: ReadonlyArray<number>) => ReadonlyArray<unknown>,
    operation: string,
    path: string
  ): Effect.Effect<unknown, Directory.DirectoryError> =>
    Effect.map(callIn(op, handles, args, operation, path), (a) => a.value)

  /** {@link call}, and which helper answered (what it opened is that helper's descriptor). */
  const callIn = (
    op: string,
    handles: ReadonlyArray<Directory.Handle>,
    args: (fds: ReadonlyArray<number>) => ReadonlyArray<unknown>,
    operation: string,
    path: string
  ): Effect.Effect<Io.Answer, Directory.DirectoryError> =>
    client
      .request(op, handles, args, { call: operation, path })
      .pipe(Effect.mapError((f) => toDirectoryError(f, f.call ?? operation, path)))

  const named = <A, R>(
    operation: string,
    names: ReadonlyArray<readonly [string, Uint8Array]>,
    body: () => Effect.Effect<A, Directory.DirectoryError, R>
  ): Effect.Effect<A, Directory.DirectoryError, R> => {
    for (const [path, name] of names) {
      const e = badName(operation, path, name)
      if (e !== undefined) return Effect.fail(e)
    }
    return body()
  }

  /**
   * A handle for what `open` opened (`where` names it; `undefined`: nothing
   * was opened), closed with the scope. The call may be interrupted (an
   * operation's timeout); what it opened then is closed when its answer comes.
   */
  const own = <A>(
    open: Effect.Effect<Io.Answer, Directory.DirectoryError>,
    where: (r: unknown) => { readonly fd: number; readonly mountId: number; readonly path: string } | undefined,
    root: boolean,
    done: (h: Io.IoHandle | undefined, r: unknown) => A
  ): Effect.Effect<A, Directory.DirectoryError, Scope.Scope> =>
    // The call is as interruptible as its caller (an operation's timeout ends it, a finalizer's
    // restore runs to the end); the handle, once there, is released with the scope.
    Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(restore(open), ({ value: r, gen }) => {
        const w = where(r)
        if (w === undefined) return Effect.succeed(done(undefined, r))
        return Effect.flatMap(
          root
            ? client.root(w.fd, w.mountId, w.path, gen)
            : Effect.succeed(client.handle(w.fd, w.mountId, w.path, gen)),
          (h) =>
            Effect.as(
              Effect.addFinalizer(() => client.release(h)),
              done(h, r)
            )
        )
      })
    )

  /** The handle of an answer `{ fd, mountId }` or `{ fd, identity }` at `path`. */
  const at =
    (path: string) =>
    (r: unknown): { readonly fd: number; readonly mountId: number; readonly path: string } => {
      const o = r as { readonly fd: number; readonly mountId?: number; readonly identity?: Identity }
      return { fd: o.fd, mountId: o.mountId ?? o.identity?.mountId ?? -1, path }
    }
  const handleOf = (h: Io.IoHandle | undefined): Directory.Handle => h as Io.IoHandle

  const openRoot: Directory.Primitives["openRoot"] = (path) =>
    own(
      callIn("openRoot", [], () => [FileName.encode(path)], "open", path),
      at(path),
      true,
      handleOf
    )

  const openDirectory: Directory.Primitives["openDirectory"] = (dir, name, opts) => {
    const path = Programs.childPath(dir.path, name)
    return named("openat", [[path, name]], () =>
      own(
        callIn("openDirectory", [dir], ([fd]) => [fd, name, opts?.sameMount === true], "openat", path),
        at(path),
        false,
        handleOf
      )
    )
  }

  const openParent: Directory.Primitives["openParent"] = (dir) => {
    const path = dir.path === "/" ? "/" : dir.path.slice(0, Math.max(1, dir.path.lastIndexOf("/")))
    return own(
      callIn("openParent", [dir], ([fd]) => [fd], "openat", `${dir.path}/..`),
      at(path),
      false,
      handleOf
    )
  }

  // One call to the helper for the whole chain (openParent and stat each cost a round trip per directory).
  const ancestors: NonNullable<Directory.Primitives["ancestors"]> = (dir) =>
    call("ancestors", [dir], ([fd]) => [fd], "openat", `${dir.path}/..`) as Effect.Effect<
      ReadonlyArray<Directory.Stat>,
      Directory.DirectoryError
    >

  // The helper's: locks are taken by it, so it is the process another one sees holding them.
  // Asked of it (one round trip), so every call made before is done when this answers.
  const credentials: Directory.Primitives["credentials"] = Effect.map(
    Effect.option(client.request("credentials", [], () => [], { call: "getpid", path: "/" })),
    (r) =>
      r._tag === "Some"
        ? (r.value.value as Programs.Credentials)
        : { uid: process.geteuid?.() ?? 0, gid: process.getegid?.() ?? 0, pid: process.pid }
  )

  const openPath: Directory.Primitives["openPath"] = (dir, name) => {
    const path = Programs.childPath(dir.path, name)
    return named("openat", [[path, name]], () =>
      own(
        callIn("openPath", [dir], ([fd]) => [fd, name], "openat", path),
        at(path),
        false,
        handleOf
      )
    )
  }

  const list: Directory.Primitives["list"] = (dir) =>
    call("list", [dir], ([fd]) => [fd], "getdents64", dir.path) as Effect.Effect<
      ReadonlyArray<Programs.Entry>,
      Directory.DirectoryError
    >

  const stat: Directory.Primitives["stat"] = (dir, name) => {
    const path = name === undefined ? dir.path : Programs.childPath(dir.path, name)
    const bad = name === undefined ? undefined : badName("statx", path, name)
    if (bad !== undefined) return Effect.fail(bad)
    return call("stat", [dir], ([fd]) => [fd, name ?? null], "statx", path) as Effect.Effect<
      Directory.Stat,
      Directory.DirectoryError
    >
  }

  const identify: NonNullable<Directory.Primitives["identify"]> = (dir, name) => {
    const path = name === undefined ? dir.path : Programs.childPath(dir.path, name)
    const bad = name === undefined ? undefined : badName("statx", path, name)
    if (bad !== undefined) return Effect.fail(bad)
    return call("identify", [dir], ([fd]) => [fd, name ?? null], "statx", path) as Effect.Effect<
      Identity,
      Directory.DirectoryError
    >
  }

  const openBeneath: NonNullable<Directory.Primitives["openBeneath"]> = (root, components) => {
    const path = components.reduce((here: string, n) => Programs.childPath(here, n), root.path)
    return own(
      callIn("openBeneath", [root], ([fd]) => [fd, components], "openat2", path),
      at(path),
      false,
      (h, r) => ({
        handle: handleOf(h),
        identity: (r as { readonly identity: Identity }).identity
      })
    )
  }

  const readLink: Directory.Primitives["readLink"] = (dir, name) => {
    const path = Programs.childPath(dir.path, name)
    return named(
      "readlinkat",
      [[path, name]],
      () =>
        call("readLink", [dir], ([fd]) => [fd, name], "readlinkat", path) as Effect.Effect<
          Uint8Array,
          Directory.DirectoryError
        >
    )
  }

  const unit = (e: Effect.Effect<unknown, Directory.DirectoryError>) => Effect.asVoid(e)

  const unlink: Directory.Primitives["unlink"] = (dir, name, opts) => {
    const path = Programs.childPath(dir.path, name)
    const directory = opts?.directory === true
    return named("unlinkat", [[path, name]], () =>
      unit(call("unlink", [dir], ([fd]) => [fd, name, directory], directory ? "rmdir" : "unlinkat", path))
    )
  }

  const unlinkAll: NonNullable<Directory.Primitives["unlinkAll"]> = (dir, names) =>
    Effect.gen(function* () {
      const out: Array<Directory.DirectoryError | undefined> = names.map((name) =>
        badName("unlinkat", Programs.childPath(dir.path, name), name)
      )
      const good = names.filter((_, i) => out[i] === undefined)
      if (good.length === 0) return out
      const r = yield* Effect.result(call("unlinkAll", [dir], ([fd]) => [fd, good], "unlinkat", dir.path))
      let k = 0
      for (let i = 0; i < names.length; i++) {
        if (out[i] !== undefined) continue
        const path = Programs.childPath(dir.path, names[i] as Uint8Array)
        if (r._tag === "Failure") {
          out[i] = new Directory.DirectoryError({ reason: r.failure.reason, operation: r.failure.operation, path })
        } else {
          const f = (r.success as ReadonlyArray<Failure | null>)[k]
          out[i] = f === null || f === undefined ? undefined : toDirectoryError(f, "unlinkat", path)
        }
        k++
      }
      return out
    })

  const makeDirectory: Directory.Primitives["makeDirectory"] = (dir, name, permissions) => {
    const path = Programs.childPath(dir.path, name)
    return named("mkdirat", [[path, name]], () =>
      unit(call("mkdir", [dir], ([fd]) => [fd, name, permissions], "mkdirat", path))
    )
  }

  const symlink: Directory.Primitives["symlink"] = (dir, name, target) => {
    const path = Programs.childPath(dir.path, name)
    return named("symlinkat", [[path, name]], () =>
      // A NUL in the target would end it early: the link would lead somewhere else than asked.
      target.includes(0)
        ? Effect.fail(
            new Directory.DirectoryError({
              reason: new Directory.SystemError({
                _tag: "InvalidName",
                errno: "EINVAL",
                detail: "the link's target contains a NUL byte"
              }),
              operation: "symlinkat",
              path
            })
          )
        : unit(call("symlink", [dir], ([fd]) => [fd, name, target], "symlinkat", path))
    )
  }

  const rename: Directory.Primitives["rename"] = (from, fromName, to, toName, opts) => {
    const fromPath = Programs.childPath(from.path, fromName)
    const toPath = Programs.childPath(to.path, toName)
    return named(
      "renameat2",
      [
        [fromPath, fromName],
        [toPath, toName]
      ],
      () =>
        unit(
          call(
            "rename",
            [from, to],
            ([f, t]) => [f, fromName, t, toName, opts?.noReplace === true],
            "renameat2",
            fromPath
          )
        )
    )
  }

  const chown: Directory.Primitives["chown"] = (dir, name, uid, gid) => {
    const path = name === undefined ? dir.path : Programs.childPath(dir.path, name)
    return named("fchownat", name === undefined ? [] : [[path, name]], () =>
      unit(call("chown", [dir], ([fd]) => [fd, name ?? null, uid, gid], "fchownat", path))
    )
  }

  const chmod: Directory.Primitives["chmod"] = (dir, mode) =>
    unit(call("chmod", [dir], ([fd]) => [fd, mode], "fchmod", dir.path))

  const sync: Directory.Primitives["sync"] = (dir) => unit(call("fsync", [dir], ([fd]) => [fd], "fsync", dir.path))

  const syncFileSystem: Directory.Primitives["syncFileSystem"] = (dir) =>
    unit(call("syncfs", [dir], ([fd]) => [fd], "syncfs", dir.path))

  const resolveDirectory: NonNullable<Directory.Primitives["resolveDirectory"]> = (root, names, opts) => {
    if (!useOpenat2) return Effect.succeed(undefined)
    const joined = new Uint8Array(names.reduce((n, x) => n + x.length + 1, 0))
    let end = 0
    for (const x of names) {
      joined.set(x, end)
      end += x.length
      joined[end++] = 0x2f
    }
    const path = joined.subarray(0, Math.max(0, end - 1))
    // `null`: no openat2 here, or it ended outside the root: the walk decides.
    return own(
      callIn(
        "resolveDirectory",
        [root],
        ([fd]) => [fd, path, opts.noSymlinks],
        "openat2",
        Programs.childPath(root.path, path)
      ),
      (r) => {
        if (r === null) return undefined
        const o = r as { readonly fd: number; readonly mountId: number; readonly below: string }
        const full = root.path === "/" ? o.below : o.below === "/" ? root.path : `${root.path}${o.below}`
        return { fd: o.fd, mountId: o.mountId, path: full }
      },
      false,
      (h, r) =>
        h === undefined ? undefined : { handle: h as Directory.Handle, path: (r as { readonly below: string }).below }
    )
  }

  const openFile: Directory.Primitives["openFile"] = (dir, name, opts) => {
    const path = Programs.childPath(dir.path, name)
    return named("openat", [[path, name]], () =>
      own(
        callIn(
          "openFile",
          [dir],
          ([fd]) => [fd, name, opts.mode, opts.mode === "create" ? opts.permissions : 0],
          "openat",
          path
        ),
        (fd) => ({ fd: fd as number, mountId: -1, path }),
        false,
        (h) => makeFile(h as Io.IoHandle, path)
      )
    )
  }

  /** The handle of each open file made here: a batch names its source by it. */
  const fileHandles = new WeakMap<Programs.File, Io.IoHandle>()

  /** The open file `h` (at `path`, for reports): every call on its descriptor. */
  const makeFile = (h: Io.IoHandle, path: string): Programs.File => {
    const f = makeFileOn(h, path)
    fileHandles.set(f, h)
    return f
  }

  const makeFileOn = (h: Io.IoHandle, path: string): Programs.File => {
    const on = (op: string, args: (fd: number) => ReadonlyArray<unknown>, operation: string) =>
      call(op, [h], ([fd]) => args(fd as number), operation, path)
    return {
      path,
      stat: on("stat", (fd) => [fd, null], "statx") as Effect.Effect<Directory.Stat, Directory.DirectoryError>,
      read: (buffer, position) =>
        Effect.map(
          on("pread", (fd) => [fd, buffer.length, position], "pread"),
          (bytes) => {
            const b = bytes as Uint8Array
            buffer.set(b)
            return b.length
          }
        ),
      write: (bytes, position) => unit(on("pwrite", (fd) => [fd, bytes, position], "pwrite")),
      truncate: (size) => unit(on("ftruncate", (fd) => [fd, size], "ftruncate")),
      chmod: (mode) => unit(on("chmod", (fd) => [fd, mode], "fchmod")),
      chown: (uid, gid) => unit(on("fchown", (fd) => [fd, uid, gid], "fchown")),
      setTimes: (atimeNs, mtimeNs) => unit(on("futimens", (fd) => [fd, atimeNs, mtimeNs], "futimens")),
      sync: unit(on("fsync", (fd) => [fd], "fsync")),
      tryLock: on("tryLock", (fd) => [fd], "flock") as Effect.Effect<boolean, Directory.DirectoryError>,
      lockHolder: Effect.map(Effect.option(on("lockHolder", (fd) => [fd], "flock")), (r) =>
        r._tag === "Some" && typeof r.value === "number" ? r.value : undefined
      ),
      holeAt: (offset) => on("holeAt", (fd) => [fd, offset], "lseek") as Effect.Effect<number, Directory.DirectoryError>
    }
  }

  const removeTree: NonNullable<Directory.Primitives["removeTree"]> = (dir, name, path, opts) =>
    Effect.gen(function* () {
      let removed = 0
      const events: Array<string> = []
      const r = yield* Effect.result(
        client.request("removeTree", [dir], ([fd]) => [fd, name, path, opts?.events === true, opts?.limits], {
          call: "the removal walk",
          path,
          program: true,
          onProgress: (p) => {
            const progress = p as { readonly removed: number; readonly paths: ReadonlyArray<string> }
            removed += progress.removed
            for (const x of progress.paths) events.push(x)
          }
        })
      )
      if (opts?.events === true) {
        for (const x of events) yield* Effect.logDebug(`removed ${FileName.display(x)}`)
      }
      if (r._tag === "Success") return r.success.value as RemoveResult
      // The helper was abandoned mid-walk: what its progress said was removed, and where it stopped.
      const f = r.failure
      const seconds = f.seconds ?? 0
      const hungCall = f.call ?? "the removal walk"
      return {
        gone: false,
        removed,
        removedPaths: [],
        kept: [
          {
            path,
            reason: f.reason === "Hung" ? ("Hung" as const) : ("Failed" as const),
            detail: f.reason === "Hung" ? `${hungCall} did not return within ${seconds} s: ${f.detail}` : f.detail
          }
        ],
        keptCount: 1,
        hung: f.reason === "Hung" ? { path, call: hungCall, seconds } : undefined
      } satisfies RemoveResult
    })

  // flock on the directory's own descriptor (read-only, as every directory handle here is opened):
  // released at the end of the caller's scope, or when the handle closes or the helper dies.
  const lock: Directory.Primitives["lock"] = (dir) =>
    Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(restore(call("tryLock", [dir], ([fd]) => [fd], "flock", dir.path)), (taken) =>
        taken === true
          ? Effect.as(
              Effect.addFinalizer(() => Effect.ignore(call("unlock", [dir], ([fd]) => [fd], "flock", dir.path))),
              true
            )
          : Effect.succeed(false)
      )
    )

  const lockHolder: Directory.Primitives["lockHolder"] = (dir) =>
    Effect.map(Effect.option(call("lockHolder", [dir], ([fd]) => [fd], "flock", dir.path)), (r) =>
      r._tag === "Some" && typeof r.value === "number" ? r.value : undefined
    )

  // The batches: one call to the helper each, the failures of their items mapped here.

  /**
   * The stats of `names` in the directory at `path`: each name refused before the call (`bad`), or the
   * helper's answer for it, in order, from `answers` (the names asked, those not refused), or `failed`.
   */
  const statsOf = (
    path: string,
    names: ReadonlyArray<Uint8Array>,
    bad: ReadonlyArray<Directory.DirectoryError | undefined>,
    answers: ReadonlyArray<Directory.Stat | Failure> | Directory.DirectoryError
  ): Array<Directory.Stat | Directory.DirectoryError> => {
    let k = 0
    return names.map((n, i) => {
      const b = bad[i]
      if (b !== undefined) return b
      if (!Array.isArray(answers)) return answers as Directory.DirectoryError
      const a = answers[k++] as Directory.Stat | Failure
      return "_tag" in a ? toDirectoryError(a, a.call ?? "statx", Programs.childPath(path, n)) : a
    })
  }

  const statAll: NonNullable<Directory.Primitives["statAll"]> = (dir, names) =>
    Effect.gen(function* () {
      const bad = names.map((n) => badName("statx", { in: dir.path }, n))
      const asked = names.filter((_, i) => bad[i] === undefined)
      const r = yield* Effect.result(call("statAll", [dir], ([fd]) => [fd, asked], "statx", dir.path))
      return statsOf(
        dir.path,
        names,
        bad,
        r._tag === "Success" ? (r.success as ReadonlyArray<Directory.Stat | Failure>) : r.failure
      )
    })

  const openDirectories: NonNullable<Directory.Primitives["openDirectories"]> = (dir, directories, opts) =>
    Effect.gen(function* () {
      const paths = directories.map((d) => Programs.childPath(dir.path, d.name))
      // A name that is not one component is refused before the call, as the one-by-one calls refuse it.
      const bad = directories.map((d, i) => badName("openat", paths[i] as string, d.name))
      const statBad = directories.map((d, i) => d.stat.map((n) => badName("statx", { in: paths[i] as string }, n)))
      const asked = directories.flatMap((d, i) =>
        bad[i] === undefined ? [{ name: d.name, stat: d.stat.filter((_, j) => statBad[i]?.[j] === undefined) }] : []
      )
      if (asked.length === 0) return bad as ReadonlyArray<Directory.DirectoryError>
      // The handles, once there, are released with the caller's scope (see `own`); an answer no one waits
      // for any more has its descriptors closed by the client.
      return yield* Effect.uninterruptibleMask((restore) =>
        Effect.gen(function* () {
          const r = yield* Effect.result(
            restore(
              callIn("openDirectories", [dir], ([fd]) => [fd, asked, opts?.sameMount === true], "openat", dir.path)
            )
          )
          const answers =
            r._tag === "Success" ? (r.success.value as ReadonlyArray<Sys.OpenedDirectory | Failure>) : undefined
          const out: Array<Programs.OpenedDirectory | Directory.DirectoryError> = []
          let k = 0
          for (const [i, d] of directories.entries()) {
            const path = paths[i] as string
            const b = bad[i]
            if (b !== undefined) {
              out.push(b)
              continue
            }
            if (answers === undefined) {
              out.push((r as { readonly failure: Directory.DirectoryError }).failure)
              continue
            }
            const a = answers[k++] as Sys.OpenedDirectory | Failure
            if ("_tag" in a) {
              out.push(toDirectoryError(a, a.call ?? "openat", path))
              continue
            }
            const handle = client.handle(a.fd, a.mountId, path, (r as { readonly success: Io.Answer }).success.gen)
            yield* Effect.addFinalizer(() => client.release(handle))
            out.push({ handle, entries: a.entries, stats: statsOf(path, d.stat, statBad[i] ?? [], a.stats) })
          }
          return out
        })
      )
    })

  /**
   * A batch over `names` of `dir` in one helper call (`op`, given the
   * directory's descriptor, the names and `maxBytes`): each answer, or the
   * error of its name. A bad name is answered where its turn comes, as the
   * one-by-one calls would; the names after it are not asked.
   */
  const perName = <A extends object>(
    op: string,
    dir: Directory.Handle,
    names: ReadonlyArray<Uint8Array>,
    maxBytes: number
  ) =>
    Effect.gen(function* () {
      const firstBad = names.findIndex((n) => Programs.nameProblem(n) !== undefined)
      const asked = firstBad < 0 ? names : names.slice(0, firstBad)
      const r = yield* Effect.result(call(op, [dir], ([fd]) => [fd, asked, maxBytes], "openat", dir.path))
      if (r._tag === "Failure") return [r.failure]
      const out = (r.success as ReadonlyArray<A | Failure>).map((a, i): A | Directory.DirectoryError =>
        "_tag" in a
          ? toDirectoryError(a, a.call ?? "openat", Programs.childPath(dir.path, names[i] as Uint8Array))
          : (a as A)
      )
      if (firstBad >= 0 && out.length === asked.length) {
        out.push(badName("openat", { in: dir.path }, names[firstBad] as Uint8Array) as Directory.DirectoryError)
      }
      return out
    })

  const readFiles: NonNullable<Directory.Primitives["readFiles"]> = (dir, names, maxBytes) =>
    perName<Programs.ReadFile>("readFiles", dir, names, maxBytes)

  const hashFiles: NonNullable<Directory.Primitives["hashFiles"]> = (dir, names, maxBytes) =>
    perName<Programs.HashedFile>("hashFiles", dir, names, maxBytes)

  const copyFiles: NonNullable<Directory.Primitives["copyFiles"]> = (from, files) =>
    Effect.gen(function* () {
      const source = fileHandles.get(from)
      if (source === undefined || files.length === 0) return yield* derived.copyFiles(from, files)
      const firstBad = files.findIndex(
        (c) => badName("openat", Programs.childPath(c.dir.path, c.name), c.name) !== undefined
      )
      const asked = firstBad < 0 ? files : files.slice(0, firstBad)
      const dirs: Array<Directory.Handle> = []
      const index = new Map<Directory.Handle, number>()
      for (const c of asked) {
        if (!index.has(c.dir)) {
          index.set(c.dir, dirs.length)
          dirs.push(c.dir)
        }
      }
      const r = yield* Effect.result(
        call(
          "copyFiles",
          [source, ...dirs],
          ([fromFd, ...fds]) => [
            fromFd,
            asked.map((c) => ({
              dir: fds[index.get(c.dir) as number],
              name: c.name,
              permissions: c.permissions,
              offset: c.offset,
              size: c.size,
              mode: c.mode,
              uid: c.uid,
              gid: c.gid,
              times: c.times === undefined ? null : [c.times.atimeNs, c.times.mtimeNs]
            }))
          ],
          "openat",
          from.path
        )
      )
      if (r._tag === "Failure") return { done: 0, failure: r.failure }
      const a = r.success as { readonly done: number; readonly failure: Failure | null }
      if (a.failure !== null) {
        const c = asked[a.done] as Programs.CopyFile
        return {
          done: a.done,
          failure: toDirectoryError(a.failure, a.failure.call ?? "openat", Programs.childPath(c.dir.path, c.name))
        }
      }
      if (firstBad >= 0) {
        const c = files[firstBad] as Programs.CopyFile
        const path = Programs.childPath(c.dir.path, c.name)
        return { done: firstBad, failure: badName("openat", path, c.name) }
      }
      return { done: files.length }
    })

  const renameAll: NonNullable<Directory.Primitives["renameAll"]> = (moves) =>
    Effect.gen(function* () {
      if (moves.length === 0) return { done: 0 }
      const firstBad = moves.findIndex(
        (m) =>
          badName("renameat2", Programs.childPath(m.from.path, m.fromName), m.fromName) !== undefined ||
          badName("renameat2", Programs.childPath(m.to.path, m.toName), m.toName) !== undefined
      )
      const asked = firstBad < 0 ? moves : moves.slice(0, firstBad)
      const dirs: Array<Directory.Handle> = []
      const index = new Map<Directory.Handle, number>()
      for (const m of asked) {
        for (const h of [m.from, m.to]) {
          if (!index.has(h)) {
            index.set(h, dirs.length)
            dirs.push(h)
          }
        }
      }
      const r = yield* Effect.result(
        call(
          "renameAll",
          dirs,
          (fds) => [
            asked.map((m) => [fds[index.get(m.from) as number], m.fromName, fds[index.get(m.to) as number], m.toName])
          ],
          "renameat2",
          (moves[0] as Programs.Move).from.path
        )
      )
      if (r._tag === "Failure") return { done: 0, failure: r.failure }
      const a = r.success as { readonly done: number; readonly failure: Failure | null }
      if (a.failure !== null) {
        const m = asked[a.done] as Programs.Move
        return {
          done: a.done,
          failure: toDirectoryError(a.failure, "renameat2", Programs.childPath(m.from.path, m.fromName))
        }
      }
      if (firstBad >= 0) {
        const m = moves[firstBad] as Programs.Move
        const failure =
          badName("renameat2", Programs.childPath(m.from.path, m.fromName), m.fromName) ??
          badName("renameat2", Programs.childPath(m.to.path, m.toName), m.toName)
        return { done: firstBad, failure }
      }
      return { done: moves.length }
    })

  const sha256: NonNullable<Directory.Primitives["sha256"]> = (file, ranges) => {
    const h = fileHandles.get(file)
    if (h === undefined) {
      return Effect.fail(
        new Directory.DirectoryError({
          reason: new Directory.SystemError({
            _tag: "Unsupported",
            errno: "EBADF",
            detail: "not a file of this layer"
          }),
          operation: "pread",
          path: file.path
        })
      )
    }
    return call("sha256", [h], ([fd]) => [fd, ranges], "pread", file.path) as Effect.Effect<
      ReadonlyArray<string>,
      Directory.DirectoryError
    >
  }

  const appendFiles: NonNullable<Directory.Primitives["appendFiles"]> = (to, at, dir, names, maxBytes) =>
    Effect.gen(function* () {
      const h = fileHandles.get(to)
      if (h === undefined) {
        return yield* new Directory.DirectoryError({
          reason: new Directory.SystemError({
            _tag: "Unsupported",
            errno: "EBADF",
            detail: "not a file of this layer"
          }),
          operation: "pwrite",
          path: to.path
        })
      }
      const paths = names.map((n) => Programs.childPath(dir.path, n))
      const firstBad = names.findIndex((n, i) => badName("openat", paths[i] as string, n) !== undefined)
      const asked = firstBad < 0 ? names : names.slice(0, firstBad)
      const answers = (yield* call(
        "appendFiles",
        [h, dir],
        ([toFd, fd]) => [toFd, at, fd, asked, maxBytes],
        "openat",
        dir.path
      )) as ReadonlyArray<Programs.AppendedFile | Failure>
      const out = answers.map((a, i): Programs.AppendedFile | Directory.DirectoryError =>
        "_tag" in a ? toDirectoryError(a, a.call ?? "openat", paths[i] as string) : a
      )
      if (firstBad >= 0 && out.length === asked.length) {
        out.push(
          badName("openat", paths[firstBad] as string, names[firstBad] as Uint8Array) as Directory.DirectoryError
        )
      }
      return out
    })

  const primitives: Directory.Primitives = {
    openRoot,
    lock,
    lockHolder,
    openDirectory,
    openParent,
    ancestors,
    credentials,
    openPath,
    list,
    stat,
    readLink,
    unlink,
    unlinkAll,
    makeDirectory,
    symlink,
    rename,
    chown,
    chmod,
    openFile,
    sync,
    syncFileSystem,
    resolveDirectory,
    identify,
    openBeneath,
    removeTree,
    statAll,
    openDirectories,
    readFiles,
    hashFiles,
    copyFiles,
    renameAll,
    sha256,
    appendFiles
  }
  // What a batch falls back to for a source it did not open (another layer's file).
  const derived = Directory.make({ ...primitives, copyFiles: undefined })
  return Directory.make(primitives)
}
