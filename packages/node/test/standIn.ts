/**
 * Stand-in containers for the container-trust tests (`fixtures/standin.c`,
 * built at test time with the system C compiler): a process in new mount and
 * pid namespaces whose root is a directory of the test, with a pod volume
 * (a tmpfs holding a token) mounted in its namespace; and a "victim" that
 * takes a given pid (clone3 with `set_tid`) in a mount namespace of its own,
 * with the same layout below another directory. An agent that finds a
 * container by its pid after it exited finds the victim there. Each is
 * killed by its own pid when its scope closes.
 */
import { fileURLToPath } from "node:url"
import { HostCommand } from "@hostnode/core"
import { Effect, FileSystem, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"

const source = fileURLToPath(new URL("./fixtures/standin.c", import.meta.url))

/** Compiles the fixture; a failure to compile is a defect of the test setup. */
export const build = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-standin-" }).pipe(Effect.orDie)
  const binary = `${dir}/standin`
  const out = yield* HostCommand.run("cc", ["-O2", "-Wall", "-o", binary, source]).pipe(Effect.orDie)
  if (out.exitCode !== 0) return yield* Effect.die(new Error(`cc failed: ${out.stderr}`))
  return binary
})

/** The node state every stand-in has below its root, and what each file says. */
export const Files: Readonly<Record<string, string>> = {
  "/etc/cni/net.d/10-standin.conflist": "{}\n",
  "/var/lib/cni/networks/standin/10.244.0.9": "c\n",
  "/var/lib/kubelet/pods/p/etc-hosts": "hosts\n",
  "/var/lib/kubelet/kubeconfig": "kubeconfig\n",
  "/var/lib/kubelet/pki/kubelet-client-2026-12-01-00-00-00.pem": "cert\n"
}

/** Where the stand-in mounts its pod volume, and the token in it. */
export const Volume = "/var/lib/kubelet/pods/p/volumes/v"

/** Lays the node state out below `root` (a fresh directory), the volume's mount point included. */
export const layout = (root: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    yield* fs.makeDirectory(`${root}${Volume}`, { recursive: true })
    for (const [path, text] of Object.entries(Files)) {
      yield* fs.makeDirectory(`${root}${path.slice(0, path.lastIndexOf("/"))}`, { recursive: true })
      yield* fs.writeFileString(`${root}${path}`, text)
    }
  }).pipe(Effect.orDie)

/** A running stand-in: its host pid, and a kill that returns once it is gone and reaped. */
export interface StandIn {
  readonly pid: number
  readonly kill: Effect.Effect<void>
}

/**
 * Starts the fixture with `args` and reads the pid it prints; `undefined`
 * when a victim's pid was taken by something else. Killed when the scope closes.
 */
const start = (binary: string, args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
    const handle = yield* spawner.spawn(ChildProcess.make(binary, args)).pipe(Effect.orDie)
    const first = yield* handle.stdout.pipe(Stream.decodeText(), Stream.splitLines, Stream.runHead, Effect.orDie)
    const line = first._tag === "Some" ? first.value.trim() : ""
    if (line === "taken") return undefined
    const pid = Number(line)
    if (!Number.isSafeInteger(pid) || pid <= 0) {
      const code = yield* handle.exitCode.pipe(Effect.orDie)
      return yield* Effect.die(new Error(`standin ${args.join(" ")} failed (exit ${code})`))
    }
    // By its own pid; the fixture's parent reaps it and exits.
    const kill = Effect.gen(function* () {
      yield* Effect.try(() => process.kill(pid, "SIGKILL")).pipe(Effect.ignore)
      yield* handle.exitCode.pipe(Effect.ignore)
    })
    yield* Effect.addFinalizer(() => kill)
    return { pid, kill } satisfies StandIn
  })

/** A stand-in container whose root is `root` (laid out with {@link layout}). */
export const container = (binary: string, root: string) =>
  Effect.flatMap(start(binary, ["container", root]), (s) =>
    s === undefined ? Effect.die(new Error("a container has no pid to take")) : Effect.succeed(s)
  )

/** A process with host pid `pid` and the stand-in's layout below `root`, or `undefined` when `pid` is taken. */
export const victim = (binary: string, pid: number, root: string) => start(binary, ["victim", String(pid), root])
