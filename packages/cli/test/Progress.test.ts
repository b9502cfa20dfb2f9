/**
 * Progress of long work: counted through the wrapped services and shown on
 * the `Progress` service, never in a `--json` run; on a terminal (written
 * through `Stdio`'s stderr), log lines are written on a cleared line, never
 * inside a half-drawn progress line.
 */
import { assert, describe, it } from "@effect/vitest"
import { MemoryHost, MemoryNode } from "@hostnode/sim"
import { Effect, Layer, Logger, Ref, Sink, Stdio } from "effect"
import * as Progress from "../src/internal/cli/progress.ts"
import { cliEnvironment, runCli } from "./harness.ts"

const Mounts = 200

const files = Object.fromEntries(Array.from({ length: Mounts }, (_, i) => [`/k/pods/p${i}/.keep`, ""]))

/** A node with `Mounts` tmpfs below /k. */
const withMounts = <A, E, R>(body: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const host = yield* MemoryHost.MemoryHost
    for (let i = 0; i < Mounts; i++) yield* Effect.orDie(host.tmpfs(`/k/pods/p${i}`))
    return yield* body
  })

/** A node with `Mounts` tmpfs below /k, and a Progress service that keeps what it was asked to show. */
const withNode = <A, E, R>(
  body: (shown: Ref.Ref<ReadonlyArray<string>>, logged: { readonly count: number }) => Effect.Effect<A, E, R>
) =>
  Effect.gen(function* () {
    const shown = yield* Ref.make<ReadonlyArray<string>>([])
    const logged = { count: 0 }
    const recorder = Layer.succeed(
      Progress.Progress,
      Progress.Progress.of({
        show: (line) => Ref.update(shown, (s) => [...s, line]),
        clear: Ref.update(shown, (s) => [...s, "<clear>"]),
        log: (lines) =>
          Ref.update(shown, (s) => {
            logged.count += lines.length
            return [...s, ...lines.map((l) => `<log> ${l}`)]
          })
      })
    )
    return yield* withMounts(body(shown, logged).pipe(Effect.provide(recorder)))
  }).pipe(Effect.provide(Layer.mergeAll(MemoryNode.layer({ files }), cliEnvironment)))

/** A `Stdio` whose stderr keeps every chunk written to it, in order. */
const capturingStdio = () => {
  const written: Array<string> = []
  const decoder = new TextDecoder()
  const layer = Stdio.layerTest({
    stderr: () =>
      // biome-ignore lint/suspicious/useIterableCallbackReturn: Sink.forEach runs the effect its callback returns
      Sink.forEach((chunk: string | Uint8Array) =>
        Effect.sync(() => {
          written.push(typeof chunk === "string" ? chunk : decoder.decode(chunk))
        })
      )
  })
  return { written, layer }
}

/** What the terminal layer writes to erase the line; and a pattern that splits text at it and at newlines. */
const Erase = "\r\x1b[2K"
const EraseSplit = new RegExp(`(${Erase.replace("[", "\\[")}|\n)`)

/**
 * What a person sees: the text written to a terminal, where `\r\x1b[2K`
 * erases the line the cursor is on and `\n` ends it. Returns the lines that
 * scrolled up, and the line the cursor is left on.
 */
const screen = (written: ReadonlyArray<string>) => {
  const lines: Array<string> = []
  let current = ""
  for (const piece of written.join("").split(EraseSplit)) {
    if (piece === Erase) current = ""
    else if (piece === "\n") {
      lines.push(current)
      current = ""
    } else current += piece
  }
  return { lines, current }
}

describe("Progress", () => {
  it.effect("a long unmount shows its count, then clears the line before the result", () =>
    withNode((shown, logged) =>
      Effect.gen(function* () {
        const out = yield* runCli(["unmount-below", "/k"])
        assert.strictEqual(out.code, 0)
        const lines = yield* Ref.get(shown)
        assert.isAbove(lines.length, 1)
        assert.match(lines[0] ?? "", /^hostnode unmount-below: \d+ unmounted$/)
        assert.strictEqual(lines.at(-1), "<clear>")
        // The operation's summary is logged through the progress service (on a cleared line), before the line is
        // cleared for the result.
        assert.isAbove(logged.count, 0)
        assert.match(lines.at(-2) ?? "", /^<log> .* INFO .*: /)
        // Nothing of it reaches stdout.
        assert.isFalse(out.stdout.some((l) => l.includes("unmounted,") || l.includes(": 1 unmounted")))
      })
    )
  )

  it.effect("a --json run shows no progress", () =>
    withNode((shown, logged) =>
      Effect.gen(function* () {
        const out = yield* runCli(["--json", "unmount-below", "/k"])
        assert.strictEqual(out.code, 0)
        assert.strictEqual(out.stdout.length, 1)
        assert.deepStrictEqual(yield* Ref.get(shown), [])
        assert.strictEqual(logged.count, 0)
      })
    )
  )

  it.live("on a terminal, log lines written while progress is shown land on lines of their own", () => {
    const { written, layer } = capturingStdio()
    return Effect.gen(function* () {
      const progress = yield* Progress.Progress
      /** Waits (a few seconds at most) until a chunk with `text` has been written. */
      const writtenSoon = (text: string) =>
        Effect.sleep("5 millis").pipe(
          Effect.repeat({ until: () => written.some((w) => w.includes(text)) }),
          Effect.timeoutOrElse({ duration: "5 seconds", orElse: () => Effect.die(new Error(`${text} never written`)) })
        )
      const work = Effect.gen(function* () {
        for (let i = 1; i <= 4; i++) {
          yield* progress.show(`work: ${i} files`)
          yield* Effect.logWarning(`warning ${i}`).pipe(Effect.annotateLogs({ step: i }))
          // Odd steps wait until the window has passed and the line is written (the work goes on meanwhile);
          // even ones leave it to the next flush.
          if (i % 2 === 1) yield* writtenSoon(`warning ${i}`)
        }
        yield* progress.show("work: 5 files")
        // Still held when the scope closes: closing it writes it.
        yield* Effect.logInfo("last words")
      })
      yield* Effect.scoped(
        Effect.gen(function* () {
          const loggers = yield* Progress.clearingLoggers(progress)
          yield* work.pipe(Effect.provideService(Logger.CurrentLoggers, loggers))
        })
      ).pipe(Effect.ensuring(progress.clear))
      const seen = screen(written)
      // Every log line scrolled up whole, in order, with its annotations; no progress text is glued to one.
      assert.deepStrictEqual(
        seen.lines.map((l) => l.replace(/^\[[\d:.]+\] (\w+) \(#\d+\): /, "$1: ")),
        [
          'WARN: warning 1 {"step":1}',
          'WARN: warning 2 {"step":2}',
          'WARN: warning 3 {"step":3}',
          'WARN: warning 4 {"step":4}',
          "INFO: last words"
        ]
      )
      // Logs were written while the work went on (the window passed), not only when it ended.
      const firstLog = written.findIndex((w) => w.includes("warning 1"))
      assert.isBelow(
        firstLog,
        written.findIndex((w) => w.includes("work: 2 files"))
      )
      // After a log, the progress line is drawn again; at the end it is cleared.
      assert.match(written[firstLog] ?? "", /warning 1 \{"step":1\}\nwork: 1 files$/)
      assert.strictEqual(seen.current, "")
    }).pipe(Effect.provide(Progress.layerTerminal.pipe(Layer.provide(layer))))
  })

  it.effect("the CLI's summary log and the counts share stderr without mixing", () => {
    const { written, layer } = capturingStdio()
    return withMounts(
      Effect.gen(function* () {
        const out = yield* runCli(["unmount-below", "/k"])
        assert.strictEqual(out.code, 0)
        const seen = screen(written)
        assert.isTrue(written[0]?.startsWith(Erase))
        assert.match(written[0]?.slice(Erase.length) ?? "", /^hostnode unmount-below: \d+ unmounted$/)
        assert.strictEqual(seen.lines.length, 1)
        assert.match(seen.lines[0] ?? "", /^\[[\d:.]+\] INFO \(#\d+\): .*unmount/)
        assert.strictEqual(seen.current, "")
      })
    ).pipe(
      Effect.provide(Layer.mergeAll(Progress.layerTerminal.pipe(Layer.provide(layer)), MemoryNode.layer({ files }))),
      Effect.provide(cliEnvironment)
    )
  })

  it.effect("layerInteractive draws only when Stdio says stdout and stderr are terminals", () =>
    Effect.gen(function* () {
      const cases: ReadonlyArray<readonly [boolean, boolean, boolean]> = [
        [true, true, true],
        [true, false, false],
        [false, true, false],
        [false, false, false]
      ]
      for (const [stdout, stderr, expected] of cases) {
        const stdio = Stdio.layerTest({
          stdoutIsTerminal: Effect.succeed(stdout),
          stderrIsTerminal: Effect.succeed(stderr)
        })
        const found = yield* Effect.serviceOption(Progress.Progress).pipe(
          Effect.provide(Progress.layerInteractive.pipe(Layer.provide(stdio)))
        )
        assert.strictEqual(found._tag === "Some", expected, `stdout ${stdout}, stderr ${stderr}`)
      }
    })
  )
})
