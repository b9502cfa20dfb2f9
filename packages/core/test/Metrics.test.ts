/**
 * The operations' metrics on the simulated node, each run in a registry of
 * its own: what the snapshot actions count (take, restore, recover, discard,
 * a rollback), what a failed unmount and a failed reset count (from the
 * error that carries the counts), that every label value is one of a bounded
 * set (never a path), and that Effect's Prometheus formatter shows them with
 * the unit's label (Effect drops an attribute named `unit`). The teardown on
 * MemoryHost and on real mounts is in the repave conformance suite.
 */
import { assert, describe, it } from "@effect/vitest"
import { Metrics, Repave, RestartChanged, SafeRemove, Snapshot, Systemd, Unmount } from "@hostnode/core"
import { FaultyMounter, MemoryHost, MemoryNode } from "@hostnode/test"
import { Data, Effect, FileSystem, Metric } from "effect"
import { PrometheusMetrics } from "effect/observability"

const count = (metric: Metric.Counter<number>, attributes: Record<string, string>) =>
  Effect.map(Metric.value(Metric.withAttributes(metric, attributes)), (s) => s.count)

const runs = (operation: string, outcome: string) =>
  Effect.map(
    Metric.value(Metric.withAttributes(Metrics.Metrics.operationDuration, { operation, outcome })),
    (s) => s.count
  )

/** Runs `effect` on a fresh simulated node with a registry of its own. */
const onNode = <A, E>(effect: Effect.Effect<A, E, MemoryNode.Services>, options?: MemoryNode.Options) =>
  effect.pipe(Effect.provide(MemoryNode.layer(options)), Effect.provideService(Metric.MetricRegistry, new Map()))

class UpgradeFailed extends Data.TaggedError("UpgradeFailed") {}

// Every label a hostnode metric may carry, and the values it may take (units and operations are checked by shape).
const boundedLabels: Readonly<Record<string, (value: string) => boolean>> = {
  operation: (v) => /^[A-Z][A-Za-z]*\.[a-zA-Z]+$/.test(v),
  outcome: (v) =>
    [
      "success",
      "failure",
      "interrupted",
      "taken",
      "restored",
      "recovered",
      "discarded",
      "none",
      "rolled_back",
      "failed"
    ].includes(v),
  reason: (v) => (SafeRemove.Kept.fields.reason.literals as ReadonlyArray<string>).includes(v),
  result: (v) => ["restarted", "failed", "not_settled", "not_attempted"].includes(v),
  policy: (v) => ["always", "auto"].includes(v),
  action: (v) => ["take", "restore", "recover", "discard", "rollback"].includes(v),
  systemd_unit: (v) => /^[A-Za-z0-9:_.@-]+\.(service|socket|target|mount|timer)$/.test(v)
}

describe("Metrics", () => {
  it.effect("snapshot actions count by outcome: take, restore, recover, discard, and a rollback", () =>
    onNode(
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        yield* fs.makeDirectory("/etc/kubernetes", { recursive: true })
        yield* fs.writeFileString("/etc/kubernetes/kubelet.conf", "v1")
        const options = { dir: "/var/lib/snap", paths: ["/etc/kubernetes"] }
        const taken = yield* Snapshot.takeOf(options)
        yield* fs.writeFileString("/etc/kubernetes/kubelet.conf", "v2")
        yield* taken.restore
        assert.isFalse(yield* Snapshot.recover(options))
        assert.isFalse(yield* Snapshot.discard(options))
        yield* Effect.flip(Snapshot.guarded(Effect.fail(new UpgradeFailed()), options))
        yield* Snapshot.guarded(Effect.void, options)
        const snapshots = (action: string, outcome: string) => count(Metrics.Metrics.snapshots, { action, outcome })
        // takeOf, and the two takes of guarded
        assert.strictEqual(yield* snapshots("take", "taken"), 3)
        // the handle's restore and the rollback's
        assert.strictEqual(yield* snapshots("restore", "restored"), 2)
        assert.strictEqual(yield* snapshots("recover", "none"), 1)
        assert.strictEqual(yield* snapshots("discard", "none"), 1)
        assert.strictEqual(yield* snapshots("discard", "discarded"), 1)
        assert.strictEqual(yield* snapshots("rollback", "rolled_back"), 1)
        // A take into a directory that holds a snapshot fails.
        yield* Snapshot.takeOf(options)
        yield* Effect.flip(Snapshot.takeOf(options))
        assert.strictEqual(yield* snapshots("take", "failed"), 1)
        assert.strictEqual(yield* runs("Snapshot.takeOf", "failure"), 1)
        assert.strictEqual(yield* runs("Snapshot.takeOf", "success"), 2)
      })
    )
  )

  it.effect("a failed unmount counts what remains; a failed reset counts what its error says it removed and kept", () =>
    onNode(
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const host = yield* MemoryHost.MemoryHost
        const pods = "/var/lib/kubelet/pods/p/volumes"
        for (const v of ["a", "b", "stuck"]) {
          yield* fs.makeDirectory(`${pods}/${v}`, { recursive: true })
          yield* host.tmpfs(`${pods}/${v}`)
        }
        const e = yield* Effect.flip(
          Unmount.unmountBelow(["/var/lib/kubelet"]).pipe(
            Effect.provide(FaultyMounter.layer((t) => t.endsWith("/stuck")))
          )
        )
        assert.strictEqual(e._tag, "UnmountError")
        const unmount = { operation: "Unmount.unmountBelow" }
        assert.strictEqual(yield* count(Metrics.Metrics.mountsDetached, unmount), 2)
        assert.strictEqual(yield* count(Metrics.Metrics.mountsRemaining, unmount), 1)
        assert.strictEqual(yield* runs("Unmount.unmountBelow", "failure"), 1)

        // A mount inside the CNI state: the reset removes the rest and fails, its error carrying both.
        yield* fs.makeDirectory("/var/lib/cni/networks/cbr0", { recursive: true })
        yield* fs.writeFileString("/var/lib/cni/networks/cbr0/10.244.0.7", "c0ffee")
        yield* fs.makeDirectory("/etc/cni/net.d", { recursive: true })
        yield* fs.writeFileString("/etc/cni/net.d/10-bridge.conflist", "{}")
        yield* fs.writeFileString("/etc/cni/net.d/20-portmap.conflist", "{}")
        yield* host.tmpfs("/var/lib/cni/networks/cbr0")
        const reset = yield* Effect.flip(Repave.resetCniState())
        assert.strictEqual(reset._tag, "ResetError")
        if (reset._tag !== "ResetError") return
        const op = { operation: "Repave.resetCniState" }
        assert.strictEqual(reset.removed.length, 2)
        assert.strictEqual(yield* count(Metrics.Metrics.pathsRemoved, op), reset.removed.length)
        assert.strictEqual(
          yield* count(Metrics.Metrics.pathsKept, { ...op, reason: "MountBelow" }),
          reset.kept.filter((k) => k.reason === "MountBelow").length
        )
        assert.strictEqual(reset.kept.length, 1)
      })
    )
  )

  it.effect("every label value is from a bounded set, never a path; Prometheus shows the unit as systemd_unit", () =>
    onNode(
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const host = yield* MemoryHost.MemoryHost
        const systemd = yield* Systemd.Systemd
        yield* fs.makeDirectory("/etc/systemd/system", { recursive: true })
        yield* fs.writeFileString("/etc/systemd/system/a.service", "[Service]\nExecStart=/usr/bin/a\n")
        yield* systemd.start("a.service")
        for (let i = 0; i < 3; i++) {
          yield* fs.makeDirectory(`/var/lib/kubelet/pods/pod-${i}/volumes/v`, { recursive: true })
          yield* host.tmpfs(`/var/lib/kubelet/pods/pod-${i}/volumes/v`)
        }
        yield* fs.makeDirectory("/var/lib/kubelet/pods/pod-0/volumes/link", { recursive: true })
        yield* Repave.teardownKubeletDir()
        yield* SafeRemove.remove(["/etc/cni/net.d/10-bridge.conflist", "/var/lib/cni"])
        yield* RestartChanged.restartChanged({ wasRunning: true, units: [{ unit: "a.service", changed: true }] })
        yield* Snapshot.takeOf({ dir: "/var/lib/snap", paths: ["/etc/systemd"] })

        const series = (yield* Metric.snapshot).filter((m) => m.id.startsWith("hostnode_"))
        assert.isAbove(series.length, 5)
        for (const m of series) {
          for (const [label, value] of Object.entries(m.attributes ?? {})) {
            const allowed = boundedLabels[label]
            assert.isDefined(allowed, `${m.id}: label ${label} is not one of the documented ones`)
            assert.isTrue(allowed?.(value), `${m.id}{${label}="${value}"}`)
            assert.notInclude(value, "/", `${m.id}{${label}="${value}"}: a path`)
          }
        }
        const text = yield* PrometheusMetrics.format()
        assert.include(text, "# TYPE hostnode_unit_restarts_total counter")
        assert.include(text, 'hostnode_unit_restarts_total{systemd_unit="a.service",result="restarted"} 1')
        assert.include(text, 'hostnode_daemon_reloads_total{policy="always"} 1')
        assert.include(text, "# TYPE hostnode_operation_duration_seconds histogram")
        assert.match(
          text,
          /hostnode_operation_duration_seconds_count\{operation="Repave\.teardownKubeletDir",outcome="success"\} 1/
        )
      })
    )
  )
})
