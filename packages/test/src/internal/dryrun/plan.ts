/**
 * The plan a dry run records: its steps, and the state the wrapping layers
 * share (the mounts detached, the mount points uncovered). Boundary: the
 * record only; what each service pretends is in the other parts.
 */
import { Context, Effect, Layer, Ref, Schema } from "effect"

/**
 * One recorded step: which service was asked, what for, on which target.
 *
 * @category models
 * @since 0.1.0
 */
export const PlanStep = Schema.Struct({
  service: Schema.Literals(["FileSystem", "Mounter", "ChildProcessSpawner", "Systemd"]),
  action: Schema.String,
  target: Schema.String
})

/**
 * The type of {@link PlanStep}.
 *
 * @category models
 * @since 0.1.0
 */
export type PlanStep = typeof PlanStep.Type

/**
 * The plan a dry run builds, shared by every wrapping layer so that the steps
 * of all services come out in the order they were asked for. It also holds
 * the mounts the dry run pretended to detach, which the file system layer
 * hides from the mount table.
 *
 * @category services
 * @since 0.1.0
 */
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

const key = Context.Service<DryRunPlan>("@hostnode/test/DryRun/DryRunPlan")

/**
 * The key of {@link DryRunPlan}, with `layer`: an empty plan.
 *
 * @category services
 * @since 0.1.0
 */
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

/**
 * The recorded steps so far, oldest first.
 *
 * @category operations
 * @since 0.1.0
 */
export const steps: Effect.Effect<ReadonlyArray<PlanStep>, never, DryRunPlan> = Effect.flatMap(
  Effect.service(DryRunPlan),
  (plan) => Ref.get(plan.steps)
)

/**
 * Renders one step for a person: `FileSystem remove /etc/cni/net.d/10-x.conf`.
 *
 * @category operations
 * @since 0.1.0
 */
export const renderStep = (step: PlanStep): string =>
  step.target === "" ? `${step.service} ${step.action}` : `${step.service} ${step.action} ${step.target}`
