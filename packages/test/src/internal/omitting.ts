/**
 * Leaving out named tests of a conformance suite for an implementation they
 * cannot apply to, each with its reason. Internal to the suites: a suite
 * takes `omit` in its options and registers its tests on the `it` this
 * returns. An omitted test is not registered at all (not registered as
 * skipped: under `CI=true` a skipped test means a capability was missing,
 * and these are not missing, they do not apply). Boundary: it only decides
 * register or not; what a test checks is the suite's.
 */
import { afterAll, type Vitest } from "@effect/vitest"

/**
 * `it` whose `effect` leaves out the tests titled in `omit` (each with the
 * reason it does not apply). A title in `omit` that no test of the suite has
 * fails the suite when it ends, so a renamed test is never left out silently,
 * and an empty reason fails at once.
 */
export const omitting = <R>(
  it: Vitest.MethodsNonLive<R>,
  omit: Readonly<Record<string, string>> | undefined
): Vitest.MethodsNonLive<R> => {
  if (omit === undefined || Object.keys(omit).length === 0) return it
  for (const [title, why] of Object.entries(omit)) {
    if (why.trim() === "") throw new Error(`omit gives no reason for ${JSON.stringify(title)}`)
  }
  const unseen = new Set(Object.keys(omit))
  afterAll(() => {
    if (unseen.size > 0) throw new Error(`omit names tests the suite does not have: ${[...unseen].join("; ")}`)
  })
  const effect: Vitest.MethodsNonLive<R>["effect"] = Object.assign(
    (...args: Parameters<Vitest.MethodsNonLive<R>["effect"]>) => {
      const [title, ...rest] = args
      if (omit[title] === undefined) return it.effect(title, ...rest)
      unseen.delete(title)
    },
    it.effect
  )
  // `it` is itself a function with methods: a proxy keeps all of it but `effect`.
  return new Proxy(it, { get: (target, key) => (key === "effect" ? effect : Reflect.get(target, key)) })
}
