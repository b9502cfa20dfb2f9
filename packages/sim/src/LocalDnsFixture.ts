/**
 * What the LocalDNS conformance suite needs from a host besides the code under
 * test: looking at links and at the `raw` table as a person would (`ip -j
 * addr`, `iptables -t raw -S`), planting links and rules of someone else, and
 * running a DNS server on chosen addresses. `layerReal` runs `ip`, `iptables`
 * and `dnsmasq` through the spawner in context, in a private network namespace
 * only (see `Gate`), parses what it checks itself, and undoes everything it
 * started or planted when its scope closes; `MemoryNetwork.layerLocalDnsFixture`
 * is the simulated one.
 *
 * @since 0.1.0
 */
import { HostCommand } from "@hostnode/core"
import { localDnsRuleComment as RuleComment } from "@hostnode/core/Programs"
import { Context, Effect, FileSystem, Layer, Ref, Schedule, type Scope, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"

/**
 * A fixture step that could not be done. Tests treat it as a defect of the setup, not of the code under test.
 *
 * @category errors
 * @since 0.1.0
 */
export class LocalDnsFixtureError extends Error {
  /**
   * The error's name in stack traces and logs.
   *
   * @since 0.1.0
   */
  override readonly name = "LocalDnsFixtureError"
}

/**
 * A link as the host reports it.
 *
 * @since 0.1.0
 */
interface LinkView {
  readonly index: number
  readonly kind: string
  readonly up: boolean
  /** IPv4 addresses as `address/prefix`, sorted. */
  readonly ipv4: ReadonlyArray<string>
}

/**
 * A DNS server started by {@link LocalDnsFixture.dnsServer}.
 *
 * @since 0.1.0
 */
interface DnsServer {
  /** The process id on the real host (a made-up one on a simulated host). */
  readonly pid: number
  /** Whether it still runs. On the real host: the child has not exited, or a `dnsmasq` still has its pid. */
  readonly running: Effect.Effect<boolean>
  /** Stops it now (the scope would anyway). Idempotent. */
  readonly stop: Effect.Effect<void>
}

/**
 * Makes and inspects the host state around the LocalDNS phases.
 *
 * @category services
 * @since 0.1.0
 */
export interface LocalDnsFixture {
  /** The link kind this host can create for the LocalDNS interface (`bridge` where the kernel lacks `dummy`). */
  readonly interfaceKind: "dummy" | "bridge"
  /** The link `name`, or `undefined` when there is none. */
  readonly link: (name: string) => Effect.Effect<LinkView | undefined>
  /** The rules of the `raw` table, as the `-A` lines of `iptables -t raw -S`. */
  readonly rawRules: Effect.Effect<ReadonlyArray<string>>
  /** Appends a rule to a `raw` chain (argv words after the chain); it is deleted, by spec, when the scope closes. */
  readonly addRule: (chain: string, spec: ReadonlyArray<string>) => Effect.Effect<void, never, Scope.Scope>
  /**
   * Creates link `name`: of {@link interfaceKind} when `sameKind`, else of a
   * kind the LocalDNS interface never is; with the given IPv4 addresses
   * (`a.b.c.d/n`), up or down.
   */
  readonly createLink: (
    name: string,
    options: { readonly sameKind: boolean; readonly ipv4: ReadonlyArray<string>; readonly up: boolean }
  ) => Effect.Effect<void>
  /**
   * Makes sure link `name` and every rule carrying the comment `hostnode:localdns` are
   * absent now and again when the scope closes, so a test neither sees
   * another's leftovers nor leaves its own.
   */
  readonly cleanSlate: (name: string) => Effect.Effect<void, never, Scope.Scope>
  /** Starts a DNS server answering on `addresses` (port 53); stopped when the scope closes. */
  readonly dnsServer: (addresses: ReadonlyArray<string>) => Effect.Effect<DnsServer, never, Scope.Scope>
}

/**
 * The key of the {@link LocalDnsFixture} service.
 *
 * @category services
 * @since 0.1.0
 */
export const LocalDnsFixture = Context.Service<LocalDnsFixture>("@hostnode/sim/LocalDnsFixture")

/**
 * Options of {@link layerReal}.
 *
 * @since 0.1.0
 */
interface RealOptions {
  /** The kind to create the interface as (default `bridge`: this project's test kernels lack `dummy`). */
  readonly interfaceKind?: "dummy" | "bridge" | undefined
}

type Spawner = ChildProcessSpawner.ChildProcessSpawner

const must = (command: string, args: ReadonlyArray<string>, ok: (o: HostCommand.Output) => boolean = () => false) =>
  HostCommand.run(command, args).pipe(
    Effect.orDie,
    Effect.flatMap((o) =>
      o.exitCode === 0 || ok(o)
        ? Effect.succeed(o)
        : Effect.die(new LocalDnsFixtureError(`${command} ${args.join(" ")} exited ${o.exitCode}: ${o.stderr.trim()}`))
    )
  )

const noDevice = (o: HostCommand.Output) => /does not exist|cannot find device/i.test(o.stderr)
const noRule = (o: HostCommand.Output) => o.exitCode === 1 && /bad rule|does a matching rule exist/i.test(o.stderr)

interface IpJsonLink {
  readonly ifindex: number
  readonly ifname: string
  readonly flags?: ReadonlyArray<string>
  readonly linkinfo?: { readonly info_kind?: string }
  readonly addr_info?: ReadonlyArray<{ readonly family?: string; readonly local?: string; readonly prefixlen?: number }>
}

const realLink = (name: string) =>
  Effect.gen(function* () {
    const o = yield* must("ip", ["-j", "-d", "addr", "show", "dev", name], noDevice)
    if (o.exitCode !== 0) return undefined
    const links = yield* Effect.try({
      try: () => JSON.parse(o.stdout) as ReadonlyArray<IpJsonLink>,
      catch: (e) => new LocalDnsFixtureError(`ip -j printed no JSON: ${String(e)}`)
    }).pipe(Effect.orDie)
    const link = links.find((l) => l.ifname === name)
    if (link === undefined) return undefined
    return {
      index: link.ifindex,
      kind: link.linkinfo?.info_kind ?? "",
      up: (link.flags ?? []).includes("UP"),
      ipv4: (link.addr_info ?? [])
        .filter((a) => a.family === "inet")
        .map((a) => `${a.local}/${a.prefixlen}`)
        .sort()
    } satisfies LinkView
  })

const rawLines = must("iptables", ["-w", "-t", "raw", "-S"]).pipe(
  Effect.map((o) => o.stdout.split("\n").filter((l) => l.startsWith("-A ")))
)

// Our comment has no blanks, so our lines split on spaces; iptables prints it
// quoted because of the ':'.
const ourComment = `--comment "${RuleComment}"`

const removeOurs = (name: string) =>
  Effect.gen(function* () {
    for (const line of yield* rawLines) {
      const words = line.split(" ")
      if (!words.includes("--comment") || !` ${line} `.includes(` ${ourComment} `)) continue
      const spec = words.slice(1).map((w) => (w === `"${RuleComment}"` ? RuleComment : w))
      yield* must("iptables", ["-w", "-t", "raw", "-D", ...spec], noRule)
    }
    yield* must("ip", ["link", "del", "dev", name], noDevice)
  })

const procComm = (fs: FileSystem.FileSystem, pid: number) =>
  fs.readFileString(`/proc/${pid}/comm`).pipe(
    Effect.map((s) => s.trim()),
    Effect.orElseSucceed(() => "")
  )

/**
 * The real fixture: `ip` and `iptables` in this process's network namespace
 * (which must be private: the test runner's `unshare --net`), and `dnsmasq`
 * as the DNS server, run in the foreground as a child of this process.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerReal = (
  options?: RealOptions
): Layer.Layer<LocalDnsFixture, never, Spawner | FileSystem.FileSystem> =>
  Layer.effect(
    LocalDnsFixture,
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
      // Only these two services: the whole build-time context would also
      // carry the layer's Scope, and a test's scoped resources (dnsmasq,
      // planted rules) would then live until the layer closes.
      const host = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        effect.pipe(
          Effect.provideService(ChildProcessSpawner.ChildProcessSpawner, spawner),
          Effect.provideService(FileSystem.FileSystem, fs)
        )
      const kind = options?.interfaceKind ?? "bridge"

      const dnsServer = (addresses: ReadonlyArray<string>) =>
        Effect.gen(function* () {
          const dir = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-dnsmasq-" }).pipe(Effect.orDie)
          const pidFile = `${dir}/dnsmasq.pid`
          const args = [
            "--keep-in-foreground",
            "--conf-file=/dev/null",
            "--no-resolv",
            "--no-hosts",
            "--bind-interfaces",
            ...addresses.map((a) => `--listen-address=${a}`),
            "--port=53",
            `--pid-file=${pidFile}`,
            "--user=root",
            "--group=root"
          ]
          const handle = yield* spawner
            .spawn(
              ChildProcess.make("dnsmasq", args, {
                stdin: "ignore",
                stdout: "ignore",
                stderr: "pipe",
                // in this process's group: signals go to dnsmasq's own pid
                detached: false
              })
            )
            .pipe(Effect.orDie)
          const pid = Number(handle.pid)
          const stderr = yield* Ref.make("")
          yield* handle.stderr.pipe(
            Stream.decodeText(),
            Stream.runForEach((chunk) => Ref.update(stderr, (s) => s + chunk)),
            Effect.ignore,
            Effect.forkScoped
          )
          const running = Effect.gen(function* () {
            const child = yield* handle.isRunning.pipe(Effect.orElseSucceed(() => false))
            return child || (yield* procComm(fs, pid)) === "dnsmasq"
          })
          const stop = Effect.gen(function* () {
            if (yield* handle.isRunning.pipe(Effect.orElseSucceed(() => false))) {
              yield* handle.kill({ killSignal: "SIGTERM" }).pipe(Effect.ignore)
              yield* handle.exitCode.pipe(Effect.ignore)
            }
          })
          yield* Effect.addFinalizer(() => stop)
          // Ready once dnsmasq has bound its sockets and written its pid file.
          yield* Effect.gen(function* () {
            if (!(yield* handle.isRunning.pipe(Effect.orElseSucceed(() => false)))) {
              yield* Effect.sleep("50 millis")
              return yield* Effect.die(
                new LocalDnsFixtureError(`dnsmasq ${args.join(" ")} exited: ${(yield* Ref.get(stderr)).trim()}`)
              )
            }
            const written = yield* fs.readFileString(pidFile).pipe(Effect.orElseSucceed(() => ""))
            if (written.trim() !== String(pid)) return yield* Effect.fail("not yet" as const)
          }).pipe(Effect.retry({ schedule: Schedule.spaced("20 millis"), times: 250 }), Effect.orDie)
          return { pid, running, stop } satisfies DnsServer
        }).pipe(host)

      return LocalDnsFixture.of({
        interfaceKind: kind,
        link: (name) => realLink(name).pipe(host),
        rawRules: rawLines.pipe(host),
        addRule: (chain, spec) =>
          Effect.acquireRelease(must("iptables", ["-w", "-t", "raw", "-A", chain, ...spec]), () =>
            must("iptables", ["-w", "-t", "raw", "-D", chain, ...spec], noRule).pipe(Effect.ignore)
          ).pipe(Effect.asVoid, host),
        createLink: (name, o) =>
          Effect.gen(function* () {
            if (o.sameKind) yield* must("ip", ["link", "add", "name", name, "type", kind])
            else
              yield* must("ip", [
                "link",
                "add",
                "name",
                name,
                "type",
                "veth",
                "peer",
                "name",
                `${name.slice(0, 11)}peer`
              ])
            for (const a of o.ipv4) yield* must("ip", ["addr", "add", a, "dev", name])
            yield* must("ip", ["link", "set", "dev", name, o.up ? "up" : "down"])
          }).pipe(host),
        cleanSlate: (name) =>
          Effect.acquireRelease(removeOurs(name), () => removeOurs(name).pipe(Effect.ignore)).pipe(host),
        dnsServer
      })
    })
  )
