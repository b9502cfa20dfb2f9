/**
 * Content hashes for snapshots: SHA-256, computed incrementally, so a file's
 * bytes are hashed as they stream by in bounded chunks instead of being held
 * whole (effect's `Digest` takes one buffer).
 *
 * `Hashing` is a reference with a default: the portable implementation in
 * plain TypeScript, which every runtime can run and the in-memory host uses.
 * `NodeHashing.layer` in @hostnode/node (part of `NodeHost.layer`) provides
 * the platform's, which uses the CPU's SHA instructions.
 *
 * Boundary: the hash only. What is hashed, and what a mismatch means, is for
 * `Snapshot`.
 *
 * @since 0.2.0
 */
import { Context } from "effect"
import * as Sha256 from "./internal/sha256.ts"

/**
 * Makes hashers, one per file hashed, each used from one fiber: an
 * incremental hash, given each chunk in order (`update`), then asked for its
 * `digestHex` once.
 *
 * @since 0.2.0
 * @category services
 */
export interface Hashing {
  readonly sha256: () => {
    readonly update: (bytes: Uint8Array) => void
    /** The hash of every chunk given, as lowercase hex; the hasher is spent after it. */
    readonly digestHex: () => string
  }
}

// SHA-256 in plain TypeScript: the default where no platform hash is provided.
const portable: Hashing = { sha256: Sha256.make }

/**
 * The key of the {@link Hashing} service; the portable one (plain TypeScript) unless a layer provides another.
 *
 * @since 0.2.0
 * @category services
 */
export const Hashing = Context.Reference<Hashing>("@hostnode/core/Hashing", { defaultValue: () => portable })
