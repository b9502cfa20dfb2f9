/**
 * Resolution in one system call: `openat2(RESOLVE_IN_ROOT |
 * RESOLVE_NO_MAGICLINKS)` for the directories of a path, and where the
 * result is below the root, from `/proc/self/fd`. Where the kernel has no
 * `openat2` (`ENOSYS`, `E2BIG`) it says so once and core's walk resolves
 * from then on.
 *
 * Internal: `NodeDirectory` puts `resolveDirectory` among its primitives.
 *
 * @since 0.3.0
 */
import { type Directory, FileName } from "@hostnode/core"
import { Effect } from "effect"
import { cString } from "../libc.ts"
import { childFull, error, fdOf, lastErrno, own, type Sys } from "./sys.ts"

/** Where a descriptor is, as the kernel names it (d_path), for openat2's results. */
const whereIs = (sys: Sys, fd: number): string | undefined => {
  const n = sys.c.readlink(cString(FileName.encode(`/proc/self/fd/${fd}`)), sys.linkBuf, sys.linkBuf.length)
  if (n < 0 || n >= sys.linkBuf.length) return undefined
  const text = FileName.decode(sys.linkBuf.slice(0, n))
  return text.startsWith("/") && !text.endsWith(" (deleted)") ? text : undefined
}

/** `Primitives.resolveDirectory` over `sys`; `enabled` false (or a kernel without openat2) leaves resolution to the walk. */
export const resolveDirectory = (sys: Sys, enabled: boolean): NonNullable<Directory.Primitives["resolveDirectory"]> => {
  let openat2Works = enabled
  const { c, k } = sys
  return (root, names, opts) =>
    Effect.suspend(() => {
      if (!openat2Works) return Effect.succeed(undefined)
      const r = fdOf(root)
      const joined = new Uint8Array(names.reduce((n, x) => n + x.length + 1, 0))
      let at = 0
      for (const x of names) {
        joined.set(x, at)
        at += x.length
        joined[at++] = 0x2f
      }
      const how = new DataView(new ArrayBuffer(24))
      how.setBigUint64(0, BigInt(k.O_RDONLY | k.O_DIRECTORY | k.O_CLOEXEC), true)
      how.setBigUint64(
        16,
        BigInt(
          k.RESOLVE_NO_MAGICLINKS | (opts.noSymlinks ? k.RESOLVE_NO_SYMLINKS | k.RESOLVE_BENEATH : k.RESOLVE_IN_ROOT)
        ),
        true
      )
      const path = cString(joined.subarray(0, Math.max(0, at - 1)))
      let fd = -1
      for (let attempt = 0; attempt < 4 && fd < 0; attempt++) {
        fd = c.openat2(r.fd, path, new Uint8Array(how.buffer))
        if (fd >= 0) break
        const errno = lastErrno(sys).errno
        if (errno === "ENOSYS" || errno === "E2BIG") {
          openat2Works = false
          return Effect.succeed(undefined)
        }
        // A rename racing `..` (EAGAIN) or a link met where none may be: the walk says what it is.
        if (errno === "EAGAIN" || errno === "EXDEV" || errno === "ELOOP") continue
        return Effect.fail(error(sys, "openat2", childFull(root.path, joined.subarray(0, Math.max(0, at - 1)))))
      }
      if (fd < 0) return Effect.succeed(undefined)
      const rootAt = whereIs(sys, r.fd)
      const here = whereIs(sys, fd)
      const below =
        rootAt === undefined || here === undefined
          ? undefined
          : rootAt === "/"
            ? here
            : here === rootAt
              ? "/"
              : here.startsWith(`${rootAt}/`)
                ? here.slice(rootAt.length)
                : undefined
      if (below === undefined) {
        c.close(fd)
        return Effect.succeed(undefined)
      }
      const full = root.path === "/" ? below : below === "/" ? root.path : `${root.path}${below}`
      return Effect.map(own(sys, fd, full, "openat2"), (handle) => ({ handle, path: below }))
    })
}
