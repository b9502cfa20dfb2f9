/**
 * The command tree run in-process (`Cli.run`) against a simulated node
 * (`MemoryNode`): what it prints, the exit codes, and that `--dry-run`
 * changes nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cli } from "@hostnode/cli"
import { MemoryHost, MemoryNode } from "@hostnode/test"
import { Effect, Exit, Layer, Runtime, Stdio, Terminal } from "effect"
import { TestConsole } from "effect/testing"

const seeded = {
  "/etc/cni/net.d/10-flannel.conflist": "{}",
  "/var/lib/cni/networks/cbr0/10.244.0.2": "container-1",
  "/etc/kubernetes/kubelet.conf": "keep"
}

const cliEnvironment = Layer.mergeAll(
  Stdio.layerTest({}),
  Layer.succeed(
    Terminal.Terminal,
    Terminal.make({
      columns: Effect.succeed(80),
      rows: Effect.succeed(24),
      size: Effect.die("unused"),
      readInput: Effect.die("unused"),
      readLine: Effect.die("unused"),
      display: () => Effect.void
    })
  )
)

/** Runs `argv` on a fresh node seeded with `files`; the exit code, stdout lines and the tree after. */
const runOn = (argv: ReadonlyArray<string>, files: MemoryHost.Options["files"] = seeded) =>
  Effect.gen(function* () {
    const exit = yield* Effect.exit(Cli.run(argv))
    const code = Exit.isSuccess(exit) ? 0 : Exit.isFailure(exit) ? exitCodeOf(exit) : -1
    const stdout = (yield* TestConsole.logLines).map(String)
    const host = yield* MemoryHost.MemoryHost
    const tree = yield* host.dump()
    return { code, stdout, tree }
  }).pipe(Effect.provide(Layer.mergeAll(MemoryNode.layer({ files }), cliEnvironment)))

/** The process exit code `runMain` would use for `exit`. */
const exitCodeOf = (exit: Exit.Exit<unknown, unknown>): number => {
  const error = Exit.findErrorOption(exit)
  return error._tag === "Some" ? Runtime.getErrorExitCode(error.value) : 1
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
})
