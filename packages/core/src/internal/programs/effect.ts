/**
 * The Effect driver of programs: each operation a program yields is answered
 * with one `Directories` primitive, a failure turned into a value, each
 * handle the program opens held in a scope of its own so the program's
 * `close` releases it (what is still open when the program ends, or is
 * interrupted, is closed then).
 *
 * Internal: `Directory.make` derives `run`, `removeTree`, `identify` and
 * `openBeneath` with it, so every layer without a native runner (the
 * simulated host, the dry run) runs the very programs the real one runs.
 *
 * @since 0.4.0
 */
import { Effect, Exit, Scope } from "effect"
import type { Directories, Handle } from "../../Directory.ts"
import type { DirectoryError } from "../../DirectoryError.ts"
import { type Failure, failure, type Identity, type Op, type Program } from "./ops.ts"

/** What the driver needs of a service. */
export type DriverPrimitives = Pick<
  Directories,
  "identify" | "openDirectory" | "openParent" | "openBeneath" | "list" | "unlink" | "unlinkAll"
>

/** A `DirectoryError` as the value a program is given. */
export const toFailure = (e: DirectoryError): Failure => {
  const r = e.reason
  return failure(r._tag, r.detail, {
    errno: "errno" in r ? r.errno : undefined,
    ...(r._tag === "Hung" ? { call: r.call, seconds: r.seconds } : {})
  })
}

/** Runs `program` over `p` (see the module comment). */
export const run = <R>(p: DriverPrimitives, program: Program<Handle, R>): Effect.Effect<R> => {
  const scopes = new Map<Handle, Scope.Closeable>()
  const closeAll = Effect.suspend(() => {
    const all = [...scopes.values()]
    scopes.clear()
    return Effect.forEach(all, (s) => Scope.close(s, Exit.void), { discard: true })
  })
  const hold = <A extends { readonly handle: Handle }>(
    open: Effect.Effect<A, DirectoryError, Scope.Scope>
  ): Effect.Effect<A | Failure> =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const r = yield* Effect.result(Scope.provide(scope)(open))
      if (r._tag === "Failure") {
        yield* Scope.close(scope, Exit.void)
        return toFailure(r.failure)
      }
      scopes.set(r.success.handle, scope)
      return r.success
    })
  const withIdentity = (open: Effect.Effect<Handle, DirectoryError, Scope.Scope>) =>
    Effect.flatMap(open, (handle) => Effect.map(p.identify(handle), (identity: Identity) => ({ handle, identity })))
  const settle = <A>(e: Effect.Effect<A, DirectoryError>): Effect.Effect<A | Failure> =>
    Effect.catch(e, (err) => Effect.succeed(toFailure(err)))
  const exec = (op: Op<Handle>): Effect.Effect<unknown> => {
    switch (op._op) {
      case "identify":
        return settle(p.identify(op.dir, op.name))
      case "openDirectory":
        return hold(withIdentity(p.openDirectory(op.dir, op.name, { sameMount: op.sameMount })))
      case "openParent":
        return hold(withIdentity(p.openParent(op.dir)))
      case "openBeneath":
        return hold(p.openBeneath(op.root, op.components))
      case "readDirectory":
        // A listing here is one batch: the whole directory.
        return settle(Effect.map(p.list(op.dir), (entries) => ({ entries, end: true })))
      case "unlink":
        return settle(p.unlink(op.dir, op.name, { directory: op.directory }))
      case "unlinkAll":
        return Effect.map(p.unlinkAll(op.dir, op.names), (outcomes) =>
          outcomes.map((e) => (e === undefined ? undefined : toFailure(e)))
        )
      case "close":
        return Effect.suspend(() => {
          const scope = scopes.get(op.handle)
          if (scope === undefined) return Effect.void
          scopes.delete(op.handle)
          return Scope.close(scope, Exit.void)
        })
      case "removed":
        return Effect.logDebug(`removed ${op.path}`)
    }
  }
  return Effect.gen(function* () {
    let step = program.next()
    while (step.done !== true) {
      const reply: unknown = yield* exec(step.value)
      step = program.next(reply)
    }
    return step.value
  }).pipe(Effect.ensuring(closeAll))
}
