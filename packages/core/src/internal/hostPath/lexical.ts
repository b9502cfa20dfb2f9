/**
 * Host paths as strings, lexically: cleaning (Go's `path.Clean` on a rooted
 * path), components, joining below a root and back, and the `/`-boundary
 * tests. Nothing here looks at a tree.
 *
 * Internal: resolution and root decoding build on it; `Programs.Lexical`
 * exports it for layers and fixtures.
 *
 * @since 0.3.0
 */

/** The non-empty components of a slash-separated path, `.` dropped, `..` kept. */
export const components = (path: string): Array<string> => path.split("/").filter((c) => c !== "" && c !== ".")

/** The shortest absolute path equivalent to `path`, processed lexically as Go's `path.Clean` does on a rooted path. */
export const clean = (path: string): string => {
  // Most paths (every mount point the kernel reports) are already clean; this
  // check is much cheaper than splitting and joining thousands of them.
  if (isClean(path)) return path
  const out: Array<string> = []
  for (const c of components(path)) {
    if (c === "..") out.pop()
    else out.push(c)
  }
  return `/${out.join("/")}`
}

const isClean = (path: string): boolean => {
  if (path === "/") return true
  if (path.charCodeAt(0) !== 47 || path.charCodeAt(path.length - 1) === 47) return false
  for (let i = path.indexOf("/"); i !== -1; i = path.indexOf("/", i + 1)) {
    const c1 = path.charCodeAt(i + 1)
    if (c1 === 47) return false
    if (c1 === 46) {
      const c2 = path.charCodeAt(i + 2)
      if (Number.isNaN(c2) || c2 === 47) return false
      if (c2 === 46) {
        const c3 = path.charCodeAt(i + 3)
        if (Number.isNaN(c3) || c3 === 47) return false
      }
    }
  }
  return true
}

/**
 * True for a path a root may be: absolute, without a NUL byte, and without a
 * `..` component (`/srv/node/../etc` names a place nobody wrote).
 */
export const isRootShaped = (path: string): boolean =>
  path.startsWith("/") && !path.includes("\0") && !path.split("/").includes("..")

/** True when `root` means the real host (`""` or `"/"`). */
export const isRealRoot = (root: string): boolean => clean(root) === "/" || root === ""

/** The root in canonical form: `"/"` for the real host, otherwise a cleaned absolute path without a trailing slash. */
export const normalizeRoot = (root: string): string => (root === "" ? "/" : clean(root))

/** The directory a clean absolute path is in: `/a` for `/a/b`, `/` for `/a` and for `/`. */
export const dirname = (path: string): string => {
  const i = path.lastIndexOf("/")
  return i <= 0 ? "/" : path.slice(0, i)
}

/** `name` (one or more components) inside the clean absolute directory `dir`, without a doubled slash below `/`. */
export const child = (dir: string, name: string): string => (dir === "/" ? `/${name}` : `${dir}/${name}`)

/** True when the clean absolute `ancestor` is `path` or a directory above it, on a `/` boundary. */
export const covers = (ancestor: string, path: string): boolean =>
  ancestor === "/" || path === ancestor || path.startsWith(`${ancestor}/`)

/** The clean `root` followed by the components `rel`. */
export const under = (root: string, rel: ReadonlyArray<string>): string =>
  rel.length === 0 ? root : child(root, rel.join("/"))

/** Joins `path` below `root` lexically: `..` is cleaned against the host path and can never climb above the root. */
export const join = (root: string, path: string): string => {
  const r = normalizeRoot(root)
  // A clean absolute path is its components joined: no need to split it (every table path, thousands a pass).
  const p = clean(path)
  return r === "/" ? p : p === "/" ? r : `${r}${p}`
}

/** `full` as a host path, when `full` is at or below `root`: the inverse of {@link join}. */
export const relative = (root: string, full: string): string | undefined => {
  const r = normalizeRoot(root)
  const f = clean(full)
  if (r === "/") return f
  if (f === r) return "/"
  return f.startsWith(`${r}/`) ? f.slice(r.length) : undefined
}

/** True when `full` is `root` itself or lies below it, on path boundaries. */
export const isWithin = (root: string, full: string): boolean => relative(root, full) !== undefined

/** Where `target` (a full path) is below `root` (a handle's full path), not cleaned: the components, or undefined outside. */
export const below = (root: string, target: string): string | undefined => {
  if (root === "/") return target
  if (target === root) return "/"
  return target.startsWith(`${root}/`) ? target.slice(root.length) : undefined
}
