/**
 * A test's host root, decoded: every operation takes a `HostPath.HostRoot`,
 * never a string. A test's root is a tree it made itself, so a failure to
 * decode it is a defect of the test (a die), not an outcome it asserts.
 */
import { HostPath } from "@hostnode/core"
import { Effect } from "effect"

/** Decodes `path` as a host root (`HostPath.decodeRoot`); a failure is a defect. */
export const rootAt = (path: string) => HostPath.decodeRoot(path).pipe(Effect.orDie)
