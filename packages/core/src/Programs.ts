/**
 * Programs over directory handles, written once and run by every layer: the
 * removal walk and the verification of a mount before it is detached. Each is
 * a generator that yields one handle operation at a time (`Op`) and is given
 * its outcome; a layer answers with its own driver, so a dry run and a real
 * run take the same decisions.
 *
 * Boundary: what to do next given what an operation said. It loads nothing but
 * `FileName` (no Effect), so a helper process that imports it stays small. It
 * is the `@hostnode/core/Programs` entry, for implementers of a `Directories`
 * layer; agents use the operations built on it.
 *
 * @since 0.4.0
 */

/**
 * Names as bytes and their lossless string form (the same module as `@hostnode/core`'s `FileName`), for drivers.
 *
 * @category models
 * @since 0.4.0
 */
export * as FileName from "./FileName.ts"

/**
 * The handle operations a program yields (`Op`), their outcomes, failures as
 * values (`Failure`, `failure`, `isFailure`, `reasonTagOf`), node identities
 * (`Identity`, `sameNode`), and `runSync`, which runs a program answering each
 * operation synchronously.
 *
 * @category models
 * @since 0.4.0
 */
export * from "./internal/programs/ops.ts"

/**
 * The removal walk (`removeTree`, its `RemoveInput`, `Limits` and
 * `RemoveResult` with what it `Kept` and where it `Hung`): one entry of an
 * open directory removed, a whole tree for a directory, never following a
 * link or entering another mount, with a bounded number of handles open.
 *
 * @category operations
 * @since 0.4.0
 */
export * from "./internal/programs/removeTree.ts"

/**
 * The verification of a mount before it is detached (`verifyMount`, its
 * `VerifyTarget` and `VerifyOutcome`): its path held below the root without
 * following a link, and the mount id reached compared with the table's.
 *
 * @category operations
 * @since 0.4.0
 */
export * from "./internal/programs/verifyMount.ts"
