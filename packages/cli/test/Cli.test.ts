/**
 * The command tree run in-process (`Cli.run`) against a simulated node
 * (`MemoryNode`): what it prints, the exit codes, and that `--dry-run`
 * changes nothing.
 */
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it, layer } from "@effect/vitest"
import { Cli } from "@hostnode/cli"
import { HostCommand, Mounter, MountInfo } from "@hostnode/core"
import { NodeHost } from "@hostnode/node"
import { Gate, MemoryHost, MemoryNode, SystemdMachine } from "@hostnode/test"
import { Effect, FileSystem, Layer } from "effect"
import { TestConsole } from "effect/testing"
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
          [`Mounter ${m.hostRoot}${volume}`]
        )
        const dryTeardown = yield* runJson(["--container", pid, "--dry-run", "teardown-kubelet-dir"])
        assert.strictEqual(dryTeardown.code, 0, JSON.stringify(dryTeardown.doc))
        const dryCni = yield* runJson(["--container", pid, "--dry-run", "reset-cni"])
        assert.include(dryCni.doc.result.removed, `${m.hostRoot}/etc/cni/net.d/10-bridge.conflist`)
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
  })
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
      assert.deepStrictEqual(Cli.helpAsFlag(["--host-root", "help", "reset-cni"]), ["--host-root", "help", "reset-cni"])
      assert.deepStrictEqual(Cli.helpAsFlag(["--json", "help"]), ["--json", "--help"])
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
      const refuse = (reason: Cli.UsageErrorReason) =>
        Effect.fail(new Cli.UsageError({ reason, fix: "see `hostnode --help`" }))
      const slot = yield* refuse(new Cli.UnknownSlot({ slot: "other", known: "host" })).pipe(
        Effect.as(""),
        Effect.catchReason("UsageError", "UnknownSlot", (reason) => Effect.succeed(reason.slot))
      )
      assert.strictEqual(slot, "other")
      const group = yield* refuse(
        new Cli.MissingSubcommand({ group: "snapshot", subcommands: ["take", "restore"] })
      ).pipe(
        Effect.as(""),
        Effect.catchReason("UsageError", "MissingSubcommand", (reason, error) =>
          Effect.succeed(`${reason.group}: ${error.message}`)
        )
      )
      assert.strictEqual(group, "snapshot: missing subcommand: take or restore")
      // @ts-expect-error: UsageError has no reason of that name
      Effect.catchReason("UsageError", "NoSuchReason", () => Effect.void)
      const doc = Cli.errorJson(
        new Cli.UsageError({ reason: new Cli.UnknownSlot({ slot: "x", known: "host" }), fix: "leave SLOT out" })
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
      assert.isTrue(
        Cli.isInputError(new Cli.UsageError({ reason: new Cli.UnknownSlot({ slot: "x", known: "host" }), fix: "" }))
      )
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
