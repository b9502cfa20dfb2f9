/**
 * The command tree run in-process (`Cli.run`) against a simulated node
 * (`MemoryNode`): what it prints, the exit codes, and that `--dry-run`
 * changes nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import { Mounter } from "@hostnode/core"
import { MemoryHost, MemoryNode } from "@hostnode/test"
import { Effect, Layer } from "effect"
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
      assert.strictEqual(doc.error.reason, "Missing")
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
