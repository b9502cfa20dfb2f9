/** The single state object of a simulated host, shared by every simulation built on it. */
import type { Deferred } from "effect"
import type { ErrnoCode } from "./errno.ts"
import type { Journal } from "./journal.ts"
import type { Filesystem, FsState } from "./memoryFileSystem/model.ts"

/**
 * The state of one simulated host. Every simulation (files, mounts, units,
 * links) keeps its state here so inspection, faults and crashes see one
 * consistent host.
 */
export interface HostState {
  readonly fs: FsState
  readonly journal: Journal
  /** Targets (absolute, normalised) every unmount refuses with the errno, until cleared; see `failUnmount`. */
  readonly unmountFaults: Map<string, ErrnoCode>
  /** File systems that do not answer, each with what its waiters wait for; see `hang`. */
  readonly hangs: Map<Filesystem, Deferred.Deferred<void>>
}
