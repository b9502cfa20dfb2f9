/**
 * Unmounting in the helper process: each target verified below the root
 * (`Programs.verifyMount`: held without following a link, its mount id
 * compared without asking its file system) and detached through what was
 * verified. Lazily, through the very descriptor (`umount2("/proc/self/fd/N",
 * MNT_DETACH)`: a link swapped into a parent afterwards cannot redirect it).
 * Strictly (no `MNT_DETACH`), a descriptor on the mount would itself keep it
 * busy, so the mount's parent directory is held instead and the mount
 * detached by its name in that directory (`/proc/self/fd/P/name`,
 * `UMOUNT_NOFOLLOW`), after checking that the name still leads to the mount:
 * a parent swapped for a link cannot redirect it; only a mount made at the
 * same name in the same directory, in between, could be taken instead, and
 * the caller reads the table afterwards.
 *
 * Internal: `./server.ts` runs it for `NodeMounter`.
 *
 * @since 0.4.0
 */
import { FileName, verifyMount } from "@hostnode/core/Programs"
import { cString, describeErrno } from "../libc.ts"
import { run, type Ticker } from "./driver.ts"
import type { Sys } from "./sys.ts"

/** One target as it crosses the process boundary: its path below the root, as components, and its mount id. */
export interface Target {
  readonly components: ReadonlyArray<Uint8Array>
  readonly mountId: number
}

/** How one target went. */
export type Outcome =
  | { readonly _tag: "Unmounted" }
  | { readonly _tag: "Failed"; readonly errno: string; readonly message: string }
  | {
      readonly _tag: "Unverified"
      readonly reason: "Moved" | "LinkInPath" | "Gone" | "OutsideRoot"
      readonly detail: string
    }
  | { readonly _tag: "Hung"; readonly call: string; readonly seconds: number; readonly detail: string }

/** Verifies and detaches `target` below `rootfd` (see the module comment). */
export const unmountOne = (sys: Sys, rootfd: number, target: Target, lazy: boolean, ticker: Ticker): Outcome => {
  const { c, k } = sys
  const v = run(sys, verifyMount(rootfd, target), ticker)
  if (v._tag !== "Verified") return v
  const fd = v.handle
  if (lazy) {
    const r = c.umount2(cString(FileName.encode(`${sys.procSelf}/fd/${fd}`)), k.MNT_DETACH)
    const out: Outcome = r === 0 ? { _tag: "Unmounted" } : errnoOutcome(sys)
    sys.close(fd)
    return out
  }
  sys.close(fd)
  const last = target.components[target.components.length - 1]
  if (last === undefined) {
    return {
      _tag: "Failed",
      errno: "EINVAL",
      message: "the root itself cannot be unmounted strictly through its handle"
    }
  }
  const parent = sys.openBeneath(rootfd, target.components.slice(0, -1))
  if ("_tag" in parent) {
    return parent.reason === "NotFound"
      ? { _tag: "Unverified", reason: "Gone", detail: "the path no longer exists" }
      : { _tag: "Unverified", reason: "LinkInPath", detail: `the mount's directory: ${parent.errno ?? parent.reason}` }
  }
  const there = sys.identify(parent.fd, last)
  if ("_tag" in there || there.mountId !== target.mountId) {
    sys.close(parent.fd)
    return "_tag" in there
      ? { _tag: "Unverified", reason: "Gone", detail: "the path no longer exists" }
      : {
          _tag: "Unverified",
          reason: "Moved",
          detail: `the path leads to mount ${there.mountId}, not to mount ${target.mountId}`
        }
  }
  const path = new Uint8Array([...FileName.encode(`${sys.procSelf}/fd/${parent.fd}/`), ...last])
  const r = c.umount2(cString(path), k.UMOUNT_NOFOLLOW)
  const out: Outcome = r === 0 ? { _tag: "Unmounted" } : errnoOutcome(sys)
  sys.close(parent.fd)
  return out
}

const errnoOutcome = (sys: Sys): Outcome => {
  const { errno, message } = describeErrno(sys.c.errno())
  return { _tag: "Failed", errno, message }
}
