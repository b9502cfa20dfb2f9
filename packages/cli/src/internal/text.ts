/**
 * Small pieces of the CLI's English, shared by the command's output and the
 * demo's report.
 */

/** `1 path`, `3 paths`; `pluralForm` for the words that do not just take an `s` (`directories`). */
export const plural = (n: number, what: string, pluralForm = `${what}s`): string =>
  `${n} ${n === 1 ? what : pluralForm}`
