/**
 * The benchmarks' harness: time an effect with the real clock, let the rows
 * of a table take turns (one run of each, then again, so that load from
 * elsewhere on the machine falls on all of them alike), and print each row's
 * median and range across the runs, its ratio to a baseline measured in the
 * same process or script, its peak memory, and its target with whether it is
 * met. Speed claims in this project are ratios from here, never timed unit
 * tests.
 *
 * Peak memory is the peak resident set (VmHWM) over a run: of this process
 * and its helper processes for a row that runs here (each reset through
 * `/proc/PID/clear_refs` before the run, so the figure is the run's own, not
 * an earlier peak), of the process for a row that is one (GNU time's `%M`,
 * or what the program reports of itself).
 */
import { spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Clock, Console, Effect } from "effect"

/** One measured row. */
export interface Row {
  readonly name: string
  readonly ms: number
  readonly note?: string
}

/** Milliseconds `effect` takes, measured with the real clock. */
export const time = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<readonly [number, A], E, R> =>
  Effect.gen(function* () {
    const start = yield* Clock.currentTimeNanos
    const a = yield* effect
    const end = yield* Clock.currentTimeNanos
    return [Number(end - start) / 1e6, a] as const
  })

/** The median of `runs` timings of `measure` (each run prepares its own input with `setup`). */
export const median = <S, E1, R1, E2, R2>(
  runs: number,
  setup: Effect.Effect<S, E1, R1>,
  measure: (s: S) => Effect.Effect<unknown, E2, R2>
): Effect.Effect<number, E1 | E2, R1 | R2> =>
  Effect.gen(function* () {
    const times: Array<number> = []
    for (let i = 0; i < runs; i++) {
      const s = yield* setup
      const [ms] = yield* time(measure(s))
      times.push(ms)
    }
    times.sort((a, b) => a - b)
    return times[Math.floor(times.length / 2)] ?? Number.NaN
  })

const fmt = (ms: number): string => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(1)} ms`)

/** Prints `rows` as a Markdown table, each with its ratio to the row named `baseline`. */
export const table = (title: string, rows: ReadonlyArray<Row>, baseline: string): Effect.Effect<void> =>
  Effect.gen(function* () {
    const base = rows.find((r) => r.name === baseline)?.ms ?? Number.NaN
    const hasNote = rows.some((r) => r.note)
    yield* Console.log(`\n### ${title}\n`)
    yield* Console.log(`| case | time | ratio to ${baseline} |${hasNote ? " note |" : ""}`)
    yield* Console.log(`|---|---|---|${hasNote ? "---|" : ""}`)
    for (const r of rows) {
      const note = hasNote ? ` ${r.note ?? ""} |` : ""
      yield* Console.log(`| ${r.name} | ${fmt(r.ms)} | ${(r.ms / base).toFixed(2)}x |${note}`)
    }
  })

/** How many runs each row of a table takes (at least 3): `HOSTNODE_BENCH_RUNS`, else `fallback`. */
export const runsOf = (fallback: number): number => {
  const n = Number(process.env.HOSTNODE_BENCH_RUNS ?? fallback)
  return Number.isInteger(n) && n >= 3 ? n : Math.max(3, fallback)
}

/** The peak resident set of `pid` so far, in KiB (VmHWM); 0 once it is gone. */
export const peakKiB = (pid: number): Effect.Effect<number> =>
  Effect.try(() => {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "latin1"))
    return m === null ? 0 : Number(m[1])
  }).pipe(Effect.orElseSucceed(() => 0))

/** Starts measuring `pid`'s peak from its current resident set (`/proc/PID/clear_refs`; not ours, or gone: nothing). */
export const resetPeak = (pid: number): Effect.Effect<void> =>
  Effect.try(() => writeFileSync(`/proc/${pid}/clear_refs`, "5")).pipe(Effect.ignore)

/** What one run of a row measured. */
export interface Run {
  readonly ms: number
  /** Peak resident sets over the run, KiB, by process (`agent`, `helper`, or the program's name). */
  readonly peakKiB: Readonly<Record<string, number>>
  /** Anything the run wants said (e.g. a count), from its last run. */
  readonly note?: string | undefined
}

/** A target: at most `ratio` times the median of the row named `of`. */
export interface Target {
  readonly ratio: number
  readonly of: string
}

/** A row: `setup` (untimed) prepares a run's input; `run` is timed, and says its peak memory. */
export interface Case<S, R> {
  readonly name: string
  readonly setup: Effect.Effect<S, never, R>
  readonly run: (s: S) => Effect.Effect<Omit<Run, "ms"> & { readonly ms?: number | undefined }, never, R>
  /** Targets for this row: each at most `ratio` times the row named `of` (medians). */
  readonly target?: Target | ReadonlyArray<Target> | undefined
  /** Runs of this row (default: the table's). */
  readonly runs?: number | undefined
}

/** A row whatever its setup gives its run (see {@link Case}). */
export type AnyCase<R> = Case<unknown, R>

/** {@link Case} `c` among others whose setups give other things (its setup and run may need different services). */
export const row = <S, R1, R2>(
  c: Omit<Case<S, R1 | R2>, "setup" | "run"> & {
    readonly setup: Effect.Effect<S, never, R1>
    readonly run: (s: S) => Effect.Effect<Omit<Run, "ms"> & { readonly ms?: number | undefined }, never, R2>
  }
): AnyCase<R1 | R2> => c as unknown as AnyCase<R1 | R2>

/** A row in this process: its time, and the peak memory of this process and of `helpers` (pids) over the run. */
export const inProcess = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  helpers: () => ReadonlyArray<number> = () => []
): Effect.Effect<Omit<Run, "ms"> & { readonly ms: number; readonly value: A }, E, R> =>
  Effect.gen(function* () {
    const pids = helpers()
    yield* resetPeak(process.pid)
    for (const p of pids) yield* resetPeak(p)
    const [ms, value] = yield* time(effect)
    const peak: Record<string, number> = { agent: yield* peakKiB(process.pid) }
    for (const [i, p] of pids.entries()) peak[pids.length === 1 ? "helper" : `helper ${i + 1}`] = yield* peakKiB(p)
    return { ms, value, peakKiB: peak }
  })

/** GNU time, where it is installed: a program's own peak resident set. */
const gnuTime = existsSync("/usr/bin/time") ? "/usr/bin/time" : undefined

/**
 * A row that is a process: `argv` run to its end, its wall time and its peak
 * resident set (GNU time's `%M`; without it, 0). Fails when it exits other than 0.
 */
export const processRun = (
  name: string,
  argv: ReadonlyArray<string>
): Effect.Effect<Omit<Run, "ms"> & { ms: number }> =>
  Effect.sync(() => {
    const full = gnuTime === undefined ? argv : [gnuTime, "-f", "%M", ...argv]
    const start = process.hrtime.bigint()
    const r = spawnSync(full[0] ?? "", full.slice(1), { encoding: "utf8", maxBuffer: 1 << 26 })
    const ms = Number(process.hrtime.bigint() - start) / 1e6
    if (r.status !== 0) throw new Error(`${argv.join(" ")} exited ${r.status}: ${r.stderr}`)
    const kib = gnuTime === undefined ? 0 : Number(r.stderr.trim().split("\n").at(-1))
    return { ms, peakKiB: { [name]: Number.isFinite(kib) ? kib : 0 } }
  })

/**
 * A row that is one of the bench's C programs: `argv` run to its end; the
 * program times its own work and reports it, with its peak resident set, as
 * one JSON line (`{"ms": ..., "peakKiB": ..., ...}`). Process start is not
 * in the time: the floor is the work.
 */
export const cRun = (name: string, argv: ReadonlyArray<string>): Effect.Effect<Omit<Run, "ms"> & { ms: number }> =>
  Effect.sync(() => {
    const r = spawnSync(argv[0] ?? "", argv.slice(1), { encoding: "utf8", maxBuffer: 1 << 26 })
    if (r.status !== 0) throw new Error(`${argv.join(" ")} exited ${r.status}: ${r.stderr}`)
    const out = JSON.parse(r.stdout.trim().split("\n").at(-1) ?? "{}") as {
      readonly ms: number
      readonly peakKiB: number
      readonly note?: string
    }
    return { ms: out.ms, peakKiB: { [name]: out.peakKiB }, note: out.note }
  })

/** The bench's C programs (bench/c/*.c), built once into a temporary directory with `cc -O2`. */
export const cPrograms = Effect.gen(function* () {
  const dir = mkdtempSync(join(tmpdir(), "hostnode-bench-c-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
  const built = new Map<string, string | { readonly skipped: string }>()
  return (name: string): string | { readonly skipped: string } => {
    const known = built.get(name)
    if (known !== undefined) return known
    const source = fileURLToPath(new URL(`./c/${name}.c`, import.meta.url))
    const binary = join(dir, name)
    const r = spawnSync("cc", ["-O2", "-o", binary, source], { encoding: "utf8" })
    const out = r.status === 0 ? binary : { skipped: r.error !== undefined ? "no `cc`" : `cc failed: ${r.stderr}` }
    built.set(name, out)
    return out
  }
})

/** What a table's rows measured: each row's runs. */
export interface Measured {
  readonly name: string
  readonly runs: ReadonlyArray<Run>
  readonly target?: Target | ReadonlyArray<Target> | undefined
}

/**
 * Runs every case `runs` times (a case's own `runs` where it says), the
 * cases taking turns: one run of each, in an order that rotates each round,
 * then the next round. A case whose runs are done sits out the later rounds.
 */
// biome-ignore lint/suspicious/noExplicitAny: each row's requirements, joined below
export const turns = <const C extends ReadonlyArray<AnyCase<any>>>(
  runs: number,
  cases: C
): Effect.Effect<Array<Measured>, never, C[number] extends AnyCase<infer R> ? R : never> =>
  Effect.gen(function* () {
    const out: Array<Array<Run>> = cases.map(() => [])
    const rounds = Math.max(...cases.map((c) => c.runs ?? runs))
    for (let round = 0; round < rounds; round++) {
      for (let k = 0; k < cases.length; k++) {
        const j = (k + round) % cases.length
        const c = cases[j] as AnyCase<never>
        if ((out[j]?.length ?? 0) >= (c.runs ?? runs)) continue
        const s = yield* c.setup
        const [ms, r] = yield* time(c.run(s))
        out[j]?.push({ ms: r.ms ?? ms, peakKiB: r.peakKiB, note: r.note })
      }
    }
    return cases.map((c, j) => ({ name: c.name, runs: out[j] ?? [], target: c.target }))
  })

const sorted = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)

/** The median of `xs` (the lower middle one of an even count). */
export const medianOf = (xs: ReadonlyArray<number>): number => sorted(xs)[Math.floor((xs.length - 1) / 2)] ?? Number.NaN

const mib = (kib: number) => `${(kib / 1024).toFixed(1)} MiB`

/** A row's peak memory: the median over its runs, per process. */
const peakText = (runs: ReadonlyArray<Run>): string => {
  const names = [...new Set(runs.flatMap((r) => Object.keys(r.peakKiB)))]
  const parts = names.map((n) => {
    const kib = medianOf(runs.map((r) => r.peakKiB[n] ?? 0))
    return kib === 0 ? `${n}: n/a` : names.length === 1 ? mib(kib) : `${n} ${mib(kib)}`
  })
  return parts.join(", ")
}

/**
 * Prints `rows` as a Markdown table: median and range (min–max) of each
 * row's runs, ratio of the medians to the row named `baseline`, peak memory,
 * and the row's target with whether it is met (by the ratio of the medians),
 * beside the median and range of the ratios run by run (each run to its
 * target's run of the same round: steadier where the disk or the kernel
 * moves every row's time between rounds). `skipped` rows are listed with why.
 */
export const report = (
  title: string,
  rows: ReadonlyArray<Measured | { readonly name: string; readonly skipped: string }>,
  baseline: string
): Effect.Effect<void> =>
  Effect.gen(function* () {
    const medianByName = new Map<string, number>()
    const runsByName = new Map<string, ReadonlyArray<Run>>()
    for (const r of rows) {
      if (!("runs" in r)) continue
      medianByName.set(r.name, medianOf(r.runs.map((x) => x.ms)))
      runsByName.set(r.name, r.runs)
    }
    // Run k of every row is from round k, so the two runs of a pair were made minutes apart at most: where the disk's
    // writeback or the kernel's RCU waits move a row's time between rounds, they move its baseline's alike.
    const paired = (row: ReadonlyArray<Run>, of: ReadonlyArray<Run>): string => {
      const ratios = sorted(row.slice(0, of.length).map((x, k) => x.ms / (of[k] as Run).ms))
      if (ratios.length < 3) return ""
      return `; run by run ${medianOf(ratios).toFixed(2)}x (${(ratios[0] as number).toFixed(2)}–${(ratios.at(-1) as number).toFixed(2)})`
    }
    const base = medianByName.get(baseline) ?? Number.NaN
    yield* Console.log(`\n### ${title}\n`)
    yield* Console.log(`| case | median | range | ratio to ${baseline} | peak memory | target |`)
    yield* Console.log("|---|---|---|---|---|---|")
    for (const r of rows) {
      if (!("runs" in r)) {
        yield* Console.log(`| ${r.name} | | | | | skipped: ${r.skipped} |`)
        continue
      }
      const ms = r.runs.map((x) => x.ms)
      const med = medianByName.get(r.name) ?? Number.NaN
      const s = sorted(ms)
      const ts: ReadonlyArray<Target> = r.target === undefined ? [] : "ratio" in r.target ? [r.target] : r.target
      const target = ts
        .map((t) => {
          const of = medianByName.get(t.of)
          return of === undefined
            ? `<= ${t.ratio}x ${t.of}: not measured`
            : `<= ${t.ratio}x ${t.of}: ${(med / of).toFixed(2)}x, ${med <= t.ratio * of ? "met" : "not met"}${paired(r.runs, runsByName.get(t.of) ?? [])}`
        })
        .join("; ")
      const note = r.runs.at(-1)?.note
      yield* Console.log(
        `| ${r.name}${note === undefined ? "" : ` (${note})`} | ${fmt(med)} | ${fmt(s[0] ?? Number.NaN)}–${fmt(s.at(-1) ?? Number.NaN)} | ${(med / base).toFixed(2)}x | ${peakText(r.runs)} | ${target} |`
      )
    }
    yield* Console.log(
      `\n(${rows.map((r) => ("runs" in r ? r.runs.length : 0)).reduce((a, b) => Math.max(a, b), 0)} runs a row, the rows taking turns; load average ${readFileSync("/proc/loadavg", "latin1").split(" ").slice(0, 3).join(" ")} at the end)`
    )
  })

/** The file system type of the directory `dir` (`stat -f`: ext2/ext3 for ext4, xfs, tmpfs, ...). */
const fsTypeOf = (dir: string): string =>
  spawnSync("stat", ["-f", "-c", "%T", dir], { encoding: "utf8" }).stdout?.trim() || "unknown"

/**
 * Where the benchmarks that write files put them: on the real disk, the
 * system temporary directory unless it is in memory (a tmpfs), then
 * /var/tmp. Its file system type is said with each table.
 */
export const realDisk: Effect.Effect<{ readonly dir: string; readonly fsType: string }> = Effect.sync(() => {
  const memory = (t: string) => t === "tmpfs" || t === "ramfs"
  const tmp = tmpdir()
  const t = fsTypeOf(tmp)
  if (!memory(t)) return { dir: tmp, fsType: t }
  return { dir: "/var/tmp", fsType: fsTypeOf("/var/tmp") }
})
