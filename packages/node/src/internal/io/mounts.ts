/**
 * Unmounting in the helper process: each target verified below the root
 * (`Programs.verifyMount`) and detached through what was verified. Lazily,
 * through the very descriptor (`umount2("/proc/self/fd/N", MNT_DETACH)`).
 * Strictly, a descriptor on the mount would keep it busy, so its parent
 * directory is held and the mount detached by its name there
 * (`/proc/self/fd/P/name`, `UMOUNT_NOFOLLOW`) after checking the name still
 * leads to it: a parent swapped for a link cannot redirect it; only a mount
 * made at the same name in between could be taken instead, and the caller
 * reads the table afterwards.
 *
 * Internal: `./server.ts` runs it for `NodeMounter`.
 */
import { FileName, verifyMount } from "@hostnode/core/Programs"
import { cString, describeErrno } from "../libc.ts"
import { run, type Ticker } from "./driver.ts"
import type { Sys } from "./sys.ts"

/** One target, in the helper: its path below the root, as components, and its mount id. */
export interface Target {
  readonly components: ReadonlyArray<Uint8Array>
  readonly mountId: number
}

/**
 * The targets of one call as they cross the process boundary: columns, not
 * an object per target (a structured clone of 10,000 targets of six byte
 * arrays each took longer than their verification): every path below the
 * root, its components joined by `/`, one after another in `paths`, where
 * each ends in `ends`, and the mount ids.
 */
export interface Targets {
  readonly paths: Uint8Array
  readonly ends: Uint32Array
  readonly mountIds: Float64Array
}

/** {@link Targets} of `list` (each path below the root, as bytes). */
export const encodeTargets = (
  list: ReadonlyArray<{ readonly path: Uint8Array; readonly mountId: number }>
): Targets => {
  let size = 0
  for (const t of list) size += t.path.length
  const paths = new Uint8Array(size)
  const ends = new Uint32Array(list.length)
  const mountIds = new Float64Array(list.length)
  let at = 0
  for (const [i, t] of list.entries()) {
    paths.set(t.path, at)
    at += t.path.length
    ends[i] = at
    mountIds[i] = t.mountId
  }
  return { paths, ends, mountIds }
}

/** Target `i` of `targets`: its components are views of `paths` (empty ones dropped, as `Programs.components` does). */
export const targetAt = (targets: Targets, i: number): Target => {
  const from = i === 0 ? 0 : (targets.ends[i - 1] as number)
  const to = targets.ends[i] as number
  const components: Array<Uint8Array> = []
  let start = from
  for (let k = from; k <= to; k++) {
    if (k === to || targets.paths[k] === 0x2f) {
      if (k > start) components.push(targets.paths.subarray(start, k))
      start = k + 1
    }
  }
  return { components, mountId: targets.mountIds[i] as number }
}

/**
 * Outcomes as they cross back: every target from `from` to before `upTo`
 * was unmounted, except those in `others` (most are, so most cost nothing).
 * A progress frame covers the targets done since the last one; the reply
 * covers them all.
 */
export interface Outcomes {
  readonly from: number
  readonly upTo: number
  readonly others: ReadonlyArray<readonly [number, Outcome]>
}

/** Calls `each` with the outcome of every target `outcomes` covers. */
export const eachOutcome = (outcomes: Outcomes, each: (i: number, o: Outcome) => void): void => {
  const other = new Map(outcomes.others)
  for (let i = outcomes.from; i < outcomes.upTo; i++) each(i, other.get(i) ?? unmounted)
}

const unmounted: Outcome = { _tag: "Unmounted" }

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
