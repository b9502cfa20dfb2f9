/**
 * The in-process `Mounter` of `NodeMounter.layer`: the verification of one
 * target below a root descriptor (`openat2`, or one `openat` per component;
 * `statx` for the mount id) and its unmount through the descriptor it
 * verified (`umount2`). Internal: `NodeMounter` loads libc and builds the
 * layer; `makeIn` reuses the verification for another mount namespace. The
 * guarantees are said in `NodeMounter`'s module comment.
 *
 * @since 0.3.0
 */
import { readFileSync } from "node:fs"
import { Directory, FileName, Mounter } from "@hostnode/core"
import { Effect } from "effect"
import { fdOf } from "../handles.ts"
import { constants, cString, describeErrno, emptyPath, type Libc } from "../libc.ts"

export const unverified = (
  target: string,
  reason: Mounter.UnverifiedReason,
  detail: string
): Mounter.UnmountResult => ({
  _tag: "Unverified",
  target,
  reason,
  detail
})

/** A target whose path led to its mount: `fd` holds that mount (an `O_PATH` descriptor at its root) until closed. */
export interface Verified {
  readonly _tag: "Verified"
  readonly fd: number
}

/**
 * Verifies one target below `rootFd` (see the module comment): `rel` is its
 * path below the root. Returns the open descriptor of the very mount the
 * table listed, or the result to report when the path no longer leads there.
 */
export const verifyOne = (
  c: Libc,
  rootFd: number,
  rel: string,
  target: Mounter.Target,
  statBuf: Uint8Array,
  state: { openat2: boolean }
): Verified | Mounter.UnmountResult => {
  const k = constants as NonNullable<typeof constants>
  const names = Directory.components(FileName.encode(rel))
  let fd = -1
  if (names.length === 0) {
    fd = c.openat(rootFd, cString(new Uint8Array([0x2e])), k.O_PATH | k.O_CLOEXEC, 0)
  } else if (state.openat2) {
    fd = c.openat2(rootFd, cString(FileName.encode(rel.slice(1))), beneathNoLinks())
    if (fd < 0 && describeErrno(c.errno()).errno === "ENOSYS") state.openat2 = false
  }
  if (names.length > 0 && !state.openat2) {
    // One component at a time, each opened without following and checked.
    let at = rootFd
    fd = -2
    for (const [i, name] of names.entries()) {
      const next = c.openat(at, cString(name), k.O_PATH | k.O_NOFOLLOW | k.O_CLOEXEC, 0)
      if (at !== rootFd) c.close(at)
      if (next < 0) {
        fd = -1
        break
      }
      at = next
      if (i < names.length - 1) {
        if (c.statx(at, emptyPath, k.AT_EMPTY_PATH, k.STATX_BASIC_STATS, statBuf) !== 0) {
          c.close(at)
          fd = -1
          break
        }
        const mode = new DataView(statBuf.buffer).getUint16(28, true) & 0o170000
        if (mode !== 0o040000) {
          c.close(at)
          return unverified(target.path, "LinkInPath", `${FileName.display(FileName.decode(name))} is not a directory`)
        }
      }
      fd = at
    }
  }
  if (fd < 0) {
    const { errno, message } = describeErrno(c.errno())
    if (errno === "ENOENT") return unverified(target.path, "Gone", "the path no longer exists")
    if (errno === "ELOOP" || errno === "ENOTDIR" || errno === "EXDEV") {
      return unverified(target.path, "LinkInPath", `a link or a non-directory on the way (${errno})`)
    }
    return { _tag: "Failed", target: target.path, failure: { target: target.path, errno, message } }
  }
  const close = (r: Mounter.UnmountResult) => {
    c.close(fd)
    return r
  }
  if (
    c.statx(fd, emptyPath, k.AT_EMPTY_PATH | k.AT_SYMLINK_NOFOLLOW, k.STATX_BASIC_STATS | k.STATX_MNT_ID, statBuf) !== 0
  ) {
    const { errno, message } = describeErrno(c.errno())
    return close({ _tag: "Failed", target: target.path, failure: { target: target.path, errno, message } })
  }
  const view = new DataView(statBuf.buffer)
  if ((view.getUint16(28, true) & 0o170000) === 0o120000) {
    return close(unverified(target.path, "LinkInPath", "the mount point is now a symbolic link"))
  }
  const mountId =
    (view.getUint32(0, true) & k.STATX_MNT_ID) !== 0 ? Number(view.getBigUint64(144, true)) : fdinfoMountId(fd)
  if (mountId !== target.mountId) {
    return close(unverified(target.path, "Moved", `the path leads to mount ${mountId}, not to mount ${target.mountId}`))
  }
  return { _tag: "Verified", fd }
}

/**
 * Verifies and unmounts one target below `rootFd` (see the module comment);
 * synchronous, so a whole pass is one tight loop of system calls.
 */
export const unmountOne = (
  c: Libc,
  rootFd: number,
  rootPath: string,
  target: Mounter.Target,
  flags: number,
  statBuf: Uint8Array,
  state: { openat2: boolean }
): Mounter.UnmountResult => {
  const k = constants as NonNullable<typeof constants>
  const rel = Mounter.below(rootPath, target.path)
  if (rel === undefined) return unverified(target.path, "OutsideRoot", `not below the host root ${rootPath}`)
  const verified = verifyOne(c, rootFd, rel, target, statBuf, state)
  if (verified._tag !== "Verified") return verified
  const fd = verified.fd
  const close = (r: Mounter.UnmountResult) => {
    c.close(fd)
    return r
  }
  // Through the descriptor: the mount just verified, whatever the path says now.
  // A non-lazy unmount cannot go that way (the descriptor itself keeps the
  // mount busy): it goes by path, not following a final link, after the check.
  const lazy = (flags & k.MNT_DETACH) !== 0
  if (!lazy) c.close(fd)
  const r = lazy
    ? c.umount2(cString(FileName.encode(`/proc/self/fd/${fd}`)), flags)
    : c.umount2(cString(FileName.encode(target.path)), flags | k.UMOUNT_NOFOLLOW)
  if (!lazy) {
    if (r === 0) return { _tag: "Unmounted", target: target.path }
    const { errno, message } = describeErrno(c.errno())
    return { _tag: "Failed", target: target.path, failure: { target: target.path, errno, message } }
  }
  if (r === 0) return close({ _tag: "Unmounted", target: target.path })
  const { errno, message } = describeErrno(c.errno())
  return close({ _tag: "Failed", target: target.path, failure: { target: target.path, errno, message } })
}

// The `open_how` of a verification: O_PATH, no link anywhere, never above the root. Made once.
let how: Uint8Array | undefined
const beneathNoLinks = (): Uint8Array => {
  if (how !== undefined) return how
  const k = constants as NonNullable<typeof constants>
  const view = new DataView(new ArrayBuffer(24))
  view.setBigUint64(0, BigInt(k.O_PATH | k.O_NOFOLLOW | k.O_CLOEXEC), true)
  view.setBigUint64(16, BigInt(k.RESOLVE_BENEATH | k.RESOLVE_NO_SYMLINKS | k.RESOLVE_NO_MAGICLINKS), true)
  how = new Uint8Array(view.buffer)
  return how
}

const fdinfoMountId = (fd: number): number => {
  const text = readFileSync(`/proc/self/fdinfo/${fd}`, "latin1")
  const m = /^mnt_id:\s*(\d+)/m.exec(text)
  return m === null ? -1 : Number(m[1])
}

/** The `Mounter` over the loaded libc `c` (see `NodeMounter.make`). */
export const inProcessMounter = (c: Libc): Mounter.Mounter => {
  const statBuf = new Uint8Array(256)
  const state = { openat2: true }
  return Mounter.Mounter.of({
    unmount: (root, targets, options) =>
      Effect.suspend(() => {
        const handle = fdOf(root)
        if (handle === undefined) {
          return Effect.die(new Error("NodeMounter: the root handle is not a NodeDirectory handle"))
        }
        const flags = options.lazy ? (constants as NonNullable<typeof constants>).MNT_DETACH : 0
        const out: Array<Mounter.UnmountResult> = []
        for (const t of targets) out.push(unmountOne(c, handle.fd, root.path, t, flags, statBuf, state))
        return Effect.succeed(out)
      })
  })
}
