/**
 * The CLI's version on its own, for the executable's entry (which must not
 * load all of `Cli.ts`); documented where `Cli.ts` exports it.
 */

/** Documented where `Cli.ts` exports it. */
export const version = "0.3.0"
