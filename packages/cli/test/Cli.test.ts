/**
 * The command tree run in-process (`Cli.run`) against a simulated node
 * (`MemoryNode`): what it prints, the exit codes, and that `--dry-run`
 * changes nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import { MemoryHost, MemoryNode } from "@hostnode/test"
import { Effect, Layer } from "effect"
import { cliEnvironment, runCli } from "./harness.ts"

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
