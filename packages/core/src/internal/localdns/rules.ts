/**
 * Our iptables rules: what they are (one NOTRACK rule per chain, listener
 * address and protocol, carrying our comment), how `iptables -S` prints and
 * how its lines parse back into argv words, and the steps that list, add and
 * delete them. A rule is ours only with our comment: rules of anyone else are
 * never touched.
 *
 * @since 0.3.0
 */
import { Effect } from "effect"
import { Chains, Protocols } from "./chains.ts"
import { badRule, expect, iptables } from "./commands.ts"
import { parseRuleLine, RuleComment } from "./words.ts"

/**
 * Our rules for `addresses`: per chain, per address, per protocol,
 * `-d <addr>/32 -p <proto> -m <proto> --dport 53 -m comment --comment
 * hostnode:localdns -j NOTRACK`. The spec is written exactly as `iptables -S`
 * prints it back (with the implicit `-m <proto>`), so `-C`, `-D` and the
 * listing all speak of the same rule.
 */
export const rules = (
  addresses: ReadonlyArray<string>
): ReadonlyArray<{
  /** `OUTPUT` (locally generated traffic) or `PREROUTING` (traffic arriving from pods). */
  readonly chain: (typeof Chains)[number]
  /** The rule's spec, in the canonical form `iptables -S` prints it. */
  readonly spec: ReadonlyArray<string>
}> =>
  Chains.flatMap((chain) =>
    addresses.flatMap((address) =>
      Protocols.map((proto) => ({
        chain,
        spec: [
          "-d",
          `${address}/32`,
          "-p",
          proto,
          "-m",
          proto,
          "--dport",
          "53",
          "-m",
          "comment",
          "--comment",
          RuleComment,
          "-j",
          "NOTRACK"
        ]
      }))
    )
  )

/** One iptables rule of ours: its chain and its spec. */
export type Rule = ReturnType<typeof rules>[number]

// xtables_save_string: a value made only of these is printed bare, anything
// else in double quotes with `"`, `\` and `'` escaped by a backslash.
const bareSaveValue = /^[-_0-9A-Za-z]+$/

/** A rule as `iptables -t raw -S` prints it. */
export const renderRule = (rule: Rule): string =>
  [
    "-A",
    rule.chain,
    ...rule.spec.map((token, i) =>
      rule.spec[i - 1] === "--comment" && !bareSaveValue.test(token) ? `"${token.replace(/["\\']/g, "\\$&")}"` : token
    )
  ].join(" ")

/** True when the words of a listed rule (`-A CHAIN ...`) are a rule of ours: one of our chains and our comment. */
export const isOurRule = (words: ReadonlyArray<string>): boolean => {
  if (words[0] !== "-A" || !(Chains as ReadonlyArray<string | undefined>).includes(words[1])) return false
  for (let i = 2; i < words.length - 1; i++) {
    if (words[i] === "--comment" && words[i + 1] === RuleComment) return true
  }
  return false
}

/** The rules of the `raw` table as `iptables -t raw -S` lists them, one argv array per `-A` line. */
export const listRules = Effect.gen(function* () {
  const out = yield* expect("list the raw table", "iptables", iptables(["-S"]))
  return out.stdout
    .split("\n")
    .filter((line) => line.startsWith("-A "))
    .map(parseRuleLine)
}).pipe(Effect.withSpan("LocalDns.listRules"))

const ruleKey = (words: ReadonlyArray<string>): string => JSON.stringify(words)

/** Deletes the listed rule `words` (`-A CHAIN ...`) by its spec; a rule already gone is success. */
export const deleteRule = (words: ReadonlyArray<string>, step: string) =>
  expect(step, "iptables", iptables(["-D", ...words.slice(1)]), badRule)

/**
 * Makes the table hold exactly our rules for `addresses`: each one checked
 * with `-C` and added with `-A` when missing (recorded in `created.rules`),
 * then every other rule of ours (a listener that changed, a duplicate)
 * deleted.
 */
export const ensureRules = Effect.fnUntraced(function* (
  addresses: ReadonlyArray<string>,
  created: { readonly rules: Array<Rule> }
) {
  const wanted = rules(addresses)
  for (const rule of wanted) {
    const check = yield* expect("check a rule", "iptables", iptables(["-C", rule.chain, ...rule.spec]), badRule)
    if (check.exitCode === 0) continue
    yield* expect("add a rule", "iptables", iptables(["-A", rule.chain, ...rule.spec]))
    created.rules.push(rule)
    yield* Effect.logInfo("added a LocalDNS NOTRACK rule").pipe(
      Effect.annotateLogs({ chain: rule.chain, rule: rule.spec.join(" ") })
    )
  }
  // Ours but not wanted (a listener that changed) or listed twice: gone, so
  // the table holds exactly our rules. Only after the wanted ones are in
  // place, so the listeners are never without NOTRACK.
  const wantedKeys = new Set(wanted.map((r) => ruleKey(["-A", r.chain, ...r.spec])))
  const seen = new Set<string>()
  for (const words of yield* listRules) {
    if (!isOurRule(words)) continue
    const key = ruleKey(words)
    if (wantedKeys.has(key) && !seen.has(key)) {
      seen.add(key)
      continue
    }
    yield* deleteRule(words, "remove a stale rule of ours")
    yield* Effect.logInfo("removed a stale LocalDNS rule").pipe(Effect.annotateLogs({ rule: words.join(" ") }))
  }
})

export { parseRuleLine }
