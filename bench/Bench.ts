/**
 * A tiny benchmark harness: time an effect with the real clock, repeat it,
 * keep the median, and print a table with ratios against a baseline measured
 * in the same process. Speed claims in this project are ratios from here,
 * never timed unit tests.
 */
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
