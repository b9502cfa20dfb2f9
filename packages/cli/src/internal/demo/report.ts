/**
 * The demo's report: its claims, steps and the error a run fails with.
 * Boundary: data only; the claims are made in `claims.ts`, the steps in
 * `steps.ts`.
 */
import { Schema } from "effect"

/** Documented where `Demo.ts` exports it. */
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

/** Documented where `Demo.ts` exports it. */
export type StepId = "prepare" | "upgrade-rollback" | "upgrade" | "repave"

/** Documented where `Demo.ts` exports it. */
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

/** Documented where `Demo.ts` exports it. */
export interface DemoReport {
  readonly ok: boolean
  readonly steps: ReadonlyArray<Step>
  readonly claims: ReadonlyArray<Claim>
  /** The whole run on the Effect `Clock`, in milliseconds. */
  readonly durationMs: number
}

/** Documented where `Demo.ts` exports it. */
export class OperationFailed extends Schema.TaggedError<OperationFailed>()("OperationFailed", {
  /** What the operation failed with. */
  detail: Schema.String
}) {
  override get message(): string {
    return `an operation failed: ${this.detail}`
  }
}

/** Documented where `Demo.ts` exports it. */
export class UnexpectedOutcome extends Schema.TaggedError<UnexpectedOutcome>()("UnexpectedOutcome", {
  /** What happened instead of what the step expected. */
  detail: Schema.String
}) {
  override get message(): string {
    return `unexpected outcome: ${this.detail}`
  }
}

/** Documented where `Demo.ts` exports it. */
export const DemoErrorReason = Schema.Union([OperationFailed, UnexpectedOutcome])

/** Documented where `Demo.ts` exports it. */
export type DemoErrorReason = typeof DemoErrorReason.Type

/** Documented where `Demo.ts` exports it. */
export class DemoError extends Schema.TaggedError<DemoError>()("DemoError", {
  step: Schema.String,
  reason: DemoErrorReason
}) {
  override get message(): string {
    return `demo step ${JSON.stringify(this.step)}: ${this.reason.message}`
  }
}
