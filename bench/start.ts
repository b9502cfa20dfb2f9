/**
 * Start benchmark (issue 26): how long `hostnode --version` and
 * `hostnode --help` take as processes, and their peak memory, against a bare
 * `node -e 0` started the same way in the same run. The executable is the
 * shipped one: packages/cli/bin/hostnode.mjs running the bundle of
 * `npm run build` (scripts/bench.mjs builds it first). Each row is its own
 * processes, the rows taking turns (so load from elsewhere falls on all
 * alike): the median and the range of the wall time of `runs` starts (after
 * one unmeasured start), and the median peak resident set (GNU time's %M,
 * where /usr/bin/time exists).
 *
 * Rows: the bare start (the floor); the executable with V8's compile cache
 * (as installed: the cache beside the bundle, warm after its first run); the
 * same with the cache disabled (a first run, or a read-only install); and the
 * command run from its TypeScript sources, for scale (lazy as well, but each
 * of effect's modules a file of its own: what bundling saves).
 */
import { spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect } from "effect"

const root = fileURLToPath(new URL("..", import.meta.url))
const bin = join(root, "packages/cli/bin/hostnode.mjs")
const source = join(root, "packages/cli/src/bin.ts")
const runs = Number(process.env.HOSTNODE_BENCH_RUNS ?? 15)
const gnuTime = existsSync("/usr/bin/time") ? "/usr/bin/time" : undefined

interface Row {
  readonly name: string
  readonly ms: ReadonlyArray<number>
  readonly peakKiB: number | undefined
}

const sorted = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)
const medianOf = (xs: ReadonlyArray<number>) => sorted(xs)[Math.floor(xs.length / 2)] ?? Number.NaN

/** One start of `argv` with `env`: its wall time in ms (and checks it exited 0). */
const once = (argv: ReadonlyArray<string>, env: NodeJS.ProcessEnv) =>
  Effect.sync(() => {
    const start = process.hrtime.bigint()
    const r = spawnSync(argv[0] ?? "", argv.slice(1), { env, stdio: ["ignore", "ignore", "pipe"] })
    const ms = Number(process.hrtime.bigint() - start) / 1e6
    if (r.status !== 0) throw new Error(`${argv.join(" ")} exited ${r.status}: ${r.stderr}`)
    return ms
  })

/** The peak resident set of one start of `argv`, in KiB (GNU time's %M). */
const peak = (argv: ReadonlyArray<string>, env: NodeJS.ProcessEnv) =>
  Effect.sync(() => {
    if (gnuTime === undefined) return undefined
    const r = spawnSync(gnuTime, ["-f", "%M", ...argv], { env, stdio: ["ignore", "ignore", "pipe"], encoding: "utf8" })
    const kib = Number(r.stderr.trim().split("\n").at(-1))
    return Number.isFinite(kib) ? kib : undefined
  })

/** A row to measure: what it starts, with which environment. */
interface Case {
  readonly name: string
  readonly argv: ReadonlyArray<string>
  readonly env: NodeJS.ProcessEnv
}

/**
 * Every case started `runs` times, the cases taking turns (one start of each,
 * then again), so that load from elsewhere on the machine falls on all of them
 * alike; one unmeasured start of each first.
 */
const measure = (cases: ReadonlyArray<Case>) =>
  Effect.gen(function* () {
    for (const c of cases) yield* once(c.argv, c.env)
    const ms = cases.map((): Array<number> => [])
    for (let i = 0; i < runs; i++) {
      for (const [j, c] of cases.entries()) ms[j]?.push(yield* once(c.argv, c.env))
    }
    const measured: Array<Row> = []
    for (const [j, c] of cases.entries()) {
      const peaks: Array<number> = []
      for (let i = 0; i < 3; i++) {
        const kib = yield* peak(c.argv, c.env)
        if (kib !== undefined) peaks.push(kib)
      }
      measured.push({ name: c.name, ms: ms[j] ?? [], peakKiB: peaks.length === 0 ? undefined : medianOf(peaks) })
    }
    return measured
  })

const fmt = (ms: number) => `${ms.toFixed(1)} ms`
const mib = (kib: number | undefined) =>
  kib === undefined ? "n/a (no /usr/bin/time)" : `${(kib / 1024).toFixed(1)} MiB`

const Main = Effect.gen(function* () {
  if (!existsSync(join(root, "packages/cli/dist/bundle/bin.js"))) {
    return yield* Effect.die(new Error("no bundle: run `npm run build` first (scripts/bench.mjs does)"))
  }
  // The compile cache of these runs is the bench's own (NODE_COMPILE_CACHE wins over the bin's default),
  // so the rows start from a cache this run filled, not from one another run left.
  const cache = mkdtempSync(join(tmpdir(), "hostnode-bench-cache-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(cache, { recursive: true, force: true })))
  const warm = { ...process.env, NODE_COMPILE_CACHE: cache }
  const cold = { ...process.env, NODE_DISABLE_COMPILE_CACHE: "1" }
  const node = process.execPath
  const rows = yield* measure([
    { name: "`node -e 0` (floor)", argv: [node, "-e", "0"], env: process.env },
    { name: "`hostnode --version` (bundle, compile cache)", argv: [node, bin, "--version"], env: warm },
    { name: "`hostnode --help` (bundle, compile cache)", argv: [node, bin, "--help"], env: warm },
    { name: "`hostnode --version` (bundle, no compile cache)", argv: [node, bin, "--version"], env: cold },
    { name: "`hostnode --help` (bundle, no compile cache)", argv: [node, bin, "--help"], env: cold },
    {
      name: "`hostnode --version` from the TypeScript sources (not bundled: each module a file)",
      argv: [node, "--conditions=@hostnode/source", source, "--version"],
      env: process.env
    }
  ])
  const floor = medianOf(rows[0]?.ms ?? [])
  yield* Console.log(
    `\n### start: median and range of ${runs} starts each (the cases taking turns, after one unmeasured), peak memory median of 3\n`
  )
  yield* Console.log("| case | median | range | ratio to `node -e 0` | peak memory | target |")
  yield* Console.log("|---|---|---|---|---|---|")
  for (const [i, r] of rows.entries()) {
    const med = medianOf(r.ms)
    const s = sorted(r.ms)
    const target =
      i === 0
        ? ""
        : i <= 2
          ? `<= 5x and <= 70 MiB: ${med <= 5 * floor && (r.peakKiB ?? 0) <= 70 * 1024 ? "met" : "not met"}`
          : ""
    yield* Console.log(
      `| ${r.name} | ${fmt(med)} | ${fmt(s[0] ?? Number.NaN)}–${fmt(s.at(-1) ?? Number.NaN)} | ${(med / floor).toFixed(2)}x | ${mib(r.peakKiB)} | ${target} |`
    )
  }
}).pipe(Effect.scoped)

NodeRuntime.runMain(Main)
