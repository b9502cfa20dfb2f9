/**
 * The `iptables` interpreter: tables, built-in and user chains, and rules
 * kept in the canonical form iptables 1.8.9 (nf_tables) saves them in, so
 * `-C` and `-D` match exactly what the real tool matches and `-S` prints
 * the same lines in the same order and quoting, errors and exit codes
 * included. Matches: tcp, udp (`--sport`, `--dport`) and comment.
 *
 * Internal to `MemoryNetwork`.
 *
 * @since 0.3.0
 */
import * as Programs from "@hostnode/core/Programs"
import { Effect } from "effect"
import * as MemoryCommands from "../memoryCommands.ts"
import { formatIpv4, network, parseCidr } from "./addresses.ts"
import type { Chain, Rule, State } from "./state.ts"

type Outcome = MemoryCommands.Result

const ok = MemoryCommands.ok
const fail = MemoryCommands.fail

const IPT = "iptables v1.8.9 (nf_tables)"

const usageError = (message: string): Outcome =>
  fail(2, `${IPT}: ${message}\nTry \`iptables -h' or 'iptables --help' for more information.`)

const standardTargets = ["ACCEPT", "DROP", "RETURN", "QUEUE"]
const extensionTargets = [
  "NOTRACK",
  "CT",
  "LOG",
  "REJECT",
  "MASQUERADE",
  "SNAT",
  "DNAT",
  "REDIRECT",
  "MARK",
  "CONNMARK",
  "TPROXY"
]
const protocolNames: Record<string, string> = { "1": "icmp", "6": "tcp", "17": "udp" }

const noQuoteChars = /^[-_0-9A-Za-z]+$/

/** xtables_save_string: bare when only `[-_0-9A-Za-z]`, else double-quoted with `"`, `\` and `'` escaped. */
export const saveString = (value: string): string =>
  noQuoteChars.test(value) ? value : `"${value.replace(/["\\']/g, "\\$&")}"`

/** The argv words of one line of `iptables -S`: the reading LocalDNS itself does (`Programs.iptablesWords`). */
export const saveWords: (line: string) => ReadonlyArray<string> = Programs.iptablesWords

interface MatchSpec {
  readonly name: string
  readonly options: Array<{ readonly negate: boolean; readonly option: string; readonly value: string }>
}

/**
 * Parses the rule-spec words of `-A/-C/-D/-I` into iptables' canonical form,
 * or the usage error iptables prints.
 */
const canonicalRule = (
  words: ReadonlyArray<string>,
  tableChains: ReadonlyArray<Chain>
): { readonly words: ReadonlyArray<string> } | { readonly error: Outcome } => {
  const singles: Record<string, { negate: boolean; value: string } | undefined> = {}
  const matchList: Array<MatchSpec> = []
  let target: { name: string; options: Array<string> } | undefined
  let negate = false
  let proto: string | undefined
  const needValue = (i: number, option: string): string | Outcome => {
    const v = words[i + 1]
    return v === undefined ? usageError(`option "${option}" requires an argument`) : v
  }
  for (let i = 0; i < words.length; i++) {
    const w = words[i] as string
    if (target !== undefined && w.startsWith("--")) {
      target.options.push(w)
      const next = words[i + 1]
      if (next !== undefined && !next.startsWith("-") && w !== "--notrack") target.options.push(words[++i] as string)
      continue
    }
    if (w === "!") {
      negate = true
      continue
    }
    const single: Record<string, string> = {
      "-s": "-s",
      "--source": "-s",
      "--src": "-s",
      "-d": "-d",
      "--destination": "-d",
      "--dst": "-d",
      "-p": "-p",
      "--protocol": "-p",
      "-i": "-i",
      "--in-interface": "-i",
      "-o": "-o",
      "--out-interface": "-o"
    }
    const key = single[w]
    if (key !== undefined) {
      const v = needValue(i, w)
      if (typeof v !== "string") return { error: v }
      i++
      let value = v
      if (key === "-s" || key === "-d") {
        const cidr = parseCidr(v)
        if (cidr === undefined) return { error: usageError(`host/network \`${v.split("/")[0]}' not found`) }
        value = `${formatIpv4(network(cidr.address, cidr.prefix))}/${cidr.prefix}`
      } else if (key === "-p") {
        const p = v.toLowerCase()
        const name = protocolNames[p] ?? p
        if (!["tcp", "udp", "icmp", "all", "sctp", "udplite", "esp", "ah", "gre"].includes(name)) {
          return { error: usageError(`unknown protocol "${v}" specified`) }
        }
        proto = name
        value = name
      }
      singles[key] = { negate, value }
      negate = false
      continue
    }
    if (w === "-m" || w === "--match") {
      const v = needValue(i, w)
      if (typeof v !== "string") return { error: v }
      i++
      if (!["tcp", "udp", "comment"].includes(v)) {
        return {
          error: fail(
            2,
            `${IPT}: Couldn't load match \`${v}':No such file or directory\n\nTry \`iptables -h' or 'iptables --help' for more information.`
          )
        }
      }
      matchList.push({ name: v, options: [] })
      continue
    }
    if (w === "-j" || w === "--jump") {
      const v = needValue(i, w)
      if (typeof v !== "string") return { error: v }
      i++
      const isChain = tableChains.some((c) => c.name === v && c.policy === undefined)
      if (!standardTargets.includes(v) && !extensionTargets.includes(v) && !isChain) {
        return { error: usageError(`Chain '${v}' does not exist`) }
      }
      target = { name: v, options: [] }
      continue
    }
    const portOption = {
      "--dport": "--dport",
      "--destination-port": "--dport",
      "--sport": "--sport",
      "--source-port": "--sport"
    }[w]
    if (portOption !== undefined) {
      let match = [...matchList].reverse().find((m) => m.name === "tcp" || m.name === "udp")
      if (match === undefined || matchList[matchList.length - 1] !== match) {
        // The implicit `-m <proto>` loads where its first option appears.
        if (proto !== "tcp" && proto !== "udp") return { error: usageError(`unknown option "${w}"`) }
        if (match === undefined) {
          match = { name: proto, options: [] }
          matchList.push(match)
        }
      }
      const v = needValue(i, w)
      if (typeof v !== "string") return { error: v }
      i++
      if (!/^\d{1,5}(:\d{1,5})?$/.test(v)) return { error: usageError(`invalid port/service \`${v}' specified`) }
      match.options.push({ negate, option: portOption, value: v })
      negate = false
      continue
    }
    if (w === "--comment") {
      const last = matchList[matchList.length - 1]
      if (last?.name !== "comment") return { error: usageError(`unknown option "${w}"`) }
      const v = needValue(i, w)
      if (typeof v !== "string") return { error: v }
      i++
      if (v.length > 255) return { error: usageError("COMMENT must be shorter than 256 characters") }
      last.options.push({ negate: false, option: "--comment", value: v })
      continue
    }
    return { error: usageError(`unknown option "${w}"`) }
  }
  const out: Array<string> = []
  for (const key of ["-s", "-d", "-i", "-o", "-p"]) {
    const s = singles[key]
    if (s === undefined) continue
    if ((key === "-s" || key === "-d") && s.value === "0.0.0.0/0" && !s.negate) continue
    if (key === "-p" && s.value === "all" && !s.negate) continue
    out.push(...(s.negate ? ["!"] : []), key, s.value)
  }
  for (const m of matchList) {
    out.push("-m", m.name)
    // libxt_tcp/udp save --sport before --dport, whatever the order given.
    const ordered =
      m.name === "comment"
        ? m.options
        : [...m.options.filter((o) => o.option === "--sport"), ...m.options.filter((o) => o.option === "--dport")]
    for (const o of ordered) out.push(...(o.negate ? ["!"] : []), o.option, o.value)
  }
  if (target !== undefined) out.push("-j", target.name, ...target.options)
  return { words: out }
}

/** A rule's words as `-S` prints them (comments quoted by {@link saveString}). */
const renderWords = (words: ReadonlyArray<string>): string =>
  words.map((w, i) => (words[i - 1] === "--comment" ? saveString(w) : w)).join(" ")

export const ruleLine = (chain: string, rule: Rule): string =>
  rule.words.length === 0 ? `-A ${chain}` : `-A ${chain} ${renderWords(rule.words)}`

const sameRule = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) =>
  a.length === b.length && a.every((w, i) => w === b[i])

const listRules = (chains: ReadonlyArray<Chain>): string => {
  let out = ""
  for (const c of chains) out += c.policy === undefined ? `-N ${c.name}\n` : `-P ${c.name} ${c.policy}\n`
  for (const c of chains) for (const r of c.rules) out += `${ruleLine(c.name, r)}\n`
  return out
}

/** The chains of `table` in `-S` order: built-in chains first, then user chains. */
export const chainOrder = (chains: ReadonlyArray<Chain>) => [
  ...chains.filter((c) => c.policy !== undefined),
  ...chains.filter((c) => c.policy === undefined)
]

export const iptablesInterpreter =
  (state: State): MemoryCommands.Interpreter =>
  (args) =>
    Effect.sync(() => {
      let table = "filter"
      let command: string | undefined
      let chain: string | undefined
      const rest: Array<string> = []
      const commands: Record<string, string> = {
        "-S": "-S",
        "--list-rules": "-S",
        "-A": "-A",
        "--append": "-A",
        "-C": "-C",
        "--check": "-C",
        "-D": "-D",
        "--delete": "-D",
        "-I": "-I",
        "--insert": "-I",
        "-F": "-F",
        "--flush": "-F",
        "-N": "-N",
        "--new-chain": "-N",
        "-X": "-X",
        "--delete-chain": "-X",
        "-P": "-P",
        "--policy": "-P"
      }
      const optionalChain = ["-S", "-F", "-X"]
      for (let i = 0; i < args.length; i++) {
        const a = args[i] as string
        if (a === "-t" || a === "--table") {
          const t = args[++i]
          if (t === undefined) return usageError(`option "${a}" requires an argument`)
          table = t
        } else if (a === "-w" || a === "--wait") {
          if (args[i + 1] !== undefined && /^\d+(\.\d+)?$/.test(args[i + 1] as string)) i++
        } else if (a === "-W" || a === "--wait-interval") i++
        else if (a === "-v" || a === "--verbose" || a === "-n" || a === "--numeric") continue
        else if (commands[a] !== undefined && command === undefined) {
          command = commands[a]
          const next = args[i + 1]
          if (next !== undefined && !next.startsWith("-")) {
            chain = next
            i++
          } else if (!optionalChain.includes(command as string)) {
            return usageError(`option "${a}" requires an argument`)
          }
        } else rest.push(a)
      }
      if (command === undefined) return usageError("no command specified")
      const chains = state.tables.get(table)
      if (chains === undefined) {
        return fail(3, `${IPT}: table '${table}' does not exist\nPerhaps iptables or your kernel needs to be upgraded.`)
      }
      const found = chain === undefined ? undefined : chains.find((c) => c.name === chain)
      const noChain = fail(1, "iptables: No chain/target/match by that name.")
      const badRule = fail(1, "iptables: Bad rule (does a matching rule exist in that chain?).")
      switch (command) {
        case "-S": {
          if (chain === undefined) return ok(listRules(chainOrder(chains)))
          if (found === undefined) {
            return fail(1, `${IPT}: chain \`${chain}' in table \`${table}' is incompatible, use 'nft' tool.`)
          }
          return ok(listRules([found]))
        }
        case "-F": {
          if (chain === undefined) {
            for (const c of chains) c.rules = []
            return ok()
          }
          if (found === undefined) return noChain
          found.rules = []
          found.created = true
          return ok()
        }
        case "-N": {
          if (found !== undefined) return fail(1, "iptables: Chain already exists.")
          chains.push({ name: chain as string, policy: undefined, rules: [], created: true })
          return ok()
        }
        case "-X": {
          if (chain !== undefined && found === undefined) return noChain
          const targets = chain === undefined ? chains.filter((c) => c.policy === undefined) : [found as Chain]
          const jumpsTo = (name: string) =>
            chains.some((c) => c.rules.some((r) => r.words[r.words.indexOf("-j") + 1] === name))
          for (const c of targets) {
            if (c.rules.length > 0 || jumpsTo(c.name)) {
              return fail(4, `${IPT}:  CHAIN_DEL failed (Device or resource busy): chain ${c.name}`)
            }
          }
          for (const c of targets) {
            // A built-in chain goes back to not existing in the kernel; a user chain is gone.
            if (c.policy === undefined) chains.splice(chains.indexOf(c), 1)
            else c.created = false
          }
          return ok()
        }
        case "-P": {
          const policy = rest[0]
          if (found === undefined || found.policy === undefined) return fail(1, "iptables: Bad built-in chain name.")
          if (policy === undefined || !["ACCEPT", "DROP"].includes(policy)) {
            return fail(1, "iptables: Bad policy name. Run `dmesg' for more information.")
          }
          found.policy = policy
          found.created = true
          return ok()
        }
      }
      // -A, -C, -D, -I: a rule spec (or, for -D, a rule number; for -I, an optional position).
      const ruleNumber = (word: string): number | Outcome =>
        /^\d+$/.test(word) && Number(word) > 0 ? Number(word) : usageError(`Invalid rule number \`${word}'`)
      if (command === "-D" && rest.length === 1 && !(rest[0] as string).startsWith("-")) {
        const n = ruleNumber(rest[0] as string)
        if (typeof n !== "number") return n
        if (found === undefined || !found.created) return noChain
        if (n > found.rules.length) return fail(1, "iptables: Index of deletion too big.")
        found.rules.splice(n - 1, 1)
        return ok()
      }
      let position: number | undefined
      if (command === "-I" && rest[0] !== undefined && !rest[0].startsWith("-") && rest[0] !== "!") {
        const n = ruleNumber(rest.shift() as string)
        if (typeof n !== "number") return n
        position = n
      }
      const parsed = canonicalRule(rest, chains)
      if ("error" in parsed) return parsed.error
      switch (command) {
        case "-A":
          if (found === undefined) return noChain
          found.rules.push({ words: parsed.words })
          found.created = true
          return ok()
        case "-I": {
          if (found === undefined) return noChain
          const at = (position ?? 1) - 1
          if (at > found.rules.length) return fail(1, "iptables: Index of insertion too big.")
          found.rules.splice(at, 0, { words: parsed.words })
          found.created = true
          return ok()
        }
        case "-C":
          if (found === undefined) return badRule
          return found.rules.some((r) => sameRule(r.words, parsed.words)) ? ok() : badRule
        default: {
          if (found === undefined) return badRule
          const index = found.rules.findIndex((r) => sameRule(r.words, parsed.words))
          if (index === -1) return badRule
          found.rules.splice(index, 1)
          return ok()
        }
      }
    })
