/**
 * A mount table's text parsed into its entries, as `MountInfo.read` does
 * after it read the table. Re-exported by `@hostnode/core/Layers`.
 *
 * @since 0.4.0
 */
import { Effect } from "effect"
import type { MountEntry } from "../../MountInfo.ts"
import { Malformed, MountInfoError } from "../../MountInfoError.ts"
import { DefaultMountInfo } from "../../Programs.ts"
import { scan } from "./table.ts"

const failure = (path: string, reason: MountInfoError["reason"]): MountInfoError => new MountInfoError({ reason, path })

/**
 * Parses a whole table, its entries in the kernel's order (parents before
 * children, older before newer). Blank lines are skipped (a table ends with a newline,
 * or not). A carriage return just before a newline, or at the very end, is a
 * CRLF line end (a table saved on another system), not part of the super
 * options; `Layers.renderMountInfo` escapes a CR of a field, so none is lost. Every
 * string field is decoded (each escape `\NNN` is one byte); a backslash that starts no
 * escape fails the line, except in the super options, which file systems
 * write themselves and not always escaped (kept as a backslash there). Ids and
 * device numbers are decimal as the kernel writes them (no sign, no leading
 * zero) up to `Number.MAX_SAFE_INTEGER`. The first malformed line fails the
 * whole parse with its line number, the field and its text: no entry of a
 * table that is partly garbage is trusted.
 *
 * The whole text is checked in one scan that keeps only where each line's
 * fields are, and an entry is built when it is first read (then kept): a
 * reader that wants a few entries of a table of 300,000 mounts pays for those. The table is an
 * array (`Array.isArray` holds; iteration, array methods and JSON work) whose
 * entries are plain objects as before; it keeps the text alive while it is.
 *
 * @example
 * ```ts
 * import * as Layers from "@hostnode/core/Layers"
 * import { Effect } from "effect"
 *
 * const line = "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n"
 * // One entry: mount 36 at /mnt2, a malformed line would fail the whole table.
 * const mountPoints = Layers.parseMountInfo(line).pipe(Effect.map((table) => table.map((e) => e.mountPoint)))
 * ```
 *
 * @since 0.1.0
 * @category operations
 */
export const parseMountInfo: (text: string, path?: string) => Effect.Effect<ReadonlyArray<MountEntry>, MountInfoError> =
  Effect.fn("MountInfo.parse")(function* (text: string, path: string = DefaultMountInfo) {
    const scanned = scan(text)
    if ("table" in scanned) return scanned.table
    const { line, field, value, detail } = scanned.problem
    return yield* failure(path, new Malformed({ line, field, ...(value === undefined ? {} : { value }), detail }))
  })
