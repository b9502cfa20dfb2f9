/**
 * `Hashing` on Node's `crypto`: OpenSSL's SHA-256, which uses the CPU's SHA
 * instructions where it has them (several times the portable
 * implementation's speed, which a take and a restore of hundreds of
 * megabytes feel).
 *
 * Boundary: the binding only; `Hashing` in @hostnode/core is the contract.
 *
 * @since 0.2.0
 */
import { createHash } from "node:crypto"
import { Hashing } from "@hostnode/core"
import { Layer } from "effect"

const hashing: Hashing.Hashing = {
  sha256: () => {
    const h = createHash("sha256")
    return {
      update: (bytes) => {
        h.update(bytes)
      },
      digestHex: () => h.digest("hex")
    }
  }
}

/**
 * SHA-256 hashers from `node:crypto`, as `Hashing.Hashing`.
 *
 * @category layers
 * @since 0.2.0
 */
export const layer = Layer.succeed(Hashing.Hashing, hashing)
