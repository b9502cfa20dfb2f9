/**
 * The CLI's version on its own, for the executable's entry (which must not
 * load all of `Cli.ts`); documented where `Cli.ts` exports it.
 */

/**
 * The CLI's version, printed by `hostnode --version`: the version of the
 * `@hostnode/cli` package (a test keeps the two equal).
 */
export const version = "0.4.0"
