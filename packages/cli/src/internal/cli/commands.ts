/**
 * The subcommands, one per operation of `@hostnode/core` (and `demo`), and
 * the `hostnode` command that holds them. Boundary: each command's name,
 * flags, arguments and description, which is all `--help`, `--version` and
 * a usage error need; a command's work (`handlers/`) is imported only when
 * that command runs, so answering those loads no operation, no platform
 * layer and no FFI. The common handling is `operate.ts`.
 */
import type { RestartChanged } from "@hostnode/core"
import * as Console from "effect/Console"
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { Services } from "../../Cli.ts"
import type { CliExit } from "../../CliExit.ts"
import * as Defaults from "./defaults.ts"
import { AllowOwnNamespace, Container, DryRunFlag, HostRoot, Json, LogFormat, MetricsFile, Timeout } from "./flags.ts"

/**
 * A command's work, imported when the command runs (in the bundled
 * executable, its own chunk). A module that cannot be loaded is a defect:
 * the CLI reports it as an internal error.
 */
const later = <M, A, E, R>(load: () => Promise<M>, work: (m: M) => Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.promise(load), work)

const handlers = {
  unmount: () => import("./handlers/unmount.ts"),
  snapshot: () => import("./handlers/snapshot.ts"),
  repave: () => import("./handlers/repave.ts"),
  restart: () => import("./handlers/restart.ts"),
  localdns: () => import("./handlers/localdns.ts"),
  running: () => import("./handlers/running.ts"),
  demo: () => import("./handlers/demo.ts"),
  group: () => import("./handlers/group.ts")
}

/** The flags of `restart-changed` beyond its units: the settle window, the job timeout and the reload policy. */
const restartFlags = {
  settle: Flag.Int("settle").pipe(
    Flag.withDefault(0),
    Flag.withMetavar("SECONDS"),
    Flag.filter(
      (n) => n >= 0,
      (n) => `zero or a positive whole number of seconds, not ${n}`
    ),
    Flag.withDescription(
      "How long each restarted unit must stay active before the next is restarted; one that does not fails the run, named (default: 0, no check)"
    )
  ),
  jobTimeout: Flag.Int("job-timeout").pipe(
    Flag.withDefault(0),
    Flag.withMetavar("SECONDS"),
    Flag.filter(
      (n) => n >= 0,
      (n) => `zero or a positive whole number of seconds, not ${n}`
    ),
    Flag.withDescription(
      "How long one systemd call may take, a restart job until it finished included; then the run fails with a Timeout (default: 0, the layer's 180)"
    )
  ),
  reload: Flag.Literals("reload", ["always", "auto", "never"]).pipe(
    Flag.withDefault("always" as const),
    Flag.withMetavar("POLICY"),
    Flag.withDescription(
      "Have systemd re-read unit files before the restarts: always (one daemon-reload, the default), auto (only when a unit reports NeedDaemonReload, which misses new drop-in directories), never"
    )
  )
}

/**
 * The command tree, with `host` provided to each command that works on the
 * host when (and only when) it runs. `Cli.run` passes `Layer.empty`, leaving
 * the host's services to its caller; the executable passes a layer that
 * imports the real host's (`NodeHost.layer`) as it is built.
 */
/**
 * What to do about copies outside the host root that unmounting would make
 * the kernel detach by propagation (`Unmount.Options.peersOutsideRoot`).
 */
const peersOutsideRoot = Flag.Literals("peers-outside-root", ["detach", "refuse"]).pipe(
  Flag.withDefault("detach" as const),
  Flag.withMetavar("WHAT"),
  Flag.withDescription(
    "When a mount to detach has copies outside --host-root on peers or slaves of its parent (a second bind of the data disk): detach (the default; the kernel detaches the copies too, and they are reported) or refuse (exit 2 before anything is unmounted)"
  )
)

export const makeHostnode = <LA, LE, LR>(
  host: Layer.Layer<LA, LE, LR>
): Command.Command<"hostnode", never, {}, CliExit | LE, Exclude<Services, LA> | LR> => {
  const onHost = <const Name extends string, I, CI, E, R>(self: Command.Command<Name, I, CI, E, R>) =>
    Command.provide(self, host)

  const unmountBelow = Command.make(
    "unmount-below",
    {
      strict: Flag.Boolean("strict").pipe(
        Flag.withDefault(false),
        Flag.withDescription("Leave a mount whose mount point is a prefix itself; unmount only what is below")
      ),
      allowRoot: Flag.Boolean("allow-root").pipe(
        Flag.withDefault(false),
        Flag.withDescription("Allow a prefix that is / or the host root itself (every mount below --host-root)")
      ),
      peersOutsideRoot,
      prefixes: Argument.String("PREFIX").pipe(
        Argument.atLeast(1),
        Argument.withDescription(
          "Host paths below --host-root to unmount at or below: absolute, not empty; a symbolic link is followed inside the root"
        )
      )
    },
    (input) => later(handlers.unmount, (h) => h.unmountBelow(input))
  ).pipe(
    Command.withDescription("Lazily unmount every mount at (or, with --strict, strictly) below the prefixes"),
    onHost
  )

  const snapshotTake = Command.make(
    "take",
    {
      ...snapshotFlags,
      paths: Flag.String("path").pipe(
        Flag.atLeast(0),
        Flag.withMetavar("P"),
        Flag.withDescription("A host path to record (repeatable; default: the node's shared configuration)")
      )
    },
    (input) => later(handlers.snapshot, (h) => h.take(input))
  ).pipe(Command.withDescription("Record the paths below the host root into a new snapshot directory"), onHost)

  const snapshotRestore = Command.make("restore", restoreFlags, (input) =>
    later(handlers.snapshot, (h) => h.restore(input))
  ).pipe(
    Command.withDescription(
      "Put the recorded paths back as recorded, then remove the snapshot; a failed restore keeps it for another try"
    ),
    onHost
  )

  const snapshotRecover = Command.make("recover", restoreFlags, (input) =>
    later(handlers.snapshot, (h) => h.recover(input))
  ).pipe(Command.withDescription("Restore a snapshot an earlier process left, then remove it"), onHost)

  const snapshotDiscard = Command.make("discard", snapshotFlags, (input) =>
    later(handlers.snapshot, (h) => h.discard(input))
  ).pipe(
    Command.withDescription("Remove a snapshot without restoring it (a damaged one too); none there is success"),
    onHost
  )

  const snapshot = Command.make(
    "snapshot",
    {},
    missingSubcommand("snapshot", ["take", "restore", "recover", "discard"])
  ).pipe(
    Command.withDescription("Take, restore, recover or discard a snapshot of the node's configuration"),
    Command.withSubcommands([snapshotTake, snapshotRestore, snapshotRecover, snapshotDiscard])
  )

  const resetCni = Command.make("reset-cni", {}, () => later(handlers.repave, (h) => h.resetCni())).pipe(
    Command.withDescription(
      `Remove the CNI configuration (${Defaults.CniConfDir}/*) and state (${Defaults.CniStateDir})`
    ),
    onHost
  )

  const resetKubeletIdentity = Command.make(
    "reset-kubelet-identity",
    {
      auth: Flag.Literals("auth", ["bootstrap-token", "kubeconfig", "exec-credential"]).pipe(
        Flag.withMetavar("MODE"),
        Flag.withDescription("Required: how the kubelet authenticates; only bootstrap-token removes anything")
      ),
      bootstrapKubeconfig: Flag.String("bootstrap-kubeconfig").pipe(
        Flag.withDefault(Defaults.DefaultBootstrapKubeconfig),
        Flag.withMetavar("FILE"),
        // The file kept is compared as a host path: a relative one would match nothing and keep nothing.
        Flag.filter(
          (file) => file.startsWith("/"),
          (file) => `an absolute host path (as seen from the host's /), not ${JSON.stringify(file)}`
        ),
        Flag.withDescription(
          `The bootstrap kubeconfig (kept) in bootstrap-token mode (default: ${Defaults.DefaultBootstrapKubeconfig})`
        )
      )
    },
    (input) => later(handlers.repave, (h) => h.resetKubeletIdentity(input))
  ).pipe(Command.withDescription("Remove the kubelet's rotated client credentials (bootstrap-token mode only)"), onHost)

  const teardownKubeletDir = Command.make("teardown-kubelet-dir", { peersOutsideRoot }, (input) =>
    later(handlers.repave, (h) => h.teardownKubeletDir(input))
  ).pipe(Command.withDescription(`Unmount and remove each pod's directory below ${Defaults.KubeletPodsDir}`), onHost)

  const restartChanged = Command.make(
    "restart-changed",
    {
      wasRunning: Flag.Boolean("was-running").pipe(
        Flag.withDefault(false),
        Flag.withDescription("The node was running before the configuration was written (otherwise nothing restarts)")
      ),
      units: Argument.String("UNIT[=changed]").pipe(
        Argument.filterMap(
          (w) => Option.fromNullishOr(parseChangedUnit(w)),
          () => "UNIT, or UNIT=true|false (also yes|no, 1|0, changed|unchanged)"
        ),
        Argument.atLeast(1),
        Argument.withDescription("Units in restart order; UNIT=false marks one whose configuration did not change")
      ),
      ...restartFlags
    },
    (input) => later(handlers.restart, (h) => h.restartChanged(input))
  ).pipe(Command.withDescription("Restart, in order, the units whose configuration changed"), onHost)

  const localDnsSetup = Command.make(
    "setup",
    {
      ...listenerFlags,
      kind: Flag.Literals("kind", ["dummy", "bridge"]).pipe(
        Flag.withDefault("dummy" as const),
        Flag.withMetavar("KIND"),
        Flag.withDescription("The link kind of the LocalDNS interface: dummy or bridge (default: dummy)")
      )
    },
    (input) => later(handlers.localdns, (h) => h.setup(input))
  ).pipe(Command.withDescription("Create the LocalDNS interface and its NOTRACK rules"), onHost)

  const localDnsCleanup = Command.make("cleanup", {}, () => later(handlers.localdns, (h) => h.cleanup())).pipe(
    Command.withDescription("Remove the LocalDNS rules and interface a stopped node left"),
    onHost
  )

  const localDnsAwait = Command.make(
    "await",
    {
      ...listenerFlags,
      timeout: Flag.Int("timeout").pipe(
        Flag.withDefault(120),
        Flag.withMetavar("SECONDS"),
        Flag.filter(
          (n) => n > 0,
          (n) => `a positive whole number of seconds, not ${n}`
        ),
        Flag.withDescription(
          "How long to keep probing, in seconds (default: 120); never past the operation's deadline (the global --timeout, given before the subcommand)"
        )
      )
    },
    (input) => later(handlers.localdns, (h) => h.awaitDns(input))
  ).pipe(Command.withDescription("Wait until both LocalDNS listeners answer"), onHost)

  const localdns = Command.make("localdns", {}, missingSubcommand("localdns", ["setup", "cleanup", "await"])).pipe(
    Command.withDescription("Set up, clean up or wait for the LocalDNS network"),
    Command.withSubcommands([localDnsSetup, localDnsCleanup, localDnsAwait])
  )

  const running = Command.make(
    "running",
    {
      slot: Argument.String("SLOT").pipe(
        Argument.withDefault(HostSlot),
        Argument.withDescription(`The node root to ask about: this node has one, "${HostSlot}" (the default)`)
      )
    },
    ({ slot }) => later(handlers.running, (h) => h.running({ slot, known: HostSlot }))
  ).pipe(Command.withDescription("Say whether the node stack is up (its units are active)"), onHost)

  /**
   * `hostnode demo`: the guided run on its own simulated node (never the
   * host, whatever `--host-root` says), so the host is not provided to it.
   */
  const demo = Command.make("demo", {}, () => later(handlers.demo, (h) => h.demo)).pipe(
    Command.withDescription(
      "A guided run on a simulated node (in memory; this host is never touched): a failed upgrade rolled back, the upgrade succeeding, a repave, and every claim checked"
    )
  )

  const subcommands = [
    unmountBelow,
    snapshot,
    resetCni,
    resetKubeletIdentity,
    teardownKubeletDir,
    restartChanged,
    localdns,
    running,
    demo
  ] as const
  const subcommandNames = subcommands.map((c) => c.name)

  // Run with no subcommand, the root says where to go next instead of failing.
  return Command.make("hostnode", {}, () =>
    Effect.gen(function* () {
      const hint = "Run `hostnode --help` (or `hostnode help SUBCOMMAND`) for the commands."
      yield* (yield* Json)
        ? Console.log(JSON.stringify({ ok: true, command: null, result: { subcommands: subcommandNames, hint } }))
        : Console.log(
            `hostnode: host-side operations of a Kubernetes node agent.\nsubcommands: ${subcommandNames.join(", ")}\n${hint}`
          )
    })
  ).pipe(
    Command.withDescription(
      "Host-side operations of a Kubernetes node agent: unmount pod volumes, snapshot and roll back configuration, restart changed units, reset CNI state and kubelet identity, prepare LocalDNS."
    ),
    Command.withSubcommands(subcommands),
    Command.withGlobalFlags([HostRoot, Container, AllowOwnNamespace, Json, DryRunFlag, Timeout]),
    Command.withGlobalFlags([LogFormat, MetricsFile])
  )
}

const snapshotFlags = {
  dir: Flag.String("dir").pipe(
    Flag.withMetavar("DIR"),
    Flag.withDescription("Required: the snapshot directory (a real path, not below --host-root)")
  ),
  lockTimeout: Flag.Int("lock-timeout").pipe(
    Flag.withDefault(60),
    Flag.withMetavar("SECONDS"),
    Flag.filter(
      (n) => n >= 0,
      (n) => `zero or a positive whole number of seconds, not ${n}`
    ),
    Flag.withDescription(
      "How long to wait for another process working on this snapshot (an agent's recover) before failing Busy (default: 60)"
    )
  )
}

const restoreFlags = {
  ...snapshotFlags,
  allowRootMismatch: Flag.Boolean("allow-root-mismatch").pipe(
    Flag.withDefault(false),
    Flag.withDescription(
      "Restore below --host-root although the snapshot was taken below another root (the same tree under another name)"
    )
  )
}

/**
 * The handler of a group run without its subcommand (`hostnode snapshot`):
 * bad usage, exit 2, with the subcommands it takes.
 */
const missingSubcommand = (group: string, names: ReadonlyArray<string>) => () =>
  later(handlers.group, (h) => h.missingSubcommand(group, names))

/** `UNIT[=changed]`: `changed` is true, yes, 1 or changed (the default), or false, no, 0 or unchanged. */
export const parseChangedUnit = (word: string): RestartChanged.Options["units"][number] | undefined => {
  const eq = word.indexOf("=")
  if (eq < 0) return word === "" ? undefined : { unit: word, changed: true }
  const unit = word.slice(0, eq)
  const value = word.slice(eq + 1).toLowerCase()
  if (unit === "") return undefined
  if (["true", "yes", "1", "changed"].includes(value)) return { unit, changed: true }
  if (["false", "no", "0", "unchanged"].includes(value)) return { unit, changed: false }
  return undefined
}

const listenerFlags = {
  nodeListener: Flag.String("node-listener").pipe(
    Flag.withDefault(Defaults.NodeListener),
    Flag.withMetavar("ADDRESS"),
    Flag.withDescription(
      `The node LocalDNS listener address, a dotted quad in 169.254.0.0/16 (default: ${Defaults.NodeListener})`
    )
  ),
  clusterListener: Flag.String("cluster-listener").pipe(
    Flag.withDefault(Defaults.ClusterListener),
    Flag.withMetavar("ADDRESS"),
    Flag.withDescription(
      `The cluster LocalDNS listener address, a dotted quad in 169.254.0.0/16 (default: ${Defaults.ClusterListener})`
    )
  )
}

/** The one slot of the host and the container compositions. */
const HostSlot = "host"

/** The command tree of `Cli.run`: the host's services are its caller's to provide. */
export const hostnode: Command.Command<"hostnode", never, {}, CliExit, Services> = makeHostnode(Layer.empty)
