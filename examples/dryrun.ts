/**
 * Any program of the agent as a dry run: the same program on layers that
 * wrap the services in context (`DryRun.layer`), so its reads are real and
 * every write, removal, unmount, command and unit job it makes is recorded in
 * the plan instead of being done. What the program reads next sees what it
 * pretended to do (a removed directory is gone, a detached mount leaves the
 * table), so it takes the decisions a real run would. On the real host:
 * `dryRun(repave(node)).pipe(Effect.provide(NodeHost.layer))`.
 */
import { DryRun } from "@hostnode/sim"
import { Effect, type Layer } from "effect"

/** The services the dry run wraps (the program's), and those it reads through (the real ones in context). */
type Wrapped = Layer.Success<typeof DryRun.layer>
type Underneath = Exclude<Layer.Services<typeof DryRun.layer>, DryRun.DryRunPlan>

export const dryRun = <A, E, R>(
  program: Effect.Effect<A, E, R>
): Effect.Effect<{ readonly result: A; readonly plan: ReadonlyArray<string> }, E, Exclude<R, Wrapped> | Underneath> =>
  Effect.gen(function* () {
    // What the program would report, and, in order, what it would have changed.
    const result = yield* program.pipe(Effect.provide(DryRun.layer))
    const plan = yield* DryRun.steps
    return { result, plan: plan.map(DryRun.renderStep) }
  }).pipe(Effect.provide(DryRun.DryRunPlan.layer))
