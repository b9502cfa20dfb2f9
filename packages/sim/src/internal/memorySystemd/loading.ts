/**
 * Loading units from the host's files as systemd 252 does: the unit search
 * path, templates serving their instances, drop-ins in name order (the
 * unit's, its template's, its dash prefixes' and its type's directories),
 * masks, loading on demand and unloading unused units, and whether a loaded
 * unit's files changed since (`NeedDaemonReload`). Boundary: files to loaded
 * definitions; what a unit does is `lifecycle.ts`'s. systemd keeps a cache of the entries directly in each unit directory (its
 * unit path cache) and looks for drop-in directories only among them. The
 * cache is rebuilt by a daemon-reload, and when a unit systemd does not hold
 * is loaded while a unit directory changed since; it is not rebuilt to answer
 * `NeedDaemonReload`. So a drop-in directory created after the last rebuild
 * is invisible to `NeedDaemonReload` (it says `no`) until some unit is loaded
 * afresh. Measured on systemd 252, and modelled here as `state.pathCache`.
 */
import { Effect, type FileSystem } from "effect"
import { emptyDef, type FileSnapshot, isService, type Loaded, newUnit, type State, type UnitState } from "./state.ts"
import { badSetting, buildDef, parseUnitText } from "./unitFile.ts"

const readSnapshot = (fs: FileSystem.FileSystem, path: string) =>
  Effect.gen(function* () {
    const link = yield* fs.readLink(path).pipe(Effect.option)
    if (link._tag === "Some" && link.value === "/dev/null") return "masked" as const
    const info = yield* fs.stat(path).pipe(Effect.option)
    if (info._tag === "None" || info.value.type !== "File") return undefined
    const text = yield* fs.readFileString(path).pipe(Effect.option)
    if (text._tag === "None") return undefined
    const mtime = info.value.mtime._tag === "Some" ? info.value.mtime.value.getTime() : 0
    return { path, text: text.value, mtime } satisfies FileSnapshot
  })

const templateOf = (id: string): string | undefined => {
  const at = id.indexOf("@")
  const dot = id.lastIndexOf(".")
  if (at <= 0 || at + 1 >= dot) return undefined
  return `${id.slice(0, at + 1)}${id.slice(dot)}`
}

const specifiersFor = (id: string) => {
  const dot = id.lastIndexOf(".")
  const stem = id.slice(0, dot)
  const at = stem.indexOf("@")
  const prefix = at === -1 ? stem : stem.slice(0, at)
  const instance = at === -1 ? "" : stem.slice(at + 1)
  const values: Record<string, string> = { n: id, N: stem, p: prefix, P: prefix, i: instance, I: instance, "%": "%" }
  return (s: string) => s.replace(/%([nNpPiI%])/g, (_m, c: string) => values[c] ?? "")
}

/** The fragment (or mask) of `id`: the first match along the search path, then the template's. */
const findFragment = (state: State, id: string) =>
  Effect.gen(function* () {
    const names = [id, ...(templateOf(id) === undefined ? [] : [templateOf(id) as string])]
    for (const name of names) {
      for (const dir of state.unitPath) {
        const found = yield* readSnapshot(state.fs, `${dir}/${name}`)
        if (found !== undefined) return found
      }
    }
    return undefined
  })

/**
 * The names of the drop-in directories of `id` in one unit directory, in
 * systemd's order (unit_file_find_dirs): the unit's own, its template's, then
 * each dash prefix's (`a-b-c.service` also reads `a-b-.service.d` and
 * `a-.service.d`). The type's (`service.d`) comes after every directory's.
 */
const dropInDirNames = (id: string): ReadonlyArray<string> => {
  const names: Array<string> = []
  const add = (name: string) => {
    if (!names.includes(`${name}.d`)) names.push(`${name}.d`)
  }
  const dot = id.lastIndexOf(".")
  const suffix = id.slice(dot)
  const withPrefixes = (name: string) => {
    add(name)
    // unit_name_to_prefix: the part before "@" (or the type suffix); each "-" in it is a level up.
    let prefix = name.slice(0, name.lastIndexOf("."))
    const at = prefix.indexOf("@")
    if (at !== -1) prefix = prefix.slice(0, at)
    for (;;) {
      while (prefix.endsWith("-")) prefix = prefix.slice(0, -1)
      const dash = prefix.lastIndexOf("-")
      if (dash === -1) return
      prefix = prefix.slice(0, dash + 1)
      add(`${prefix}${suffix}`)
    }
  }
  withPrefixes(id)
  const template = templateOf(id)
  if (template !== undefined) withPrefixes(template)
  return names
}

/**
 * The drop-ins of `id`: `.conf` files of its drop-in directories that the
 * unit path cache lists (first its own, template and prefix directories of
 * each unit directory in precedence order, then its type's), the first of a
 * name winning, in name order; a masked one (a link to /dev/null) hides the
 * others of its name.
 */
const findDropIns = (state: State, id: string) =>
  Effect.gen(function* () {
    const type = id.slice(id.lastIndexOf(".") + 1)
    const dirs = [
      ...state.unitPath.flatMap((dir) => dropInDirNames(id).map((name) => `${dir}/${name}`)),
      ...state.unitPath.map((dir) => `${dir}/${type}.d`)
    ].filter((dir) => state.pathCache.has(dir))
    const byName = new Map<string, string>()
    for (const dir of dirs) {
      const entries = yield* state.fs.readDirectory(dir).pipe(Effect.orElseSucceed(() => []))
      for (const entry of [...entries].sort()) {
        if (!entry.endsWith(".conf") || byName.has(entry)) continue
        byName.set(entry, `${dir}/${entry}`)
      }
    }
    const out: Array<FileSnapshot> = []
    for (const name of [...byName.keys()].sort()) {
      const path = byName.get(name) as string
      const snap = yield* readSnapshot(state.fs, path)
      if (snap !== undefined && snap !== "masked") out.push(snap)
    }
    return out
  })

/**
 * Rebuilds the unit path cache: every entry directly in each unit directory
 * (manager_build_unit_path_cache). systemd rebuilds it only when a unit
 * directory's modification time changed, which any entry created or removed
 * there does; reading the entries afresh gives the same cache.
 */
export const refreshPathCache = (state: State) =>
  Effect.gen(function* () {
    const cache = new Set<string>()
    for (const dir of state.unitPath) {
      const entries = yield* state.fs.readDirectory(dir).pipe(Effect.orElseSucceed(() => []))
      for (const entry of entries) cache.add(`${dir}/${entry}`)
    }
    state.pathCache = cache
  })

export const loadFromDisk = (state: State, id: string) =>
  Effect.gen(function* () {
    const fragment = yield* findFragment(state, id)
    const specifiers = specifiersFor(id)
    if (fragment === "masked" || (fragment !== undefined && fragment.text.trim() === "")) {
      const path = fragment === "masked" ? "" : fragment.path
      return {
        loadState: "masked",
        fragmentPath: path,
        fragment: fragment === "masked" ? undefined : fragment,
        dropIns: [],
        def: emptyDef(),
        problem: undefined
      } satisfies Loaded
    }
    const dropIns = yield* findDropIns(state, id)
    if (fragment === undefined) {
      return {
        loadState: "not-found",
        fragmentPath: "",
        fragment: undefined,
        dropIns: [],
        def: emptyDef(),
        problem: undefined
      } satisfies Loaded
    }
    const assignments = [fragment, ...dropIns].flatMap((f) => parseUnitText(f.text))
    const def = buildDef(assignments, specifiers)
    const problem = isService(id) ? badSetting(def) : undefined
    return {
      loadState: problem === undefined ? "loaded" : "bad-setting",
      fragmentPath: fragment.path,
      fragment,
      dropIns,
      def,
      problem
    } satisfies Loaded
  })

/**
 * Whether a file read now counts as changed since `was` was loaded, given
 * `bound`, the newest modification time systemd holds for it (for a drop-in,
 * the newest of all the unit's drop-ins): systemd 252 compares modification
 * times only, strictly newer. A file whose time was set back (a snapshot
 * restore keeps the recorded times, `touch -d`) is not a change. One
 * deliberate difference: a file whose content changed while its time stayed
 * the same counts as changed, because the simulated clock may stand still
 * between a load and a write (on a real host the write lands in a later
 * tick); real systemd would miss a change that kept the time (`touch -r`).
 */
const changedSince = (now: FileSnapshot, was: FileSnapshot, bound: number) =>
  now.mtime > bound || (now.mtime === was.mtime && now.text !== was.text)

/**
 * unit_need_daemon_reload: the fragment systemd loaded is gone, masked or
 * newer; the drop-ins found now (in the drop-in directories the unit path
 * cache lists: a directory created since its last rebuild is not seen) are
 * not the ones loaded; or one of them is newer than the newest loaded. A
 * fragment added in a unit directory of higher precedence is not looked
 * for, as in systemd 252: only a daemon-reload finds it.
 */
export const needsReload = (state: State, u: UnitState) =>
  Effect.gen(function* () {
    const was = u.loaded
    if (was.loadState === "masked") {
      const now = yield* findFragment(state, u.id)
      return !(now === "masked" || (now !== undefined && now.text.trim() === ""))
    }
    if (was.fragment === undefined) return false
    const fragment = yield* readSnapshot(state.fs, was.fragment.path)
    if (fragment === undefined || fragment === "masked" || fragment.text.trim() === "") return true
    if (changedSince(fragment, was.fragment, was.fragment.mtime)) return true
    // A unit that failed to load holds its drop-ins but finds none now (systemd looks only for a loaded one's).
    const dropIns = was.loadState === "loaded" ? yield* findDropIns(state, u.id) : []
    if (dropIns.map((d) => d.path).join("\0") !== was.dropIns.map((d) => d.path).join("\0")) return true
    const newest = Math.max(0, ...was.dropIns.map((d) => d.mtime))
    return dropIns.some((d, i) => changedSince(d, was.dropIns[i] as FileSnapshot, newest))
  })

/**
 * The unit, loading it from disk when systemd does not hold it (as a bus
 * call's LoadUnit does). `fresh`: it was just read from disk, so it cannot
 * differ from the disk (no need to read it again to ask).
 */
export const getOrLoad = (state: State, id: string) =>
  Effect.gen(function* () {
    const existing = state.units.get(id)
    if (existing !== undefined) return { u: existing, fresh: false }
    // Loading a unit it does not hold is when systemd rebuilds its unit path cache.
    yield* refreshPathCache(state)
    const u = newUnit(id, yield* loadFromDisk(state, id))
    state.units.set(id, u)
    return { u, fresh: true }
  })

/** Unloads every unit that is inactive (not failed) with no job: the next reference reads it afresh. */
export const collect = (state: State) => {
  for (const [id, u] of state.units) {
    if (u.active === "inactive" && u.job === undefined && u.restartAt === undefined) state.units.delete(id)
  }
}
