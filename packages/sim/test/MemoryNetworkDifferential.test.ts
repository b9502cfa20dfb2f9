/**
 * Differential property test of the simulated network's command line: random
 * sequences of `ip` and `iptables` commands (the forms the LocalDNS phases and
 * fixtures run, plus their error cases) run in a fresh network namespace with
 * the real tools (iproute2, iptables-nft) and against `MemoryNetwork`'s
 * interpreters, and every exit code, stderr and stdout must agree. The real
 * tools are the truth: a mismatch is a bug in the simulation.
 *
 * Each sequence runs in its own `unshare --net`, so nothing leaks between
 * sequences, into other tests or onto the machine. What a real kernel makes
 * up or updates asynchronously is normalised on both sides before comparing
 * (see `normalize`): JSON output keeps what the library reads of a link.
 * Where the kernel lacks `dummy` links (this project's test kernels), the
 * simulation is built without them too.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { HostCommand } from "@hostnode/core"
import * as NetworkSimulation from "@hostnode/sim/internal/network/simulation"
import { Gate } from "@hostnode/test"
import * as LocalDnsRules from "@hostnode/test/internal/localDnsRules"
import { Effect, FileSystem, Schema } from "effect"

const gate = Gate.check("real ip and iptables in fresh network namespaces", [
  "root",
  "net-namespace",
  { command: "ip", args: ["-V"] },
  { command: "iptables", args: ["--version"] }
])

const Code = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 9999 }))
const Step = Schema.Tuple([Code, Code, Code, Code])
const Steps = Schema.Array(Step).check(Schema.isMinLength(4), Schema.isMaxLength(28))

const pick = <A>(table: ReadonlyArray<A>, n: number): A => table[n % table.length] as A

const names = ["localdns", "a", "b", "localdns", "vx", "a", "abcdefghijklmnop", "lo"]
const kinds = ["bridge", "veth", "bridge", "dummy", "bogus"]
const addresses = [
  "169.254.10.10/32",
  "169.254.10.11/32",
  "10.98.0.1/24",
  "10.98.0.2/24",
  "10.99.0.1/32",
  "10.99.0.1",
  "1.2.3.300/32",
  "10.98.0.1/16",
  "169.254.10.10/32"
]
const chains = ["OUTPUT", "PREROUTING", "OUTPUT", "INPUT", "NOPE"]
const ours = LocalDnsRules.rulesFor(["169.254.10.10", "169.254.10.11", "169.254.10.12"]).map((r) => r.spec)
const specs: ReadonlyArray<ReadonlyArray<string>> = [
  ...ours,
  ...LocalDnsRules.foreignRules.map((r) => r.spec),
  [
    "-d",
    "169.254.10.10",
    "-p",
    "udp",
    "--dport",
    "53",
    "-m",
    "comment",
    "--comment",
    LocalDnsRules.RuleComment,
    "-j",
    "NOTRACK"
  ],
  ["-p", "udp", "-m", "comment", "--comment", "x", "-m", "udp", "--dport", "53", "-d", "1.2.3.4", "-j", "NOTRACK"],
  ["-p", "udp", "-d", "1.2.3.4", "-m", "comment", "--comment", "x", "-m", "udp", "--dport", "53", "-j", "NOTRACK"],
  ["-p", "tcp", "--dport", "53", "--sport", "1000", "-j", "NOTRACK"],
  ["!", "-d", "1.1.1.1/32", "-p", "tcp", "!", "--dport", "53", "-j", "NOTRACK"],
  ["-d", "10.1.2.3/24", "-j", "NOTRACK"],
  ["-d", "10.1.2.3/255.255.0.0", "-p", "TCP", "-j", "NOTRACK"],
  ["-m", "comment", "--comment", "a\"b\\c'd", "-j", "NOTRACK"],
  ["-m", "comment", "--comment", "", "-j", "NOTRACK"],
  ["-m", "comment", "--comment", "plain_-09", "-j", "ACCEPT"],
  ["-p", "udp", "-j", "CT", "--notrack"],
  ["-s", "0.0.0.0/0", "-p", "all", "-j", "DROP"],
  [],
  ["--dport", "53", "-j", "NOTRACK"],
  ["-j", "BOGUS"],
  ["-m", "bogus", "-j", "NOTRACK"],
  ["-d", "169.254.10.300/32", "-j", "NOTRACK"],
  ["-p", "tcp", "--dport", "dns", "-j", "NOTRACK"],
  ["--foo"]
]
const tables = ["raw", "filter", "nat", "mangle", "bogus"]

/** One argv (command first) from four small integers. */
const command = ([op, x, y, z]: readonly [number, number, number, number]): ReadonlyArray<string> => {
  const name = pick(names, x)
  const chain = pick(chains, y)
  const spec = pick(specs, z)
  switch (op % 24) {
    case 0:
    case 1:
      return ["ip", "link", "add", "name", name, "type", pick(kinds, y)]
    case 2:
      return ["ip", "link", "add", "name", name, "type", "veth", "peer", "name", `${pick(names, y).slice(0, 11)}peer`]
    case 3:
      return ["ip", "link", "del", "dev", name]
    case 4:
    case 5:
      return ["ip", "link", "set", "dev", name, y % 3 === 0 ? "down" : "up"]
    case 6:
    case 7:
      return ["ip", "addr", "add", pick(addresses, y), "dev", name]
    case 8:
      return ["ip", "addr", "del", pick(addresses, y), "dev", name]
    case 9:
      return ["ip", "-j", "-d", "addr", "show", "dev", name]
    case 10:
      return ["ip", "-j", "link", "show", "dev", name]
    case 11:
      return ["ip", "-j", "addr", "show"]
    case 12:
    case 13:
    case 14:
      return ["iptables", "-w", "-t", "raw", "-A", chain, ...spec]
    case 15:
      return ["iptables", "-w", "-t", "raw", "-C", chain, ...spec]
    case 16:
      return ["iptables", "-w", "-t", "raw", "-D", chain, ...spec]
    case 17:
      return ["iptables", "-w", "-t", "raw", "-S"]
    case 18:
      return ["iptables", "-w", "-t", "raw", "-S", chain]
    case 19:
      return ["iptables", "-w", "-t", "raw", "-D", chain, String(1 + (z % 3))]
    case 20:
      return ["iptables", "-w", "-t", "raw", "-I", chain, ...(z % 2 === 0 ? [] : [String(1 + (x % 3))]), ...spec]
    case 21:
      return ["iptables", "-w", "-t", pick(tables, y), "-S"]
    case 22:
      return ["iptables", "-w", "-t", "raw", "-F", ...(z % 2 === 0 ? [] : [chain])]
    default:
      return ["ip", "addr", "show", "dev", name]
  }
}

/**
 * What the comparison keeps of `ip` output. JSON output is reduced to what the
 * library reads (its interface inspection): each link's name, flags, kind and
 * addresses (family, address, prefix, scope). The rest is either made up by
 * the kernel (MAC addresses, IPv6 link-local addresses, DAD's `tentative`,
 * bridge timers) or updated asynchronously (`operstate` follows linkwatch,
 * which delays events by up to a second; a full CI run once saw it lag), so
 * comparing it would test the kernel's timing, not the simulation.
 */
const normalize = (argv: ReadonlyArray<string>, stdout: string): string => {
  if (argv[0] !== "ip" || stdout === "") return stdout
  if (argv.includes("-j")) {
    const links = JSON.parse(stdout) as Array<Record<string, unknown>>
    return JSON.stringify(
      links.map((link) => ({
        ifname: link.ifname,
        flags: link.flags,
        kind: (link.linkinfo as Record<string, unknown> | undefined)?.info_kind,
        addr_info: ((link.addr_info as Array<Record<string, unknown>> | undefined) ?? []).map((a) => ({
          family: a.family,
          local: a.family === "inet6" && a.scope === "link" ? "<link-local>" : a.local,
          prefixlen: a.prefixlen,
          scope: a.scope
        }))
      }))
    )
  }
  return stdout
    .replace(/link\/ether [0-9a-f:]{17}/g, "link/ether <mac>")
    .replace(/fe80::[0-9a-f:]+\/64/g, "<link-local>/64")
    .replace(/ tentative/g, "")
}

const quote = (w: string) => `'${w.replace(/'/g, "'\\''")}'`

interface Outcome {
  readonly argv: ReadonlyArray<string>
  readonly exitCode: number
  readonly stdout: string
  readonly stderr: string
}

/** Runs `commands` in one fresh network namespace (lo up first), each one's output kept apart. */
const runReal = (commands: ReadonlyArray<ReadonlyArray<string>>) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const dir = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-netdiff-" })
    const script = [
      "ip link set lo up",
      ...commands.map((c, i) => `${c.map(quote).join(" ")} >"$1/o${i}" 2>"$1/e${i}"; echo $? >"$1/r${i}"`)
    ].join("\n")
    const run = yield* HostCommand.run("unshare", ["--net", "--", "sh", "-c", script, "sh", dir])
    assert.strictEqual(run.exitCode, 0, run.stderr)
    return yield* Effect.forEach(commands, (argv, i) =>
      Effect.gen(function* () {
        return {
          argv,
          exitCode: Number((yield* fs.readFileString(`${dir}/r${i}`)).trim()),
          stdout: yield* fs.readFileString(`${dir}/o${i}`),
          stderr: yield* fs.readFileString(`${dir}/e${i}`)
        } satisfies Outcome
      })
    )
  })

const runSimulated = (commands: ReadonlyArray<ReadonlyArray<string>>, dummy: boolean) =>
  Effect.gen(function* () {
    const sim = yield* NetworkSimulation.make({ unsupportedKinds: dummy ? [] : ["dummy"] })
    return yield* Effect.forEach(commands, (argv) =>
      Effect.map(
        (argv[0] === "ip" ? sim.ip : sim.iptables)(argv.slice(1), ""),
        (r) => ({ argv, ...r }) satisfies Outcome
      )
    )
  })

const kernelHasDummy = Effect.map(
  HostCommand.run("unshare", ["--net", "--", "ip", "link", "add", "name", "d0", "type", "dummy"]),
  (o) => o.exitCode === 0
)

const finalState: ReadonlyArray<ReadonlyArray<string>> = [
  ["iptables", "-w", "-t", "raw", "-S"],
  ["ip", "-j", "-d", "addr", "show"]
]

describe.skipIf(gate.skip)("MemoryNetwork's ip and iptables agree with the real tools", () => {
  it.effect.prop(
    "every exit code, stderr and (normalised) stdout, and the final links and raw table",
    [Steps],
    ([steps]) =>
      Effect.gen(function* () {
        const commands = [...steps.map(command), ...finalState]
        const dummy = yield* kernelHasDummy
        const real = yield* runReal(commands)
        const simulated = yield* runSimulated(commands, dummy)
        for (const [i, r] of real.entries()) {
          const s = simulated[i] as Outcome
          const what = `command ${i}: ${r.argv.join(" ")}\nsequence:\n${commands.map((c) => c.join(" ")).join("\n")}`
          assert.strictEqual(s.exitCode, r.exitCode, `exit code of ${what}\nreal stderr: ${r.stderr}`)
          assert.deepStrictEqual(s.stderr.split("\n"), r.stderr.split("\n"), `stderr of ${what}`)
          const simOut = normalize(s.argv, s.stdout)
          const realOut = normalize(r.argv, r.stdout)
          assert.strictEqual(simOut, realOut, `stdout of ${what}\nsimulated: ${simOut}\nreal:      ${realOut}`)
        }
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)),
    { timeout: 120_000, arbitrary: { runs: 60 } }
  )
})
