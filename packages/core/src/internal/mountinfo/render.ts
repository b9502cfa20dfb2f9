/**
 * A mount table written back in the kernel's format, as a simulated host or a
 * dry run shows its `/proc/<pid>/mountinfo`. Re-exported by
 * `@hostnode/core/Layers`.
 *
 * @since 0.4.0
 */
import type { MountEntry } from "../../MountInfo.ts"
import { escapeField } from "./escape.ts"

// An optional field that is "-" would read as the separator.
const escapeOptional = (s: string): string => (s === "-" ? "\\055" : escapeField(s))

/**
 * Writes `entries` back in the kernel's format, one line each,
 * newline-terminated, every string field escaped (an optional field that is
 * `-` as `\055`); `parseMountInfo(renderMountInfo(t))` is `t` for every table of entries the
 * `MountInfo.MountEntry` Schema accepts.
 *
 * @since 0.1.0
 * @category operations
 */
export const renderMountInfo = (entries: ReadonlyArray<MountEntry>): string => {
  let out = ""
  for (const e of entries) {
    let optional = ""
    for (const o of e.optionalFields) optional += ` ${escapeOptional(o)}`
    out += `${e.id} ${e.parentId} ${e.major}:${e.minor} ${escapeField(e.root)} ${escapeField(e.mountPoint)} ${escapeField(e.mountOptions)}${optional} - ${escapeField(e.fsType)} ${escapeField(e.source)} ${escapeField(e.superOptions)}\n`
  }
  return out
}
