/**
 * What `statx` and `getdents64` say of a node, decoded: the type from the
 * mode or the `d_type`, and the `Directory.Stat` with the mount id
 * (`STATX_MNT_ID`, or `/proc/self/fdinfo/<fd>` before Linux 5.8).
 *
 * Internal: `NodeDirectory` and `./sys.ts` stat through it.
 *
 * @since 0.3.0
 */
import { readFileSync } from "node:fs"
import type { Directory } from "@hostnode/core"
import { emptyPath } from "../libc.ts"
import type { Sys } from "./sys.ts"

/** The type in a `st_mode`. */
export const typeOfMode = (mode: number): Directory.Type => {
  switch (mode & 0o170000) {
    case 0o100000:
      return "File"
    case 0o040000:
      return "Directory"
    case 0o120000:
      return "SymbolicLink"
    case 0o060000:
      return "BlockDevice"
    case 0o020000:
      return "CharacterDevice"
    case 0o010000:
      return "FIFO"
    case 0o140000:
      return "Socket"
    default:
      return "Unknown"
  }
}

/** The type in a directory entry's `d_type` (`DT_UNKNOWN` is `Unknown`). */
export const typeOfDirent = (t: number): Directory.Type => {
  switch (t) {
    case 8:
      return "File"
    case 4:
      return "Directory"
    case 10:
      return "SymbolicLink"
    case 6:
      return "BlockDevice"
    case 2:
      return "CharacterDevice"
    case 1:
      return "FIFO"
    case 12:
      return "Socket"
    default:
      return "Unknown"
  }
}

/** The mount id of `fd` from procfs, for kernels whose statx has no STATX_MNT_ID. */
const fdinfoMountId = (fd: number): number => {
  const text = readFileSync(`/proc/self/fdinfo/${fd}`, "latin1")
  const m = /^mnt_id:\s*(\d+)/m.exec(text)
  return m === null ? -1 : Number(m[1])
}

/** statx of `name` in `dirfd` (or of `dirfd`), not following a link; undefined with errno set on failure. */
export const statAt = (sys: Sys, dirfd: number, name: Uint8Array | undefined): Directory.Stat | undefined => {
  const { c, k } = sys
  const flags = k.AT_SYMLINK_NOFOLLOW | (name === undefined ? k.AT_EMPTY_PATH : 0)
  if (c.statx(dirfd, name ?? emptyPath, flags, k.STATX_BASIC_STATS | k.STATX_MNT_ID, sys.statBuf) !== 0) {
    return undefined
  }
  const v = sys.statView
  const mask = v.getUint32(0, true)
  const mode = v.getUint16(28, true)
  let mountId = (mask & k.STATX_MNT_ID) !== 0 ? Number(v.getBigUint64(144, true)) : -1
  if (mountId === -1) {
    // Before 5.8: the mount id of a descriptor is in its fdinfo.
    const fd = name === undefined ? dirfd : c.openat(dirfd, name, k.O_PATH | k.O_NOFOLLOW | k.O_CLOEXEC, 0)
    if (fd >= 0) {
      mountId = fdinfoMountId(fd)
      if (name !== undefined) c.close(fd)
    }
  }
  return {
    type: typeOfMode(mode),
    mode: mode & 0o7777,
    uid: v.getUint32(20, true),
    gid: v.getUint32(24, true),
    size: Number(v.getBigUint64(40, true)),
    nlink: v.getUint32(16, true),
    device: `${v.getUint32(136, true)}:${v.getUint32(140, true)}`,
    inode: v.getBigUint64(32, true),
    mountId,
    atimeNs: v.getBigInt64(64, true) * 1_000_000_000n + BigInt(v.getUint32(72, true)),
    mtimeNs: v.getBigInt64(112, true) * 1_000_000_000n + BigInt(v.getUint32(120, true))
  }
}
