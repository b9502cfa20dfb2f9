/**
 * Node's own file functions over the simulated syscalls, with Node's quirks:
 * recursive `mkdir` (MKDirpAsync), `fs.rm` with its vendored rimraf (served
 * through a FIFO as libuv's thread pool serves it), the JavaScript
 * `fs.realpath`, recursive `readdir`, and the argument checks Node makes
 * before any syscall.
 *
 * Boundary: the compound functions except copying (`copy.ts`); each returns
 * its result, an `Errno` or a `BadArgument`, which the service boundary
 * (`operate.ts`) turns into a `PlatformError`.
 */
import { posix } from "node:path"
import { BadArgument, Errno, errno } from "../errno.ts"
import type { FsState, Inode } from "./model.ts"
import { sysMkdir, sysReaddir, sysReadlink, sysRmdir, sysStat, sysUnlink } from "./syscalls.ts"

/** Node's recursive mkdir (MKDirpAsync in node_file.cc), including its error choices. */
export const mkdirp = (st: FsState, path: string, mode: number, now: number): string | undefined | Errno => {
  const stack: Array<string> = [path]
  // Node resolves a recursive mkdir with the first directory it created (typed away as void by Effect).
  let first: string | undefined
  // A guard only: Node's loop terminates because "/" always exists, and so does ours.
  for (let guard = 0; stack.length > 0 && guard < 100_000; guard++) {
    const next = stack.pop()!
    const made = sysMkdir(st, next, mode, now)
    if (!(made instanceof Errno)) {
      first ??= next
      continue
    }
    let code = made.code
    if (code === "EACCES" || code === "EPERM" || code === "ENOTDIR" || code === "ENOSPC") return made
    if (code === "ENOENT") {
      const slash = next.lastIndexOf("/")
      const dirname = slash === -1 ? next : next.slice(0, slash)
      if (dirname !== next) {
        stack.push(next, dirname)
        continue
      }
      if (stack.length > 0) continue
      code = "EEXIST"
    }
    // Any other error: stat the path to see whether a directory is there after all.
    const s = sysStat(st, next, true, "mkdir")
    if (code === "EEXIST" && stack.length > 0) {
      if (!(s instanceof Errno) && s.type === "Directory") continue
      return errno("ENOTDIR", "mkdir", next)
    }
    if (s instanceof Errno) return errno(s.code, "mkdir", next)
    if (s.type !== "Directory") return errno("EEXIST", "mkdir", next)
    return first
  }
  return first
}

/** Node's `fs.rm` (validateRmOptions, then the vendored rimraf). */
export const rmNode = (
  st: FsState,
  path: string,
  options: { readonly recursive: boolean; readonly force: boolean },
  now: number
): undefined | Errno => {
  const l = sysStat(st, path, false, "lstat")
  if (l instanceof Errno) return options.force && l.code === "ENOENT" ? undefined : l
  if (l.type === "Directory" && !options.recursive) {
    return new Errno("ERR_FS_EISDIR", "rm", path, undefined, "is a directory")
  }
  // Node's rimraf is callback-based and removes the children of a directory
  // concurrently. The syscalls are simulated through a FIFO of pending
  // requests, the way libuv's thread pool serves them, because the outcome
  // can depend on that interleaving (e.g. removing "a/b/.." removes a/b while
  // other children are still reached through it).
  const queue: Array<() => void> = []
  let result: undefined | Errno
  rimraf(st, path, now, queue, (e) => {
    result = e
  })
  while (queue.length > 0) queue.shift()!()
  return result
}

type Callback = (e: Errno | undefined) => void

const submit = <A>(queue: Array<() => void>, syscall: () => A, callback: (a: A) => void) =>
  queue.push(() => callback(syscall()))

/** Node's vendored rimraf (internal/fs/rimraf.js) without retries (`maxRetries` is 0). */
const rimraf = (st: FsState, path: string, now: number, queue: Array<() => void>, callback: Callback) =>
  rimrafOnce(st, path, now, queue, (e) => callback(e?.code === "ENOENT" ? undefined : e))

const rimrafOnce = (st: FsState, path: string, now: number, queue: Array<() => void>, callback: Callback) =>
  submit(
    queue,
    () => sysStat(st, path, false, "lstat"),
    (l) => {
      if (l instanceof Errno) {
        if (l.code === "ENOENT") return callback(undefined)
      } else if (l.type === "Directory") {
        return rimrafDir(st, path, undefined, now, queue, callback)
      }
      submit(
        queue,
        () => sysUnlink(st, path, now),
        (u) => {
          if (u !== undefined) {
            if (u.code === "ENOENT") return callback(undefined)
            if (u.code === "EISDIR" || u.code === "EPERM") return rimrafDir(st, path, u, now, queue, callback)
          }
          callback(u)
        }
      )
    }
  )

const rimrafDir = (
  st: FsState,
  path: string,
  original: Errno | undefined,
  now: number,
  queue: Array<() => void>,
  callback: Callback
) =>
  submit(
    queue,
    () => sysRmdir(st, path, now),
    (r) => {
      if (r !== undefined) {
        if (r.code === "ENOTEMPTY" || r.code === "EEXIST" || r.code === "EPERM") {
          return rimrafChildren(st, path, now, queue, callback)
        }
        // rimraf reports the unlink error here, and nothing at all when there was none.
        if (r.code === "ENOTDIR") return callback(original)
      }
      callback(r)
    }
  )

const rimrafChildren = (st: FsState, path: string, now: number, queue: Array<() => void>, callback: Callback) =>
  submit(
    queue,
    () => sysReaddir(st, path, now),
    (names) => {
      if (names instanceof Errno) return callback(names)
      let pending = names.length
      if (pending === 0) return submit(queue, () => sysRmdir(st, path, now), callback)
      let done = false
      for (const [name] of names) {
        rimraf(st, `${path}/${name}`, now, queue, (e) => {
          if (done) return
          if (e !== undefined) {
            done = true
            return callback(e)
          }
          pending -= 1
          if (pending === 0) submit(queue, () => sysRmdir(st, path, now), callback)
        })
      }
    }
  )

/** Node's JavaScript `fs.realpath`: lexical resolve first, then an lstat per component. */
export const realpathNode = (st: FsState, input: string): string | Errno => {
  let p = posix.resolve(st.cwd, input)
  const seen = new Map<Inode, string>()
  const known = new Set<string>()
  let current = "/"
  let base = "/"
  let previous = "/"
  let pos = 1
  let budget = 100_000
  while (pos < p.length) {
    if (--budget < 0) return errno("ELOOP", "realpath", input)
    const slash = p.indexOf("/", pos)
    previous = current
    if (slash === -1) {
      const last = p.slice(pos)
      current += last
      base = previous + last
      pos = p.length
    } else {
      current += p.slice(pos, slash + 1)
      base = previous + p.slice(pos, slash)
      pos = slash + 1
    }
    if (known.has(base)) continue
    const l = sysStat(st, base, false, "lstat")
    if (l instanceof Errno) return l
    if (l.type !== "SymbolicLink") {
      known.add(base)
      continue
    }
    let target = seen.get(l)
    if (target === undefined) {
      const s = sysStat(st, base, true, "stat")
      if (s instanceof Errno) return s
      const t = sysReadlink(st, base)
      if (t instanceof Errno) return t
      target = t
      seen.set(l, t)
    }
    const resolvedLink = posix.resolve(previous, target)
    p = posix.resolve(resolvedLink, p.slice(pos))
    current = "/"
    base = "/"
    pos = 1
  }
  return p
}

/** Node's recursive `readdir` (promises): follows symlinks to directories via `stat`. */
export const readdirRecursive = (st: FsState, path: string, now: number): Array<string> | Errno => {
  const first = sysReaddir(st, path, now)
  if (first instanceof Errno) return first
  const result: Array<string> = []
  const queue: Array<[string, Array<[string, Inode]>]> = [[path, first]]
  while (queue.length > 0) {
    const [dir, entries] = queue.pop()!
    for (const [name] of entries) {
      const direntPath = posix.join(dir, name)
      const s = sysStat(st, direntPath, true, "stat")
      result.push(posix.relative(posix.resolve(st.cwd, path), posix.resolve(st.cwd, direntPath)))
      if (!(s instanceof Errno) && s.type === "Directory") {
        const sub = sysReaddir(st, direntPath, now)
        if (sub instanceof Errno) return sub
        queue.push([direntPath, sub])
      }
    }
  }
  return result
}

/** Node's `utimes` time argument: seconds, a Date, or a negative number meaning "now". */
export const toMillis = (t: Date | number, now: number): number | BadArgument => {
  if (t instanceof Date) return t.getTime()
  if (!Number.isFinite(t)) return new BadArgument(`The "time" argument must be of type number. Received ${t}`)
  return t < 0 ? now : t * 1000
}

export const isUint32 = (n: number) => Number.isInteger(n) && n >= 0 && n <= 0xffffffff

export const validateId = (n: number, name: string): BadArgument | undefined =>
  Number.isInteger(n) && n >= -1 && n <= 0xffffffff
    ? undefined
    : new BadArgument(`The value of "${name}" is out of range. It must be >= -1 && <= 4294967295. Received ${n}`)
