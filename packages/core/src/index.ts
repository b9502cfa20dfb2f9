/**
 * @hostnode/core: every host-side operation of a node agent as an Effect, the
 * services they need as interfaces and keys, Schema models and typed errors.
 * No `node:*` imports: the real host lives in @hostnode/node, the simulated one
 * in @hostnode/test.
 *
 * @since 0.1.0
 */

/** Well-known host paths and `orDefault`. */
export * as Paths from "./Paths.ts"
