/**
 * The container composition attacked as a hostile container or a careless
 * operator would: a container that links its systemd sockets to another
 * machine's, a container that exits while a composition is kept and whose
 * pid the kernel gives to a process in another mount namespace, a pid in
 * the agent's own namespace, a mount's parent swapped for a link while the
 * in-namespace mounter detaches strictly, and a snapshot restored after the
 * container restarted or in another container. Real parts throughout:
 * throwaway systemd machines (`SystemdMachine`), stand-in containers and a
 * process that takes the exact pid (`fixtures/standin.c`), and a concurrent
 * writer (`fixtures/racer.c`). Loop counts come from `Gate.loops`.
 */

import * as Net from "node:net"
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import {
  Directory,
  FileName,
  HostCommand,
  IsolationBackend,
  Mounter,
  MountInfo,
  Repave,
  RestartChanged,
  Snapshot,
  Systemd,
  Unmount
} from "@hostnode/core"
import * as Layers from "@hostnode/core/Layers"
import { NodeContainer, NodeDirectory, NodeMounter } from "@hostnode/node"
import { Gate, SystemdMachine } from "@hostnode/test"
import { Effect, Fiber, FileSystem, Layer, type Scope, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import * as Racer from "./racer.ts"
import * as StandIn from "./standIn.ts"

const gate = Gate.check("the container-trust attacks", [
  "root",
  "pid-namespace",
  "private-mount-namespace",
  { command: "cc", args: ["--version"] },
  { command: "nsenter" },
  { command: "systemctl" }
])

// The CLI as an operator runs it (from source: the checkout's own).
const cliBin = fileURLToPath(new URL("../../cli/src/bin.ts", import.meta.url))

const say = (line: string) => Effect.sync(() => process.stderr.write(`${line}\n`))

/** The reason tag of an error, looking through the errors that wrap another (`cause`). */
const reasonTag = (e: unknown): string | undefined => {
  for (let at: unknown = e, depth = 0; at !== undefined && at !== null && depth < 5; depth++) {
    const reason = (at as { readonly reason?: { readonly _tag?: unknown } }).reason
    if (reason !== undefined && reason._tag === "Gone") return "Gone"
    at = (reason as { readonly cause?: unknown } | undefined)?.cause ?? (at as { readonly cause?: unknown }).cause
  }
  return (e as { readonly reason?: { readonly _tag?: string } }).reason?._tag
}

/** What a process has below its root, as the test sees it from this host: its mounts, and every file with its text. */
const stateOf = (pid: number, dir: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const mounts = (yield* MountInfo.read(`/proc/${pid}/mountinfo`))
      .map((e) => `${e.id} ${e.mountPoint} ${e.fsType}`)
      .sort()
    const files: Record<string, string> = {}
    for (const path of Object.keys(StandIn.Files)) {
      files[path] = yield* fs.readFileString(`${dir}${path}`).pipe(Effect.orElseSucceed(() => "(missing)"))
    }
    // The token lives in the volume mounted in the process's own namespace.
    files.token = yield* fs
      .readFileString(`/proc/${pid}/root${StandIn.Volume}/token`)
      .pipe(Effect.orElseSucceed(() => "(missing)"))
    return { mounts, files }
  }).pipe(Effect.orDie)

/** A socket that counts its connections; see {@link countingSocket}. */
interface CountingSocket {
  readonly count: () => number
  /** Closes the connections held so far. */
  readonly release: Effect.Effect<void>
}

/**
 * A Unix socket at `path` that counts the connections made to it and holds
 * them unanswered until `release` (as a systemd that accepts and never
 * answers); closed with the scope.
 */
const countingSocket = (path: string): Effect.Effect<CountingSocket, never, Scope.Scope> =>
  Effect.gen(function* () {
    const held: Array<Net.Socket> = []
    let count = 0
    const server = Net.createServer((s) => {
      count++
      held.push(s)
    })
    const release = Effect.sync(() => {
      for (const s of held.splice(0)) s.destroy()
    })
    yield* Effect.acquireRelease(
      Effect.callback<void>((resume) => {
        server.listen(path, () => resume(Effect.void))
      }),
      () =>
        Effect.andThen(
          release,
          Effect.sync(() => server.close())
        )
    )
    return { count: () => count, release }
  })

describe.skipIf(gate.skip)("the container composition under attack", () => {
  it.live(
    "a container exits and a process in another mount namespace gets its pid: a kept composition does nothing there, every call is Gone",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const binary = yield* StandIn.build
        const runs = Gate.loops(20)
        let reused = 0
        let refused = 0
        for (let i = 0; i < runs; i++) {
          yield* Effect.scoped(
            Effect.gen(function* () {
              const box = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-reuse-" })
              const [ctRoot, victimRoot, snapshotDir] = [`${box}/ct`, `${box}/victim`, `${box}/snapshot`]
              yield* StandIn.layout(ctRoot)
              yield* StandIn.layout(victimRoot)
              const ct = yield* StandIn.container(binary, ctRoot)
              // Half the runs name the container by a slot whose resolver keeps answering its pid.
              const target: NodeContainer.Target =
                i % 2 === 0 ? ct.pid : { slot: "a", resolve: () => Effect.succeed(ct.pid) }
              const services = yield* Layer.build(NodeContainer.layer(target))
              const within = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provide(effect, services)
              // Before the exit: a snapshot of its CNI configuration, a held root, its volume's mount.
              yield* within(Snapshot.takeOf({ dir: snapshotDir, paths: ["/etc/cni/net.d"] }))
              const root = yield* within(Layers.rootOf())
              const dirs = yield* within(Directory.Directories)
              const held = yield* dirs.openRoot(root.path)
              // Alive, with no systemd to ask: an error, not an answer.
              const alive = yield* Effect.flip(within(IsolationBackend.running(IsolationBackend.SlotRef.make("a"))))
              assert.strictEqual(alive._tag, "IsolationError")

              yield* ct.kill
              const victim = yield* StandIn.victim(binary, ct.pid, victimRoot)
              // Something else took the pid first: this run proves nothing either way.
              if (victim === undefined) return
              reused++
              // The victim's systemd socket, where a name looked up again would lead.
              yield* fs.makeDirectory(`${victimRoot}/run/systemd`, { recursive: true })
              const victimSocket = yield* countingSocket(`${victimRoot}/run/systemd/private`)
              const before = yield* stateOf(victim.pid, victimRoot)
              const volume = (yield* MountInfo.read(`/proc/${victim.pid}/mountinfo`)).find(
                (e) => e.mountPoint === StandIn.Volume
              )
              assert.isDefined(volume, "the victim's volume is mounted")

              // Every operation through the kept composition: refused, typed.
              const operations: Record<string, Effect.Effect<unknown, unknown, never>> = {
                unmountBelow: within(Unmount.unmountBelow(["/var/lib/kubelet"])),
                teardownKubeletDir: within(Repave.teardownKubeletDir()),
                resetCniState: within(Repave.resetCniState()),
                restore: within(Snapshot.recover({ dir: snapshotDir })),
                daemonReload: within(Effect.flatMap(Effect.service(Systemd.Systemd), (s) => s.daemonReload)),
                restartChanged: within(
                  RestartChanged.restartChanged({
                    wasRunning: true,
                    units: [{ unit: "kubelet.service", changed: true }]
                  })
                ),
                // Calls an operation in flight would make next, on what it already holds.
                unlinkBelowHeldRoot: dirs.unlink(held, FileName.encode("etc"), { directory: true }),
                listHeldRoot: dirs.list(held)
              }
              for (const [name, operation] of Object.entries(operations)) {
                const failure = yield* Effect.flip(operation)
                assert.strictEqual(reasonTag(failure), "Gone", `${name}: ${String((failure as Error).message)}`)
                refused++
              }
              // The mounter given the victim's very mount: not detached.
              const mounter = yield* within(Mounter.Mounter)
              const results = yield* mounter.unmount(
                held,
                [{ path: `${root.path}${StandIn.Volume}`, tablePath: StandIn.Volume, mountId: volume?.id ?? -1 }],
                { lazy: false }
              )
              assert.strictEqual(results[0]?._tag, "Failed", JSON.stringify(results))
              // This host's programs in the container's network namespace: not run.
              const command = yield* Effect.flip(
                within(HostCommand.run("ip", ["link", "add", "hn-x", "type", "dummy"]))
              )
              assert.include(command.message, "exited")
              // The backend: the slot's container is not running, whatever has its pid now.
              assert.isFalse(yield* within(IsolationBackend.running(IsolationBackend.SlotRef.make("a"))))

              assert.deepStrictEqual(yield* stateOf(victim.pid, victimRoot), before, "the other namespace is unchanged")
              assert.strictEqual(victimSocket.count(), 0, "a connection reached the other process's systemd socket")
              // And nothing of what the dead container left was changed either.
              for (const [path, text] of Object.entries(StandIn.Files)) {
                assert.strictEqual(yield* fs.readFileString(`${ctRoot}${path}`), text, path)
              }
            })
          )
        }
        yield* say(
          `attack pid reuse (kept layer): ${runs} runs, ${reused} with the pid reused, ${refused} calls refused as Gone, 0 changes in the other namespace`
        )
        assert.isAbove(reused, 0, "the pid was never reused: the attack did not happen")
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)),
    { timeout: 600_000 }
  )

  it.live(
    "the CLI stalled by the container while its pid is reused: nothing reaches the other process, the run ends Gone",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
        const binary = yield* StandIn.build
        const runs = Gate.loops(5)
        let reused = 0
        for (let i = 0; i < runs; i++) {
          yield* Effect.scoped(
            Effect.gen(function* () {
              const box = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-stall-" })
              const [ctRoot, victimRoot] = [`${box}/ct`, `${box}/victim`]
              for (const root of [ctRoot, victimRoot]) {
                yield* StandIn.layout(root)
                yield* fs.makeDirectory(`${root}/run/systemd`, { recursive: true })
              }
              // The container's systemd accepts and never answers, until the container lets it.
              const stall = yield* countingSocket(`${ctRoot}/run/systemd/private`)
              const ct = yield* StandIn.container(binary, ctRoot)
              const cli = yield* spawner.spawn(
                ChildProcess.make(process.execPath, [
                  "--conditions=@hostnode/source",
                  cliBin,
                  "--json",
                  "--container",
                  String(ct.pid),
                  "restart-changed",
                  "--was-running",
                  "kubelet.service"
                ])
              )
              const stdout = yield* cli.stdout.pipe(Stream.decodeText(), Stream.mkString, Effect.forkScoped)
              // Stalled: connected to the container's socket, waiting for an answer.
              yield* Effect.sleep("20 millis").pipe(Effect.repeat({ until: () => stall.count() > 0, times: 1500 }))
              assert.isAbove(stall.count(), 0, "the CLI never reached the container's systemd")
              yield* ct.kill
              const victim = yield* StandIn.victim(binary, ct.pid, victimRoot)
              if (victim === undefined) {
                yield* stall.release
                yield* cli.exitCode.pipe(Effect.ignore)
                return
              }
              reused++
              const victimSocket = yield* countingSocket(`${victimRoot}/run/systemd/private`)
              const before = yield* stateOf(victim.pid, victimRoot)
              // The container answers at last (it closes), long after it exited.
              yield* stall.release
              const code = yield* cli.exitCode
              const out = JSON.parse(yield* Fiber.join(stdout)) as {
                readonly ok: boolean
                readonly error?: { readonly reason?: { readonly _tag?: string } }
              }
              assert.isFalse(out.ok)
              assert.notStrictEqual(code, 0)
              assert.include(JSON.stringify(out.error), '"Gone"', JSON.stringify(out))
              assert.strictEqual(victimSocket.count(), 0, "the CLI reached the other process's systemd")
              assert.deepStrictEqual(yield* stateOf(victim.pid, victimRoot), before, "the other namespace is unchanged")
            })
          )
        }
        yield* say(
          `attack pid reuse (CLI stalled by the container): ${runs} runs, ${reused} with the pid reused, 0 changes`
        )
        assert.isAbove(reused, 0, "the pid was never reused: the attack did not happen")
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)),
    { timeout: 600_000 }
  )

  it.live("a pid in the agent's own mount namespace is refused unless allowed; a gone or bad pid is typed", () =>
    Effect.gen(function* () {
      const build = (target: NodeContainer.Target, options?: NodeContainer.Options) =>
        Effect.scoped(Layer.build(NodeContainer.layer(target, options)))
      const own = yield* Effect.flip(build(process.pid))
      assert.strictEqual(own.reason._tag, "OwnNamespace")
      assert.include(own.message, "allowOwnNamespace")
      yield* build(process.pid, { allowOwnNamespace: true })
      for (const bad of [0, -1, 1.5, Number.NaN]) {
        assert.strictEqual((yield* Effect.flip(build(bad))).reason._tag, "InvalidPid", String(bad))
      }
      const none = yield* Effect.flip(build({ slot: "z", resolve: () => Effect.succeed(undefined) }))
      assert.strictEqual(none.reason._tag, "NoContainer")
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.live(
    "a strict unmount in the container's namespace while a parent of the mount is swapped with a link detaches nothing else",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const binary = yield* StandIn.build
        const racer = yield* Racer.build
        const box = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-nsswap-" })
        const root = `${box}/ct`
        yield* StandIn.layout(root)
        const ct = yield* StandIn.container(binary, root)
        const inCt = (args: ReadonlyArray<string>) =>
          HostCommand.run("nsenter", ["-t", String(ct.pid), "-m", "--", ...args]).pipe(Effect.orDie)
        // In the container, outside the pod: a mount at the same place below `/outside/vol` as the pod's below `volumes`.
        yield* fs.makeDirectory(`${root}/outside/vol/w`, { recursive: true })
        yield* inCt(["mount", "-t", "tmpfs", "outside", `${root}/outside/vol/w`])
        const table = () => MountInfo.read(`/proc/${ct.pid}/mountinfo`).pipe(Effect.orDie)
        const outside = (yield* table()).find((e) => e.mountPoint === "/outside/vol/w")
        assert.isDefined(outside)
        const layers: Record<string, Layer.Layer<Mounter.Mounter>> = {
          "NodeMounter.layerIn": NodeMounter.layerIn(ct.pid).pipe(Layer.orDie),
          "NodeContainer.layer": NodeContainer.layer(ct.pid).pipe(Layer.orDie)
        }
        const runs = Gate.loops(30)
        let swaps = 0
        let detachedOutside = 0
        let unmounted = 0
        for (const [name, built] of Object.entries(layers)) {
          const services = yield* Layer.build(built)
          for (let i = 0; i < runs; i++) {
            const pod = `${root}/var/lib/kubelet/pods/q`
            yield* fs.makeDirectory(`${pod}/volumes/w`, { recursive: true })
            yield* inCt(["mount", "-t", "tmpfs", "pod", `${pod}/volumes/w`])
            yield* fs.symlink("/outside/vol", `${pod}/evil`)
            const mount = (yield* table()).find((e) => e.mountPoint === "/var/lib/kubelet/pods/q/volumes/w")
            const results = yield* Effect.scoped(
              Effect.gen(function* () {
                const mounter = yield* Effect.provide(Effect.service(Mounter.Mounter), services)
                // The handle only says which root the targets are below: the mounter holds its own.
                const dirs = yield* Effect.provide(
                  Effect.service(Directory.Directories),
                  NodeDirectory.layer.pipe(Layer.orDie)
                )
                const held = yield* dirs.openRoot(`/proc/${ct.pid}/root`)
                const r = yield* Racer.start(racer, "exchange", `${pod}/volumes`, `${pod}/evil`)
                const results = yield* mounter.unmount(
                  held,
                  [
                    {
                      path: `/proc/${ct.pid}/root/var/lib/kubelet/pods/q/volumes/w`,
                      tablePath: "/var/lib/kubelet/pods/q/volumes/w",
                      mountId: mount?.id ?? -1
                    }
                  ],
                  { lazy: false }
                )
                swaps += yield* r.stop
                return results
              }).pipe(Effect.provide(NodeServices.layer))
            )
            const after = yield* table()
            if (!after.some((e) => e.id === outside?.id)) detachedOutside++
            assert.isTrue(
              after.some((e) => e.id === outside?.id),
              `${name} run ${i}: a mount outside the pod was detached (${JSON.stringify(results)})`
            )
            if (results[0]?._tag === "Unmounted") unmounted++
            // Put the pod back and clear it for the next run.
            if ((yield* fs.readLink(`${pod}/volumes`).pipe(Effect.option))._tag === "Some") {
              yield* fs.rename(`${pod}/volumes`, `${pod}/evil2`)
              yield* fs.rename(`${pod}/evil`, `${pod}/volumes`)
              yield* fs.rename(`${pod}/evil2`, `${pod}/evil`)
            }
            yield* inCt(["umount", "-l", `${pod}/volumes/w`]).pipe(Effect.ignore)
            yield* fs.remove(pod, { recursive: true })
          }
        }
        yield* say(
          `attack strict unmount in the container's namespace/exchange: ${runs * 2} runs, ${swaps} swaps, ${detachedOutside} mounts outside the pod detached, ${unmounted} pod mounts detached`
        )
        assert.isAbove(swaps, 0, "the writer never swapped anything")
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)),
    { timeout: 600_000 }
  )
  describe("with throwaway systemd machines", () => {
    const unit = "hn-victim.service"

    it.live(
      "a container's systemd sockets linked to another machine's: that machine is never restarted or reloaded, the run fails typed",
      () =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          // "The host": the container runs in its pid namespace, so its systemd sees (and
          // accepts) a connection from the container's processes, as a real host's does.
          const other = yield* SystemdMachine.bootWith()
          const ct = yield* SystemdMachine.bootWith({ inPidNamespaceOf: other.pid })
          const box = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-socket-" })
          const run = (m: SystemdMachine.SystemdMachine, args: ReadonlyArray<string>) =>
            HostCommand.run(m.nsenter[0] ?? "nsenter", [...m.nsenter.slice(1), ...args]).pipe(Effect.orDie)
          const show = (property: string) =>
            Effect.map(run(other, ["systemctl", "show", "-p", property, "--value", unit]), (o) => o.stdout.trim())
          // A unit only the other machine has, running, its file changed since systemd read it.
          const file = `${other.hostRoot}/etc/systemd/system/${unit}`
          yield* fs.writeFileString(file, "[Service]\nExecStart=/bin/sleep infinity\n")
          yield* run(other, ["systemctl", "daemon-reload"])
          yield* run(other, ["systemctl", "start", unit])
          const mainPid = yield* show("MainPID")
          assert.notStrictEqual(mainPid, "0")
          yield* fs.writeFileString(file, "[Service]\nExecStart=/bin/sleep infinity\n# changed\n")
          assert.strictEqual(yield* show("NeedDaemonReload"), "yes")

          // The container's own CNI configuration, snapshotted while its sockets are its own.
          yield* fs.makeDirectory(`${ct.hostRoot}/etc/cni/net.d`, { recursive: true })
          yield* fs.writeFileString(`${ct.hostRoot}/etc/cni/net.d/10-ct.conflist`, "{}\n")
          const snapshot = `${box}/snapshot`
          yield* Effect.scoped(
            Effect.provide(Snapshot.takeOf({ dir: snapshot, paths: ["/etc/cni/net.d"] }), NodeContainer.layer(ct.pid))
          )

          // On this side, plain paths that are the other machine's sockets.
          const sockets = { private: "/run/systemd/private", bus: "/run/dbus/system_bus_socket" } as const
          const hasBus = yield* fs.exists(`${ct.hostRoot}${sockets.bus}`)
          for (const [name, path] of Object.entries(sockets)) {
            yield* fs.writeFileString(`${box}/${name}`, "")
            yield* HostCommand.run("mount", ["--bind", `/proc/${other.pid}/root${path}`, `${box}/${name}`]).pipe(
              Effect.ignore
            )
          }
          const variants: Record<string, (name: keyof typeof sockets) => string> = {
            "a magic link of this side": (name) => `/proc/${other.pid}/root${sockets[name]}`,
            "a plain path of this side": (name) => `${box}/${name}`
          }
          const runs = Gate.loops(3)
          let refused = 0
          for (const [variant, targetOf] of Object.entries(variants)) {
            for (let i = 0; i < runs; i++) {
              // The container's sockets become absolute links that mean the other machine's on this side.
              for (const name of hasBus ? (["private", "bus"] as const) : (["private"] as const)) {
                yield* run(ct, ["mv", sockets[name], `${sockets[name]}.real`])
                yield* run(ct, ["ln", "-s", targetOf(name), sockets[name]])
              }
              const failures = yield* Effect.scoped(
                Effect.gen(function* () {
                  const services = yield* Layer.build(NodeContainer.layer(ct.pid))
                  const restart = yield* Effect.flip(
                    Effect.provide(
                      RestartChanged.restartChanged({ wasRunning: true, units: [{ unit, changed: true }] }),
                      services
                    )
                  )
                  const restore = yield* Effect.flip(Effect.provide(Snapshot.recover({ dir: snapshot }), services))
                  return [restart, restore]
                })
              )
              for (const failure of failures) {
                assert.oneOf(failure._tag, ["RestartError", "SystemdError", "SnapshotError"], variant)
                assert.include(failure.message, "in container process", `${variant}: ${failure.message}`)
                refused++
              }
              assert.strictEqual(yield* show("MainPID"), mainPid, `${variant} run ${i}: restarted on the other machine`)
              assert.strictEqual(
                yield* show("NeedDaemonReload"),
                "yes",
                `${variant} run ${i}: the other machine reloaded`
              )
              for (const name of hasBus ? (["private", "bus"] as const) : (["private"] as const)) {
                yield* run(ct, ["rm", sockets[name]])
                yield* run(ct, ["mv", `${sockets[name]}.real`, sockets[name]])
              }
            }
          }
          yield* say(
            `attack linked systemd socket: ${runs * 2} runs (2 link targets${hasBus ? ", private socket and bus" : ""}), ${refused} restarts and restores failed typed, 0 restarts and 0 reloads on the other machine`
          )
          // Its own sockets back, the container's systemd answers again through the same composition.
          const active = yield* Effect.scoped(
            Effect.provide(
              Effect.flatMap(Effect.service(Systemd.Systemd), (s) => s.isActive(unit)),
              NodeContainer.layer(ct.pid)
            )
          )
          assert.notStrictEqual(active, "active", "the unit exists only on the other machine")
        }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)),
      { timeout: 600_000 }
    )

    it.live(
      "a snapshot taken in a container is restored after it restarts with a new pid, and refused in another container",
      () =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const box = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-identity-" })
          const disk = `${box}/disk`
          yield* fs.makeDirectory(disk)
          const conf = "/etc/cni/net.d/10-ct.conflist"
          const snapshot = `${box}/snapshot`
          const first = yield* Effect.scoped(
            Effect.gen(function* () {
              const m = yield* SystemdMachine.bootWith({ disk })
              yield* fs.makeDirectory(`${m.hostRoot}/etc/cni/net.d`, { recursive: true })
              yield* fs.writeFileString(`${m.hostRoot}${conf}`, "before the upgrade\n")
              const identity = yield* Effect.scoped(
                Effect.provide(
                  Effect.gen(function* () {
                    yield* Snapshot.takeOf({ dir: snapshot, paths: ["/etc/cni/net.d"] })
                    return (yield* Layers.rootOf()).identity
                  }),
                  NodeContainer.layer(m.pid)
                )
              )
              yield* fs.writeFileString(`${m.hostRoot}${conf}`, "after the upgrade\n")
              return { pid: m.pid, identity }
            })
          )
          assert.notInclude(first.identity, String(first.pid), "the identity is not the pid")
          // The same container restarted: a new pid, the same root.
          yield* Effect.scoped(
            Effect.gen(function* () {
              const m = yield* SystemdMachine.bootWith({ disk })
              assert.notStrictEqual(m.pid, first.pid)
              assert.strictEqual(yield* fs.readFileString(`${m.hostRoot}${conf}`), "after the upgrade\n")
              const identity = yield* Effect.scoped(
                Effect.provide(
                  Effect.gen(function* () {
                    yield* Snapshot.recover({ dir: snapshot })
                    return (yield* Layers.rootOf()).identity
                  }),
                  NodeContainer.layer(m.pid)
                )
              )
              assert.strictEqual(identity, first.identity)
              assert.strictEqual(yield* fs.readFileString(`${m.hostRoot}${conf}`), "before the upgrade\n")
              // Again, for the other container to be offered.
              yield* Effect.scoped(
                Effect.provide(
                  Snapshot.takeOf({ dir: snapshot, paths: ["/etc/cni/net.d"] }),
                  NodeContainer.layer(m.pid)
                )
              )
            })
          )
          // Another container: refused, its files untouched.
          const other = yield* SystemdMachine.bootWith()
          yield* fs.makeDirectory(`${other.hostRoot}/etc/cni/net.d`, { recursive: true })
          yield* fs.writeFileString(`${other.hostRoot}${conf}`, "another container\n")
          const refused = yield* Effect.flip(
            Effect.scoped(Effect.provide(Snapshot.recover({ dir: snapshot }), NodeContainer.layer(other.pid)))
          )
          assert.strictEqual(refused._tag, "SnapshotError")
          assert.strictEqual(
            refused._tag === "SnapshotError" && refused.reason._tag,
            "HostRootMismatch",
            refused.message
          )
          assert.strictEqual(yield* fs.readFileString(`${other.hostRoot}${conf}`), "another container\n")
        }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)),
      { timeout: 600_000 }
    )
  })
})
