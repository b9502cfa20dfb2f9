/**
 * The argv words of one line of `iptables -S`, with the double-quoted values
 * iptables prints read back, and the comment that marks our rules: Effect-free,
 * so the implementers' entry (`Programs`) can export them to the simulated and
 * dry-run iptables and the fixtures.
 *
 * @since 0.4.0
 */

/**
 * The comment every rule of ours carries (`-m comment --comment ...`). It is
 * what makes a rule ours: cleanup deletes exactly the rules with it.
 */
export const RuleComment = "hostnode:localdns"

/**
 * The argv words of one line of `iptables -S`: split on spaces, with the
 * double-quoted values iptables prints (comments) unquoted and unescaped, so
 * the words can be given back to `iptables -D` as they are.
 */
export const parseRuleLine = (line: string): ReadonlyArray<string> => {
  const words: Array<string> = []
  let current = ""
  let inWord = false
  let quoted = false
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string
    if (quoted) {
      if (c === "\\" && i + 1 < line.length) current += line[++i]
      else if (c === '"') quoted = false
      else current += c
    } else if (c === '"') {
      quoted = true
      inWord = true
    } else if (c === " " || c === "\t") {
      if (inWord) words.push(current)
      current = ""
      inWord = false
    } else {
      current += c
      inWord = true
    }
  }
  if (inWord) words.push(current)
  return words
}
