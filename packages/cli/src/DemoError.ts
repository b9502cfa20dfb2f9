/**
 * How `Demo.run` fails: a step ended in a way the demo does not expect, so
 * there is no report. Boundary: the error only, kept apart from `Demo.ts` so
 * that the steps, which fail with it, need not import the demo's entry.
 *
 * @since 0.4.0
 */
import { Schema } from "effect"

/**
 * Why a step stopped the demo, by `_tag`: `OperationFailed`, an operation of
 * the step failed (the seeding, the successful upgrade or the repave returned
 * an error); `UnexpectedOutcome`, the step ended otherwise than the demo
 * arranged (the upgrade made to fail succeeded). `detail` says what happened.
 *
 * @category errors
 * @since 0.4.0
 */
export class StepFailed extends Schema.Error<StepFailed>("@hostnode/cli/Demo/StepFailed")({
  _tag: Schema.Literals(["OperationFailed", "UnexpectedOutcome"]),
  detail: Schema.String
}) {
  /**
   * What failed, or what happened instead.
   *
   * @since 0.4.0
   */
  override get message(): string {
    return `${this._tag === "OperationFailed" ? "an operation failed" : "unexpected outcome"}: ${this.detail}`
  }
}

/**
 * A step failed in a way the demo does not expect (the seeding, the
 * successful upgrade or the repave returned an error, or the upgrade made to
 * fail succeeded): the demo cannot go on, so there is no report. Names the
 * step and, in `reason`, what failed.
 *
 * @category errors
 * @since 0.1.0
 */
export class DemoError extends Schema.TaggedError<DemoError>()("DemoError", {
  step: Schema.String,
  reason: StepFailed
}) {
  /**
   * The step, and what failed in it.
   *
   * @since 0.1.0
   */
  override get message(): string {
    return `demo step ${JSON.stringify(this.step)}: ${this.reason.message}`
  }
}
