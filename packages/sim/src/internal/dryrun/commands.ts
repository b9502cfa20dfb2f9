/**
 * Commands and units in a dry run: the spawner that runs read-only queries
 * on the host, `ip`/`iptables` on a simulated copy of the host's network, and
 * records every other command; and the `Systemd` that records unit jobs.
 * Boundary: which commands only read is `isReadOnly`'s decision.
 */
import { HostCommand, Systemd } from "@hostnode/core"
import { Effect, Layer, Option, Sink, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import * as MemoryCommands from "../memoryCommands.ts"
import { saveWords } from "../network/iptables.ts"
import * as NetworkSimulation from "../network/simulation.ts"
import { DryRunPlan } from "./plan.ts"

/**
 * Whether a command only reads, so a dry run may run it for real: the
 * queries the operations make before they decide what to change.
 */
export const isReadOnly = (command: string, args: ReadonlyArray<string>): boolean => {
  const name = command.split("/").pop() ?? command
  if (name === "nsenter") {
    const dashes = args.indexOf("--")
    const rest = dashes < 0 ? [] : args.slice(dashes + 1)
    const [head, ...tail] = rest
    return head !== undefined && isReadOnly(head, tail)
  }
  const verbs = args.filter((a) => !a.startsWith("-"))
  switch (name) {
    case "systemctl":
      return ["show", "is-active", "status", "cat", "list-units"].includes(verbs[0] ?? "")
    case "ip":
      return verbs.includes("show") || verbs.includes("list") || (verbs.length === 1 && verbs[0] !== undefined)
    case "iptables":
    case "ip6tables":
      return ["-S", "-L", "--list", "--list-rules", "-C", "--check"].some((flag) => args.includes(flag))
    case "findmnt":
    case "cat":
    case "stat":
      return true
    default:
      return false
  }
}

const succeeded = (pid: number): ChildProcessSpawner.ChildProcessHandle =>
  ChildProcessSpawner.makeHandle({
    pid: ChildProcessSpawner.ProcessId(pid),
    exitCode: Effect.succeed(ChildProcessSpawner.ExitCode(0)),
    isRunning: Effect.succeed(false),
    kill: () => Effect.void,
    stdin: Sink.drain,
    stdout: Stream.empty,
    stderr: Stream.empty,
    all: Stream.empty,
    getInputFd: () => Sink.drain,
    getOutputFd: () => Stream.empty,
    unref: Effect.succeed(Effect.void)
  })

const commandLine = (command: ChildProcess.Command): { readonly name: string; readonly args: Array<string> } =>
  ChildProcess.isStandardCommand(command)
    ? { name: command.command, args: command.args.map((a) => (typeof a === "string" ? a : "<redacted>")) }
    : {
        name: "|",
        args: [commandLine(command.left), commandLine(command.right)].map((c) => [c.name, ...c.args].join(" "))
      }

/** The commands whose state a dry run simulates, so that what they change is what their queries see next. */
const NetworkCommands = new Set(["ip", "iptables"])

/**
 * A simulated copy of the host's network as far as the operations look at it
 * (links, their kinds, IPv4 addresses and up state; the `raw` table), seeded
 * from the host with the read-only queries `ip -j -d addr show` and
 * `iptables -S`. Link kinds the simulation lacks are copied as `dummy`: only
 * the LocalDNS interface's kind matters to the operations, and that is a
 * dummy or a bridge.
 */
const seedNetwork = (real: ChildProcessSpawner.ChildProcessSpawner["Service"]) =>
  Effect.gen(function* () {
    const query = (command: string, args: ReadonlyArray<string>) =>
      HostCommand.run(command, args).pipe(
        Effect.provideService(ChildProcessSpawner.ChildProcessSpawner, real),
        Effect.option
      )
    const rules = yield* query("iptables", ["-w", "-t", "raw", "-S"])
    const noTable = Option.isSome(rules) && rules.value.exitCode !== 0 && /does not exist/.test(rules.value.stderr)
    const simulation = yield* NetworkSimulation.make(noTable ? { missingTables: ["raw"] } : {})
    const admin = (command: "ip" | "iptables", args: ReadonlyArray<string>) =>
      Effect.asVoid(simulation.service.admin(command, args))
    const links = yield* query("ip", ["-j", "-d", "addr", "show"])
    if (Option.isSome(links) && links.value.exitCode === 0) {
      const listed = yield* Effect.try({
        try: () => JSON.parse(links.value.stdout) as ReadonlyArray<ListedLink>,
        catch: () => "unparsable"
      }).pipe(Effect.orElseSucceed((): ReadonlyArray<ListedLink> => []))
      for (const link of listed) {
        if (typeof link.ifname !== "string" || link.ifname === "lo") continue
        const kind = link.linkinfo?.info_kind === "bridge" ? "bridge" : "dummy"
        yield* admin("ip", ["link", "add", "name", link.ifname, "type", kind])
        for (const a of link.addr_info ?? []) {
          if (a.family === "inet") yield* admin("ip", ["addr", "add", `${a.local}/${a.prefixlen}`, "dev", link.ifname])
        }
        if (link.flags?.includes("UP") === true) yield* admin("ip", ["link", "set", "dev", link.ifname, "up"])
      }
    }
    if (Option.isSome(rules) && rules.value.exitCode === 0) {
      for (const line of rules.value.stdout.split("\n")) {
        const words = saveWords(line)
        if (words[0] === "-N" || words[0] === "-A") yield* admin("iptables", ["-t", "raw", ...words])
      }
    }
    return MemoryCommands.makeSpawner(
      new Map([
        ["ip", simulation.ip],
        ["iptables", simulation.iptables]
      ])
    )
  })

/** The parts of one link of `ip -j -d addr show` the seed copies. */
interface ListedLink {
  readonly ifname?: string
  readonly flags?: ReadonlyArray<string>
  readonly linkinfo?: { readonly info_kind?: string }
  readonly addr_info?: ReadonlyArray<{ readonly family?: string; readonly local?: string; readonly prefixlen?: number }>
}

/**
 * ChildProcessSpawner for a dry run. `ip` and `iptables` run against a
 * simulated copy of the host's network, seeded on first use, so an operation
 * that adds a link and then inspects it sees the link; their changes are
 * recorded. Other read-only commands ({@link isReadOnly}) run for real; any
 * other command is recorded and "exits 0" with no output.
 */
export const layerSpawner: Layer.Layer<
  ChildProcessSpawner.ChildProcessSpawner,
  never,
  ChildProcessSpawner.ChildProcessSpawner | DryRunPlan
> = Layer.effect(
  ChildProcessSpawner.ChildProcessSpawner,
  Effect.gen(function* () {
    const real = yield* ChildProcessSpawner.ChildProcessSpawner
    const plan = yield* DryRunPlan
    const network = yield* Effect.cached(seedNetwork(real))
    let pid = 0
    return ChildProcessSpawner.make((command) => {
      const line = commandLine(command)
      const readOnly = ChildProcess.isStandardCommand(command) && isReadOnly(line.name, line.args)
      const recorded = plan.record({
        service: "ChildProcessSpawner",
        action: "run",
        target: [line.name, ...line.args].join(" ")
      })
      if (ChildProcess.isStandardCommand(command) && NetworkCommands.has(line.name.split("/").pop() ?? "")) {
        return Effect.flatMap(readOnly ? Effect.void : recorded, () =>
          Effect.flatMap(network, (simulated) => simulated.spawn(command))
        )
      }
      if (readOnly) return real.spawn(command)
      return recorded.pipe(Effect.andThen(Effect.sync(() => succeeded(++pid))))
    })
  })
)

/**
 * Systemd whose queries are real and whose jobs and reloads are recorded.
 * Built with `Systemd.make`, so a bad unit name fails exactly as it would in
 * a real run.
 */
export const layerSystemd: Layer.Layer<Systemd.Systemd, never, Systemd.Systemd | DryRunPlan> = Layer.effect(
  Systemd.Systemd,
  Effect.gen(function* () {
    const real = yield* Systemd.Systemd
    const plan = yield* DryRunPlan
    return Systemd.make({
      job: (verb, unit) => plan.record({ service: "Systemd", action: verb, target: unit }),
      daemonReload: plan.record({ service: "Systemd", action: "daemon-reload", target: "" }),
      show: (unit, properties) => real.show(unit, properties).pipe(Effect.catchTag("UnitNameError", Effect.die))
    })
  })
)
