/**
 * `--dry-run` as layers: each wraps a real service already in context
 * (FileSystem, Mounter, ChildProcessSpawner, Systemd) so that reads go
 * through unchanged while every write, removal, unmount, command and unit job
 * is appended to the shared {@link DryRunPlan} instead of being performed.
 * The operations of @hostnode/core know nothing about it: they run as they
 * would, on services that only pretend to change the host.
 *
 * Boundary: a dry run reads the host as it is, so a step that depends on an
 * earlier recorded change (a directory removed, then listed again) sees the
 * unchanged host; the plan is what the operation asked for against today's
 * state, in order.
 *
 * @since 0.1.0
 */
import { Mounter, Systemd } from "@hostnode/core"
import { Context, Effect, FileSystem, Layer, Ref, Schema, Sink, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"

/** One recorded step: which service was asked, what for, on which target. */
export const PlanStep = Schema.Struct({
  service: Schema.Literals(["FileSystem", "Mounter", "ChildProcessSpawner", "Systemd"]),
  action: Schema.String,
  target: Schema.String
})

/** One recorded step of a dry run. */
export type PlanStep = typeof PlanStep.Type

/**
 * The plan a dry run builds, shared by every wrapping layer so that the steps
 * of all services come out in the order they were asked for.
 */
export class DryRunPlan extends Context.Service<
  DryRunPlan,
  {
    readonly steps: Ref.Ref<ReadonlyArray<PlanStep>>
    readonly record: (step: PlanStep) => Effect.Effect<void>
  }
>()("@hostnode/cli/DryRunPlan") {
  /** An empty plan. */
  static readonly layer = Layer.effect(
    DryRunPlan,
    Effect.gen(function* () {
      const steps = yield* Ref.make<ReadonlyArray<PlanStep>>([])
      return DryRunPlan.of({
        steps,
        record: (step) => Ref.update(steps, (s) => [...s, step])
      })
    })
  )
}

/** The recorded steps so far, oldest first. */
export const steps: Effect.Effect<ReadonlyArray<PlanStep>, never, DryRunPlan> = Effect.flatMap(
  Effect.service(DryRunPlan),
  (plan) => Ref.get(plan.steps)
)

/** Renders one step for a person: `FileSystem remove /etc/cni/net.d/10-x.conf`. */
export const renderStep = (step: PlanStep): string => `${step.service} ${step.action} ${step.target}`

const isWriteFlag = (flag: FileSystem.OpenFlag | undefined): boolean => flag !== undefined && flag !== "r"

/**
 * FileSystem whose reads are the real ones and whose changes are recorded.
 * A file opened for writing is opened on `/dev/null` instead, so what the
 * operation writes into it goes nowhere; temporary files and directories are
 * recorded and given a name under `/nonexistent/hostnode-dry-run`.
 */
export const layerFileSystem: Layer.Layer<FileSystem.FileSystem, never, FileSystem.FileSystem | DryRunPlan> =
  Layer.effect(
    FileSystem.FileSystem,
    Effect.gen(function* () {
      const real = yield* FileSystem.FileSystem
      const plan = yield* DryRunPlan
      let temps = 0
      const record = (action: string, target: string) => plan.record({ service: "FileSystem", action, target })
      const tempName = () => `/nonexistent/hostnode-dry-run/tmp-${++temps}`
      return FileSystem.FileSystem.of({
        ...real,
        chmod: (path, mode) => record(`chmod ${mode.toString(8)}`, path),
        chown: (path, uid, gid) => record(`chown ${uid}:${gid}`, path),
        copy: (from, to) => record(`copy ${from} to`, to),
        copyFile: (from, to) => record(`copy file ${from} to`, to),
        link: (from, to) => record(`hard-link ${from} at`, to),
        makeDirectory: (path, options) =>
          record(options?.recursive === true ? "make directories" : "make directory", path),
        makeTempDirectory: () => Effect.sync(tempName).pipe(Effect.tap((p) => record("make temporary directory", p))),
        makeTempDirectoryScoped: () =>
          Effect.sync(tempName).pipe(Effect.tap((p) => record("make temporary directory", p))),
        makeTempFile: () => Effect.sync(tempName).pipe(Effect.tap((p) => record("make temporary file", p))),
        makeTempFileScoped: () => Effect.sync(tempName).pipe(Effect.tap((p) => record("make temporary file", p))),
        open: (path, options) =>
          isWriteFlag(options?.flag)
            ? record(`write (open ${options?.flag})`, path).pipe(Effect.andThen(real.open("/dev/null", { flag: "w" })))
            : real.open(path, options),
        remove: (path, options) => record(options?.recursive === true ? "remove recursively" : "remove", path),
        rename: (from, to) => record(`rename ${from} to`, to),
        sink: (path) => Sink.drain.pipe(Sink.mapEffect(() => record("write", path))),
        symlink: (target, path) => record(`symlink to ${target} at`, path),
        truncate: (path) => record("truncate", path),
        utimes: (path) => record("set times of", path),
        writeFile: (path) => record("write", path),
        writeFileString: (path) => record("write", path)
      })
    })
  )

/** Mounter that records each unmount and reports it as done. */
export const layerMounter: Layer.Layer<Mounter.Mounter, never, DryRunPlan> = Layer.effect(
  Mounter.Mounter,
  Effect.gen(function* () {
    const plan = yield* DryRunPlan
    return Mounter.Mounter.of({
      unmount: (targets, options) =>
        Effect.forEach(targets, (target) =>
          plan
            .record({ service: "Mounter", action: options.lazy === true ? "unmount (lazy)" : "unmount", target })
            .pipe(Effect.as({ _tag: "Unmounted" as const, target }))
        )
    })
  })
)

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
      return args.includes("-S") || args.includes("-L") || args.includes("--list") || args.includes("--list-rules")
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

/**
 * ChildProcessSpawner that runs read-only commands ({@link isReadOnly}) for
 * real and records every other one, which then "exits 0" with no output.
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
    let pid = 0
    return ChildProcessSpawner.make((command) => {
      const line = commandLine(command)
      if (ChildProcess.isStandardCommand(command) && isReadOnly(line.name, line.args)) return real.spawn(command)
      return plan
        .record({ service: "ChildProcessSpawner", action: "run", target: [line.name, ...line.args].join(" ") })
        .pipe(Effect.andThen(Effect.sync(() => succeeded(++pid))))
    })
  })
)

/** Systemd whose queries are real and whose jobs and reloads are recorded. */
export const layerSystemd: Layer.Layer<Systemd.Systemd, never, Systemd.Systemd | DryRunPlan> = Layer.effect(
  Systemd.Systemd,
  Effect.gen(function* () {
    const real = yield* Systemd.Systemd
    const plan = yield* DryRunPlan
    const job = (verb: string) => (unit: string) => plan.record({ service: "Systemd", action: verb, target: unit })
    return Systemd.Systemd.of({
      ...real,
      start: job("start"),
      stop: job("stop"),
      restart: job("restart"),
      reload: job("reload"),
      daemonReload: plan.record({ service: "Systemd", action: "daemon-reload", target: "" })
    })
  })
)

/**
 * All four wrappers over the real services in context, sharing the
 * {@link DryRunPlan} in context.
 */
export const layer: Layer.Layer<
  FileSystem.FileSystem | Mounter.Mounter | ChildProcessSpawner.ChildProcessSpawner | Systemd.Systemd,
  never,
  FileSystem.FileSystem | ChildProcessSpawner.ChildProcessSpawner | Systemd.Systemd | DryRunPlan
> = Layer.mergeAll(layerFileSystem, layerMounter, layerSpawner, layerSystemd)
