/**
 * The container composition against a real container: a `SystemdMachine`
 * (systemd 252 as PID 1 of its own pid, mount, cgroup and network
 * namespaces, on a throwaway root), booted once for the file. The shared
 * scenarios run on it unchanged (no host root given: the composition's real
 * root is the container's), then what only this mode has: commands and
 * unmounts in the container's namespaces, the shared-files choice, the
 * backend's answer for a gone container, and bad targets.
 */

import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it, layer } from "@effect/vitest"
import { Directory, HostCommand, IsolationBackend, Mounter, MountInfo, Systemd, Unmount } from "@hostnode/core"
import * as Layers from "@hostnode/core/Layers"
import { NodeContainer } from "@hostnode/node"
import { Gate, NodeFixture, SystemdMachine } from "@hostnode/test"
import { NodeScenarios } from "@hostnode/test/conformance"
import { RuleComment } from "@hostnode/test/internal/localDnsRules"
import { Effect, FileSystem, Layer, Schedule } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"

const gate = Gate.check("the container composition on a real systemd machine", [
  "root",
  "pid-namespace",
  "private-mount-namespace",
  "private-net-namespace",
  { command: "nsenter" },
  { command: "systemctl" },
  { command: "ip", args: ["-V"] },
  { command: "iptables" },
  { command: "dnsmasq" }
])

const machine = SystemdMachine.layerWith({ network: "private" }).pipe(Layer.provide(NodeServices.layer), Layer.orDie)

const composition = Layer.unwrap(
  Effect.map(Effect.service(SystemdMachine.SystemdMachine), (m) =>
    NodeContainer.layer(m.pid, { units: NodeFixture.Units }).pipe(Layer.orDie)
  )
)

const node = Layer.mergeAll(composition, NodeFixture.layerContainer.pipe(Layer.provide(NodeServices.layer))).pipe(
  Layer.provideMerge(machine)
)

// This host's own spawner, for looking at the agent's side without the composition's wrapping.
const onHost = <A, E>(effect: Effect.Effect<A, E, ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem>) =>
  Effect.provide(effect, NodeServices.layer)

const ownNamespace = (kind: string) =>
  onHost(Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) => fs.readLink(`/proc/self/ns/${kind}`)))

const agentProgram = fileURLToPath(new URL("./fixtures/container-agent.ts", import.meta.url))

// A checkout below /tmp is not in the sandbox's fresh /tmp: bound in at the same path (as SystemdMachine does).
const visibleCheckout = (): string => {
  const [, top, name] = process.cwd().split("/")
  return top === "tmp" && name !== undefined && name !== "" ? `/tmp/${name}` : ""
}

// The agent's sandbox: private mounts on a throwaway overlay of /, this host's
// /proc (the container's pid is seen), a network of its own. Decoys at the
// paths and names the program uses, the state of the agent's namespaces
// before and after the program, and a systemctl that only logs that it ran.
const agentScript = `set -eu
base="$1"; out="$2"; keep="$3"; node="$4"; program="$5"; pid="$6"; unit="$7"; comment="$8"
mount --make-rprivate /
mount -t tmpfs -o mode=755 tmpfs "$base"
mkdir "$base/upper" "$base/work" "$base/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$base/upper,workdir=$base/work" "$base/root"
r="$base/root"
mount -t proc proc "$r/proc"
mount --rbind /sys "$r/sys"
mount --rbind /dev "$r/dev"
mount -t tmpfs -o mode=755 tmpfs "$r/run"
mount -t tmpfs -o mode=1777 tmpfs "$r/tmp"
if [ -n "$keep" ]; then mkdir -p "$r$keep" && mount --bind "$keep" "$r$keep"; fi
mkdir -p "$r$out" && mount --bind "$out" "$r$out"
mkdir -p "$r/oldroot"
cd "$r"
pivot_root . oldroot
umount -l /oldroot
cd /
ip link set lo up
v=/var/lib/kubelet/pods/9d1e/volumes/kubernetes.io~secret/token
mkdir -p "$v" /etc/cni/net.d /var/lib/cni/networks/c /var/lib/kubelet/pki
mount -t tmpfs t "$v"
echo agent > "$v/token"
echo agent > /etc/cni/net.d/10-container.conflist
echo agent > /var/lib/cni/networks/c/10.244.1.5
echo agent > /var/lib/kubelet/pki/kubelet-client-2026-12-01-00-00-00.pem
echo agent > /var/lib/kubelet/kubeconfig
ip link add localdns type bridge
ip addr add 169.254.10.10/32 dev localdns
ip addr add 169.254.10.11/32 dev localdns
ip link set localdns up
iptables -w -t raw -A OUTPUT -d 169.254.10.10/32 -p udp --dport 53 -m comment --comment "$comment" -j NOTRACK
: > "$out/agent-systemctl.log"
printf '#!/bin/sh\necho "$*" >> %s/agent-systemctl.log\n' "$out" > /usr/bin/systemctl
chmod 755 /usr/bin/systemctl
state() {
  cut -d' ' -f1,5 /proc/self/mountinfo
  ip -br link | cut -d' ' -f1
  ip -4 -j addr
  iptables -w -t raw -S
  find /var/lib/kubelet /etc/cni /var/lib/cni -printf '%y %p\n' 2>&1 | sort
  find /var/lib/kubelet /etc/cni /var/lib/cni -type f -exec cat {} + 2>&1 || true
}
state > "$out/before"
"$node" --conditions=@hostnode/source "$program" "$pid" "$unit" > "$out/program.json" 2> "$out/program.err" || echo "$?" > "$out/program.rc"
state > "$out/after"`

describe.skipIf(gate.skip)("NodeContainer", () => {
  layer(node, { timeout: "120 seconds", excludeTestServices: true })(
    "NodeContainer.layer on a SystemdMachine",
    (it) => {
      NodeScenarios.register(it)

      it.effect("commands are this host's programs, run in the container's network namespace only", () =>
        Effect.gen(function* () {
          const m = yield* SystemdMachine.SystemdMachine
          const fs = yield* FileSystem.FileSystem
          const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
          const inside = (kind: string) =>
            Effect.map(spawner.string(ChildProcess.make("readlink", [`/proc/self/ns/${kind}`])), (t) => t.trim())
          assert.strictEqual(
            yield* inside("net"),
            yield* fs.readLink(`/proc/${m.pid}/ns/net`),
            "the container's network"
          )
          assert.notStrictEqual(yield* inside("net"), yield* ownNamespace("net"), "not the agent's network")
          // The agent's own mount and pid namespaces: its own binaries, never the image's.
          for (const kind of ["mnt", "pid"]) assert.strictEqual(yield* inside(kind), yield* ownNamespace(kind), kind)
          // An `ip` the container's image puts first on the PATH never runs.
          const marker = `/tmp/hostnode-image-ip-ran`
          yield* fs.writeFileString(`${m.hostRoot}/usr/local/sbin/ip`, `#!/bin/sh\ntouch ${marker}\n`, { mode: 0o755 })
          const out = yield* HostCommand.run("ip", ["-o", "link", "show", "lo"])
          assert.strictEqual(out.exitCode, 0, out.stderr)
          assert.include(out.stdout, "lo")
          assert.isFalse(yield* fs.exists(`${m.hostRoot}${marker}`), "the image's ip ran")
          yield* fs.remove(`${m.hostRoot}/usr/local/sbin/ip`)
        })
      )

      it.effect("the real root is the container's pinned root, with its own mount table and identity", () =>
        Effect.gen(function* () {
          const m = yield* SystemdMachine.SystemdMachine
          const fs = yield* FileSystem.FileSystem
          const root = yield* Layers.rootOf()
          // Never the container's pid by path: a descriptor of this process, the same directory.
          assert.notInclude(root.path, `/proc/${m.pid}/`)
          assert.match(root.path, new RegExp(`^/proc/${process.pid}/fd/\\d+$`))
          const [here, there] = [yield* fs.stat(root.path), yield* fs.stat(m.hostRoot)]
          assert.deepStrictEqual([here.dev, here.ino], [there.dev, there.ino])
          assert.strictEqual(
            yield* fs.readFileString(root.mountInfo),
            yield* fs.readFileString(`/proc/${m.pid}/mountinfo`)
          )
          assert.isTrue(root.isReal)
          // The machine's root is an overlay: named by its upper directory, not by a pid.
          assert.match(root.identity, /^container root overlay upperdir=/)
          assert.notInclude(root.identity, String(m.pid))
        })
      )

      it.effect("a stack of mounts in the container goes top down, through verified descriptors", () =>
        Effect.gen(function* () {
          const m = yield* SystemdMachine.SystemdMachine
          const fs = yield* FileSystem.FileSystem
          yield* fs.makeDirectory(`${m.hostRoot}/srv/stack/m`, { recursive: true })
          for (let i = 0; i < 3; i++) {
            yield* onHost(
              HostCommand.run("nsenter", ["-t", String(m.pid), "-m", "--", "mount", "-t", "tmpfs", "t", "/srv/stack/m"])
            )
          }
          const r = yield* Unmount.unmountBelow(["/srv/stack"])
          assert.strictEqual(r.unmounted.length, 3)
          const table = yield* MountInfo.read(`/proc/${m.pid}/mountinfo`)
          assert.isFalse(table.some((e) => e.mountPoint.startsWith("/srv/stack")))
        })
      )

      it.effect("a mount of the agent's own namespace is never unmounted, even when named by its path", () =>
        Effect.gen(function* () {
          const m = yield* SystemdMachine.SystemdMachine
          const fs = yield* FileSystem.FileSystem
          const mounter = yield* Mounter.Mounter
          const dirs = yield* Directory.Directories
          // A tmpfs in the agent's namespace, and a target naming it as a table of the agent's would.
          const dir = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-agent-" })
          yield* onHost(HostCommand.run("mount", ["-t", "tmpfs", "t", dir]))
          yield* Effect.addFinalizer(() => onHost(HostCommand.run("umount", ["-l", "--", dir])).pipe(Effect.ignore))
          const own = (yield* onHost(MountInfo.read())).find((e) => e.mountPoint === dir)
          if (own === undefined) return assert.fail("the agent's tmpfs is not in its table")
          // The same path made in the container, so the path itself resolves there.
          yield* fs.makeDirectory(`${m.hostRoot}${dir}`, { recursive: true })
          const results = yield* Effect.scoped(
            Effect.flatMap(dirs.openRoot(m.hostRoot), (root) =>
              mounter.unmount(root, [{ path: `${m.hostRoot}${dir}`, mountId: own.id, tablePath: dir }], { lazy: true })
            )
          )
          assert.strictEqual(results[0]?._tag, "Unverified")
          assert.isTrue(
            (yield* onHost(MountInfo.read())).some((e) => e.id === own.id),
            "still mounted in the agent"
          )
        })
      )

      it.effect("files shared at the same paths: files on this host's side, mounts still the container's", () =>
        Effect.gen(function* () {
          const m = yield* SystemdMachine.SystemdMachine
          const fs = yield* FileSystem.FileSystem
          // This host's side of a shared kubelet directory, and the container's mount at the same path.
          const shared = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-shared-" })
          const volume = "/var/lib/kubelet/pods/77aa/volumes/kubernetes.io~empty-dir/cache"
          yield* fs.makeDirectory(`${shared}${volume}`, { recursive: true })
          yield* fs.writeFileString(`${shared}/var/lib/kubelet/pods/77aa/etc-hosts`, "host side\n")
          yield* fs.makeDirectory(`${m.hostRoot}${volume}`, { recursive: true })
          yield* onHost(
            HostCommand.run("nsenter", ["-t", String(m.pid), "-m", "--", "mount", "-t", "tmpfs", "t", volume])
          )
          const program = Effect.gen(function* () {
            const root = yield* Layers.rootOf()
            assert.strictEqual(root.path, shared)
            assert.strictEqual(
              yield* fs.readFileString(root.mountInfo),
              yield* fs.readFileString(`/proc/${m.pid}/mountinfo`)
            )
            return yield* Unmount.unmountStrictlyBelow(["/var/lib/kubelet"])
          })
          const r = yield* program.pipe(
            Effect.provide(NodeContainer.layer(m.pid, { files: { shared } }).pipe(Layer.orDie))
          )
          assert.deepStrictEqual(
            r.unmounted.map((u) => u.mountPoint),
            [volume]
          )
          const table = yield* MountInfo.read(`/proc/${m.pid}/mountinfo`)
          assert.isFalse(table.some((e) => e.mountPoint === volume))
          assert.strictEqual(yield* fs.readFileString(`${shared}/var/lib/kubelet/pods/77aa/etc-hosts`), "host side\n")
        })
      )

      it.effect(
        "a program given the container composition changes nothing of the agent's: mounts, files, links, rules, units",
        () =>
          Effect.gen(function* () {
            const m = yield* SystemdMachine.SystemdMachine
            const fs = yield* FileSystem.FileSystem
            const systemd = yield* Systemd.Systemd
            const unit = NodeFixture.Units[1]
            const inMachine = (args: ReadonlyArray<string>, ns: "m" | "n" = "m") =>
              onHost(HostCommand.run("nsenter", ["-t", String(m.pid), `-${ns}`, "--", ...args]))
            // The container's state, at the paths the program uses.
            const volume = "/var/lib/kubelet/pods/9d1e/volumes/kubernetes.io~secret/token"
            const planted: Record<string, string> = {
              "/etc/cni/net.d/10-container.conflist": "{}",
              "/var/lib/cni/networks/c/10.244.1.5": "c",
              "/var/lib/kubelet/pki/kubelet-client-2026-12-01-00-00-00.pem": "cert",
              "/var/lib/kubelet/kubeconfig": "kubeconfig"
            }
            yield* fs.makeDirectory(`${m.hostRoot}${volume}`, { recursive: true })
            yield* inMachine(["mount", "-t", "tmpfs", "t", volume])
            for (const [path, text] of Object.entries(planted)) {
              yield* fs.makeDirectory(`${m.hostRoot}${path.slice(0, path.lastIndexOf("/"))}`, { recursive: true })
              yield* fs.writeFileString(`${m.hostRoot}${path}`, text)
            }
            yield* fs.writeFileString(
              `${m.hostRoot}/etc/systemd/system/${unit}`,
              "[Unit]\nDescription=kubelet\n\n[Service]\nExecStart=/bin/sleep infinity\n"
            )
            yield* systemd.daemonReload
            yield* systemd.start(unit)
            const pidBefore = (yield* systemd.show(unit, ["MainPID"])).MainPID

            // The agent: a sandbox of its own (mount and network namespaces, a throwaway
            // overlay of / as its root) with decoys at the same paths and names.
            const out = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-agent-out-" })
            const base = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-agent-" })
            const ran = yield* onHost(
              HostCommand.run("unshare", [
                "--mount",
                "--propagation",
                "private",
                "--net",
                "--",
                "sh",
                "-c",
                agentScript,
                "sh",
                base,
                out,
                visibleCheckout(),
                process.execPath,
                agentProgram,
                String(m.pid),
                unit,
                RuleComment
              ])
            )
            assert.strictEqual(ran.exitCode, 0, `the agent sandbox failed: ${ran.stderr}`)
            // The agent's own namespaces: exactly as before, and its systemctl never ran.
            const before = yield* fs.readFileString(`${out}/before`)
            const after = yield* fs.readFileString(`${out}/after`)
            assert.include(before, "kubernetes.io~secret/token", "the decoy mount is in the agent's table")
            assert.include(before, "169.254.10.10", "the decoy link is there")
            assert.include(before, RuleComment, "the decoy rule is there")
            assert.strictEqual(after, before)
            assert.strictEqual(yield* fs.readFileString(`${out}/agent-systemctl.log`), "")

            // Whether or not the program succeeded, nothing of the agent's changed; then it must have.
            const rc = yield* fs.readFileString(`${out}/program.rc`).pipe(Effect.orElseSucceed(() => ""))
            assert.strictEqual(rc, "", `the program failed: ${yield* fs.readFileString(`${out}/program.err`)}`)
            const report = JSON.parse(yield* fs.readFileString(`${out}/program.json`)) as {
              readonly unmounted: ReadonlyArray<string>
              readonly kept: ReadonlyArray<string>
              readonly link: string
            }

            // The container's: changed as the program said.
            assert.deepStrictEqual(report.unmounted, [volume])
            assert.deepStrictEqual(report.kept, [])
            const table = yield* MountInfo.read(`/proc/${m.pid}/mountinfo`)
            assert.isFalse(table.some((e) => e.mountPoint === volume))
            for (const path of Object.keys(planted)) assert.isFalse(yield* fs.exists(`${m.hostRoot}${path}`), path)
            assert.isFalse(yield* fs.exists(`${m.hostRoot}/var/lib/kubelet/pods/9d1e`))
            assert.notStrictEqual(
              (yield* systemd.show(unit, ["MainPID"])).MainPID,
              pidBefore,
              "restarted in the container"
            )
            assert.include(report.link, "169.254.10.10", "set up in the container")
            const gone = yield* inMachine(["ip", "link", "show", "dev", "localdns"], "n")
            assert.notStrictEqual(gone.exitCode, 0, "and cleaned up there")
            yield* systemd.stop(unit)
          })
      )
    }
  )

  describe("targets and the backend", () => {
    // A stand-in container without systemd: a process in new pid and mount namespaces.
    const container = Effect.acquireRelease(
      Effect.gen(function* () {
        const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
        const fs = yield* FileSystem.FileSystem
        const handle = yield* spawner.spawn(
          ChildProcess.make("unshare", [
            "--pid",
            "--fork",
            "--kill-child",
            "--mount",
            "--propagation",
            "private",
            "sleep",
            "600"
          ])
        )
        const pid = yield* fs.readFileString(`/proc/${handle.pid}/task/${handle.pid}/children`).pipe(
          Effect.map((t) => Number.parseInt(t.trim(), 10)),
          Effect.filterOrFail(Number.isSafeInteger, () => "no child yet"),
          // unshare forks its child when the scheduler lets it: under load that
          // is many milliseconds, so poll on a clock (up to 10 s), not a count.
          Effect.retry({ schedule: Schedule.spaced("20 millis"), times: 500 })
        )
        return { handle, pid }
      }),
      ({ handle }) => handle.kill({ killSignal: "SIGKILL" }).pipe(Effect.ignore)
    )

    it.live("a bad pid, a gone process and a slot without a container are typed errors naming them", () =>
      Effect.gen(function* () {
        const build = (target: NodeContainer.Target) =>
          Effect.flip(Effect.scoped(Layer.build(NodeContainer.layer(target))))
        const invalid = yield* build(-4)
        assert.strictEqual(invalid.reason._tag, "InvalidPid")
        const { handle, pid } = yield* container
        yield* handle.kill({ killSignal: "SIGKILL" })
        yield* handle.exitCode.pipe(Effect.ignore)
        const gone = yield* build(pid)
        assert.strictEqual(gone.reason._tag, "NotFound")
        assert.strictEqual(gone.reason._tag === "NotFound" && gone.reason.pid, pid)
        assert.include(gone.message, String(pid))
        const none = yield* build({ slot: "b", resolve: () => Effect.succeed(undefined) })
        assert.strictEqual(none.reason._tag, "NoContainer")
        assert.strictEqual(none.reason._tag === "NoContainer" && none.reason.slot, "b")
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer))
    )

    it.live("running: a container that is gone is false, not an error, by pid and by resolver", () =>
      Effect.gen(function* () {
        const { handle, pid } = yield* container
        const slot = IsolationBackend.SlotRef.make("a")
        const built = yield* Layer.build(NodeContainer.layer(pid, { units: NodeFixture.Units }))
        const byPid = Effect.provide(IsolationBackend.running(slot), built)
        // Alive but with no systemd to ask: that is an error, not an answer.
        const alive = yield* Effect.result(byPid)
        assert.isTrue(alive._tag === "Failure" && alive.failure._tag === "IsolationError")
        assert.include(alive._tag === "Failure" ? alive.failure.message : "", String(pid))
        let answer: number | undefined = pid
        const byResolver = yield* Layer.build(
          NodeContainer.layer({ slot: "a", resolve: () => Effect.sync(() => answer) }, { units: NodeFixture.Units })
        )
        yield* handle.kill({ killSignal: "SIGKILL" })
        yield* handle.exitCode.pipe(Effect.ignore)
        assert.isFalse(yield* byPid, "the container built by pid is gone")
        assert.isFalse(yield* Effect.provide(IsolationBackend.running(slot), byResolver), "resolved to a gone pid")
        answer = undefined
        assert.isFalse(yield* Effect.provide(IsolationBackend.running(slot), byResolver), "resolved to none")
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer))
    )
  })
})
