/**
 * Skipping named tests of a conformance suite for an implementation they
 * cannot apply to, each with its reason. Internal to the suites: a suite
 * takes `skip` in its options and registers its tests on the `it` this
 * returns. Boundary: it only decides skip or run; what a test checks is the
 * suite's.
 */
import { afterAll, type Vitest } from "@effect/vitest"

/**
 * `it` whose `effect` skips the tests titled in `skip` (the reason is added
 * to the skipped test's name). A title in `skip` that no test of the suite
 * has fails the suite when it ends, so a renamed test is never skipped
 * silently.
 */
export const skipping = <R>(
  it: Vitest.MethodsNonLive<R>,
  skip: Readonly<Record<string, string>> | undefined
): Vitest.MethodsNonLive<R> => {
  if (skip === undefined || Object.keys(skip).length === 0) return it
  const unseen = new Set(Object.keys(skip))
  afterAll(() => {
    if (unseen.size > 0) throw new Error(`skip names tests the suite does not have: ${[...unseen].join("; ")}`)
  })
  const effect: Vitest.MethodsNonLive<R>["effect"] = Object.assign(
    (...args: Parameters<Vitest.MethodsNonLive<R>["effect"]>) => {
      const [title, ...rest] = args
      const why = skip[title]
      if (why === undefined) return it.effect(title, ...rest)
      unseen.delete(title)
      return it.effect.skip(`${title} (does not apply: ${why})`, ...rest)
    },
    it.effect
  )
  // `it` is itself a function with methods: a proxy keeps all of it but `effect`.
  return new Proxy(it, { get: (target, key) => (key === "effect" ? effect : Reflect.get(target, key)) })
}
