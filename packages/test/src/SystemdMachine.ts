/**
 * A real systemd for tests: systemd 252 booted as PID 1 of its own pid, mount
 * and cgroup namespaces, driven through `nsenter` and killed by its pid when
 * the scope closes. Its root is a throwaway overlay (lower layer `/`, upper on
 * a fresh tmpfs), never the real file system: a normal boot runs
 * systemd-tmpfiles, which would empty `/tmp` for the whole machine. The test
 * reaches the machine's files at `/proc/<pid>/root` and runs commands in it
 * with a spawner wrapped in `nsenter -t <pid> -m -p`. How the boot is built:
 * docs/design/simulated-host.md.
 *
 * @since 0.1.0
 */
import { HostCommand } from "@hostnode/core"
import { Clock, Context, Duration, Effect, FileSystem, Layer, Schedule, type Scope, Stream } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import { ChildProcess } from "effect/process"

/**
 * A booted test systemd.
 *
 * @category services
 * @since 0.1.0
 */
export interface SystemdMachine {
  /** The host pid of the machine's systemd (its PID 1). */
  readonly pid: number
  /** Where the machine's root file system is visible from the host: a host root for the library's operations. */
  readonly hostRoot: string
  /** The prefix that runs a command inside the machine (`nsenter -t <pid> -m -p --`). */
  readonly nsenter: ReadonlyArray<string>
  /** How long the boot took, until `systemctl is-system-running` answered. */
  readonly bootMillis: number
}

/**
 * The key of the {@link SystemdMachine} service.
 *
 * @category services
 * @since 0.1.0
 */
export const SystemdMachine = Context.Service<SystemdMachine>("@hostnode/test/SystemdMachine")

/**
 * The empty target the machine boots into: nothing but systemd itself starts.
 *
 * @category models
 * @since 0.1.0
 */
export const BootTarget = "hostnode-test.target"

/**
 * The machine could not be booted.
 *
 * @since 0.1.0
 */
class SystemdMachineError extends Error {
  /**
   * The error's name in stack traces and logs.
   *
   * @since 0.1.0
   */
  override readonly name = "SystemdMachineError"
}

// Runs on the host, before the namespaces exist: moves itself into a cgroup made
// for this machine in the hierarchies systemd uses, so that with a cgroup
// namespace the machine's systemd sees that cgroup as its root and every cgroup
// it creates lands below it (and is removed with it).
const outerScript = `set -eu
base="$1"; token="$2"; inner="$3"; keep="$4"; net="$5"; disk="$6"
for h in systemd unified; do
  d="/sys/fs/cgroup/$h/hostnode-$token"
  mkdir -p "$d"
  echo $$ > "$d/cgroup.procs"
done
exec unshare --cgroup --pid --fork --mount $net --propagation private sh -c "$inner" sh "$base" "$keep" "$net" "$disk"`

// Runs as PID 1 of the new namespaces. See the module comment for why each step is there.
const innerScript = `set -eu
base="$1"; keep="$2"; net="$3"; disk="$4"
if [ -n "$net" ]; then ip link set lo up; fi
mount --make-rprivate /
if [ -n "$disk" ]; then base="$disk"; else mount -t tmpfs -o mode=755 tmpfs "$base"; fi
mkdir -p "$base/upper" "$base/work" "$base/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$base/upper,workdir=$base/work" "$base/root"
r="$base/root"
mount -t proc proc "$r/proc"
mount -t sysfs sysfs "$r/sys"
mount -t tmpfs -o mode=755 tmpfs "$r/sys/fs/cgroup"
mkdir "$r/sys/fs/cgroup/systemd" "$r/sys/fs/cgroup/unified"
mount -t cgroup -o none,name=systemd cgroup "$r/sys/fs/cgroup/systemd"
mount -t cgroup2 cgroup2 "$r/sys/fs/cgroup/unified"
mount --rbind /dev "$r/dev"
mount -t tmpfs -o mode=755 tmpfs "$r/run"
mount -t tmpfs -o mode=1777 tmpfs "$r/tmp"
if [ -n "$keep" ]; then mkdir -p "$r$keep" && mount --bind "$keep" "$r$keep"; fi
mkdir -p "$r/run/systemd/system" "$r/oldroot"
printf '[Unit]\\nDescription=hostnode test target\\n' > "$r/run/systemd/system/${BootTarget}"
cd "$r"
pivot_root . oldroot
umount -l /oldroot
exec /lib/systemd/systemd --system --unit=${BootTarget}`

// The machine's /tmp is a fresh tmpfs, so a checkout that lives below the
// host's /tmp (where CI or a developer may clone) would be missing inside it,
// and with it the Node and the sources a test runs in the machine. Such a
// checkout (the top directory below /tmp holding the working directory) is
// bound in at the same path; anything else of the host is there already
// through the overlay.
const visibleCheckout = (): string => {
  const [, top, name] = process.cwd().split("/")
  return top === "tmp" && name !== undefined && name !== "" ? `/tmp/${name}` : ""
}

// SIGKILL to a pid this fixture started. ESRCH (already gone) is fine.
const kill = (pid: number) =>
  Effect.try({ try: () => process.kill(pid, "SIGKILL"), catch: () => undefined }).pipe(Effect.ignore)

const retrying = Schedule.spaced(Duration.millis(50))

/**
 * Options of {@link bootWith}.
 *
 * @category models
 * @since 0.2.0
 */
export interface BootOptions {
  /**
   * The machine's network: `"shared"` (the default) is the namespace of the
   * process that boots it; `"private"` is a new network namespace of its own
   * with only `lo`, up, as a container with its own network has (what the
   * LocalDNS steps change, then, is the machine's alone).
   *
   * @since 0.2.0
   */
  readonly network?: "shared" | "private" | undefined
  /**
   * A directory of the booting host (the test's own) that holds the
   * machine's writes (the overlay's upper and work layers) instead of a
   * fresh tmpfs: a machine booted again with the same directory is the same
   * container restarted, with a new pid, its files as they were left.
   *
   * @since 0.4.0
   */
  readonly disk?: string | undefined
  /**
   * Boot in the pid namespace of another machine (its host pid): that
   * machine sees every process of this one, as a host sees its containers'.
   * What an attack needs whose target is the host's systemd, which accepts a
   * connection only from a process it can see.
   *
   * @since 0.4.0
   */
  readonly inPidNamespaceOf?: number | undefined
}

/**
 * Boots a machine; the scope kills its systemd by pid (which ends every
 * process of its pid namespace and with them its mounts) and removes its
 * cgroups, also when the boot itself failed.
 *
 * @category constructors
 * @since 0.2.0
 */
export const bootWith: (
  options?: BootOptions
) => Effect.Effect<
  SystemdMachine,
  SystemdMachineError,
  Scope.Scope | ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem
> = Effect.fn("SystemdMachine.bootWith")(function* (options?: BootOptions) {
  const fs = yield* FileSystem.FileSystem
  const base = yield* fs
    .makeTempDirectoryScoped({ prefix: "hostnode-systemd-" })
    .pipe(Effect.mapError((e) => new SystemdMachineError(e.message)))
  const token = `${process.pid}-${base.slice(base.lastIndexOf("-") + 1)}`
  const cgroups = ["systemd", "unified"].map((h) => `/sys/fs/cgroup/${h}/hostnode-${token}`)
  const started = yield* Clock.currentTimeMillis
  const stderr: Array<string> = []
  const childOf = (pid: number) =>
    fs.readFileString(`/proc/${pid}/task/${pid}/children`).pipe(
      Effect.map((text) => Number.parseInt(text.trim().split(" ")[0] ?? "", 10)),
      Effect.orElseSucceed(() => Number.NaN)
    )
  // The machine's init: the boot script's child, or with `inPidNamespaceOf` its grandchild (nsenter forks first).
  const initOf = (pid: number) =>
    options?.inPidNamespaceOf === undefined
      ? childOf(pid)
      : Effect.flatMap(childOf(pid), (p) => (Number.isNaN(p) ? Effect.succeed(p) : childOf(p)))
  const removeCgroups = Effect.gen(function* () {
    const dirs: Array<string> = []
    for (const root of cgroups) {
      const below = yield* fs.readDirectory(root, { recursive: true }).pipe(Effect.orElseSucceed(() => []))
      for (const rel of below) dirs.push(`${root}/${rel}`)
      dirs.push(root)
    }
    const existing = yield* Effect.filter(dirs, (d) =>
      fs.stat(d).pipe(
        Effect.map((i) => i.type === "Directory"),
        Effect.orElseSucceed(() => false)
      )
    )
    // Deepest first: a cgroup can only be removed once it has no children.
    existing.sort((a, b) => b.split("/").length - a.split("/").length)
    if (existing.length === 0) return
    const r = yield* HostCommand.run("rmdir", ["--", ...existing]).pipe(Effect.orElseSucceed(() => ({ exitCode: 1 })))
    if (r.exitCode !== 0) return yield* Effect.fail("cgroups busy")
  }).pipe(Effect.retry({ schedule: retrying, times: 100 }), Effect.ignore)

  const handle = yield* Effect.acquireRelease(
    ChildProcess.make(
      options?.inPidNamespaceOf === undefined ? "sh" : "nsenter",
      [
        ...(options?.inPidNamespaceOf === undefined
          ? []
          : [`--pid=/proc/${options.inPidNamespaceOf}/ns/pid`, "--", "sh"]),
        "-c",
        outerScript,
        "sh",
        base,
        token,
        innerScript,
        visibleCheckout(),
        options?.network === "private" ? "--net" : "",
        options?.disk ?? ""
      ],
      {
        stdout: "ignore",
        stderr: "pipe"
      }
    ).pipe(Effect.mapError((e) => new SystemdMachineError(`cannot start the boot script: ${e.message}`))),
    (h) =>
      Effect.gen(function* () {
        const pid = yield* initOf(h.pid)
        if (!Number.isNaN(pid)) yield* kill(pid)
        yield* kill(h.pid)
        yield* h.exitCode.pipe(Effect.timeout(Duration.seconds(10)), Effect.ignore)
        yield* removeCgroups
      })
  )
  yield* handle.stderr.pipe(
    Stream.decodeText(),
    Stream.runForEach((chunk) => Effect.sync(() => stderr.push(chunk))),
    Effect.forkScoped
  )
  const failed = (why: string) =>
    new SystemdMachineError(
      `test systemd did not boot: ${why}${stderr.length > 0 ? `; boot script said: ${stderr.join("").trim()}` : ""}`
    )
  // The boot script forks helpers (mkdir) before it execs unshare, so a child
  // counts only once it is systemd itself.
  const isSystemd = (p: number) =>
    fs.readFileString(`/proc/${p}/comm`).pipe(
      Effect.map((comm) => comm.trim() === "systemd"),
      Effect.orElseSucceed(() => false)
    )
  const pid = yield* initOf(handle.pid).pipe(
    Effect.filterOrFail(
      (p) => !Number.isNaN(p),
      () => "no child yet"
    ),
    Effect.flatMap((p) =>
      Effect.flatMap(isSystemd(p), (ok) => (ok ? Effect.succeed(p) : Effect.fail("not systemd yet")))
    ),
    Effect.retry({ schedule: retrying, times: 200 }),
    Effect.mapError(() => failed("the namespace's init process never appeared"))
  )
  const nsenter = ["nsenter", "-t", String(pid), "-m", "-p", "--"]
  const [head, ...rest] = nsenter
  yield* HostCommand.run(head ?? "nsenter", [...rest, "systemctl", "is-system-running"]).pipe(
    Effect.filterOrFail(
      (o) => ["running", "degraded"].includes(o.stdout.trim()),
      (o) => o.stdout.trim() || o.stderr.trim()
    ),
    Effect.retry({ schedule: retrying, times: 600 }),
    Effect.mapError((e) =>
      failed(`systemctl is-system-running never said running (last: ${typeof e === "string" ? e : e.message})`)
    )
  )
  const bootMillis = (yield* Clock.currentTimeMillis) - started
  return { pid, hostRoot: `/proc/${pid}/root`, nsenter, bootMillis } satisfies SystemdMachine
})

/**
 * {@link bootWith} with the default options: the machine shares the booting process's network.
 *
 * @since 0.2.0
 */
const boot: Effect.Effect<
  SystemdMachine,
  SystemdMachineError,
  Scope.Scope | ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem
> = bootWith()

/**
 * A layer with one booted machine for the whole scope of the layer (one test file).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<
  SystemdMachine,
  SystemdMachineError,
  ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem
> = Layer.effect(SystemdMachine, boot)

/**
 * {@link layer} for a machine booted with `options`: `{ network: "private" }`
 * for one with a network namespace of its own.
 *
 * @category layers
 * @since 0.2.0
 */
export const layerWith = (
  options?: BootOptions
): Layer.Layer<SystemdMachine, SystemdMachineError, ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem> =>
  Layer.effect(SystemdMachine, bootWith(options))
