/**
 * @hostnode/test: the simulated host behind @hostnode/core's services, with
 * inspection, fault injection, fixtures and the conformance suites that the real
 * and in-memory layers both pass.
 *
 * @since 0.1.0
 */

/** Gates for real-host tests: skip with a reason, or fail under CI=true. */
export * as Gate from "./Gate.ts"
