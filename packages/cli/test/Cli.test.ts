/**
 * The command tree run in-process (`Cli.run`) against a simulated node
 * (`MemoryNode`): what it prints, the exit codes, and that `--dry-run`
 * changes nothing.
 */
import * as Net from "node:net"
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it, layer } from "@effect/vitest"
import { Cli } from "@hostnode/cli"
import { HostCommand, HostPath, Mounter, MountInfo, RestartChanged, Systemd } from "@hostnode/core"
import { NodeHost } from "@hostnode/node"
import { MemoryHost, MemoryNode } from "@hostnode/sim"
import { Gate, SystemdMachine } from "@hostnode/test"
import { Deferred, Effect, Fiber, FileSystem, Layer, Schedule } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import { TestConsole } from "effect/testing"
import { helpAsFlag } from "../src/internal/cli/argv.ts"
import {
  errorJson,
  exitCodeFor,
  isInputError,
  MissingSubcommand,
  UnknownSlot,
  UsageError,
  type UsageErrorReason
} from "../src/internal/cli/errors.ts"
import { cliEnvironment, runCli, runJson } from "./harness.ts"

const seeded = {
  "/etc/cni/net.d/10-flannel.conflist": "{}",
  "/var/lib/cni/networks/cbr0/10.244.0.2": "container-1",
  "/etc/kubernetes/kubelet.conf": "keep"
}

/** Runs `argv` on a fresh node seeded with `files`; the exit code, stdout lines and the tree after. */
const runOn = (argv: ReadonlyArray<string>, files: MemoryHost.Options["files"] = seeded) =>
  Effect.gen(function* () {
    const { code, stdout } = yield* runCli(argv)
    const host = yield* MemoryHost.MemoryHost
    const tree = yield* host.dump()
    return { code, stdout, tree }
  }).pipe(Effect.provide(Layer.mergeAll(MemoryNode.layer({ files }), cliEnvironment)))

/** Everything a run printed on stdout, as one text. */
const helpText = (outcome: { readonly code: number; readonly stdout: ReadonlyArray<string> }) => {
  assert.strictEqual(outcome.code, 0)
  return outcome.stdout.join("\n")
}

describe("Cli", () => {
  it.effect("reset-cni removes the CNI configuration and state and exits 0", () =>
    Effect.gen(function* () {
      const { code, stdout, tree } = yield* runOn(["reset-cni", "--host-root", "/"])
      assert.strictEqual(code, 0)
      assert.isTrue(stdout.join("\n").includes("CNI state reset"))
      assert.isUndefined(tree["/etc/cni/net.d/10-flannel.conflist"])
      assert.isUndefined(tree["/var/lib/cni"])
      assert.isDefined(tree["/etc/cni/net.d"])
      assert.isDefined(tree["/etc/kubernetes/kubelet.conf"])
    })
  )

  it.effect("--json prints exactly one JSON document", () =>
    Effect.gen(function* () {
      const { code, stdout } = yield* runOn(["--json", "reset-cni"])
      assert.strictEqual(code, 0)
      assert.strictEqual(stdout.length, 1)
      const doc = JSON.parse(stdout[0] ?? "")
      assert.strictEqual(doc.ok, true)
      assert.strictEqual(doc.command, "reset-cni")
      assert.include(doc.result.removed, "/etc/cni/net.d/10-flannel.conflist")
    })
  )

  it.effect("a failed operation prints the typed error as JSON and exits 1", () =>
    Effect.gen(function* () {
      const { code, stdout } = yield* runOn(["--json", "snapshot", "restore", "--dir", "/nowhere"])
      assert.strictEqual(code, 1)
      const doc = JSON.parse(stdout[0] ?? "")
      assert.strictEqual(doc.ok, false)
      assert.strictEqual(doc.error._tag, "SnapshotError")
      assert.strictEqual(doc.error.reason._tag, "Missing")
      assert.strictEqual(doc.error.dir, "/nowhere")
    })
  )

  it.effect("bad usage exits 2", () =>
    Effect.gen(function* () {
      const unknown = yield* runOn(["--json", "reset-cni", "--bogus"])
      assert.strictEqual(unknown.code, 2)
      assert.strictEqual(JSON.parse(unknown.stdout[0] ?? "").error._tag, "UsageError")
      const missing = yield* runOn(["unmount-below"])
      assert.strictEqual(missing.code, 2)
    })
  )

  it.effect("--container: not a pid, a process that is gone, or with --host-root: exit 2, one line, nothing done", () =>
    Effect.gen(function* () {
      for (const [argv, says] of [
        [["--container", "web-1", "reset-cni"], 'not "web-1"'],
        [["--container", "0", "reset-cni"], 'not "0"'],
        // pid_max is at most 2^22: no process has this pid
        [["--container", "99999999", "reset-cni"], "container process 99999999: NotFound"],
        [["--container", "1", "--host-root", "/srv", "reset-cni"], "cannot be given with --container"]
      ] as const) {
        const { code, stderr } = yield* runCli(argv)
        assert.strictEqual(code, 2, argv.join(" "))
        assert.strictEqual(stderr.length, 1, stderr.join("\n"))
        assert.include(stderr[0], says)
      }
      const { code, doc } = yield* runJson(["--container", "99999999", "--dry-run", "teardown-kubelet-dir"])
      assert.strictEqual(code, 2)
      assert.strictEqual(doc.ok, false)
      assert.strictEqual(doc.error._tag, "ContainerError")
      assert.strictEqual(doc.error.reason._tag, "NotFound")
      assert.strictEqual(doc.error.reason.pid, 99999999)
      // nothing was touched on the node in context
      const host = yield* MemoryHost.MemoryHost
      assert.isDefined((yield* host.dump())["/etc/cni/net.d/10-flannel.conflist"])
    }).pipe(Effect.provide(Layer.mergeAll(MemoryNode.layer({ files: seeded }), cliEnvironment)))
  )

  it.effect(
    "--container empty, with any --host-root, or --allow-own-namespace alone: exit 2 before anything, one line or one JSON document",
    () =>
      Effect.gen(function* () {
        const host = yield* MemoryHost.MemoryHost
        const before = yield* host.dump()
        // Each of these, were it taken as "no container", would reset the CNI state of the node in context.
        for (const [argv, says, reason] of [
          [["--container", "", "reset-cni"], "--container is empty (an unset variable?)", "InvalidPid"],
          [["--container", "", "--dry-run", "teardown-kubelet-dir"], "--container is empty", "InvalidPid"],
          [["--container=", "reset-cni"], "--container is empty", "InvalidPid"],
          [
            ["--container", "4242", "--host-root", "/", "reset-cni"],
            '--host-root "/" cannot be given with --container',
            "InvalidPath"
          ],
          [
            ["--host-root", "/srv", "--container", "4242", "reset-cni"],
            '--host-root "/srv" cannot be given with --container',
            "InvalidPath"
          ],
          [["--allow-own-namespace", "reset-cni"], "--allow-own-namespace is given without --container", "FlagWithout"]
        ] as const) {
          const text = yield* runCli(argv)
          assert.strictEqual(text.code, 2, argv.join(" "))
          assert.deepStrictEqual(text.stdout, [], argv.join(" "))
          assert.strictEqual(text.stderr.length, 1, text.stderr.join("\n"))
          assert.include(text.stderr[0], says)
          const json = yield* runCli(["--json", ...argv])
          assert.strictEqual(json.code, 2, argv.join(" "))
          assert.strictEqual(json.stdout.length, 1, json.stdout.join("\n"))
          assert.deepStrictEqual(json.stderr, [], argv.join(" "))
          const doc = JSON.parse(json.stdout[0] ?? "")
          assert.strictEqual(doc.ok, false)
          assert.strictEqual(doc.error.reason._tag, reason, argv.join(" "))
          assert.include(doc.error.message, says)
          // Refused before any container was named or pinned.
          assert.notProperty(doc, "container")
          assert.deepStrictEqual(yield* host.dump(), before, argv.join(" "))
        }
        // Left out, the flags change nothing: the node in context is the one worked on.
        const plain = yield* runJson(["reset-cni"])
        assert.strictEqual(plain.code, 0)
        assert.notProperty(plain.doc, "container")
        assert.include(plain.doc.result.removed, "/etc/cni/net.d/10-flannel.conflist")
      }).pipe(Effect.provide(Layer.mergeAll(MemoryNode.layer({ files: seeded }), cliEnvironment)))
  )

  it.effect("--dry-run records the removals and removes nothing", () =>
    Effect.gen(function* () {
      const { stdout, tree } = yield* runOn(["--json", "--dry-run", "reset-cni"])
      const doc = JSON.parse(stdout[0] ?? "")
      assert.strictEqual(doc.dryRun, true)
      assert.deepInclude(doc.plan, {
        service: "FileSystem",
        action: "remove",
        target: "/etc/cni/net.d/10-flannel.conflist"
      })
      assert.isDefined(tree["/etc/cni/net.d/10-flannel.conflist"])
      assert.isDefined(tree["/var/lib/cni/networks/cbr0/10.244.0.2"])
    })
  )

  it.effect("a dry run's text says it is a plan and that nothing was changed", () =>
    Effect.gen(function* () {
      const { code, stdout, tree } = yield* runOn(["--dry-run", "reset-cni"])
      assert.strictEqual(code, 0)
      const text = stdout.join("\n")
      assert.include(
        text,
        "dry run: the plan, in order (nothing was changed):\n  1. FileSystem remove /etc/cni/net.d/10-flannel.conflist"
      )
      assert.include(text, "what the operation would report (dry run, nothing was changed):\nCNI state reset")
      assert.isDefined(tree["/etc/cni/net.d/10-flannel.conflist"])
    })
  )

  it.effect("unmount-below says how many mounts went below which prefix, and what a linked prefix resolved to", () =>
    Effect.gen(function* () {
      const host = yield* MemoryHost.MemoryHost
      yield* Effect.orDie(host.tmpfs("/data/kubelet/pods/p1/volumes/v"))
      yield* Effect.orDie(host.tmpfs("/data/kubelet/pods/p2/volumes/v"))
      const text = yield* runCli(["unmount-below", "/var/lib/kubelet"])
      assert.strictEqual(text.code, 0)
      assert.include(text.stdout.join("\n"), "unmounted 2 mounts at or below /var/lib/kubelet (-> /data/kubelet)")
      yield* Effect.orDie(host.tmpfs("/data/kubelet/pods/p3/volumes/v"))
      const json = yield* runJson(["unmount-below", "/var/lib/kubelet"])
      assert.deepStrictEqual(json.doc.result.prefixes, [
        { prefix: "/var/lib/kubelet", resolved: "/data/kubelet", mountTable: "/data/kubelet" }
      ])
      assert.deepStrictEqual(
        json.doc.result.unmounted.map((m: { mountPoint: string }) => m.mountPoint),
        ["/data/kubelet/pods/p3/volumes/v"]
      )
    }).pipe(
      Effect.provide(
        Layer.mergeAll(
          MemoryNode.layer({
            files: {
              "/data/kubelet/pods/p1/volumes/v/.keep": "",
              "/data/kubelet/pods/p2/volumes/v/.keep": "",
              "/data/kubelet/pods/p3/volumes/v/.keep": "",
              "/var/lib/kubelet": { symlink: "/data/kubelet" }
            }
          }),
          cliEnvironment
        )
      )
    )
  )

  it.effect("a teardown or reset that had to keep paths exits 3 and lists them", () =>
    Effect.gen(function* () {
      const host = yield* MemoryHost.MemoryHost
      yield* Effect.orDie(host.tmpfs("/var/lib/kubelet/pods/p1/volumes/v"))
      yield* host.failUnmount("/var/lib/kubelet/pods/p1/volumes/v", "EBUSY")
      const teardown = yield* runCli(["teardown-kubelet-dir"])
      assert.strictEqual(teardown.code, 3)
      assert.include(
        teardown.stdout.join("\n"),
        "kept 1 path (exit code 3):\n  /var/lib/kubelet/pods/p1 (UnmountFailed"
      )
      const json = yield* runJson(["teardown-kubelet-dir"])
      assert.strictEqual(json.code, 3)
      assert.strictEqual(json.doc.ok, false)
      assert.strictEqual(json.doc.result.kept[0].reason, "UnmountFailed")
      yield* Effect.orDie(host.tmpfs("/etc/cni/net.d"))
      const reset = yield* runCli(["reset-cni"])
      assert.strictEqual(reset.code, 3)
    }).pipe(
      Effect.provide(
        Layer.mergeAll(
          MemoryNode.layer({
            files: { ...seeded, "/var/lib/kubelet/pods/p1/volumes/v/.keep": "", "/var/lib/kubelet/pods/p2/x": "" }
          }),
          cliEnvironment
        )
      )
    )
  )

  it.effect("a defect is reported as an internal error: with --json still exactly one document", () =>
    Effect.gen(function* () {
      const host = yield* MemoryHost.MemoryHost
      yield* Effect.orDie(host.tmpfs("/k/v"))
      const json = yield* runJson(["unmount-below", "/k"])
      assert.strictEqual(json.code, 1)
      assert.strictEqual(json.doc.error._tag, "InternalError")
      assert.include(json.doc.error.message, "the mounter broke")
      const text = yield* runCli(["unmount-below", "/k"])
      assert.strictEqual(text.code, 1)
      assert.deepStrictEqual(text.stdout, [])
      assert.isTrue(text.stderr.some((l) => l.includes("internal error") && l.includes("the mounter broke")))
    }).pipe(
      Effect.provide(
        Layer.mergeAll(
          Layer.succeed(
            Mounter.Mounter,
            Mounter.Mounter.of({ unmount: () => Effect.die(new Error("the mounter broke")) })
          ),
          cliEnvironment
        ).pipe(Layer.provideMerge(MemoryNode.layer({ files: { "/k/v/.keep": "" } })))
      )
    )
  )

  it.effect("--help shows the defaults", () =>
    Effect.gen(function* () {
      const await_ = helpText(yield* runCli(["localdns", "await", "--help"]))
      assert.include(await_, "default: 120")
      assert.include(await_, "default: 169.254.10.10")
      assert.include(await_, "default: 169.254.10.11")
      assert.include(helpText(yield* runCli(["localdns", "setup", "--help"])), "default: dummy")
      assert.include(helpText(yield* runCli(["--help"])), "default: /, the real host")
      assert.include(
        helpText(yield* runCli(["reset-kubelet-identity", "--help"])),
        "default: /var/lib/kubelet/bootstrap-kubeconfig"
      )
    }).pipe(Effect.provide(Layer.mergeAll(MemoryNode.layer(), cliEnvironment)))
  )

  it.effect("--help lists every subcommand, and each group lists its own", () =>
    Effect.gen(function* () {
      const help = helpText(yield* runCli(["--help"]))
      for (const name of [
        "unmount-below",
        "snapshot",
        "reset-cni",
        "reset-kubelet-identity",
        "teardown-kubelet-dir",
        "restart-changed",
        "localdns",
        "running",
        "demo"
      ]) {
        assert.match(help, new RegExp(`^  ${name} `, "m"), name)
      }
      const snapshot = helpText(yield* runCli(["snapshot", "--help"]))
      for (const name of ["take", "restore", "recover", "discard"])
        assert.match(snapshot, new RegExp(`^  ${name} `, "m"))
      const localdns = helpText(yield* runCli(["localdns", "--help"]))
      for (const name of ["setup", "cleanup", "await"]) assert.match(localdns, new RegExp(`^  ${name} `, "m"))
    }).pipe(Effect.provide(Layer.mergeAll(MemoryNode.layer(), cliEnvironment)))
  )
})

const containerGate = Gate.check("hostnode --container on a real systemd machine", [
  "root",
  "pid-namespace",
  "private-mount-namespace",
  { command: "nsenter" },
  { command: "systemctl" }
])

// What bin.ts runs on (NodeHost.layer), and a container beside it: a SystemdMachine.
const withMachine = Layer.mergeAll(
  SystemdMachine.layer.pipe(Layer.provide(NodeServices.layer), Layer.orDie),
  NodeHost.layer,
  cliEnvironment
)

describe.skipIf(containerGate.skip)("Cli --container", () => {
  layer(withMachine, { timeout: "120 seconds", excludeTestServices: true })("on a SystemdMachine", (it) => {
    it.effect("--dry-run plans the container's unmounts and removals and changes nothing; the real run does them", () =>
      Effect.gen(function* () {
        const m = yield* SystemdMachine.SystemdMachine
        const fs = yield* FileSystem.FileSystem
        const volume = "/var/lib/kubelet/pods/4b2c/volumes/kubernetes.io~secret/token"
        yield* fs.makeDirectory(`${m.hostRoot}${volume}`, { recursive: true })
        yield* HostCommand.run("nsenter", ["-t", String(m.pid), "-m", "--", "mount", "-t", "tmpfs", "t", volume])
        yield* fs
          .writeFileString(`${m.hostRoot}/etc/cni/net.d/10-bridge.conflist`, "{}")
          .pipe(
            Effect.catch(() =>
              fs
                .makeDirectory(`${m.hostRoot}/etc/cni/net.d`, { recursive: true })
                .pipe(Effect.andThen(fs.writeFileString(`${m.hostRoot}/etc/cni/net.d/10-bridge.conflist`, "{}")))
            )
          )
        const mounted = () =>
          Effect.map(MountInfo.read(`/proc/${m.pid}/mountinfo`), (t) => t.some((e) => e.mountPoint === volume))
        const pid = String(m.pid)

        const dry = yield* runJson(["--container", pid, "--dry-run", "unmount-below", "--strict", "/var/lib/kubelet"])
        assert.strictEqual(dry.code, 0, JSON.stringify(dry.doc))
        assert.deepStrictEqual(
          dry.doc.plan.map((s: { readonly service: string; readonly target: string }) => `${s.service} ${s.target}`),
          // Named as the container sees it, not below the agent's descriptor of its root.
          [`Mounter ${volume}`]
        )
        const dryTeardown = yield* runJson(["--container", pid, "--dry-run", "teardown-kubelet-dir"])
        assert.strictEqual(dryTeardown.code, 0, JSON.stringify(dryTeardown.doc))
        const dryCni = yield* runJson(["--container", pid, "--dry-run", "reset-cni"])
        assert.include(dryCni.doc.result.removed, "/etc/cni/net.d/10-bridge.conflist")
        // nothing happened
        assert.isTrue(yield* mounted())
        assert.isTrue(yield* fs.exists(`${m.hostRoot}/etc/cni/net.d/10-bridge.conflist`))
        assert.isTrue(yield* fs.exists(`${m.hostRoot}/var/lib/kubelet/pods/4b2c`))

        const real = yield* runJson(["--container", pid, "unmount-below", "--strict", "/var/lib/kubelet"])
        assert.strictEqual(real.code, 0)
        assert.isFalse(yield* mounted())
        assert.strictEqual((yield* runJson(["--container", pid, "teardown-kubelet-dir"])).code, 0)
        assert.isFalse(yield* fs.exists(`${m.hostRoot}/var/lib/kubelet/pods/4b2c`))
        assert.strictEqual((yield* runJson(["--container", pid, "reset-cni"])).code, 0)
        assert.isFalse(yield* fs.exists(`${m.hostRoot}/etc/cni/net.d/10-bridge.conflist`))
        const running = yield* runJson(["--container", pid, "running"])
        assert.strictEqual(running.doc.result.running, false, "no containerd or kubelet in the machine")
      }).pipe(Effect.provide(TestConsole.layer))
    )

    it.effect("a report names every path as the container sees it, and the container once", () =>
      Effect.gen(function* () {
        const m = yield* SystemdMachine.SystemdMachine
        const fs = yield* FileSystem.FileSystem
        const pid = String(m.pid)
        const inMachine = (args: ReadonlyArray<string>) =>
          HostCommand.run("nsenter", ["-t", pid, "-m", "--", ...args]).pipe(
            Effect.tap((r) => Effect.sync(() => assert.strictEqual(r.exitCode, 0, `${args.join(" ")}: ${r.stderr}`)))
          )
        const pod = "/var/lib/kubelet/pods/7f3a"
        const volume = `${pod}/volumes/kubernetes.io~empty-dir/cache`
        yield* fs.makeDirectory(`${m.hostRoot}${volume}`, { recursive: true })
        yield* fs.writeFileString(`${m.hostRoot}${pod}/etc-hosts`, "hosts\n")
        yield* inMachine(["mount", "-t", "tmpfs", "t", volume])
        yield* fs.makeDirectory(`${m.hostRoot}/etc/cni/net.d`, { recursive: true })
        yield* fs.writeFileString(`${m.hostRoot}/etc/cni/net.d/10-c.conflist`, "{}")
        // A mount inside the CNI state: the reset keeps it, and says where (kept[].path, kept[].mountPoint).
        yield* fs.makeDirectory(`${m.hostRoot}/var/lib/cni/networks/held`, { recursive: true })
        yield* inMachine(["mount", "-t", "tmpfs", "t", "/var/lib/cni/networks/held"])

        /** Every key named `key` in a JSON value, however deep. */
        const count = (value: unknown, key: string): number =>
          typeof value !== "object" || value === null
            ? 0
            : Object.entries(value).reduce((n, [k, v]) => n + (k === key ? 1 : 0) + count(v, key), 0)
        const checked = (doc: unknown, what: string) => {
          const text = JSON.stringify(doc)
          // Not `/proc/<pid>/root/...`, not this process's descriptor of the pinned root `/proc/<self>/fd/<n>/...`.
          assert.notInclude(text, "/proc/", what)
          assert.deepStrictEqual((doc as { readonly container: unknown }).container, { pid: m.pid }, what)
          assert.strictEqual(count(doc, "container"), 1, what)
          assert.strictEqual(count(doc, "pid"), 1, what)
        }

        const teardown = yield* runJson(["--container", pid, "teardown-kubelet-dir"])
        assert.strictEqual(teardown.code, 0, JSON.stringify(teardown.doc))
        checked(teardown.doc, "teardown-kubelet-dir")
        assert.includeMembers(teardown.doc.result.removed, [`${pod}/etc-hosts`, volume, pod])
        assert.isFalse(yield* fs.exists(`${m.hostRoot}${pod}`))

        const reset = yield* runJson(["--container", pid, "reset-cni"])
        assert.strictEqual(reset.code, 3, JSON.stringify(reset.doc))
        checked(reset.doc, "reset-cni")
        // The reset's error carries what it removed and kept, and its message names them: the container's paths.
        assert.strictEqual(reset.doc.error._tag, "ResetError")
        assert.include(reset.doc.error.removed, "/etc/cni/net.d/10-c.conflist")
        assert.deepStrictEqual(
          reset.doc.error.kept.map((k: { readonly path: string; readonly mountPoint?: string }) => [
            k.path,
            k.mountPoint
          ]),
          [["/var/lib/cni", "/var/lib/cni/networks/held"]]
        )
        assert.include(reset.doc.error.message, '"/var/lib/cni" (MountBelow')

        // For a person: one line says which container, once; the report's paths are the container's.
        yield* fs.writeFileString(`${m.hostRoot}/etc/cni/net.d/20-c.conflist`, "{}")
        const text = yield* runCli(["--container", pid, "reset-cni"])
        assert.strictEqual(text.code, 3, text.stderr.join("\n"))
        assert.deepStrictEqual(
          text.stderr.filter((l) => l.includes(pid)),
          [`hostnode reset-cni: in container process ${pid} (paths as the container sees them)`]
        )
        assert.notInclude([...text.stdout, ...text.stderr].join("\n"), "/proc/")
        assert.include(text.stderr.join("\n"), '(1 removed, 1 kept): "/var/lib/cni" (MountBelow')
        assert.include(text.stderr.join("\n"), "mounted at /var/lib/cni/networks/held")
        yield* inMachine(["umount", "/var/lib/cni/networks/held"])
      }).pipe(Effect.provide(TestConsole.layer))
    )
  })
})

const standInGate = Gate.check("hostnode --container on stand-in containers", [
  "root",
  "pid-namespace",
  "private-mount-namespace",
  { command: "chroot" },
  { command: "nsenter" }
])

/** The node state below a stand-in container's root. */
const standInFiles: Readonly<Record<string, string>> = {
  "/etc/cni/net.d/10-marker.conflist": "{}\n",
  "/var/lib/cni/networks/x/10.244.0.7": "c\n"
}

/**
 * A throwaway root for a stand-in container: the node state above, this
 * host's /usr bound read-only (for `sleep`), and the root itself a mount
 * (as a container's root is, so its mount table describes it). Made in the
 * test's private mount namespace; unmounted and removed with the scope.
 */
const standInRoot = Effect.acquireRelease(
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const root = yield* fs.makeTempDirectory({ prefix: "hostnode-cli-standin-" })
    for (const [path, text] of Object.entries(standInFiles)) {
      yield* fs.makeDirectory(`${root}${path.slice(0, path.lastIndexOf("/"))}`, { recursive: true })
      yield* fs.writeFileString(`${root}${path}`, text)
    }
    yield* fs.makeDirectory(`${root}/usr`)
    yield* fs.makeDirectory(`${root}/run/systemd`, { recursive: true })
    for (const dir of ["bin", "lib", "lib64"]) yield* fs.symlink(`usr/${dir}`, `${root}/${dir}`)
    for (const args of [
      ["--bind", root, root],
      ["--bind", "/usr", `${root}/usr`],
      ["-o", "remount,bind,ro", `${root}/usr`]
    ]) {
      const r = yield* HostCommand.run("mount", args)
      assert.strictEqual(r.exitCode, 0, `mount ${args.join(" ")}: ${r.stderr}`)
    }
    return root
  }).pipe(Effect.orDie),
  (root) =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const r = yield* HostCommand.run("umount", ["-R", root])
      // Never a recursive removal across a mount still there (the bind of /usr).
      if (r.exitCode === 0) yield* fs.remove(root, { recursive: true })
    }).pipe(Effect.ignore)
)

/** The pid of `sleep` once it runs with `root` as its root (before that, its root is still this process's). */
const sleeping = (pid: () => Effect.Effect<number, unknown>, root: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const p = yield* pid()
    const comm = yield* fs.readFileString(`/proc/${p}/comm`)
    const at = yield* fs.readLink(`/proc/${p}/root`)
    if (comm.trim() !== "sleep" || at !== root) return yield* Effect.fail("not yet in its root")
    return p
  }).pipe(
    // The child starts when the scheduler lets it: poll on a clock (up to 10 s), not a count.
    Effect.retry({ schedule: Schedule.spaced("20 millis"), times: 500 }),
    Effect.orDie
  )

/**
 * A stand-in container in this process's own mount namespace: `sleep` with
 * `root` as its root (a chroot). Killed by its pid when the scope closes.
 */
const ownNamespaceStandIn = (root: string) =>
  Effect.gen(function* () {
    const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
    const handle = yield* Effect.acquireRelease(
      spawner.spawn(ChildProcess.make("chroot", [root, "/usr/bin/sleep", "600"])),
      (h) => h.kill({ killSignal: "SIGKILL" }).pipe(Effect.ignore)
    ).pipe(Effect.orDie)
    return yield* sleeping(() => Effect.succeed(Number(handle.pid)), root)
  })

/**
 * A stand-in container of its own: `sleep` as PID 1 of new pid and mount
 * namespaces, with `root` as its root. Its host pid; the scope kills it.
 */
const standIn = (root: string) =>
  Effect.gen(function* () {
    const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
    const fs = yield* FileSystem.FileSystem
    const handle = yield* Effect.acquireRelease(
      spawner.spawn(
        ChildProcess.make("unshare", [
          "--pid",
          "--fork",
          "--kill-child",
          "--mount",
          "--propagation",
          "private",
          "chroot",
          root,
          "/usr/bin/sleep",
          "600"
        ])
      ),
      (h) => h.kill({ killSignal: "SIGKILL" }).pipe(Effect.ignore)
    ).pipe(Effect.orDie)
    const unshare = Number(handle.pid)
    return yield* sleeping(
      () =>
        fs
          .readFileString(`/proc/${unshare}/task/${unshare}/children`)
          .pipe(Effect.map((t) => Number.parseInt(t.trim(), 10))),
      root
    )
  })

/**
 * A socket at `path` that accepts connections and never answers (a
 * container's systemd that stalls the agent), and a `Deferred` completed at
 * the first connection. Closed with the scope.
 */
const stallingSocket = (path: string) =>
  Effect.gen(function* () {
    const accepted = yield* Deferred.make<void>()
    const held: Array<Net.Socket> = []
    yield* Effect.acquireRelease(
      Effect.callback<Net.Server>((resume) => {
        const server = Net.createServer((socket) => {
          held.push(socket)
          Deferred.doneUnsafe(accepted, Effect.void)
        })
        server.on("error", (e) => resume(Effect.die(e)))
        server.listen(path, () => resume(Effect.succeed(server)))
      }),
      (server) =>
        Effect.callback<void>((resume) => {
          for (const socket of held) socket.destroy()
          server.close(() => resume(Effect.void))
        })
    )
    return accepted
  })

const withHost = Layer.mergeAll(NodeHost.layer, cliEnvironment, TestConsole.layer)

describe.skipIf(standInGate.skip)("Cli --container on stand-in containers", () => {
  it.live(
    "a pid in this process's own mount namespace: exit 2 naming --allow-own-namespace, nothing done; with it, accepted",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const root = yield* standInRoot
        const pid = String(yield* ownNamespaceStandIn(root))
        const marker = `${root}/etc/cni/net.d/10-marker.conflist`

        // The runner itself: in its own namespace, its root this host's `/` (a dry run, should the guard ever fail).
        for (const argv of [
          ["--container", String(process.pid), "--dry-run", "reset-cni"],
          ["--container", pid, "reset-cni"],
          ["--container", pid, "teardown-kubelet-dir"]
        ]) {
          const text = yield* runCli(argv)
          assert.strictEqual(text.code, 2, argv.join(" "))
          assert.deepStrictEqual(text.stdout, [], argv.join(" "))
          assert.strictEqual(text.stderr.length, 1, text.stderr.join("\n"))
          const line = text.stderr[0] ?? ""
          assert.include(line, `container process ${argv[1]}: OwnNamespace`)
          assert.include(line, "own mount namespace")
          assert.include(line, "pass --allow-own-namespace if acting on this host is meant")
          assert.notInclude(line, "allowOwnNamespace")
        }
        const json = yield* runJson(["--container", pid, "reset-cni"])
        assert.strictEqual(json.code, 2)
        assert.strictEqual(json.doc.error._tag, "ContainerError")
        assert.strictEqual(json.doc.error.reason._tag, "OwnNamespace")
        assert.strictEqual(json.doc.error.reason.pid, Number(pid))
        assert.deepStrictEqual(json.doc.container, { pid: Number(pid) })
        assert.include(json.doc.error.message, "--allow-own-namespace")
        assert.include(json.doc.error.hint, "--allow-own-namespace")
        assert.isTrue(yield* fs.exists(marker), "nothing was done")

        // --host-root with --container, "/" included: refused before the pid is even looked at.
        for (const hostRoot of ["/", root]) {
          const refused = yield* runJson([
            "--container",
            pid,
            "--allow-own-namespace",
            "--host-root",
            hostRoot,
            "reset-cni"
          ])
          assert.strictEqual(refused.code, 2, hostRoot)
          assert.strictEqual(refused.doc.error.reason._tag, "InvalidPath")
          assert.include(refused.doc.error.message, "cannot be given with --container")
          assert.isTrue(yield* fs.exists(marker), `nothing was done (--host-root ${hostRoot})`)
        }

        // Said so: accepted, in the process's root (this host's namespace, the stand-in's directory).
        const dry = yield* runJson(["--container", pid, "--allow-own-namespace", "--dry-run", "reset-cni"])
        assert.strictEqual(dry.code, 0, JSON.stringify(dry.doc))
        assert.deepStrictEqual(dry.doc.container, { pid: Number(pid) })
        assert.include(dry.doc.result.removed, "/etc/cni/net.d/10-marker.conflist")
        assert.notInclude(JSON.stringify(dry.doc), "/proc/")
        assert.isTrue(yield* fs.exists(marker), "a dry run changes nothing")
        const real = yield* runJson(["--container", pid, "--allow-own-namespace", "reset-cni"])
        assert.strictEqual(real.code, 0, JSON.stringify(real.doc))
        assert.isFalse(yield* fs.exists(marker))
        assert.isFalse(yield* fs.exists(`${root}/var/lib/cni`))
      }).pipe(Effect.scoped, Effect.provide(withHost)),
    { timeout: 60_000 }
  )

  it.live(
    "a container that exits while the command runs: exit 4, ContainerExited with reason Gone, nothing more done",
    () =>
      Effect.gen(function* () {
        const root = yield* standInRoot
        const accepted = yield* stallingSocket(`${root}/run/systemd/private`)
        const pid = yield* standIn(root)
        const argv = ["--container", String(pid), "restart-changed", "--was-running", "--job-timeout", "3", "a.service"]
        // The command has pinned the container and waits on its systemd: then the container exits.
        const json = yield* Effect.forkChild(runJson(argv))
        yield* Deferred.await(accepted)
        yield* Effect.sync(() => process.kill(pid, "SIGKILL"))
        const { code, doc } = yield* Fiber.join(json)
        assert.strictEqual(code, 4, JSON.stringify(doc))
        assert.strictEqual(doc.ok, false)
        assert.deepStrictEqual(doc.container, { pid })
        assert.strictEqual(doc.error._tag, "ContainerExited")
        assert.strictEqual(doc.error.reason._tag, "Gone")
        assert.strictEqual(doc.error.reason.pid, pid)
        assert.strictEqual(
          doc.error.message,
          `the container (process ${pid}) exited while the command ran: nothing more was done in it`
        )
        // Where the operation itself stopped.
        assert.strictEqual(doc.error.cause._tag, "RestartError")
        assert.deepStrictEqual(doc.error.cause.restarted, [])

        // A person's text says the same, and the container is gone now: refused as such (exit 2, NotFound).
        const again = yield* runCli(argv)
        assert.strictEqual(again.code, 2, again.stderr.join("\n"))
        assert.include(again.stderr.join("\n"), `container process ${pid}: NotFound`)
      }).pipe(Effect.scoped, Effect.provide(withHost)),
    { timeout: 60_000 }
  )

  it.live(
    "the text of a container that exited says so, once, with where the operation stopped",
    () =>
      Effect.gen(function* () {
        const root = yield* standInRoot
        const accepted = yield* stallingSocket(`${root}/run/systemd/private`)
        const pid = yield* standIn(root)
        const text = yield* Effect.forkChild(
          runCli(["--container", String(pid), "restart-changed", "--was-running", "--job-timeout", "3", "a.service"])
        )
        yield* Deferred.await(accepted)
        yield* Effect.sync(() => process.kill(pid, "SIGKILL"))
        const { code, stdout, stderr } = yield* Fiber.join(text)
        assert.strictEqual(code, 4, stderr.join("\n"))
        assert.deepStrictEqual(stdout, [])
        const said = stderr.join("\n")
        assert.include(
          said,
          `hostnode restart-changed: the container (process ${pid}) exited while the command ran: nothing more was done in it\n  where it stopped (RestartError): `
        )
        assert.include(said, "what to check: The container's init exited")
      }).pipe(Effect.scoped, Effect.provide(withHost)),
    { timeout: 60_000 }
  )
})

describe("Cli, as a newcomer uses it", () => {
  const node = Layer.mergeAll(
    MemoryNode.layer({
      files: {
        ...seeded,
        "/srv/not-a-snapshot/notes.txt": "mine",
        "/srv/file": "a file"
      }
    }),
    cliEnvironment
  )

  it.effect("--version prints the version of the @hostnode/cli package", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const pkg = JSON.parse(yield* fs.readFileString(fileURLToPath(new URL("../package.json", import.meta.url))))
      const text = yield* runCli(["--version"]).pipe(Effect.provide(node))
      assert.deepStrictEqual(text.stdout, [`hostnode v${pkg.version}`])
      const json = yield* runJson(["--version"]).pipe(Effect.provide(node))
      assert.strictEqual(json.code, 0)
      assert.deepStrictEqual(json.doc, {
        ok: true,
        command: "version",
        result: { name: "hostnode", version: pkg.version }
      })
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("`hostnode help [SUBCOMMAND...]` is `--help`; `help` as a flag's value is left alone", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* runCli(["help"]), yield* runCli(["--help"]))
      const take = yield* runCli(["help", "snapshot", "take"])
      assert.strictEqual(take.code, 0)
      assert.deepStrictEqual(take, yield* runCli(["snapshot", "take", "--help"]))
      assert.include(take.stdout.join("\n"), "--dir DIR")
      const json = yield* runJson(["help", "reset-cni"])
      assert.strictEqual(json.code, 0)
      assert.strictEqual(json.doc.command, "help")
      assert.strictEqual(json.doc.result.command, "hostnode reset-cni")
      assert.include(json.doc.result.help, "USAGE\n  hostnode reset-cni")
      // Help for a subcommand that does not exist is the unknown subcommand's error, not the parent's help.
      for (const argv of [
        ["help", "reset-cnii"],
        ["reset-cnii", "--help"],
        ["snapshot", "tak", "-h"]
      ]) {
        const typo = yield* runCli(argv)
        assert.strictEqual(typo.code, 2, argv.join(" "))
        assert.deepStrictEqual(typo.stdout, [], argv.join(" "))
        assert.include(typo.stderr[0], "did you mean", argv.join(" "))
      }
      assert.strictEqual((yield* runCli(["unmount-below", "/x", "--help"])).code, 0)
      assert.deepStrictEqual(helpAsFlag(["--host-root", "help", "reset-cni"]), ["--host-root", "help", "reset-cni"])
      assert.deepStrictEqual(helpAsFlag(["--json", "help"]), ["--json", "--help"])
    }).pipe(Effect.provide(node))
  )

  it.effect("--json prints exactly one document for help, the version and no subcommand too", () =>
    Effect.gen(function* () {
      for (const [argv, code] of [
        [["--help"], 0],
        [["snapshot", "--help"], 0],
        [[], 0],
        [["snapshot"], 2],
        [["localdns"], 2]
      ] as const) {
        const { code: got, doc } = yield* runJson(argv)
        assert.strictEqual(got, code, argv.join(" "))
        assert.strictEqual(doc.ok, code === 0, argv.join(" "))
      }
      const none = yield* runJson([])
      assert.include(none.doc.result.subcommands, "reset-cni")
      const group = yield* runJson(["snapshot"])
      assert.strictEqual(group.doc.error._tag, "UsageError")
      assert.include(group.doc.error.message, "take, restore, recover or discard")
    }).pipe(Effect.provide(node))
  )

  it.effect(
    "a usage error is JSON exactly when the command would print JSON: --json=on, --json true, not --json false",
    () =>
      Effect.gen(function* () {
        for (const argv of [
          ["--json=on", "reset-cni", "--bogus"],
          ["--json", "true", "reset-cni", "--bogus"],
          ["reset-cni", "--json=yes", "--bogus"]
        ]) {
          const { code, stdout, stderr } = yield* runCli(argv)
          assert.strictEqual(code, 2, argv.join(" "))
          assert.strictEqual(stdout.length, 1, argv.join(" "))
          assert.strictEqual(JSON.parse(stdout[0] ?? "").error._tag, "UsageError")
          assert.deepStrictEqual(stderr, [], argv.join(" "))
        }
        for (const argv of [
          ["--json", "false", "reset-cni", "--bogus"],
          ["--json=false", "reset-cni", "--bogus"],
          ["unmount-below", "--bogus", "--", "--json"]
        ]) {
          const { code, stdout, stderr } = yield* runCli(argv)
          assert.strictEqual(code, 2, argv.join(" "))
          assert.deepStrictEqual(stdout, [], argv.join(" "))
          assert.strictEqual(stderr.length, 1, argv.join(" "))
        }
      }).pipe(Effect.provide(node))
  )

  it.effect("a group without its subcommand is bad usage: exit 2, one line naming the subcommands", () =>
    Effect.gen(function* () {
      const { code, stdout, stderr } = yield* runCli(["snapshot"])
      assert.strictEqual(code, 2)
      assert.deepStrictEqual(stdout, [])
      assert.deepStrictEqual(stderr, [
        "hostnode snapshot: missing subcommand: take, restore, recover or discard (see `hostnode snapshot --help`)"
      ])
      const none = yield* runCli([])
      assert.strictEqual(none.code, 0)
      assert.include(none.stdout.join("\n"), "subcommands: unmount-below, snapshot,")
    }).pipe(Effect.provide(node))
  )

  it.effect("a typo'd subcommand is one line that suggests the right one", () =>
    Effect.gen(function* () {
      const { code, stderr } = yield* runCli(["reset-cnii"])
      assert.strictEqual(code, 2)
      assert.deepStrictEqual(stderr, [
        'hostnode: Unknown subcommand "reset-cnii" for "hostnode"; did you mean reset-cni? (see `hostnode --help`)'
      ])
      const json = yield* runJson(["snapshot", "tak"])
      assert.strictEqual(json.code, 2)
      assert.deepStrictEqual(json.doc.error.suggestions, ["take"])
      assert.strictEqual(json.doc.error.cause, "UnknownSubcommand")
      assert.notInclude(json.doc.error.message, "\n")
      assert.strictEqual(json.doc.error.hint, "see `hostnode snapshot --help`")
      // A mistyped global flag: effect/cli suggests only the subcommand's own flags.
      const flag = yield* runCli(["--dry-runn", "reset-cni"])
      assert.strictEqual(flag.code, 2)
      assert.strictEqual(flag.stderr.length, 1)
      assert.include(flag.stderr[0], "Unrecognized flag: --dry-runn in command hostnode; did you mean --dry-run?")
      const after = yield* runJson(["reset-cni", "--hostroot", "/x"])
      assert.deepStrictEqual(after.doc.error.suggestions, ["--host-root"])
    }).pipe(Effect.provide(node))
  )

  it.effect('--host-root "" (an unset variable) is refused, not taken as the real host', () =>
    Effect.gen(function* () {
      const host = yield* MemoryHost.MemoryHost
      const { code, stdout, stderr } = yield* runCli(["--host-root", "", "reset-cni"])
      assert.strictEqual(code, 2)
      assert.deepStrictEqual(stdout, [])
      assert.strictEqual(stderr.length, 1)
      assert.include(stderr[0], "--host-root is empty")
      assert.isDefined((yield* host.dump())["/etc/cni/net.d/10-flannel.conflist"])
      const json = yield* runJson(["--host-root", "", "restart-changed", "--was-running", "kubelet.service"])
      assert.strictEqual(json.code, 2)
      assert.strictEqual(json.doc.error._tag, "HostPathError")
    }).pipe(Effect.provide(node))
  )

  it.effect("--host-root with a `..` component is refused (exit 2), nothing removed below either place", () =>
    Effect.gen(function* () {
      const host = yield* MemoryHost.MemoryHost
      // `/etc/..` would clean to `/`, the real host: a root nobody wrote is never taken as another.
      const { code, stdout, stderr } = yield* runCli(["--host-root", "/etc/..", "reset-cni"])
      assert.strictEqual(code, 2)
      assert.deepStrictEqual(stdout, [])
      assert.strictEqual(stderr.length, 1)
      assert.include(stderr[0], '".." component')
      assert.isDefined((yield* host.dump())["/etc/cni/net.d/10-flannel.conflist"])
    }).pipe(Effect.provide(node))
  )

  it.effect("a dry run refused before anything prints no plan (not 'nothing would be changed')", () =>
    Effect.gen(function* () {
      for (const argv of [
        ["--dry-run", "unmount-below", "relative/path"],
        ["--dry-run", "restart-changed", "kubelet"],
        ["--dry-run", "localdns", "setup", "--node-listener", "10.0.0.1"]
      ]) {
        const { code, stdout, stderr } = yield* runCli(argv)
        assert.strictEqual(code, 2, argv.join(" "))
        assert.deepStrictEqual(stdout, [], argv.join(" "))
        assert.strictEqual(stderr.length, 1, argv.join(" "))
      }
    }).pipe(Effect.provide(node))
  )

  it.effect("running: a slot this node does not have is bad input (exit 2), not answered about the host", () =>
    Effect.gen(function* () {
      for (const slot of ["other", "", "bad slot/"]) {
        const { code, doc } = yield* runJson(["running", slot])
        assert.strictEqual(code, 2, slot)
        assert.strictEqual(doc.error._tag, "UsageError")
        assert.include(doc.error.message, `unknown slot ${JSON.stringify(slot)}`)
      }
      const text = yield* runCli(["running", "other"])
      assert.deepStrictEqual(text.stderr, [
        'hostnode running: unknown slot "other": this node has one node root, slot "host" (leave SLOT out: `hostnode running`)'
      ])
      assert.strictEqual((yield* runJson(["running"])).code, 0)
      assert.strictEqual((yield* runJson(["running", "host"])).code, 0)
    }).pipe(Effect.provide(node))
  )

  it.effect("snapshot discard refuses a --dir that is not a snapshot (it would remove it whole)", () =>
    Effect.gen(function* () {
      const host = yield* MemoryHost.MemoryHost
      for (const dir of ["/srv/not-a-snapshot", "/srv/file", "/etc"]) {
        const { code, doc } = yield* runJson(["snapshot", "discard", "--dir", dir])
        assert.strictEqual(code, 2, dir)
        assert.strictEqual(doc.error._tag, "SnapshotError")
        assert.strictEqual(doc.error.reason._tag, "NotASnapshot", dir)
        assert.include(doc.error.message, "nothing was changed")
        assert.include(doc.error.hint, "the directory `hostnode snapshot take --dir DIR` wrote")
        const dry = yield* runJson(["--dry-run", "snapshot", "discard", "--dir", dir])
        assert.strictEqual(dry.code, 2, dir)
      }
      const tree = yield* host.dump()
      assert.deepInclude(tree["/srv/not-a-snapshot/notes.txt"], { content: "mine" })
      assert.deepInclude(tree["/srv/file"], { content: "a file" })
      assert.isDefined(tree["/etc/kubernetes/kubelet.conf"])
      // A real snapshot still goes, and none there is still success.
      assert.strictEqual(
        (yield* runJson(["snapshot", "take", "--dir", "/srv/snap", "--path", "/etc/kubernetes"])).code,
        0
      )
      const discard = yield* runJson(["snapshot", "discard", "--dir", "/srv/snap"])
      assert.strictEqual(discard.code, 0)
      assert.isTrue(discard.doc.result.removed)
      assert.isFalse((yield* runJson(["snapshot", "discard", "--dir", "/srv/snap"])).doc.result.removed)
    }).pipe(Effect.provide(node))
  )

  it.effect(
    "snapshot take into an existing directory that is not a snapshot: exit 2, not 'a snapshot is already there'",
    () =>
      Effect.gen(function* () {
        const host = yield* MemoryHost.MemoryHost
        for (const dir of ["/srv/not-a-snapshot", "/srv/file", "/var/lib/cni"]) {
          const { code, doc } = yield* runJson(["snapshot", "take", "--dir", dir, "--path", "/etc/kubernetes"])
          assert.strictEqual(code, 2, dir)
          assert.strictEqual(doc.error.reason._tag, "NotASnapshot", dir)
          assert.include(doc.error.hint, "a directory that does not exist yet", dir)
        }
        assert.deepInclude((yield* host.dump())["/srv/not-a-snapshot/notes.txt"], { content: "mine" })
        // A snapshot really there is still `Exists`, with what to do about it.
        assert.strictEqual(
          (yield* runJson(["snapshot", "take", "--dir", "/srv/s1", "--path", "/etc/kubernetes"])).code,
          0
        )
        const again = yield* runJson(["snapshot", "take", "--dir", "/srv/s1", "--path", "/etc/kubernetes"])
        assert.strictEqual(again.code, 1)
        assert.strictEqual(again.doc.error.reason._tag, "Exists")
        assert.include(again.doc.error.hint, "snapshot recover --dir DIR")
      }).pipe(Effect.provide(node))
  )

  it.effect("snapshot restore of a directory that is not a snapshot says so, not 'recover can try again'", () =>
    Effect.gen(function* () {
      const { code, stderr } = yield* runCli(["snapshot", "restore", "--dir", "/srv/not-a-snapshot"])
      assert.strictEqual(code, 1)
      const text = stderr.join("\n")
      assert.include(text, "InvalidManifest")
      assert.include(text, "not a snapshot `hostnode snapshot take` wrote")
      assert.notInclude(text, "can try again")
      const missing = yield* runJson(["snapshot", "restore", "--dir", "/srv/none"])
      assert.include(missing.doc.error.hint, "check --dir")
    }).pipe(Effect.provide(node))
  )

  it.effect("messages name the flag to use: --was-running, --allow-root, UNIT.service, UNIT=true|false", () =>
    Effect.gen(function* () {
      const restart = yield* runCli(["restart-changed", "kubelet.service"])
      assert.strictEqual(restart.code, 0)
      assert.include(restart.stdout.join("\n"), "pass --was-running to restart")
      const root = yield* runCli(["unmount-below", "/"])
      assert.strictEqual(root.code, 2)
      assert.include(root.stderr[0], "pass --allow-root")
      assert.notInclude(root.stderr[0], "allowRoot")
      const unit = yield* runCli(["restart-changed", "--was-running", "kubelet"])
      assert.strictEqual(unit.code, 2)
      assert.include(unit.stderr[0], "did you mean kubelet.service?")
      const maybe = yield* runCli(["restart-changed", "kubelet.service=maybe"])
      assert.strictEqual(maybe.code, 2)
      assert.include(maybe.stderr[0], "UNIT=true|false (also yes|no, 1|0, changed|unchanged)")
      assert.notInclude(maybe.stderr[0], "Expected: expected")
      for (const file of ["var/lib/kubelet/pki/bootstrap.pem", ""]) {
        const bootstrap = yield* runCli([
          "reset-kubelet-identity",
          "--auth",
          "bootstrap-token",
          "--bootstrap-kubeconfig",
          file
        ])
        assert.strictEqual(bootstrap.code, 2, file)
        assert.include(bootstrap.stderr[0], "an absolute host path")
      }
      const lock = yield* runCli(["snapshot", "take", "--dir", "/srv/s", "--lock-timeout", "-1"])
      assert.strictEqual(lock.code, 2)
      assert.include(lock.stderr[0], "zero or a positive whole number of seconds, not -1")
    }).pipe(Effect.provide(node))
  )
})

describe("UsageError", () => {
  it.effect("catchReason reaches each reason, with its own fields; the JSON document nests it", () =>
    Effect.gen(function* () {
      const refuse = (reason: UsageErrorReason) => Effect.fail(new UsageError({ reason, fix: "see `hostnode --help`" }))
      const slot = yield* refuse(new UnknownSlot({ slot: "other", known: "host" })).pipe(
        Effect.as(""),
        Effect.catchReason("UsageError", "UnknownSlot", (reason) => Effect.succeed(reason.slot))
      )
      assert.strictEqual(slot, "other")
      const group = yield* refuse(new MissingSubcommand({ group: "snapshot", subcommands: ["take", "restore"] })).pipe(
        Effect.as(""),
        Effect.catchReason("UsageError", "MissingSubcommand", (reason, error) =>
          Effect.succeed(`${reason.group}: ${error.message}`)
        )
      )
      assert.strictEqual(group, "snapshot: missing subcommand: take or restore")
      // @ts-expect-error: UsageError has no reason of that name
      Effect.catchReason("UsageError", "NoSuchReason", () => Effect.void)
      const doc = errorJson(
        new UsageError({ reason: new UnknownSlot({ slot: "x", known: "host" }), fix: "leave SLOT out" })
      )
      assert.deepInclude(doc, {
        _tag: "UsageError",
        reason: {
          _tag: "UnknownSlot",
          message: 'unknown slot "x": this node has one node root, slot "host"',
          slot: "x",
          known: "host"
        }
      })
      assert.isTrue(isInputError(new UsageError({ reason: new UnknownSlot({ slot: "x", known: "host" }), fix: "" })))
    })
  )
})

describe("refusals name the flag, keyed on the reason", () => {
  it.effect("SnapshotError/HostRootMismatch says --allow-root-mismatch, not the library's option", () =>
    Effect.gen(function* () {
      const taken = yield* runCli(["--host-root", "/a", "snapshot", "take", "--dir", "/srv/s", "--path", "/etc/x"])
      assert.strictEqual(taken.code, 0, taken.stderr.join("\n"))
      const other = yield* runCli(["--host-root", "/b", "snapshot", "restore", "--dir", "/srv/s"])
      assert.strictEqual(other.code, 2)
      assert.include(other.stderr[0], "; pass --allow-root-mismatch if that is the same tree under another name")
      assert.notInclude(other.stderr[0], "allowHostRootMismatch")
      const json = yield* runJson(["--host-root", "/b", "snapshot", "restore", "--dir", "/srv/s"])
      assert.strictEqual(json.doc.error._tag, "SnapshotError")
      assert.strictEqual(json.doc.error.reason._tag, "HostRootMismatch")
    }).pipe(
      Effect.provide(Layer.mergeAll(MemoryNode.layer({ files: { "/a/etc/x": "1", "/b/etc/x": "1" } }), cliEnvironment))
    )
  )
})

describe("exit codes", () => {
  it("a container gone (`Gone`, at any depth of the error) is 4; the mounter's `Gone` (a string) is not", () => {
    const gone = new HostPath.Gone({ pid: 4242, detail: "container process 4242 has exited" })
    assert.strictEqual(Cli.ExitCodes.gone, 4)
    assert.strictEqual(exitCodeFor(new HostPath.HostPathError({ reason: gone, root: "/" })), 4)
    const systemd = new Systemd.SystemdError({ verb: "restart", unit: "kubelet.service", reason: gone })
    assert.strictEqual(exitCodeFor(systemd), 4)
    const restart = new RestartChanged.RestartError({
      reason: new RestartChanged.Failure({ _tag: "RestartFailed", cause: systemd }),
      unit: "kubelet.service",
      restarted: ["containerd.service"],
      notAttempted: []
    })
    assert.strictEqual(exitCodeFor(restart), 4)
    assert.isFalse(isInputError(restart))
    // Not a container's exit: the path a mount was on is gone (a string reason), and the usual codes.
    const unverified = {
      _tag: "UnmountError",
      message: "1 target could not be verified",
      results: [{ _tag: "Unverified", target: "/m", reason: "Gone", detail: "the path no longer exists" }]
    }
    assert.strictEqual(exitCodeFor(unverified), 1)
    assert.strictEqual(
      exitCodeFor(
        new HostPath.HostPathError({ reason: new HostPath.Refused({ _tag: "InvalidPath", detail: "empty" }), root: "" })
      ),
      2
    )
  })
})
