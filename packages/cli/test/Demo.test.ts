/**
 * `hostnode demo`: the report of `Demo.run` (every claim holds, the expected
 * claims are there, concrete values of the rollback), the command's text and
 * JSON output and exit code through `Cli.run`, that the host in context is
 * never touched, and that the claims fail when the host's state is wrong (a
 * tampered rollback, tampered observations fed to the pure checks).
 */
import { assert, describe, it } from "@effect/vitest"
import { Demo } from "@hostnode/cli"
import { MemoryHost, MemoryNode } from "@hostnode/sim"
import { Effect, FileSystem, Layer } from "effect"
import { type RollbackObservation, rollbackClaims } from "../src/internal/demo/claims.ts"
import { FailingUnit, UpgradeFiles } from "../src/internal/demo/node.ts"
import { diffImages, type Image, type ImageEntry } from "../src/internal/demo/observe.ts"
import { runWith } from "../src/internal/demo/steps.ts"
import { cliEnvironment, runCli } from "./harness.ts"

const expectedClaims = [
  "upgrade-wrote-config",
  "restart-error-lists-units",
  "restored-byte-for-byte",
  "rollback-snapshot-removed",
  "node-back-on-old-config",
  "new-config-in-place",
  "units-restarted",
  "new-drop-in-loaded",
  "snapshot-discarded",
  "pod-mounts-unmounted",
  "pods-gone",
  "csi-data-kept",
  "cni-state-gone",
  "client-certs-removed",
  "bootstrap-kubeconfig-kept",
  "network-clean"
]

/** Runs `hostnode ARGV` on an empty simulated host (the host in context); its exit code, output and that host's tree after. */
const runOnHost = (argv: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const host = yield* MemoryHost.MemoryHost
    const treeBefore = yield* host.dump()
    const { code, stdout, stderr } = yield* runCli(argv)
    return {
      code,
      stdout,
      stderr,
      treeBefore,
      treeAfter: yield* host.dump(),
      invocations: yield* (yield* MemoryNode.MemoryNode).invocations
    }
  }).pipe(Effect.provide(Layer.mergeAll(MemoryNode.layer(), cliEnvironment)))

const bytes = (text: string) => new TextEncoder().encode(text)

describe("Demo", () => {
  it.effect("Demo.run: every claim holds, each expected claim is there, with the rollback's facts", () =>
    Effect.gen(function* () {
      const report = yield* Demo.run
      assert.isTrue(report.ok)
      assert.deepStrictEqual(
        report.claims.filter((c) => !c.ok),
        []
      )
      assert.deepStrictEqual(
        report.claims.map((c) => c.id),
        expectedClaims
      )
      assert.deepStrictEqual(
        report.steps.map((s) => s.id),
        ["prepare", "upgrade-rollback", "upgrade", "repave"]
      )
      for (const step of report.steps) assert.isAtLeast(step.durationMs, 0)
      // biome-ignore lint/suspicious/noExplicitAny: the details are a plain record; the test reads fields it knows
      const rollback: any = report.steps[1]?.details
      assert.strictEqual(rollback.restartError.unit, FailingUnit)
      assert.deepStrictEqual(rollback.restartError.restarted, ["containerd.service"])
      assert.deepStrictEqual(rollback.restartError.notAttempted, [])
      assert.deepStrictEqual(rollback.compared.differing, [])
      assert.isAbove(rollback.compared.files, 5)
      assert.deepStrictEqual(
        rollback.written.map((w: { path: string }) => w.path),
        Object.keys(UpgradeFiles)
      )
      // biome-ignore lint/suspicious/noExplicitAny: as above
      const repave: any = report.steps[3]?.details
      assert.deepStrictEqual(repave.left.mountsBelowKubeletDir, [])
      assert.deepStrictEqual(repave.left.pods, [])
      assert.deepStrictEqual(repave.left.credentials, [])
      assert.isFalse(repave.left.localDnsInterface)
      assert.include(repave.resetKubeletIdentity.removed, "/var/lib/kubelet/kubeconfig")
      assert.notInclude(repave.resetKubeletIdentity.removed, "/var/lib/kubelet/bootstrap-kubeconfig")
    })
  )

  it.effect(
    "hostnode demo --json prints exactly one JSON document, exits 0 and never touches the host in context",
    () =>
      Effect.gen(function* () {
        const { code, stdout, treeBefore, treeAfter, invocations } = yield* runOnHost(["demo", "--json"])
        assert.strictEqual(code, 0)
        assert.strictEqual(stdout.length, 1)
        const doc = JSON.parse(stdout[0] ?? "")
        assert.strictEqual(doc.ok, true)
        assert.strictEqual(doc.command, "demo")
        assert.deepStrictEqual(
          doc.result.steps.map((s: { id: string }) => s.id),
          ["prepare", "upgrade-rollback", "upgrade", "repave"]
        )
        for (const s of doc.result.steps) assert.isNumber(s.durationMs)
        assert.strictEqual(doc.result.summary.failed, 0)
        assert.strictEqual(doc.result.summary.passed, expectedClaims.length)
        for (const id of expectedClaims) {
          const c = doc.result.summary.claims.find((x: { id: string }) => x.id === id)
          assert.isDefined(c, id)
          assert.isTrue(c.ok, `${id}: ${c.evidence}`)
        }
        assert.deepStrictEqual(treeAfter, treeBefore)
        assert.deepStrictEqual(invocations, [])
      })
  )

  it.effect("hostnode demo prints each step with its duration and every claim as PASS, quietly, and exits 0", () =>
    Effect.gen(function* () {
      const { code, stdout, stderr } = yield* runOnHost(["demo"])
      assert.strictEqual(code, 0)
      const text = stdout.join("\n")
      for (const title of ["0. Prepare", "1. An upgrade whose restart fails", "2. The same upgrade", "3. A repave"]) {
        assert.match(text, new RegExp(`${title}.* \\d+\\.\\d ms`))
      }
      assert.strictEqual((text.match(/ {4}PASS {2}/g) ?? []).length, expectedClaims.length)
      assert.notInclude(text, "FAIL")
      assert.include(text, `All ${expectedClaims.length} claims hold.`)
      assert.deepStrictEqual(stderr, [])
    })
  )

  it.effect("a rollback that leaves one changed byte fails the restore claim, naming the file", () =>
    Effect.gen(function* () {
      const report = yield* runWith({
        afterRollback: Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const text = yield* fs.readFileString("/etc/containerd/config.toml")
          yield* fs.writeFileString("/etc/containerd/config.toml", text.replace("version = 2", "version = 3"))
        }).pipe(Effect.orDie)
      })
      assert.isFalse(report.ok)
      const failed = report.claims.filter((c) => !c.ok)
      assert.deepStrictEqual(
        failed.map((c) => c.id),
        ["restored-byte-for-byte"]
      )
      assert.include(failed[0]?.evidence, "/etc/containerd/config.toml (content)")
      const text = Demo.renderText(report)
      assert.include(text, "FAIL  after the rollback every configuration path is byte-for-byte")
      assert.include(text, "1 of 16 claims FAILED")
    })
  )

  describe("the claims are checks of the observed state", () => {
    const file = (text: string, mode = 0o644): ImageEntry => ({ type: "File", mode, bytes: bytes(text) })
    const before: Image = {
      "/etc/containerd": { type: "Directory", mode: 0o755 },
      "/etc/containerd/config.toml": file("version = 2\n"),
      "/etc/systemd/system/kubelet.service.d": { type: "Directory", mode: 0o755 },
      "/etc/systemd/system/kubelet.service.d/10-kubeadm.conf": file("[Service]\n"),
      "/etc/systemd/system/kubelet.service.d/20-hostnode-upgrade.conf": { type: "Absent" },
      "/etc/kubernetes/kubelet.conf": { type: "SymbolicLink", target: "/var/lib/kubelet/kubeconfig" }
    }
    const good: RollbackObservation = {
      before,
      during: { ...before, "/etc/containerd/config.toml": file("version = 3\n") },
      after: before,
      restartError: { unit: "kubelet.service", restarted: ["containerd.service"], notAttempted: [] },
      unitsAfterFailure: {
        "containerd.service": { pidBefore: 1001, pidAfter: 1004, active: "active", sub: "running" },
        "kubelet.service": { pidBefore: 1002, pidAfter: 0, active: "failed", sub: "failed" }
      },
      snapshotLeft: false,
      activeAfterRecovery: { "containerd.service": "active", "kubelet.service": "active" },
      kubeletDropIns: ["/etc/systemd/system/kubelet.service.d/10-kubeadm.conf"]
    }
    const verdicts = (o: RollbackObservation) => Object.fromEntries(rollbackClaims(o).map((c) => [c.id, c.ok]))

    it("a faithful rollback passes every claim", () => {
      assert.deepStrictEqual(verdicts(good), {
        "upgrade-wrote-config": true,
        "restart-error-lists-units": true,
        "restored-byte-for-byte": true,
        "rollback-snapshot-removed": true,
        "node-back-on-old-config": true
      })
    })

    it("one byte, a mode, a link target, a file left behind or a file missing each fail the restore claim", () => {
      const tampered: ReadonlyArray<Image> = [
        { ...before, "/etc/containerd/config.toml": file("version = 3\n") },
        { ...before, "/etc/containerd/config.toml": file("version = 2\n", 0o600) },
        { ...before, "/etc/kubernetes/kubelet.conf": { type: "SymbolicLink", target: "/elsewhere" } },
        { ...before, "/etc/systemd/system/kubelet.service.d/20-hostnode-upgrade.conf": file("[Service]\n") },
        { ...before, "/etc/systemd/system/kubelet.service.d/10-kubeadm.conf": { type: "Absent" } }
      ]
      const whats = tampered.map((after) => {
        assert.isFalse(verdicts({ ...good, after })["restored-byte-for-byte"])
        return diffImages(before, after).map((d) => d.what)
      })
      assert.deepStrictEqual(whats, [["content"], ["mode"], ["target"], ["added"], ["removed"]])
      // An absent path and a path never listed are the same: nothing there.
      const { "/etc/systemd/system/kubelet.service.d/20-hostnode-upgrade.conf": _absent, ...unlisted } = before
      assert.deepStrictEqual(diffImages(before, unlisted), [])
    })

    it("a RestartError that misreports the units, or a host that disagrees with it, fails its claim", () => {
      const wrong: ReadonlyArray<RollbackObservation> = [
        { ...good, restartError: undefined },
        { ...good, restartError: { unit: "kubelet.service", restarted: [], notAttempted: [] } },
        { ...good, restartError: { unit: "containerd.service", restarted: [], notAttempted: ["kubelet.service"] } },
        {
          ...good,
          unitsAfterFailure: {
            ...good.unitsAfterFailure,
            "containerd.service": { pidBefore: 1001, pidAfter: 1001, active: "active", sub: "running" }
          }
        }
      ]
      for (const o of wrong) assert.isFalse(verdicts(o)["restart-error-lists-units"])
    })

    it("an upgrade that wrote nothing makes the rollback claims vacuous, so its claim fails", () => {
      assert.isFalse(verdicts({ ...good, during: before })["upgrade-wrote-config"])
    })
  })
})

describe("DemoError", () => {
  it.effect("catchReason reaches each reason, with its own fields", () =>
    Effect.gen(function* () {
      const stop = (reason: Demo.StepFailed) => Effect.fail(new Demo.DemoError({ step: "repave", reason }))
      const failed = yield* stop(
        new Demo.StepFailed({ _tag: "OperationFailed", detail: "ResetError: kept 1 path" })
      ).pipe(
        Effect.as(""),
        Effect.catchReason("DemoError", "OperationFailed", (reason, error) =>
          Effect.succeed(`${error.step}: ${reason.detail}`)
        )
      )
      assert.strictEqual(failed, "repave: ResetError: kept 1 path")
      const odd = yield* stop(new Demo.StepFailed({ _tag: "UnexpectedOutcome", detail: "the upgrade succeeded" })).pipe(
        Effect.as(""),
        Effect.catchReason("DemoError", "UnexpectedOutcome", (_reason, error) => Effect.succeed(error.message))
      )
      assert.strictEqual(odd, 'demo step "repave": unexpected outcome: the upgrade succeeded')
      // @ts-expect-error: DemoError has no reason of that name
      Effect.catchReason("DemoError", "NoSuchReason", () => Effect.void)
    })
  )
})
