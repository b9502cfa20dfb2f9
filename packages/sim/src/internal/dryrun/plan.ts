/**
 * The plan a dry run records: its steps, and the state the wrapping layers
 * share (the mounts detached, the mount points uncovered). Boundary: the
 * record only; what each service pretends is in the other parts.
 */
import { Context, Effect, Layer, Ref, Schema } from "effect"

/** Documented where `DryRun.ts` exports it. */
export const PlanStep = Schema.Struct({
  service: Schema.Literals(["FileSystem", "Mounter", "ChildProcessSpawner", "Systemd"]),
  action: Schema.String,
  target: Schema.String
})

/** Documented where `DryRun.ts` exports it. */
export type PlanStep = typeof PlanStep.Type

/** Documented where `DryRun.ts` exports it. */
export interface DryRunPlan {
  readonly steps: Ref.Ref<ReadonlyArray<PlanStep>>
  readonly record: (step: PlanStep) => Effect.Effect<void>
  /** Mount ids detached so far (a lazy unmount takes the mounts below with it). */
  readonly detached: Set<number>
  /**
   * What each detached mount was (its device and root, `major:minor root`):
   * the kernel gives a freed id to the next mount, so a mount made later
   * with the same id is another one, and is not hidden.
   */
  readonly detachedAs?: Map<number, string> | undefined
  /**
   * Mount points a detach uncovered, with the device of the directory that
   * now shows there: the directory of the file system underneath, which the
   * dry run presents as empty (kubelet's mount points are).
   */
  readonly uncovered: Map<string, bigint>
  /** Which of the uncovered mount points are files (a bind of a file detached shows the file beneath, empty here). */
  readonly uncoveredFiles: Set<string>
}

const key = Context.Service<DryRunPlan>("@hostnode/sim/DryRun/DryRunPlan")

/** Documented where `DryRun.ts` exports it. */
export const DryRunPlan: Context.Service<DryRunPlan, DryRunPlan> & {
  /** An empty plan. */
  readonly layer: Layer.Layer<DryRunPlan>
} = Object.assign(key, {
  layer: Layer.effect(
    key,
    Effect.gen(function* () {
      const steps = yield* Ref.make<ReadonlyArray<PlanStep>>([])
      return key.of({
        steps,
        record: (step) => Ref.update(steps, (s) => [...s, step]),
        detached: new Set(),
        detachedAs: new Map(),
        uncovered: new Map(),
        uncoveredFiles: new Set()
      })
    })
  )
})

/** Documented where `DryRun.ts` exports it. */
export const steps: Effect.Effect<ReadonlyArray<PlanStep>, never, DryRunPlan> = Effect.flatMap(
  Effect.service(DryRunPlan),
  (plan) => Ref.get(plan.steps)
)

/** Documented where `DryRun.ts` exports it. */
export const renderStep = (step: PlanStep): string =>
  step.target === "" ? `${step.service} ${step.action}` : `${step.service} ${step.action} ${step.target}`
