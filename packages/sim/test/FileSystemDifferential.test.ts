/**
 * Differential property test: random sequences of file-system operations run
 * against the real file system (NodeFileSystem, in a scoped temporary
 * directory) and against MemoryHost, and every result, every error (tag,
 * errno code, method, syscall, path) and the final tree must agree. The real
 * file system is the truth: a mismatch is a bug in MemoryHost.
 *
 * The in-memory root is the same absolute path as the real temporary
 * directory, so absolute symlink targets behave identically.
 *
 * Safety: operations run in a sandbox 32 directories below the temporary
 * directory. Generated symlink targets never contain "..", and absolute ones
 * point into the sandbox, so a single operation can reach at most one level
 * above any directory reached before; with at most 30 operations per sequence
 * nothing can ever get above the temporary directory, let alone touch the
 * rest of the machine.
 *
 * Operations whose real outcome is not determined are skipped on both
 * sides, decided from the real file system just before they would run
 * (see `runnable`); this restricts the inputs, never the comparison:
 * - a recursive listing through a symlink cycle (Node walks it until ELOOP,
 *   exponentially);
 * - a `copy` merging into an existing directory where some entry conflicts
 *   (Node stops at the first conflict in readdir order, which is the file
 *   system's hash order);
 * - a `copy` of a directory into itself that Node does not notice (it copies
 *   until ENAMETOOLONG, seeing the entries it adds or not, and leaves a tree
 *   too deep for `rm`);
 * - a `copy` where both source and destination fail to lstat (Node lstats
 *   them in parallel and either error can win);
 * - a recursive `remove` through ".." from inside the removed directory
 *   (rimraf removes children concurrently, so one removal can break the
 *   path another child is still reached by).
 */
import { statfsSync } from "node:fs"
import { tmpdir } from "node:os"
import { posix } from "node:path"
import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { MemoryHost } from "@hostnode/sim"
import { Arbitrary, Context, Effect, FileSystem, Layer, Option, type PlatformError, Schema } from "effect"

// ---------------------------------------------------------------------------
// Generation: each operation is four small integers decoded through weighted
// tables, so shrinking moves towards earlier (simpler) table entries.
// ---------------------------------------------------------------------------

const Code = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 9999 }))
const OpCode = Schema.Tuple([Code, Code, Code, Code])
type OpCode = typeof OpCode.Type

const MIN_OPS = 8
const MAX_OPS = 24
const SANDBOX_DEPTH = 32

const pick = <A>(table: ReadonlyArray<A>, n: number): A => table[n % table.length]!

/** Paths relative to the sandbox; the plain names come first and most often. */
const paths = [
  "a",
  "b",
  "c",
  "a/b",
  "a/c",
  "b/a",
  "a",
  "b",
  "c/a",
  "a/b/c",
  "b/c",
  "a/a",
  "x",
  "a/x",
  "a/",
  "b/",
  "a/b/",
  ".",
  "",
  "a/.",
  "a/..",
  "a/../b",
  "./c",
  "a/b/..",
  "b/../a/b",
  "x/y",
  "c/",
  "a/b/c/",
  "c/x",
  "c/b",
  "c/c",
  "c/..",
  "c/.",
  "a/b/c/x",
  "y",
  "b/a/"
]

/** Symlink targets relative to the link: no "..", so they never lead out of the sandbox. */
const relTargets = [
  "a",
  "b",
  "c",
  "a/b",
  "b/c",
  "a/",
  "missing",
  "missing/x",
  ".",
  "a/.",
  "c/a/b",
  "x",
  "c/",
  "b/a",
  "a/b/c",
  "y/"
]
const absTargets = ["a", "b", "a/b", "", "c/", "missing"]
const contents = ["x", "", "hello", "0123456789"]
const writeFlags: ReadonlyArray<FileSystem.OpenFlag> = ["w", "a", "w", "wx", "r+", "w"]
const openFlags: ReadonlyArray<FileSystem.OpenFlag> = ["r", "r+", "w", "wx", "w+", "a", "a+", "ax", "wx+", "ax+"]
const dirModes = [undefined, 0o700, 0o777, 0o1777, 0o2755]
const chmodModes = [0o644, 0o600, 0o4755, 0o2775, 0o1777, 0o7777, 0o000, 0o2745]
const ids = [0, 1000, -1, 1]
const lengths = [0, 1, 5, 100]

type Op =
  | {
      readonly op: "writeFile"
      readonly p: string
      readonly data: string
      readonly flag: FileSystem.OpenFlag
      readonly mode: number | undefined
    }
  | {
      readonly op: "readFile" | "readLink" | "stat" | "lstat" | "readDirectoryEntries" | "realPath" | "exists"
      readonly p: string
    }
  | { readonly op: "makeDirectory"; readonly p: string; readonly recursive: boolean; readonly mode: number | undefined }
  | { readonly op: "remove"; readonly p: string; readonly recursive: boolean; readonly force: boolean }
  | { readonly op: "rename" | "link" | "copyFile"; readonly p: string; readonly q: string }
  | { readonly op: "copy"; readonly p: string; readonly q: string; readonly overwrite: boolean }
  | { readonly op: "symlink"; readonly target: string; readonly p: string }
  | { readonly op: "readDirectory"; readonly p: string; readonly recursive: boolean }
  | { readonly op: "chmod"; readonly p: string; readonly mode: number }
  | { readonly op: "chown"; readonly p: string; readonly uid: number; readonly gid: number }
  | { readonly op: "truncate"; readonly p: string; readonly length: number }
  | { readonly op: "utimes"; readonly p: string }
  | {
      readonly op: "open"
      readonly p: string
      readonly flag: FileSystem.OpenFlag
      readonly noFollow: boolean
      readonly script: number
    }
  | { readonly op: "makeTempDirectory"; readonly p: string }

const kinds = [
  "writeFile",
  "makeDirectory",
  "symlink",
  "writeFile",
  "makeDirectory",
  "symlink",
  "remove",
  "rename",
  "stat",
  "lstat",
  "readFile",
  "readDirectory",
  "link",
  "readLink",
  "copy",
  "copyFile",
  "chmod",
  "chown",
  "truncate",
  "realPath",
  "exists",
  "open",
  "readDirectoryEntries",
  "utimes",
  "makeTempDirectory",
  "open",
  "rename",
  "remove"
] as const

const decode = ([k, a, b, c]: OpCode, sandbox: string): Op => {
  const p = pick(paths, a)
  const q = pick(paths, b)
  const kind = pick(kinds, k)
  switch (kind) {
    case "writeFile":
      return { op: kind, p, data: pick(contents, b), flag: pick(writeFlags, c), mode: c % 7 === 3 ? 0o600 : undefined }
    case "makeDirectory":
      return { op: kind, p, recursive: b % 3 === 1, mode: pick(dirModes, c) }
    case "remove":
      return { op: kind, p, recursive: b % 2 === 1, force: c % 3 === 1 }
    case "rename":
    case "link":
    case "copyFile":
      return { op: kind, p, q }
    case "copy":
      return { op: kind, p, q, overwrite: c % 2 === 1 }
    case "symlink": {
      const target = b % 3 === 2 ? `${sandbox}/${pick(absTargets, c)}` : pick(relTargets, c)
      return { op: kind, target, p }
    }
    case "readDirectory":
      return { op: kind, p, recursive: b % 2 === 1 }
    case "chmod":
      return { op: kind, p, mode: pick(chmodModes, b) }
    case "chown":
      return { op: kind, p, uid: pick(ids, b), gid: pick(ids, c) }
    case "truncate":
      return { op: kind, p, length: pick(lengths, b) }
    case "open":
      return { op: kind, p, flag: pick(openFlags, b), noFollow: c % 5 === 4, script: c % 4 }
    case "utimes":
    case "makeTempDirectory":
      return { op: kind, p }
    default:
      return { op: kind, p }
  }
}

// ---------------------------------------------------------------------------
// Running an operation and normalising what happened
// ---------------------------------------------------------------------------

/** Directory sizes depend on the real file system's type; compared only where MemoryHost models it. */
const realFlavor = ((): "ext4" | "tmpfs" | undefined => {
  const type = statfsSync(tmpdir()).type
  // ext2/3/4 and overlayfs (whose upper directory is usually ext4) report 4 KiB blocks.
  if (type === 0xef53 || type === 0x794c7630) return "ext4"
  if (type === 0x01021994) return "tmpfs"
  return undefined
})()

const bytes = (s: string) => new TextEncoder().encode(s)
const text = (b: Uint8Array) => new TextDecoder().decode(b)

interface Ctx {
  readonly root: string
  readonly sandbox: string
}

const rel = (ctx: Ctx, s: string) => s.split(ctx.root).join("<root>")

const normInfo = (i: FileSystem.File.Info) => ({
  type: i.type,
  mode: i.mode,
  uid: Option.getOrUndefined(i.uid),
  gid: Option.getOrUndefined(i.gid),
  size: i.type === "Directory" && realFlavor === undefined ? "?" : Number(i.size),
  nlink: Number(Option.getOrElse(i.nlink, () => -1n))
})

const normError = (ctx: Ctx, e: PlatformError.PlatformError) => {
  const cause = e.reason.cause
  return {
    error: e.reason._tag,
    code: typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined,
    method: e.reason.method,
    syscall: e.reason._tag === "BadArgument" ? undefined : e.reason.syscall,
    path:
      e.reason._tag === "BadArgument" || e.reason.pathOrDescriptor === undefined
        ? undefined
        : typeof e.reason.pathOrDescriptor === "number"
          ? "<fd>"
          : rel(ctx, e.reason.pathOrDescriptor)
  }
}

/** Runs `effect`, normalising success with `f` and failure with `normError`. */
const outcome = <A, R>(ctx: Ctx, effect: Effect.Effect<A, PlatformError.PlatformError, R>, f: (a: A) => unknown) =>
  Effect.match(effect, { onFailure: (e) => normError(ctx, e), onSuccess: (a) => ({ ok: f(a) }) })

const sortedNames = (xs: ReadonlyArray<string>) => [...xs].sort()

const openScript = (ctx: Ctx, file: FileSystem.File, script: number) => {
  const steps: Array<Effect.Effect<unknown, never>> = []
  const add = <A>(e: Effect.Effect<A, PlatformError.PlatformError>, f: (a: A) => unknown = (a) => a) =>
    steps.push(outcome(ctx, e, f))
  const readText = (o: Option.Option<Uint8Array>) => Option.map(o, text)
  switch (script) {
    case 0:
      add(file.write(bytes("abc")))
      add(file.seek(0n, "start"), String)
      add(file.readAlloc(10), readText)
      add(file.stat, normInfo)
      break
    case 1:
      add(file.readAlloc(3), readText)
      add(file.readAlloc(3), readText)
      add(file.read(new Uint8Array(2)))
      add(file.readAlloc(4, { position: 1n }), readText)
      add(file.readAlloc(100), readText)
      break
    case 2:
      add(file.writeAll(bytes("hello")))
      add(file.truncate(2))
      add(file.write(bytes("Z")))
      add(file.seek(0n, "start"), String)
      add(file.readAlloc(10), readText)
      add(file.stat, normInfo)
      break
    default:
      add(file.seek(5n, "start"), String)
      add(file.write(bytes("q")))
      add(file.truncate(7))
      add(file.readAlloc(10, { position: 0n }), readText)
      add(file.sync)
      add(file.stat, normInfo)
  }
  return Effect.all(steps)
}

const run = (fs: FileSystem.FileSystem, ctx: Ctx, op: Op): Effect.Effect<unknown> => {
  const at = (p: string) => `${ctx.sandbox}/${p}`
  switch (op.op) {
    case "writeFile":
      return outcome(ctx, fs.writeFileString(at(op.p), op.data, { flag: op.flag, mode: op.mode }), () => null)
    case "readFile":
      return outcome(ctx, fs.readFile(at(op.p)), text)
    case "readLink":
      return outcome(ctx, fs.readLink(at(op.p)), (t) => rel(ctx, t))
    case "stat":
      return outcome(ctx, fs.stat(at(op.p)), normInfo)
    case "lstat":
      return outcome(ctx, fs.lstat(at(op.p)), normInfo)
    case "readDirectoryEntries":
      return outcome(ctx, fs.readDirectoryEntries(at(op.p)), (es) =>
        [...es].sort((x, y) => (x.name < y.name ? -1 : 1)).map((e) => `${e.name}:${e.type}`)
      )
    case "realPath":
      return outcome(ctx, fs.realPath(at(op.p)), (t) => rel(ctx, t))
    case "exists":
      return outcome(ctx, fs.exists(at(op.p)), (b) => b)
    case "makeDirectory":
      return outcome(ctx, fs.makeDirectory(at(op.p), { recursive: op.recursive, mode: op.mode }), () => null)
    case "remove":
      return outcome(ctx, fs.remove(at(op.p), { recursive: op.recursive, force: op.force }), () => null)
    case "rename":
      return outcome(ctx, fs.rename(at(op.p), at(op.q)), () => null)
    case "link":
      return outcome(ctx, fs.link(at(op.p), at(op.q)), () => null)
    case "copyFile":
      return outcome(ctx, fs.copyFile(at(op.p), at(op.q)), () => null)
    case "copy":
      return outcome(ctx, fs.copy(at(op.p), at(op.q), { overwrite: op.overwrite }), () => null)
    case "symlink":
      return outcome(ctx, fs.symlink(op.target, at(op.p)), () => null)
    case "readDirectory":
      return outcome(ctx, fs.readDirectory(at(op.p), { recursive: op.recursive }), sortedNames)
    case "chmod":
      return outcome(ctx, fs.chmod(at(op.p), op.mode), () => null)
    case "chown":
      return outcome(ctx, fs.chown(at(op.p), op.uid, op.gid), () => null)
    case "truncate":
      return outcome(ctx, fs.truncate(at(op.p), op.length), () => null)
    case "utimes":
      return outcome(ctx, fs.utimes(at(op.p), 1_000, new Date(2_000_000)), () => null)
    case "open":
      return Effect.scoped(
        Effect.matchEffect(fs.open(at(op.p), { flag: op.flag, noFollow: op.noFollow }), {
          onFailure: (e) => Effect.succeed(normError(ctx, e)),
          onSuccess: (file) => Effect.map(openScript(ctx, file, op.script), (steps) => ({ ok: steps }))
        })
      )
    case "makeTempDirectory":
      // The name is random on both sides: report its shape and remove it again so the trees stay comparable.
      return Effect.matchEffect(fs.makeTempDirectory({ directory: at(op.p), prefix: "t" }), {
        onFailure: (e) => Effect.succeed(normError(ctx, e)),
        onSuccess: (dir) =>
          Effect.map(
            Effect.all([
              outcome(ctx, fs.stat(dir), normInfo),
              outcome(ctx, fs.remove(dir, { recursive: true }), () => null)
            ]),
            (r) => ({ ok: r })
          )
      })
  }
}

/** The whole tree below `root` through the FileSystem API, without following links. */
const walk = (fs: FileSystem.FileSystem, ctx: Ctx) =>
  Effect.gen(function* () {
    const out: Record<string, unknown> = {}
    const visit = (path: string): Effect.Effect<void, PlatformError.PlatformError> =>
      Effect.gen(function* () {
        const info = yield* fs.lstat(path)
        const key = rel(ctx, path)
        if (info.type === "File") {
          out[key] = { ...normInfo(info), content: text(yield* fs.readFile(path)) }
        } else if (info.type === "SymbolicLink") {
          out[key] = { ...normInfo(info), target: rel(ctx, yield* fs.readLink(path)) }
        } else {
          out[key] = normInfo(info)
          for (const name of sortedNames(yield* fs.readDirectory(path))) yield* visit(`${path}/${name}`)
        }
      })
    yield* visit(ctx.root)
    return out
  })

/** The paths whose entries differ, for a readable failure message. */
const treeDiff = (real: Record<string, unknown>, memory: Record<string, unknown>): string =>
  [...new Set([...Object.keys(real), ...Object.keys(memory)])]
    .sort()
    .filter((k) => JSON.stringify(real[k]) !== JSON.stringify(memory[k]))
    .map((k) => `${k}\n  real:   ${JSON.stringify(real[k])}\n  memory: ${JSON.stringify(memory[k])}`)
    .join("\n")

// ---------------------------------------------------------------------------
// Guards against order-dependent real outcomes (decided on the real file system)
// ---------------------------------------------------------------------------

/** False when Node's recursive readdir of `path` would walk a symlink cycle or list an absurd number of entries. */
const recursionIsFinite = (fs: FileSystem.FileSystem, path: string) =>
  Effect.gen(function* () {
    let budget = 400
    const visit = (dir: string, stack: ReadonlySet<string>): Effect.Effect<boolean> =>
      Effect.gen(function* () {
        const names = yield* Effect.orElseSucceed(fs.readDirectory(dir), () => [] as Array<string>)
        for (const name of names) {
          if (--budget < 0) return false
          const child = `${dir}/${name}`
          const info = yield* Effect.option(fs.stat(child))
          if (Option.isNone(info) || info.value.type !== "Directory") continue
          const real = yield* Effect.orElseSucceed(fs.realPath(child), () => child)
          if (stack.has(real)) return false
          if (!(yield* visit(child, new Set([...stack, real])))) return false
        }
        return true
      })
    const start = yield* Effect.orElseSucceed(fs.realPath(path), () => path)
    return yield* visit(path, new Set([start]))
  })

/** False when `copy(src, dest)` merges into an existing directory and some entry would conflict. */
const mergeIsConflictFree = (fs: FileSystem.FileSystem, src: string, dest: string): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    const s = yield* Effect.option(fs.lstat(src))
    const d = yield* Effect.option(fs.lstat(dest))
    if (Option.isNone(s) || Option.isNone(d)) return true
    if (s.value.type !== "Directory" || d.value.type !== "Directory") return true
    for (const name of yield* Effect.orElseSucceed(fs.readDirectory(src), () => [] as Array<string>)) {
      const sc = yield* Effect.option(fs.lstat(`${src}/${name}`))
      const dc = yield* Effect.option(fs.lstat(`${dest}/${name}`))
      if (Option.isNone(dc) || Option.isNone(sc)) continue
      if (sc.value.type === "File" && dc.value.type === "File") continue
      if (sc.value.type === "Directory" && dc.value.type === "Directory") {
        if (!(yield* mergeIsConflictFree(fs, `${src}/${name}`, `${dest}/${name}`))) return false
        continue
      }
      return false
    }
    return true
  })

const lexicallyInside = (src: string, dest: string) => {
  const s = posix
    .resolve(src)
    .split("/")
    .filter((x) => x !== "")
  const d = posix
    .resolve(dest)
    .split("/")
    .filter((x) => x !== "")
  return s.every((c, i) => d[i] === c)
}

/**
 * False when `copy(src, dest)` would copy a directory into itself without
 * Node noticing (it compares path strings and the lexical parents of dest):
 * Node then copies until ENAMETOOLONG, seeing or not the entries it adds
 * depending on directory order, and leaves a tree too deep for `rm`.
 */
const copyStaysOutsideSource = (fs: FileSystem.FileSystem, src: string, dest: string): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    const s = yield* Effect.option(fs.lstat(src))
    if (Option.isNone(s) || s.value.type !== "Directory" || lexicallyInside(src, dest)) return true
    const realSrc = yield* Effect.option(fs.realPath(src))
    if (Option.isNone(realSrc)) return true
    // dest itself when the copy merges into it (a trailing slash follows a link), else its nearest existing ancestor
    const d = yield* Effect.option(fs.lstat(dest))
    const start = Option.isSome(d) && d.value.type === "Directory" ? dest : posix.dirname(posix.resolve(dest))
    for (let p = start; ; p = posix.dirname(p)) {
      const real = yield* Effect.option(fs.realPath(p))
      if (Option.isSome(real)) return !`${real.value}/`.startsWith(`${realSrc.value}/`)
      if (p === "/") return true
    }
  })

/**
 * False when Node's cp would race: it lstats source and destination in
 * parallel (Promise.all), so when both fail, either error can win.
 */
const copyIsNotRacy = (fs: FileSystem.FileSystem, src: string, dest: string): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    const s = yield* Effect.result(fs.lstat(src))
    const d = yield* Effect.result(fs.lstat(dest))
    return !(s._tag === "Failure" && d._tag === "Failure" && d.failure.reason._tag !== "NotFound")
  })

/**
 * False when a recursive `remove` of `rel` would race with itself: Node's
 * rimraf removes the children of a directory concurrently through paths
 * spelled from `rel`, so when `rel` goes through ".." from inside the very
 * directory being removed ("a/b/..", or "c/.." with c -> a/b), one child's
 * removal can break the path another child is still being reached by.
 */
const removeIsNotRacy = (fs: FileSystem.FileSystem, sandbox: string, rel: string): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    const parts = rel.split("/").filter((p) => p !== "")
    const up = parts.indexOf("..")
    if (up === -1) return true
    const prefix = yield* Effect.option(fs.realPath([sandbox, ...parts.slice(0, up)].join("/")))
    if (Option.isNone(prefix)) return true
    const rest = parts.slice(up + 1).filter((p) => p !== ".")
    const physical = yield* Effect.option(fs.realPath([posix.dirname(prefix.value), ...rest].join("/")))
    if (Option.isNone(physical)) return true
    return !`${prefix.value}/`.startsWith(`${physical.value}/`)
  })

const runnable = (real: FileSystem.FileSystem, ctx: Ctx, op: Op): Effect.Effect<boolean> => {
  if (op.op === "remove" && op.recursive) return removeIsNotRacy(real, ctx.sandbox, op.p)
  if (op.op === "readDirectory" && op.recursive) return recursionIsFinite(real, `${ctx.sandbox}/${op.p}`)
  if (op.op === "copy") {
    const src = `${ctx.sandbox}/${op.p}`
    const dest = `${ctx.sandbox}/${op.q}`
    return Effect.map(
      Effect.all([
        mergeIsConflictFree(real, src, dest),
        copyStaysOutsideSource(real, src, dest),
        copyIsNotRacy(real, src, dest)
      ]),
      (checks) => checks.every((ok) => ok)
    )
  }
  return Effect.succeed(true)
}

// ---------------------------------------------------------------------------
// The property
// ---------------------------------------------------------------------------

const sequence = Arbitrary.array(Arbitrary.schema(OpCode), { minLength: MIN_OPS, maxLength: MAX_OPS })

/**
 * Every sequence starts from the same small tree (made through the API on
 * both sides), so random operations meet existing files, directories and
 * links instead of mostly missing parents.
 */
const prelude = (sandbox: string): ReadonlyArray<Op> => [
  { op: "makeDirectory", p: "a", recursive: false, mode: undefined },
  { op: "makeDirectory", p: "a/b", recursive: false, mode: undefined },
  { op: "writeFile", p: "a/c", data: "hello", flag: "w", mode: undefined },
  { op: "writeFile", p: "b", data: "x", flag: "w", mode: undefined },
  { op: "symlink", target: "a/b", p: "c" },
  { op: "symlink", target: `${sandbox}/a/c`, p: "a/b/c" }
]

const memoryFileSystem = Effect.map(Layer.build(MemoryHost.layer({ flavor: realFlavor ?? "ext4" })), (context) =>
  Context.get(context, FileSystem.FileSystem)
)

describe("FileSystem differential: MemoryHost against the real file system", () => {
  it.effect.prop(
    "random operation sequences give the same results, errors and final tree",
    [sequence],
    ([codes]) =>
      Effect.gen(function* () {
        const real = yield* FileSystem.FileSystem
        const root = yield* real.makeTempDirectoryScoped({ prefix: "hostnode-diff-" })
        const mem = yield* memoryFileSystem
        const sandbox = `${root}${"/s".repeat(SANDBOX_DEPTH)}`
        yield* real.makeDirectory(sandbox, { recursive: true })
        // The same absolute root on the simulated host, with mkdtemp's mode.
        yield* mem.makeDirectory(root, { recursive: true, mode: 0o700 })
        yield* mem.makeDirectory(sandbox, { recursive: true })
        const ctx: Ctx = { root, sandbox }
        const done: Array<unknown> = []
        for (const op of [...prelude(sandbox), ...codes.map((code) => decode(code, sandbox))]) {
          if (!(yield* runnable(real, ctx, op))) {
            done.push({ ...op, skipped: true })
            continue
          }
          const expected = yield* run(real, ctx, op)
          const actual = yield* run(mem, ctx, op)
          done.push(op)
          assert.deepStrictEqual(
            actual,
            expected,
            `operation ${done.length} differs: ${rel(ctx, JSON.stringify(op))}\n` +
              `real:   ${JSON.stringify(expected)}\nmemory: ${JSON.stringify(actual)}\n` +
              `after ${rel(ctx, JSON.stringify(done.slice(0, -1)))}`
          )
        }
        const expectedTree = yield* walk(real, ctx)
        const actualTree = yield* walk(mem, ctx)
        assert.deepStrictEqual(
          actualTree,
          expectedTree,
          `final trees differ after ${rel(ctx, JSON.stringify(done))}\n${treeDiff(expectedTree, actualTree)}`
        )
      }).pipe(Effect.scoped, Effect.provide(NodeFileSystem.layer)),
    { timeout: 120_000, arbitrary: { runs: 200 } }
  )
})
