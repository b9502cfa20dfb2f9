/**
 * The subcommands, one per operation of `@hostnode/core` (and `demo`), and
 * the `hostnode` command that holds them. Boundary: each command's flags,
 * arguments and output; the common handling is `operate.ts`.
 */
import {
  ConfSnap,
  type Directory,
  type DnsResolvers,
  HostPath,
  IsolationBackend,
  LocalDns,
  type Mounter,
  NodeStart,
  Paths,
  Repave,
  RestartChanged,
  Snapshot,
  type Systemd,
  Unmount
} from "@hostnode/core"
import { Console, Duration, Effect, Option, Redacted, References, Schema } from "effect"
import { Argument, Command, Flag, GlobalFlag } from "effect/cli"
import * as Demo from "../../Demo.ts"
import { plural } from "../text.ts"
import {
  CliExit,
  ExitCodes,
  errorJson,
  errorText,
  inputErrorLine,
  MissingSubcommand,
  UnknownSlot,
  UsageError
} from "./errors.ts"
import { Container, DryRunFlag, HostRoot, Json, Timeout } from "./flags.ts"
import { LogFormat, MetricsFile } from "./observe.ts"
import { keptText, operate, reportText, withRoot } from "./operate.ts"

/** A prefix as given, and what it resolved to when that differs. */
const prefixText = (p: HostPath.Resolved) => (p.path === HostPath.clean(p.given) ? p.path : `${p.given} (-> ${p.path})`)

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
    prefixes: Argument.String("PREFIX").pipe(
      Argument.atLeast(1),
      Argument.withDescription(
        "Host paths below --host-root to unmount at or below: absolute, not empty; a symbolic link is followed inside the root"
      )
    )
  },
  ({ strict, allowRoot, prefixes }) =>
    operate(
      "unmount-below",
      withRoot("unmount-below", (root) =>
        (strict ? Unmount.unmountStrictlyBelow : Unmount.unmountBelow)(prefixes, { hostRoot: root, allowRoot }).pipe(
          Effect.map((r) => ({
            hostRoot: root.path,
            strict,
            prefixes: r.prefixes.map((p) => ({ prefix: p.given, resolved: p.path, mountTable: p.table })),
            unmounted: r.unmounted,
            text: r.prefixes.map(prefixText).join(", ")
          }))
        )
      ),
      (r) =>
        `unmounted ${plural(r.unmounted.length, "mount")} ${strict ? "strictly below" : "at or below"} ${r.text}; nothing is mounted there any more${
          r.unmounted.length === 0 ? "" : `\n${r.unmounted.map((m) => `  ${m.mountPoint} (${m.fsType})`).join("\n")}`
        }`,
      { toJson: ({ text: _, ...rest }) => rest }
    )
).pipe(Command.withDescription("Lazily unmount every mount at (or, with --strict, strictly) below the prefixes"))

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

const handleJson = (s: Snapshot.Snapshot) => ({ dir: s.dir, hostRoot: s.hostRoot, paths: s.paths, absent: s.absent })

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
  ({ dir, paths, lockTimeout }) =>
    operate(
      "snapshot take",
      withRoot("snapshot take", (hostRoot) =>
        Snapshot.takeOf({
          dir,
          hostRoot,
          paths: paths.length === 0 ? ConfSnap.DefaultPaths : paths,
          lockTimeout: Duration.seconds(lockTimeout)
        }).pipe(Effect.map(handleJson))
      ),
      (s) =>
        `snapshot taken in ${s.dir} of ${plural(s.paths.length, "path")} below ${s.hostRoot}:\n${s.paths.map((p) => `  ${p}${s.absent.includes(p) ? " (absent)" : ""}`).join("\n")}`,
      {
        warnings: (s) =>
          s.absent.length === s.paths.length
            ? [
                `every recorded path is absent below ${s.hostRoot}: is --host-root the node's root? A restore there would only remove them`
              ]
            : []
      }
    )
).pipe(Command.withDescription("Record the paths below the host root into a new snapshot directory"))

const snapshotRestore = Command.make("restore", restoreFlags, ({ dir, allowRootMismatch, lockTimeout }) =>
  operate(
    "snapshot restore",
    withRoot("snapshot restore", (hostRoot) =>
      Effect.gen(function* () {
        const s = yield* Snapshot.open({
          dir,
          hostRoot,
          allowHostRootMismatch: allowRootMismatch,
          lockTimeout: Duration.seconds(lockTimeout)
        })
        yield* s.restore
        return handleJson(s)
      })
    ),
    (s) =>
      `restored ${plural(s.paths.length, "path")} below ${s.hostRoot} from ${s.dir}, and removed the snapshot (a later recover will not apply it again)`
  )
).pipe(
  Command.withDescription(
    "Put the recorded paths back as recorded, then remove the snapshot; a failed restore keeps it for another try"
  )
)

const snapshotRecover = Command.make("recover", restoreFlags, ({ dir, allowRootMismatch, lockTimeout }) =>
  operate(
    "snapshot recover",
    withRoot("snapshot recover", (hostRoot) =>
      Snapshot.recover({
        dir,
        hostRoot,
        allowHostRootMismatch: allowRootMismatch,
        lockTimeout: Duration.seconds(lockTimeout)
      }).pipe(Effect.map((recovered) => ({ dir, hostRoot: hostRoot.path, recovered })))
    ),
    (r) =>
      r.recovered
        ? `restored below ${r.hostRoot} and removed the snapshot in ${r.dir}`
        : `no snapshot in ${r.dir}; nothing to do`
  )
).pipe(Command.withDescription("Restore a snapshot an earlier process left, then remove it"))

const snapshotDiscard = Command.make("discard", snapshotFlags, ({ dir, lockTimeout }) =>
  operate(
    "snapshot discard",
    withRoot("snapshot discard", (hostRoot) =>
      // A discard restores nothing: the root it was taken below does not matter, and a damaged snapshot goes too;
      // what is not a snapshot is refused by Snapshot.discard itself (NotASnapshot), on the directory's handle.
      Snapshot.discard({ dir, hostRoot, lockTimeout: Duration.seconds(lockTimeout) }).pipe(
        Effect.map((removed) => ({ dir, removed }))
      )
    ),
    (r) => (r.removed ? `removed the snapshot in ${r.dir}` : `no snapshot in ${r.dir}; nothing to do`)
  )
).pipe(Command.withDescription("Remove a snapshot without restoring it (a damaged one too); none there is success"))

/**
 * The handler of a group run without its subcommand (`hostnode snapshot`):
 * bad usage, exit 2, with the subcommands it takes.
 */
const missingSubcommand = (group: string, names: ReadonlyArray<string>) => () =>
  Effect.gen(function* () {
    const error = new UsageError({
      reason: new MissingSubcommand({ group, subcommands: names }),
      fix: `see \`hostnode ${group} --help\``
    })
    yield* (yield* Json)
      ? Console.log(JSON.stringify({ ok: false, command: group, error: errorJson(error) }))
      : Console.error(inputErrorLine(group, error))
    return yield* new CliExit({ code: ExitCodes.badInput })
  })

const snapshot = Command.make(
  "snapshot",
  {},
  missingSubcommand("snapshot", ["take", "restore", "recover", "discard"])
).pipe(
  Command.withDescription("Take, restore, recover or discard a snapshot of the node's configuration"),
  Command.withSubcommands([snapshotTake, snapshotRestore, snapshotRecover, snapshotDiscard])
)

const resetCni = Command.make("reset-cni", {}, () =>
  operate(
    "reset-cni",
    withRoot("reset-cni", (hostRoot) => Repave.resetCniState({ hostRoot })),
    (r) => reportText("CNI state reset", r)
  )
).pipe(Command.withDescription(`Remove the CNI configuration (${Paths.CniConfDir}/*) and state (${Paths.CniStateDir})`))

const resetKubeletIdentity = Command.make(
  "reset-kubelet-identity",
  {
    auth: Flag.Literals("auth", ["bootstrap-token", "kubeconfig", "exec-credential"]).pipe(
      Flag.withMetavar("MODE"),
      Flag.withDescription("Required: how the kubelet authenticates; only bootstrap-token removes anything")
    ),
    bootstrapKubeconfig: Flag.String("bootstrap-kubeconfig").pipe(
      Flag.withDefault(NodeStart.DefaultBootstrapKubeconfig),
      Flag.withMetavar("FILE"),
      // The file kept is compared as a host path: a relative one would match nothing and keep nothing.
      Flag.filter(
        (file) => file.startsWith("/"),
        (file) => `an absolute host path (as seen from the host's /), not ${JSON.stringify(file)}`
      ),
      Flag.withDescription(
        `The bootstrap kubeconfig (kept) in bootstrap-token mode (default: ${NodeStart.DefaultBootstrapKubeconfig})`
      )
    )
  },
  ({ auth, bootstrapKubeconfig }) => {
    // The reset reads only the mode's tag and the bootstrap kubeconfig's path;
    // no token or credential command is needed (or read).
    const mode: NodeStart.AuthMode =
      auth === "bootstrap-token"
        ? { _tag: "BootstrapToken", token: Redacted.make(""), bootstrapKubeconfig }
        : auth === "kubeconfig"
          ? { _tag: "Kubeconfig", path: Repave.KubeletKubeconfig }
          : {
              _tag: "ExecCredential",
              command: "unused",
              args: [],
              apiVersion: "client.authentication.k8s.io/v1",
              env: {}
            }
    return operate(
      "reset-kubelet-identity",
      withRoot("reset-kubelet-identity", (hostRoot) => Repave.resetKubeletIdentity({ auth: mode }, { hostRoot })),
      (r) => reportText("kubelet identity reset", r)
    )
  }
).pipe(Command.withDescription("Remove the kubelet's rotated client credentials (bootstrap-token mode only)"))

const teardownKubeletDir = Command.make("teardown-kubelet-dir", {}, () =>
  operate(
    "teardown-kubelet-dir",
    withRoot("teardown-kubelet-dir", (hostRoot) => Repave.teardownKubeletDir({ hostRoot })),
    (r) => `${reportText("pod directories torn down", r)}${keptText(r.kept)}`,
    { kept: (r) => r.kept.length }
  )
).pipe(Command.withDescription(`Unmount and remove each pod's directory below ${Repave.KubeletPodsDir}`))

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

/** Documented where `Cli.ts` exports it. */
export const parseChangedUnit = (word: string): RestartChanged.ChangedUnit | undefined => {
  const eq = word.indexOf("=")
  if (eq < 0) return word === "" ? undefined : { unit: word, changed: true }
  const unit = word.slice(0, eq)
  const value = word.slice(eq + 1).toLowerCase()
  if (unit === "") return undefined
  if (["true", "yes", "1", "changed"].includes(value)) return { unit, changed: true }
  if (["false", "no", "0", "unchanged"].includes(value)) return { unit, changed: false }
  return undefined
}

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
  ({ wasRunning, units, settle, jobTimeout, reload }) =>
    operate(
      "restart-changed",
      RestartChanged.restartChanged({
        wasRunning,
        units,
        reload,
        ...(settle === 0 ? {} : { settle: Duration.seconds(settle) }),
        ...(jobTimeout === 0 ? {} : { jobTimeout: Duration.seconds(jobTimeout) })
      }).pipe(
        Effect.as({
          wasRunning,
          restarted: wasRunning ? units.filter((u) => u.changed).map((u) => u.unit) : [],
          reload
        })
      ),
      (r) =>
        !r.wasRunning
          ? "the node was not running (no --was-running): nothing restarted; pass --was-running to restart the changed units"
          : r.restarted.length === 0
            ? "no unit's configuration changed: nothing restarted"
            : `restarted, in order: ${r.restarted.join(", ")}`
    )
).pipe(Command.withDescription("Restart, in order, the units whose configuration changed"))

const listenerFlags = {
  nodeListener: Flag.String("node-listener").pipe(
    Flag.withDefault(NodeStart.NodeListener),
    Flag.withMetavar("ADDRESS"),
    Flag.withDescription(
      `The node LocalDNS listener address, a dotted quad in 169.254.0.0/16 (default: ${NodeStart.NodeListener})`
    )
  ),
  clusterListener: Flag.String("cluster-listener").pipe(
    Flag.withDefault(NodeStart.ClusterListener),
    Flag.withMetavar("ADDRESS"),
    Flag.withDescription(
      `The cluster LocalDNS listener address, a dotted quad in 169.254.0.0/16 (default: ${NodeStart.ClusterListener})`
    )
  )
}

/**
 * The node start the LocalDNS steps take, from the listener flags: they read
 * only its listeners (and decode them before any command runs: a bad address
 * exits 2), so its name, API server and authentication are placeholders.
 */
const localDnsNodeStart = (nodeListener: string, clusterListener: string): NodeStart.NodeStart => ({
  nodeName: "hostnode-cli",
  apiServer: "https://hostnode-cli.invalid",
  auth: { _tag: "Kubeconfig", path: Repave.KubeletKubeconfig },
  localDns: { nodeListener, clusterListener }
})

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
  ({ nodeListener, clusterListener, kind }) =>
    operate(
      "localdns setup",
      LocalDns.setupLocalDnsNetwork(localDnsNodeStart(nodeListener, clusterListener), { interfaceKind: kind }).pipe(
        Effect.as({ listeners: [nodeListener, clusterListener], kind })
      ),
      (r) => `LocalDNS network ready: ${r.listeners.join(", ")} on a ${r.kind} interface, NOTRACK rules in place`
    )
).pipe(Command.withDescription("Create the LocalDNS interface and its NOTRACK rules"))

const localDnsCleanup = Command.make("cleanup", {}, () =>
  operate(
    "localdns cleanup",
    LocalDns.cleanupHostNetwork().pipe(Effect.as({})),
    () => "LocalDNS rules and interface removed"
  )
).pipe(Command.withDescription("Remove the LocalDNS rules and interface a stopped node left"))

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
      Flag.withDescription("How long to keep probing, in seconds (default: 120)")
    )
  },
  ({ nodeListener, clusterListener, timeout }) =>
    operate(
      "localdns await",
      LocalDns.awaitLocalDns(localDnsNodeStart(nodeListener, clusterListener), {
        timeout: Duration.seconds(timeout)
      }).pipe(Effect.as({ listeners: [nodeListener, clusterListener] })),
      (r) => `LocalDNS answers on ${r.listeners.join(", ")}`
    )
).pipe(Command.withDescription("Wait until both LocalDNS listeners answer"))

const localdns = Command.make("localdns", {}, missingSubcommand("localdns", ["setup", "cleanup", "await"])).pipe(
  Command.withDescription("Set up, clean up or wait for the LocalDNS network"),
  Command.withSubcommands([localDnsSetup, localDnsCleanup, localDnsAwait])
)

/** The one slot of the host and the container compositions. */
const HostSlot = "host"

const running = Command.make(
  "running",
  {
    slot: Argument.String("SLOT").pipe(
      Argument.withDefault(HostSlot),
      Argument.withDescription(`The node root to ask about: this node has one, "${HostSlot}" (the default)`)
    )
  },
  ({ slot }) =>
    operate(
      "running",
      // The host and the container compositions have one node root each: any other slot would be
      // answered about that one root, under a name that is not its own.
      slot !== HostSlot
        ? Effect.fail<UsageError | IsolationBackend.IsolationError>(
            new UsageError({
              reason: new UnknownSlot({ slot, known: HostSlot }),
              fix: "leave SLOT out: `hostnode running`"
            })
          )
        : Effect.suspend(() => IsolationBackend.running(Schema.decodeSync(IsolationBackend.SlotRef)(slot))).pipe(
            Effect.map((up) => ({ slot, running: up }))
          ),
      (r) => (r.running ? `the node stack of ${r.slot} is running` : `the node stack of ${r.slot} is not running`)
    )
).pipe(Command.withDescription("Say whether the node stack is up (its units are active)"))

/**
 * `hostnode demo`: the guided run of `Demo.ts` on its own simulated node
 * (never the host, whatever `--host-root` says). Quiet unless `--log-level`
 * is given: only warnings and errors are logged. Exits 1 when a claim does
 * not hold or a step fails.
 */
const demo = Command.make("demo", {}, () =>
  Effect.gen(function* () {
    const json = yield* Json
    const logLevel = yield* GlobalFlag.LogLevel
    const program = Option.isSome(logLevel)
      ? Demo.run
      : Demo.run.pipe(Effect.provideService(References.MinimumLogLevel, "Warn"))
    const result = yield* Effect.result(program)
    if (result._tag === "Failure") {
      yield* json
        ? Console.log(JSON.stringify({ ok: false, command: "demo", error: errorJson(result.failure) }))
        : Console.error(errorText("demo", result.failure))
      return yield* new CliExit({ code: 1 })
    }
    yield* Console.log(json ? JSON.stringify(Demo.toJson(result.success)) : Demo.renderText(result.success))
    if (!result.success.ok) return yield* new CliExit({ code: 1 })
  })
).pipe(
  Command.withDescription(
    "A guided run on a simulated node (in memory; this host is never touched): a failed upgrade rolled back, the upgrade succeeding, a repave, and every claim checked"
  )
)

export const subcommands = [
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

/**
 * The root command. Run with no subcommand it says where to go next instead
 * of failing.
 */
export const hostnode = Command.make("hostnode", {}, () =>
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
  Command.withGlobalFlags([HostRoot, Container, Json, DryRunFlag, Timeout]),
  Command.withGlobalFlags([LogFormat, MetricsFile])
)

/** Documented where `Cli.ts` exports it. */
export type Services =
  | Command.Environment
  | Directory.Directories
  | Mounter.Mounter
  | Systemd.Systemd
  | DnsResolvers.DnsResolvers
  | IsolationBackend.IsolationBackend
