/**
 * The path resolver of the in-memory file system, Linux's namei: walks
 * (mount, directory) frames from the root or the working directory, follows
 * at most 40 symbolic links, takes `..` as "back one frame" (also at mount
 * roots), honours trailing slashes and crosses mount points in one place
 * (`crossMounts`). Also the lexical path helpers (`absolute`,
 * `normalizeAbsolute`, `wellFormed`).
 *
 * Boundary: lookup only. Nothing here changes the tree, and a failure is a
 * bare errno code (`Fail`) that the simulated syscalls (`syscalls.ts`) turn
 * into an `Errno` naming the syscall and path.
 */
import { posix } from "node:path"
import type { ErrnoCode } from "../errno.ts"
import { type DirectoryNode, type FsState, type Inode, MAXSYMLINKS, type Mount, NAME_MAX, PATH_MAX } from "./model.ts"

/**
 * `text` as Node's UTF-8 encoding sees it: every lone surrogate (which is
 * how the lossless `FileName` form writes a byte that is not UTF-8) replaced
 * by U+FFFD. The FileSystem API is made of JavaScript strings, so this is
 * all of a name it can name or return; only directory handles see the bytes.
 */
export const wellFormed = (text: string): string =>
  text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd")

/**
 * A directory reached by a walk: which mount it was reached in, the
 * directory, the name it was reached by and the frame it was reached from.
 * Frames form the walked path, so `..` is "go back one frame", which is what
 * Linux does, including at mount roots, and ancestry checks (rename into
 * itself) look along the chain.
 */
export interface Frame {
  readonly mount: Mount
  readonly dir: DirectoryNode
  readonly name: string
  readonly up: Frame | undefined
}

/** A resolution failure before a syscall name is attached. */
export class Fail {
  readonly code: ErrnoCode
  constructor(code: ErrnoCode) {
    this.code = code
  }
}

export const fail = (code: ErrnoCode) => new Fail(code)

export const rootFrame = (st: FsState): Frame =>
  crossMounts({ mount: st.rootMount, dir: st.rootMount.root as DirectoryNode, name: "", up: undefined })

/**
 * The mount seam: if some mount sits on `frame`'s directory (in `frame`'s
 * mount), the walk continues at the top-most such mount's root instead.
 * Stacked mounts are the repeated application; the frame keeps the name and
 * parent, so `..` from a mount root leaves the mount as on Linux.
 */
const crossMounts = (frame: Frame): Frame => {
  let current = frame
  for (;;) {
    let top: Mount | undefined
    for (const child of current.mount.children) {
      if (child.mountpoint === current.dir) top = child
    }
    if (top === undefined || top.root.type !== "Directory") return current
    current = { mount: top, dir: top.root, name: current.name, up: current.up }
  }
}

/**
 * The mount seam for a file: the file `node` reached in `mount`, or, when
 * a file is bind-mounted on it (a kubelet `subPath` of a file, a raw block
 * volume's device node), the top-most such mount and its root file.
 */
export const crossFile = (mount: Mount, node: Inode): { readonly mount: Mount; readonly node: Inode } => {
  if (node.type !== "File") return { mount, node }
  let m = mount
  let n: Inode = node
  for (;;) {
    let top: Mount | undefined
    for (const child of m.children) if (child.mountpoint === n) top = child
    if (top === undefined) return { mount: m, node: n }
    m = top
    n = top.root
  }
}

/** Steps from `frame` into its subdirectory `dir` named `name`, crossing mounts. */
export const enterFrame = (frame: Frame, name: string, dir: DirectoryNode): Frame =>
  crossMounts({ mount: frame.mount, dir, name, up: frame })

/** True when `dir` is `frame`'s directory or one of the directories the frame was walked through. */
export const chainHas = (frame: Frame, dir: Inode): boolean => {
  for (let f: Frame | undefined = frame; f !== undefined; f = f.up) if (f.dir === dir) return true
  return false
}

/**
 * The kernel's `is_local_mountpoint`: `dir` is a mount point of some mount of
 * the namespace, whichever mount it is reached through (a directory under a
 * bind mount is busy when its source path is a mount point, and vice versa).
 */
export const isMountpoint = (frame: Frame, dir: Inode): boolean => {
  if (frame.mount.children.some((m) => m.mountpoint === dir)) return true
  let root = frame.mount
  while (root.parent !== undefined) root = root.parent
  const stack: Array<Mount> = [root]
  while (stack.length > 0) {
    const m = stack.pop()!
    for (const child of m.children) {
      if (child.mountpoint === dir) return true
      stack.push(child)
    }
  }
  return false
}

export interface Ctx {
  links: number
}

/** The last component of a walk, not followed. */
export type Last =
  | {
      readonly _tag: "Entry"
      readonly parent: Frame
      readonly name: string
      readonly node: Inode | undefined
      readonly trailing: boolean
    }
  | {
      /** The path ended in "/", "." or "..": Linux's LAST_ROOT, LAST_DOT, LAST_DOTDOT. */
      readonly _tag: "Special"
      readonly kind: "root" | "dot" | "dotdot"
      readonly frame: Frame
    }

/** The last component after following symlinks as asked. */
export type Final =
  | {
      readonly _tag: "Entry"
      readonly parent: Frame
      readonly name: string
      readonly node: Inode | undefined
      /** The last walked component had a trailing slash. */
      readonly trailing: boolean
      /** Some trailing slash along the way demands a directory. */
      readonly mustDir: boolean
    }
  | { readonly _tag: "Special"; readonly kind: "root" | "dot" | "dotdot"; readonly frame: Frame }

const lookupName = (frame: Frame, name: string): Inode | undefined | Fail =>
  Buffer.byteLength(name) > NAME_MAX ? fail("ENAMETOOLONG") : frame.dir.entries.get(name)

/** Walks one non-final component: it must end up a directory. */
const step = (st: FsState, frame: Frame, name: string, ctx: Ctx): Frame | Fail => {
  if (name === ".") return frame
  if (name === "..") return frame.up ?? frame
  const child = lookupName(frame, name)
  if (child instanceof Fail) return child
  if (child === undefined) return fail("ENOENT")
  if (child.type === "Directory") return enterFrame(frame, name, child)
  if (child.type === "File") return fail("ENOTDIR")
  ctx.links += 1
  if (ctx.links > MAXSYMLINKS) return fail("ELOOP")
  const target = walkFinal(st, child.target, frame, ctx, true, true)
  if (target instanceof Fail) return target
  return finalFrame(target)
}

/** The frame of a resolved final that must be a directory (ENOENT/ENOTDIR otherwise). */
export const finalFrame = (f: Final): Frame | Fail => {
  if (f._tag === "Special") return specialFrame(f)
  if (f.node === undefined) return fail("ENOENT")
  if (f.node.type !== "Directory") return fail("ENOTDIR")
  return enterFrame(f.parent, f.name, f.node)
}

export const specialFrame = (f: { readonly kind: "root" | "dot" | "dotdot"; readonly frame: Frame }): Frame =>
  f.kind === "dotdot" ? (f.frame.up ?? f.frame) : f.frame

/** Walks all but the last component of `path` from `start` and looks the last one up without following it. */
export const walkLast = (st: FsState, path: string, start: Frame, ctx: Ctx): Last | Fail => {
  if (path === "") return fail("ENOENT")
  if (Buffer.byteLength(path) >= PATH_MAX) return fail("ENAMETOOLONG")
  let frame = path.startsWith("/") ? rootFrame(st) : start
  // A JavaScript string reaches the kernel as UTF-8 (Node encodes a lone
  // surrogate as U+FFFD): names not valid UTF-8 are out of its reach, as on Linux.
  const names = wellFormed(path)
    .split("/")
    .filter((n) => n !== "")
  if (names.length === 0) return { _tag: "Special", kind: "root", frame }
  for (let i = 0; i < names.length - 1; i++) {
    const next = step(st, frame, names[i]!, ctx)
    if (next instanceof Fail) return next
    frame = next
  }
  const name = names[names.length - 1]!
  if (name === ".") return { _tag: "Special", kind: "dot", frame }
  if (name === "..") return { _tag: "Special", kind: "dotdot", frame }
  const node = lookupName(frame, name)
  if (node instanceof Fail) return node
  return { _tag: "Entry", parent: frame, name, node, trailing: path.endsWith("/") }
}

/**
 * Resolves `path` from `start`. A final symlink is followed when `follow` or
 * when the path ends in a slash (as Linux does), at most 40 links in all.
 * A missing final entry is not an error here: creating calls need its parent.
 */
export const walkFinal = (
  st: FsState,
  path: string,
  start: Frame,
  ctx: Ctx,
  follow: boolean,
  mustDir: boolean
): Final | Fail => {
  const last = walkLast(st, path, start, ctx)
  if (last instanceof Fail || last._tag === "Special") return last
  const dir = mustDir || last.trailing
  if (last.node?.type === "SymbolicLink" && (follow || last.trailing)) {
    ctx.links += 1
    if (ctx.links > MAXSYMLINKS) return fail("ELOOP")
    return walkFinal(st, last.node.target, last.parent, ctx, true, dir)
  }
  return { ...last, mustDir: dir }
}

export const cwdFrame = (st: FsState): Frame | Fail => {
  const f = walkFinal(st, st.cwd, rootFrame(st), { links: 0 }, true, true)
  return f instanceof Fail ? f : finalFrame(f)
}

/** `walkLast` from the process's working directory. */
export const resolveLast = (st: FsState, path: string): Last | Fail => {
  const cwd = path.startsWith("/") ? rootFrame(st) : cwdFrame(st)
  return cwd instanceof Fail ? cwd : walkLast(st, path, cwd, { links: 0 })
}

/** `walkFinal` from the process's working directory. */
export const resolveFinal = (st: FsState, path: string, follow: boolean): Final | Fail => {
  const cwd = path.startsWith("/") ? rootFrame(st) : cwdFrame(st)
  return cwd instanceof Fail ? cwd : walkFinal(st, path, cwd, { links: 0 }, follow, false)
}

/** An existing inode and, when it is a directory, its frame. */
export interface Found {
  readonly node: Inode
  readonly frame: Frame | undefined
  /** The frame of the directory holding the entry (the node's own frame for "/", "." and ".."). */
  readonly parent: Frame
  /** The mount the node is reached in: a directory's frame's, or a file's (a file mounted on it is crossed). */
  readonly mount: Mount
}

const foundOf = (f: Final): Found | Fail => {
  if (f._tag === "Special") {
    const frame = specialFrame(f)
    return { node: frame.dir, frame, parent: frame, mount: frame.mount }
  }
  if (f.node === undefined) return fail("ENOENT")
  if (f.mustDir && f.node.type !== "Directory") return fail("ENOTDIR")
  if (f.node.type === "Directory") {
    // A mounted directory is seen as the root of the top-most mount on it.
    const frame = enterFrame(f.parent, f.name, f.node)
    return { node: frame.dir, frame, parent: f.parent, mount: frame.mount }
  }
  const crossed = crossFile(f.parent.mount, f.node)
  return { node: crossed.node, frame: undefined, parent: f.parent, mount: crossed.mount }
}

/** Looks up an existing inode (stat/lstat semantics). */
export const lookup = (st: FsState, path: string, follow: boolean): Found | Fail => {
  const f = resolveFinal(st, path, follow)
  return f instanceof Fail ? f : foundOf(f)
}

/**
 * `path` made absolute against the working directory, `.` and `..` removed lexically.
 */
export const absolute = (st: FsState, path: string): string => posix.resolve(st.cwd, path)

/**
 * `path` made absolute against "/" with `.` and `..` removed lexically.
 */
export const normalizeAbsolute = (path: string): string => posix.resolve("/", path)
