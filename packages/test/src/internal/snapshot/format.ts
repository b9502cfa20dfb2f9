/**
 * A snapshot directory as it is on disk, written down independently of
 * `@hostnode/core` (which keeps its format internal): the cases read it and
 * tamper with it directly, as an attacker or a crash would.
 *
 * @since 0.4.0
 */

/** The manifest's file name inside a snapshot directory. */
export const ManifestName = "manifest.json"

/** The file holding every recorded file's bytes, concatenated. */
export const DataName = "data"

/** The manifest format version a take writes. */
export const FormatVersion = 2

/** One recorded host path. */
export type Entry =
  | {
      readonly type: "File"
      readonly path: string
      readonly mode: number
      readonly uid: number
      readonly gid: number
      readonly size: number
      readonly offset: number
      readonly sha256: string
      readonly atimeNs?: string
      readonly mtimeNs?: string
    }
  | {
      readonly type: "Directory"
      readonly path: string
      readonly mode: number
      readonly uid: number
      readonly gid: number
    }
  | { readonly type: "SymbolicLink"; readonly path: string; readonly target: string }
  | { readonly type: "Absent"; readonly path: string }

/** A snapshot's manifest (`manifest.json`). */
export interface Manifest {
  readonly format: "hostnode-snapshot"
  readonly version: 1 | 2
  readonly hostRoot: string
  readonly paths: ReadonlyArray<string>
  readonly exclude: ReadonlyArray<string>
  readonly dataSize: number
  readonly entries: ReadonlyArray<Entry>
}
