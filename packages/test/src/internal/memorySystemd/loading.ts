/**
 * Loading units from the host's files as systemd 252 does: the unit search
 * path, templates serving their instances, drop-ins in name order, masks,
 * loading on demand and unloading unused units, and whether a loaded unit's
 * files changed since (`NeedDaemonReload`). Boundary: files to loaded
 * definitions; what a unit does is `lifecycle.ts`'s.
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

const findDropIns = (state: State, id: string) =>
  Effect.gen(function* () {
    const dirNames = [`${id}.d`, ...(templateOf(id) === undefined ? [] : [`${templateOf(id)}.d`])]
    const byName = new Map<string, string | "masked">()
    for (const dirName of dirNames) {
      for (const dir of state.unitPath) {
        const entries = yield* state.fs.readDirectory(`${dir}/${dirName}`).pipe(Effect.orElseSucceed(() => []))
        for (const entry of [...entries].sort()) {
          if (!entry.endsWith(".conf") || byName.has(entry)) continue
          byName.set(entry, `${dir}/${dirName}/${entry}`)
        }
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

/** unit_need_daemon_reload: the fragment or a drop-in changed (mtime or content), appeared or went away. */
export const needsReload = (state: State, u: UnitState) =>
  Effect.gen(function* () {
    const now = yield* loadFromDisk(state, u.id)
    const was = u.loaded
    if (now.loadState !== was.loadState && !(was.loadState === "bad-setting" && now.loadState === "loaded")) {
      return true
    }
    const same = (a: FileSnapshot | undefined, b: FileSnapshot | undefined) =>
      a === undefined || b === undefined ? a === b : a.path === b.path && a.text === b.text && a.mtime <= b.mtime
    if (!same(now.fragment, was.fragment)) return true
    if (now.dropIns.length !== was.dropIns.length) return true
    return now.dropIns.some((d, i) => !same(d, was.dropIns[i]))
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
