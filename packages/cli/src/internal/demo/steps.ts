/**
 * The demo's steps on the simulated node: prepare it, an upgrade that fails
 * and is rolled back, the same upgrade succeeding, and a repave; each timed,
 * each observing the host before and after for its claims; and the run of
 * them all on a fresh `MemoryNode` of its own, never the host in context.
 * Boundary: running only; the report is rendered in `Demo.ts`.
 */
import {
  ConfSnap,
  IsolationBackend,
  LocalDns,
  NodeStart,
  Paths,
  Repave,
  RestartChanged,
  Snapshot,
  Systemd,
  Unmount
} from "@hostnode/core"
import { MemoryHost, MemoryNetwork, MemoryNode, MemorySystemd } from "@hostnode/sim"
import { Clock, Effect, FileSystem, Schema } from "effect"
import type { Claim, DemoReport, Step } from "../../Demo.ts"
import { DemoError, StepFailed } from "../../DemoError.ts"
import { plural } from "../text.ts"
import {
  isLocalDnsRule,
  list,
  localDnsLink,
  type RepaveObservation,
  type RollbackObservation,
  repaveClaims,
  rollbackClaims,
  type UpgradeObservation,
  upgradeClaims
} from "./claims.ts"
import {
  atomicWriter,
  csiSource,
  csiTarget,
  dbPod,
  FailingUnit,
  foreignRule,
  kubeletDir,
  nodeFiles,
  nodeStart,
  pki,
  podsDir,
  SnapshotDir,
  serviceAccountToken,
  Units,
  UpgradeFiles,
  unitOf,
  webPod
} from "./node.ts"
import { captureImage, diffImages, exists, type Image, imageSize, listDir, mountsStrictlyBelow } from "./observe.ts"

/** What a step body produces; the runner adds the id, title and duration. */
interface StepOutcome<A = undefined> {
  readonly lines: ReadonlyArray<string>
  readonly details: Readonly<Record<string, unknown>>
  readonly claims: ReadonlyArray<Claim>
  readonly carry?: A
}

const describeError = (e: unknown): string =>
  e !== null && typeof e === "object" && "message" in e && typeof e.message === "string"
    ? `${"_tag" in e && typeof e._tag === "string" ? `${e._tag}: ` : ""}${e.message}`
    : String(e)

/** Runs one step on the Clock, turning an unexpected failure into a {@link DemoError} naming the step. */
const timed = <A, E, R>(
  id: Step["id"],
  title: string,
  body: Effect.Effect<StepOutcome<A>, E, R>
): Effect.Effect<
  { readonly step: Step; readonly claims: ReadonlyArray<Claim>; readonly carry: A | undefined },
  DemoError,
  R
> =>
  Effect.gen(function* () {
    const start = yield* Clock.monotonicTimeNanos
    const outcome = yield* body.pipe(
      Effect.mapError((e) =>
        e instanceof DemoError
          ? e
          : new DemoError({ step: id, reason: new StepFailed({ _tag: "OperationFailed", detail: describeError(e) }) })
      )
    )
    const end = yield* Clock.monotonicTimeNanos
    const durationMs = Math.round(Number(end - start) / 1e5) / 10
    return {
      step: { id, title, durationMs, lines: outcome.lines, details: outcome.details },
      claims: outcome.claims,
      carry: outcome.carry
    }
  })

const unitState = (name: string) => Effect.flatMap(Effect.service(MemorySystemd.MemorySystemd), (mem) => mem.unit(name))

const pidsOf = Effect.fnUntraced(function* (units: ReadonlyArray<string>) {
  const out: Record<string, number> = {}
  for (const u of units) out[u] = (yield* unitState(u))?.mainPid ?? 0
  return out
})

/** Seeds the mounts, starts the units and prepares LocalDNS on the freshly seeded node. */
const prepare = Effect.gen(function* () {
  const host = yield* MemoryHost.MemoryHost
  const systemd = yield* Systemd.Systemd
  const network = yield* MemoryNetwork.MemoryNetwork
  const start = yield* nodeStart
  // The kubelet directory is a mount point of its own (kubeadm makes it a shared bind), pod volumes below it.
  yield* host.bind(kubeletDir, kubeletDir)
  const webSecret = `${webPod}/volumes/kubernetes.io~secret/tls`
  const webToken = `${webPod}/volumes/kubernetes.io~projected/kube-api-access-7xk2p`
  const dbToken = `${dbPod}/volumes/kubernetes.io~projected/kube-api-access-q9w4z`
  for (const target of [webSecret, webToken, dbToken]) yield* host.tmpfs(target)
  yield* atomicWriter(webSecret, {
    "tls.crt": "-----BEGIN CERTIFICATE-----\n(web)\n-----END CERTIFICATE-----\n",
    "tls.key": "-----BEGIN PRIVATE KEY-----\n(web)\n-----END PRIVATE KEY-----\n"
  })
  yield* atomicWriter(webToken, serviceAccountToken)
  yield* atomicWriter(dbToken, serviceAccountToken)
  yield* host.bind(csiSource, csiTarget)
  for (const unit of Units) yield* systemd.start(unit)
  yield* LocalDns.setupLocalDnsNetwork(start)
  yield* network.admin("iptables", ["-w", "-t", "raw", ...foreignRule])
  const table = yield* host.mountTable
  const mounts = mountsStrictlyBelow(table, kubeletDir)
  const tmpfs = table.filter((m) => mounts.includes(m.mountPoint) && m.fsType === "tmpfs").length
  const pids = yield* pidsOf(Units)
  const rules = yield* network.rules("raw")
  const link = yield* network.link(localDnsLink)
  const files = Object.keys(nodeFiles).length
  return {
    lines: [
      `seeded ${files} paths: the kubelet and containerd units and kubelet's 10-kubeadm.conf drop-in,`,
      "  /etc/containerd/config.toml, /etc/default/kubelet, CNI configuration and 2 IPAM reservations,",
      "  the kubelet's bootstrapped client certificates and bootstrap kubeconfig, and 2 pods",
      `mounted ${kubeletDir} on itself (a shared bind: a mount point of its own) and ${plural(mounts.length, "pod volume")} below it:`,
      `  ${tmpfs} tmpfs (a secret and service account tokens), ${mounts.length - tmpfs} CSI volume bound from ${csiSource}`,
      `started ${Units.map((u) => `${u} (MainPID ${pids[u]})`).join(" and ")}`,
      `LocalDns.setupLocalDnsNetwork: interface ${localDnsLink} (${list(link?.ipv4 ?? [])}), ${plural(rules.filter(isLocalDnsRule).length, "NOTRACK rule")}`,
      "  (and one raw rule that is not LocalDNS's, which the cleanup must leave alone)"
    ],
    details: {
      seededPaths: files,
      podMounts: mounts,
      units: Units.map((u) => ({ unit: u, mainPid: pids[u] })),
      localDns: { interface: localDnsLink, addresses: link?.ipv4 ?? [], rules: rules.filter(isLocalDnsRule).length }
    },
    claims: []
  } satisfies StepOutcome
})

/**
 * Writes {@link UpgradeFiles}, has systemd re-read the units, and restarts
 * the units whose files changed; returns what it wrote.
 */
const writeUpgrade = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const written: Array<{ readonly path: string; readonly change: "changed" | "added" }> = []
  for (const [path, content] of Object.entries(UpgradeFiles)) {
    const old = yield* Effect.result(fs.readFileString(path))
    if (old._tag === "Success" && old.success === content) continue
    yield* fs.writeFileString(path, content)
    written.push({ path, change: old._tag === "Success" ? "changed" : "added" })
  }
  const changed = new Set(written.flatMap((w) => unitOf(w.path) ?? []))
  return { written, units: Units.map((unit) => ({ unit, changed: changed.has(unit) })) }
})

const upgradeLines = (written: ReadonlyArray<{ readonly path: string; readonly change: string }>) => [
  "wrote the new configuration:",
  ...written.map((w) => `  ${w.change.padEnd(8)}${w.path}`)
]

const baseName = (p: string) => p.slice(p.lastIndexOf("/") + 1)

/** The first line of what a restart failed with: systemctl's own words when it said something. */
const causeLine = (cause: unknown): string => {
  // What systemctl said, where the cause is a SystemdError whose reason keeps it.
  const reason = cause !== null && typeof cause === "object" && "reason" in cause ? cause.reason : undefined
  const text =
    reason !== null && typeof reason === "object" && "stderr" in reason && typeof reason.stderr === "string"
      ? reason.stderr
      : describeError(cause)
  return text.trim().split("\n")[0] ?? ""
}

/** Step 1: the upgrade inside `Snapshot.scoped`, one restart failing, the scope rolling it back. */
const failedUpgrade = (hooks: Options) =>
  Effect.gen(function* () {
    const mem = yield* MemorySystemd.MemorySystemd
    const systemd = yield* Systemd.Systemd
    const before = yield* captureImage(ConfSnap.DefaultPaths)
    const pidsBefore = yield* pidsOf(Units)
    yield* mem.injectFault({ unit: FailingUnit, kind: "JobFailed", verbs: ["restart"], times: 1 })
    // Set inside the scope, which then fails: read after it closed.
    let during: Image = {}
    let written: ReadonlyArray<{ readonly path: string; readonly change: string }> = []
    const outcome = yield* Effect.result(
      Effect.scoped(
        Effect.gen(function* () {
          yield* Snapshot.scoped({ dir: SnapshotDir })
          const upgrade = yield* writeUpgrade
          written = upgrade.written
          during = yield* captureImage(ConfSnap.DefaultPaths)
          yield* systemd.daemonReload
          yield* RestartChanged.restartChanged({ wasRunning: true, units: upgrade.units })
        })
      )
    )
    const pidsAfterFailure = yield* pidsOf(Units)
    const unitsAfterFailure: Record<string, RollbackObservation["unitsAfterFailure"][string]> = {}
    for (const u of Units) {
      const view = yield* unitState(u)
      unitsAfterFailure[u] = {
        pidBefore: pidsBefore[u] ?? 0,
        pidAfter: pidsAfterFailure[u] ?? 0,
        active: view?.activeState ?? "unknown",
        sub: view?.subState ?? "unknown"
      }
    }
    if (outcome._tag === "Success") {
      return yield* new DemoError({
        step: "upgrade-rollback",
        reason: new StepFailed({
          _tag: "UnexpectedOutcome",
          detail: `the restart of ${FailingUnit} was made to fail, but the upgrade succeeded`
        })
      })
    }
    const failure = outcome.failure
    if (failure._tag !== "RestartError") return yield* Effect.fail(failure)
    if (hooks.afterRollback !== undefined) yield* hooks.afterRollback
    const after = yield* captureImage(ConfSnap.DefaultPaths)
    const snapshotLeft = yield* exists(SnapshotDir)
    // Bring the node back onto the restored configuration: restart what the RestartError lists, and the failed unit.
    const recover = [...failure.restarted, failure.unit]
    yield* systemd.daemonReload
    yield* RestartChanged.restartChanged({ wasRunning: true, units: recover.map((unit) => ({ unit, changed: true })) })
    const activeAfterRecovery: Record<string, string> = {}
    for (const u of Units) activeAfterRecovery[u] = (yield* unitState(u))?.activeState ?? "unknown"
    const kubeletDropIns = (yield* unitState("kubelet.service"))?.dropInPaths ?? []
    const observation: RollbackObservation = {
      before,
      during,
      after,
      restartError: { unit: failure.unit, restarted: failure.restarted, notAttempted: failure.notAttempted },
      unitsAfterFailure,
      snapshotLeft,
      activeAfterRecovery,
      kubeletDropIns
    }
    const compared = imageSize(before)
    const left = diffImages(before, after)
    return {
      lines: [
        `Snapshot.scoped took a snapshot of the ${ConfSnap.DefaultPaths.length} ConfSnap.DefaultPaths in ${SnapshotDir}`,
        ...upgradeLines(written),
        `RestartChanged restarted ${list(failure.restarted)}, then ${failure.unit} failed to restart`,
        `  (the simulated systemd was told to fail that job, as a kubelet rejecting its new flags would):`,
        `  RestartError: unit ${failure.unit}, restarted [${failure.restarted.join(", ")}], not attempted [${failure.notAttempted.join(", ")}]`,
        `  cause: ${causeLine(failure.reason.cause)}`,
        "the scope failed, so Snapshot.scoped restored the snapshot, then removed it",
        `  compared with before the upgrade: ${plural(compared.paths, "path")}, ${plural(compared.files, "file")}, ${compared.bytes} bytes, ${left.length === 0 ? "all byte-for-byte identical" : `${left.length} differ`}`,
        `restarted ${recover.join(" and ")} on the restored configuration: ${
          Units.every((u) => activeAfterRecovery[u] === "active")
            ? "both active again"
            : Units.map((u) => `${u} ${activeAfterRecovery[u]}`).join(", ")
        }`
      ],
      details: {
        snapshotDir: SnapshotDir,
        snapshotPaths: ConfSnap.DefaultPaths,
        written,
        restartError: {
          unit: failure.unit,
          restarted: failure.restarted,
          notAttempted: failure.notAttempted,
          message: failure.message
        },
        unitsAfterFailure,
        compared: { ...compared, differing: left.map((d) => d.path) },
        recovered: { restarted: recover, active: activeAfterRecovery }
      },
      claims: rollbackClaims(observation)
    } satisfies StepOutcome
  })

/** Step 2: the same upgrade, succeeding: the snapshot is discarded, the units run the new configuration. */
const successfulUpgrade = Effect.gen(function* () {
  const mem = yield* MemorySystemd.MemorySystemd
  const systemd = yield* Systemd.Systemd
  const fs = yield* FileSystem.FileSystem
  yield* mem.clearHistory
  const pidsBefore = yield* pidsOf(Units)
  const wasRunning = yield* IsolationBackend.running(Schema.decodeSync(IsolationBackend.SlotRef)("host"))
  const upgrade = yield* Effect.scoped(
    Effect.gen(function* () {
      yield* Snapshot.scoped({ dir: SnapshotDir })
      const upgrade = yield* writeUpgrade
      yield* systemd.daemonReload
      yield* RestartChanged.restartChanged({ wasRunning, units: upgrade.units })
      return upgrade
    })
  )
  const restarts = yield* mem.restarts
  const pidsAfter = yield* pidsOf(Units)
  const units: Record<string, UpgradeObservation["units"][string]> = {}
  for (const u of Units) {
    units[u] = {
      restarts: restarts[u] ?? 0,
      pidBefore: pidsBefore[u] ?? 0,
      pidAfter: pidsAfter[u] ?? 0,
      active: (yield* unitState(u))?.activeState ?? "unknown"
    }
  }
  const written: Array<UpgradeObservation["written"][number]> = []
  for (const [path, content] of Object.entries(UpgradeFiles)) {
    const found = yield* Effect.result(fs.readFile(path))
    written.push({
      path,
      intended: new TextEncoder().encode(content),
      found: found._tag === "Success" ? found.success : undefined
    })
  }
  const changedUnits = upgrade.units.filter((u) => u.changed).map((u) => u.unit)
  const kubeletDropIns = (yield* unitState("kubelet.service"))?.dropInPaths ?? []
  const observation: UpgradeObservation = {
    written,
    changedUnits,
    units,
    kubeletDropIns,
    snapshotLeft: yield* exists(SnapshotDir)
  }
  return {
    lines: [
      `the node runs (IsolationBackend.running: ${wasRunning}); Snapshot.scoped took the snapshot again`,
      ...upgradeLines(upgrade.written),
      "RestartChanged restarted, in order:",
      ...changedUnits.map((u) => `  ${u.padEnd(20)}MainPID ${units[u]?.pidBefore} -> ${units[u]?.pidAfter}`),
      `the scope succeeded, so Snapshot.scoped discarded the snapshot: ${SnapshotDir} ${observation.snapshotLeft ? "is still there" : "is gone"}`,
      `systemd runs kubelet.service with the drop-ins ${list(kubeletDropIns.map(baseName))}`
    ],
    details: {
      wasRunning,
      written: upgrade.written,
      restarted: changedUnits,
      units,
      kubeletDropIns,
      snapshotLeft: observation.snapshotLeft
    },
    claims: upgradeClaims(observation)
  } satisfies StepOutcome
})

/** The kubelet's client credentials as client-go names them: what the demo expects the reset to remove. */
const isClientCredential = (name: string): boolean =>
  name === "kubelet-client.key.tmp" ||
  (name.startsWith("kubelet-client-") && name.endsWith(".pem") && name.length > "kubelet-client-.pem".length)

const credentials = Effect.gen(function* () {
  const names = (yield* listDir(pki)).filter(isClientCredential).map((n) => `${pki}/${n}`)
  return (yield* exists(Repave.KubeletPaths.kubeconfig)) ? [...names, Repave.KubeletPaths.kubeconfig] : names
})

const keptPaths = [
  NodeStart.Defaults.bootstrapKubeconfig,
  `${pki}/kubelet.crt`,
  `${pki}/kubelet.key`,
  `${kubeletDir}/config.yaml`
]

/** Step 3: the repave, after the node stack is stopped. */
const repave = Effect.gen(function* () {
  const host = yield* MemoryHost.MemoryHost
  const network = yield* MemoryNetwork.MemoryNetwork
  const systemd = yield* Systemd.Systemd
  const start = yield* nodeStart
  const podMountsBefore = mountsStrictlyBelow(yield* host.mountTable, kubeletDir)
  const podsBefore = yield* listDir(podsDir)
  const csiBefore = yield* captureImage([csiSource])
  const credentialsBefore = yield* credentials
  const keptBefore = yield* captureImage(keptPaths)
  const linkBefore = (yield* network.link(localDnsLink)) !== undefined
  const rulesBefore = yield* network.rules("raw")

  for (const unit of [...Units].reverse()) yield* systemd.stop(unit)
  yield* Unmount.unmountStrictlyBelow([kubeletDir])
  const teardown = yield* Repave.teardownKubeletDir()
  const cni = yield* Repave.resetCniState()
  const identity = yield* Repave.resetKubeletIdentity(start)
  yield* LocalDns.cleanupHostNetwork()

  const table = yield* host.mountTable
  const observation: RepaveObservation = {
    podMountsBefore,
    podMountsAfter: mountsStrictlyBelow(table, kubeletDir),
    kubeletMountKept: table.some((m) => m.mountPoint === kubeletDir),
    podsBefore,
    podsAfter: yield* listDir(podsDir),
    csiBefore,
    csiAfter: yield* captureImage([csiSource]),
    cniConfAfter: (yield* exists(Paths.Node.CniConfDir)) ? yield* listDir(Paths.Node.CniConfDir) : undefined,
    cniStateLeft: yield* exists(Paths.Node.CniStateDir),
    credentialsBefore,
    credentialsAfter: yield* credentials,
    keptBefore,
    keptAfter: yield* captureImage(keptPaths),
    linkBefore,
    linkAfter: (yield* network.link(localDnsLink)) !== undefined,
    rulesBefore,
    rulesAfter: yield* network.rules("raw")
  }
  const kept = [...teardown.kept, ...cni.kept, ...identity.kept]
  const confRemoved = cni.removed.filter((p) => p.startsWith(`${Paths.Node.CniConfDir}/`)).map(baseName)
  const stateRemoved = cni.removed.filter(
    (p) => p === Paths.Node.CniStateDir || p.startsWith(`${Paths.Node.CniStateDir}/`)
  )
  const oursBefore = rulesBefore.filter(isLocalDnsRule).length
  const oursAfter = observation.rulesAfter.filter(isLocalDnsRule).length
  return {
    lines: [
      `stopped ${list([...Units].reverse())} (a repave runs with the node stack down)`,
      `Unmount.unmountStrictlyBelow ${kubeletDir}: ${plural(podMountsBefore.length, "pod volume")} unmounted, the directory's own mount kept`,
      `Repave.teardownKubeletDir: ${plural(teardown.prefixes.length, "pod directory", "pod directories")} removed (${plural(teardown.removed.length, "path")}), ${teardown.kept.length} kept`,
      `Repave.resetCniState: removed ${list(confRemoved)} from ${Paths.Node.CniConfDir} (the directory stays)`,
      `  and ${Paths.Node.CniStateDir} (${plural(stateRemoved.length, "path")}: the IPAM reservations and their bookkeeping)`,
      `Repave.resetKubeletIdentity (bootstrap-token mode): removed ${list(identity.removed.map(baseName))}`,
      `  and kept ${baseName(NodeStart.Defaults.bootstrapKubeconfig)}, so the next start bootstraps a new identity`,
      `LocalDns.cleanupHostNetwork: interface ${localDnsLink} ${observation.linkAfter ? "still there" : "deleted"}, ${oursBefore - oursAfter} of ${plural(oursBefore, "rule")} of ours deleted, the other rule kept`,
      `left: ${plural(observation.podMountsAfter.length, "mount")} below ${kubeletDir}, ${plural(observation.podsAfter.length, "pod")}, the CSI volume's data untouched at ${csiSource}`
    ],
    details: {
      stopped: [...Units].reverse(),
      unmounted: podMountsBefore,
      teardown: { removed: teardown.removed, kept: teardown.kept },
      resetCniState: { removed: cni.removed, kept: cni.kept },
      resetKubeletIdentity: { removed: identity.removed, kept: identity.kept },
      keptPaths: kept,
      left: {
        mountsBelowKubeletDir: observation.podMountsAfter,
        pods: observation.podsAfter,
        cniConf: observation.cniConfAfter ?? null,
        cniState: observation.cniStateLeft,
        credentials: observation.credentialsAfter,
        localDnsInterface: observation.linkAfter,
        rawRules: observation.rulesAfter
      }
    },
    claims: repaveClaims(observation)
  } satisfies StepOutcome
})

/** Seams for tests of the demo itself. */
export interface Options {
  /**
   * Runs on the simulated node right after the failed upgrade's rollback,
   * before the host is compared with its state before the upgrade: a test
   * tampers with a file here to see the `restored-byte-for-byte` claim fail.
   */
  readonly afterRollback?: Effect.Effect<void, never, MemoryNode.Services> | undefined
}

/** `Demo.run` with seams (see {@link Options}). */
export const runWith = (options: Options = {}): Effect.Effect<DemoReport, DemoError> =>
  Effect.gen(function* () {
    const start = yield* Clock.monotonicTimeNanos
    const steps = [
      yield* timed("prepare", "Prepare the simulated node", prepare),
      yield* timed(
        "upgrade-rollback",
        "An upgrade whose restart fails, rolled back by Snapshot.scoped",
        failedUpgrade(options)
      ),
      yield* timed("upgrade", "The same upgrade, succeeding", successfulUpgrade),
      yield* timed("repave", "A repave", repave)
    ]
    const end = yield* Clock.monotonicTimeNanos
    const claims = steps.flatMap((s) => s.claims)
    return {
      ok: claims.length > 0 && claims.every((c) => c.ok),
      steps: steps.map((s) => s.step),
      claims,
      durationMs: Math.round(Number(end - start) / 1e5) / 10
    } satisfies DemoReport
  }).pipe(Effect.provide(MemoryNode.layer({ files: nodeFiles })))
