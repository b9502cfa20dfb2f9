/**
 * Names and paths as the kernel limits them: `PATH_MAX`, `NAME_MAX`,
 * `MAXSYMLINKS`, what one component may be, a path's components as bytes,
 * and a child's path in the lossless string form.
 *
 * Internal: the derived resolution checks names with it; `Programs` exports
 * what the implementations check names with.
 *
 * @since 0.3.0
 */
import * as FileName from "../../FileName.ts"
import * as FileNames from "../fileName.ts"

/** Linux follows at most 40 links in one resolution (MAXSYMLINKS). */
export const MaxSymlinks = 40

/** Linux refuses a path of this many bytes or more (PATH_MAX, with its NUL): `ENAMETOOLONG`. */
export const PathMax = 4096

/** Linux refuses a component longer than this many bytes (NAME_MAX): `ENAMETOOLONG`. */
export const NameMax = 255

/** Why `name` cannot be one component of a directory, as the kernel says it, or `undefined` when it can. */
export const nameProblem = (name: Uint8Array): "ENAMETOOLONG" | "EINVAL" | undefined =>
  name.length > NameMax ? "ENAMETOOLONG" : FileNames.isComponent(name) ? undefined : "EINVAL"

const slash = 0x2f
const dot = 0x2e

/** The components of a path as bytes: empty ones dropped, `.` and `..` kept for the walk. */
export const components = (path: Uint8Array): Array<Uint8Array> => {
  const out: Array<Uint8Array> = []
  let from = 0
  for (let i = 0; i <= path.length; i++) {
    if (i === path.length || path[i] === slash) {
      if (i > from) out.push(path.subarray(from, i))
      from = i + 1
    }
  }
  return out
}

/** `.` */
export const isDot = (c: Uint8Array): boolean => c.length === 1 && c[0] === dot

/** `..` */
export const isDotDot = (c: Uint8Array): boolean => c.length === 2 && c[0] === dot && c[1] === dot

/** A trailing slash: what the path ends at must be a directory. */
export const endsInSlash = (path: Uint8Array): boolean => path.length > 0 && path[path.length - 1] === slash

/** An absolute link target: resolution starts again at the root. */
export const isAbsolute = (path: Uint8Array): boolean => path[0] === slash

/** `name` below the host path `parent` (lossless string forms). */
export const childPath = (parent: string, name: Uint8Array): string =>
  parent === "/" ? `/${FileName.decode(name)}` : `${parent}/${FileName.decode(name)}`
