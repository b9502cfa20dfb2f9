/**
 * `hostnode demo`: a guided run of the library's main operations on a
 * simulated Kubernetes node, for a person meeting hostnode for the first time.
 * It seeds a realistic node, then runs an upgrade that fails and is rolled
 * back by `Snapshot.scoped`, the same upgrade succeeding, and a repave; every
 * step is timed on the Effect `Clock`, and the run ends with claims, each
 * checked against the simulated host's state.
 *
 * Boundary: {@link run} provides its own `MemoryNode.layer`, so whatever the
 * caller's context holds, the demo never reads or changes this machine. It
 * prints nothing: {@link renderText} is the report for a person.
 *
 * @since 0.1.0
 */
import type { Effect } from "effect"
import type { DemoError } from "./DemoError.ts"
import { runWith } from "./internal/demo/steps.ts"
import { plural } from "./internal/text.ts"

/**
 * `DemoError`, how {@link run} fails, and `StepFailed`, its reason (the `DemoError` module).
 *
 * @category errors
 * @since 0.4.0
 */
export * from "./DemoError.ts"

/** The steps of the demo, in order. */
type StepId = "prepare" | "upgrade-rollback" | "upgrade" | "repave"

/**
 * One claim of the verification summary: what is asserted, whether the
 * simulated host bears it out, and the evidence.
 *
 * @category models
 * @since 0.1.0
 */
export interface Claim {
  /** A stable name, for machines and tests (`restored-byte-for-byte`, `pods-gone`, ...). */
  readonly id: string
  /** The step whose outcome it is about. */
  readonly step: StepId
  /** What is claimed, in a sentence. */
  readonly statement: string
  /** Whether the observed state bears it out. */
  readonly ok: boolean
  /** What was observed, so a failure says what went wrong. */
  readonly evidence: string
}

/**
 * One step as it ran: what it did, for a person (`lines`) and for a machine
 * (`details`), and how long it took.
 *
 * @category models
 * @since 0.1.0
 */
export interface Step {
  readonly id: StepId
  readonly title: string
  /** Wall time on the Effect `Clock`, in milliseconds. */
  readonly durationMs: number
  /** What happened, one sentence a line. */
  readonly lines: ReadonlyArray<string>
  /** The same, structured. */
  readonly details: Readonly<Record<string, unknown>>
}

/**
 * What {@link run} returns: the steps, the claims, and `ok` when every claim holds.
 *
 * @category models
 * @since 0.1.0
 */
export interface DemoReport {
  readonly ok: boolean
  readonly steps: ReadonlyArray<Step>
  readonly claims: ReadonlyArray<Claim>
  /** The whole run on the Effect `Clock`, in milliseconds. */
  readonly durationMs: number
}

/**
 * The demo: seeds a fresh simulated node (its own `MemoryNode.layer`, never
 * the host in context), runs the three scenarios and checks every claim
 * against the simulated host. A claim that does not hold makes `ok` false;
 * an operation that fails unexpectedly is a {@link DemoError}.
 *
 * @example
 * import { Demo } from "@hostnode/cli"
 * import { Console, Effect } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const report = yield* Demo.run
 *   yield* Console.log(Demo.renderText(report))
 *   return report.ok
 * })
 *
 * @category operations
 * @since 0.1.0
 */
export const run: Effect.Effect<DemoReport, DemoError> = runWith()

const ms = (n: number) => `${n.toFixed(1)} ms`

/** `text` broken at spaces into lines of at most `width` (a longer word stays whole), continuation lines indented by `indent`. */
const wrap = (text: string, width: number, indent: string): ReadonlyArray<string> => {
  const lead = /^ */.exec(text)?.[0] ?? ""
  const out: Array<string> = []
  let line = lead
  for (const word of text.slice(lead.length).split(" ")) {
    if (line.trim() !== "" && line.length + 1 + word.length > width) {
      out.push(line)
      line = `${lead}${indent}${word}`
    } else {
      line = line.trim() === "" ? `${line}${word}` : `${line} ${word}`
    }
  }
  out.push(line)
  return out
}

/**
 * The report for a person: each step with its duration and what it did, then every claim with PASS or FAIL.
 *
 * @example
 * ```ts
 * import { Demo } from "@hostnode/cli"
 * import { Console, Effect } from "effect"
 *
 * // In CI: the JSON report for the artifacts, the text for a person only when a claim fails.
 * const check = Effect.gen(function* () {
 *   const report = yield* Demo.run
 *   yield* Console.log(JSON.stringify(report))
 *   if (!report.ok) yield* Console.error(Demo.renderText(report))
 *   return report.ok
 * })
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const renderText = (report: DemoReport): string => {
  const width = 110
  const out: Array<string> = [
    "hostnode demo: the library's operations on a simulated Kubernetes node",
    "Everything runs on an in-memory node (MemoryNode from @hostnode/sim: files, mounts, systemd, network);",
    "nothing on this machine is read or changed.",
    ""
  ]
  report.steps.forEach((step, i) => {
    const head = `${i}. ${step.title}`
    out.push(
      `${head} ${".".repeat(Math.max(2, width - head.length - ms(step.durationMs).length - 2))} ${ms(step.durationMs)}`
    )
    for (const line of step.lines) out.push(...wrap(`   ${line}`, width, "  "))
    out.push("")
  })
  out.push(`Verification: ${plural(report.claims.length, "claim")}, each checked against the simulated host's state`)
  report.steps.forEach((step, i) => {
    const claims = report.claims.filter((c) => c.step === step.id)
    if (claims.length === 0) return
    out.push(`  after step ${i}:`)
    for (const c of claims) {
      out.push(...wrap(`    ${c.ok ? "PASS" : "FAIL"}  ${c.statement}`, width, "      "))
      out.push(...wrap(`          ${c.evidence}`, width, "  "))
    }
  })
  const passed = report.claims.filter((c) => c.ok).length
  out.push("")
  out.push(
    report.ok
      ? `All ${report.claims.length} claims hold. Total ${ms(report.durationMs)}.`
      : `${report.claims.length - passed} of ${report.claims.length} claims FAILED. Total ${ms(report.durationMs)}.`
  )
  return out.join("\n")
}
