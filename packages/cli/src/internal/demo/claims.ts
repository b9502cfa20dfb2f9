/**
 * The demo's claims, as pure functions over what was observed, so a test can
 * feed them a tampered observation. Boundary: no effects; the observations
 * are gathered in `steps.ts`.
 */
import { AgentConfig, Paths } from "@hostnode/core"
import { localDnsRuleComment } from "@hostnode/core/Programs"
import type { Claim, Step } from "../../Demo.ts"
import { plural } from "../text.ts"
import { csiSource, FailingUnit, kubeletDir, podsDir, SnapshotDir, Units, UpgradeFiles } from "./node.ts"
import { type Difference, diffImages, type Image, imageSize, sameBytes } from "./observe.ts"

const claim = (step: Step["id"], id: string, statement: string, ok: boolean, evidence: string): Claim => ({
  id,
  step,
  statement,
  ok,
  evidence
})

export const list = (xs: ReadonlyArray<string>) => (xs.length === 0 ? "none" : xs.join(", "))
const showDiffs = (ds: ReadonlyArray<Difference>) =>
  ds
    .slice(0, 4)
    .map((d) => `${d.path} (${d.what})`)
    .join(", ") + (ds.length > 4 ? `, and ${ds.length - 4} more` : "")

/** What was observed around the upgrade that fails and is rolled back. */
export interface RollbackObservation {
  /** The snapshot's paths before the upgrade, while it was written, and after the rollback. */
  readonly before: Image
  readonly during: Image
  readonly after: Image
  /** The `RestartError` the upgrade failed with (undefined when it failed otherwise, or did not fail). */
  readonly restartError:
    | {
        readonly unit: string
        readonly restarted: ReadonlyArray<string>
        readonly notAttempted: ReadonlyArray<string>
      }
    | undefined
  /** Per unit, as the host shows it after the failed upgrade: MainPID before and after, ActiveState and SubState. */
  readonly unitsAfterFailure: Readonly<
    Record<
      string,
      { readonly pidBefore: number; readonly pidAfter: number; readonly active: string; readonly sub: string }
    >
  >
  /** Whether the snapshot directory exists after the scope closed. */
  readonly snapshotLeft: boolean
  /** Each unit's ActiveState after the node was restarted on the restored configuration. */
  readonly activeAfterRecovery: Readonly<Record<string, string>>
  /** kubelet.service's drop-ins as systemd loaded them after that restart. */
  readonly kubeletDropIns: ReadonlyArray<string>
}

/** The claims about the rolled-back upgrade, from what was observed. */
export const rollbackClaims = (o: RollbackObservation): ReadonlyArray<Claim> => {
  const step: Step["id"] = "upgrade-rollback"
  const written = diffImages(o.before, o.during)
  const left = diffImages(o.before, o.after)
  const size = imageSize(o.before)
  const e = o.restartError
  const expectedRestarted = Units.slice(0, Units.indexOf(FailingUnit))
  const restartedOnHost = (u: string) => {
    const s = o.unitsAfterFailure[u]
    return s !== undefined && s.active === "active" && s.pidAfter !== 0 && s.pidAfter !== s.pidBefore
  }
  const errorOk =
    e !== undefined &&
    e.unit === FailingUnit &&
    e.restarted.join() === expectedRestarted.join() &&
    e.notAttempted.length === 0 &&
    e.restarted.every(restartedOnHost) &&
    o.unitsAfterFailure[e.unit] !== undefined &&
    o.unitsAfterFailure[e.unit]?.active !== "active" &&
    o.unitsAfterFailure[e.unit]?.pidAfter === 0
  const onHost = Units.map((u) => {
    const s = o.unitsAfterFailure[u]
    return s === undefined ? `${u} not observed` : `${u} ${s.active}/${s.sub} (MainPID ${s.pidBefore} -> ${s.pidAfter})`
  }).join(", ")
  const down = Units.filter((u) => o.activeAfterRecovery[u] !== "active")
  const newDropIns = o.kubeletDropIns.filter((p) => !(p in o.before) || o.before[p]?.type === "Absent")
  return [
    claim(
      step,
      "upgrade-wrote-config",
      "the upgrade really changed the configuration before it failed",
      written.length > 0,
      written.length === 0
        ? "nothing differed while the upgrade ran"
        : `${plural(written.length, "path")} differed: ${showDiffs(written)}`
    ),
    claim(
      step,
      "restart-error-lists-units",
      `the RestartError names the failed unit and the units restarted before it, and the host agrees`,
      errorOk,
      e === undefined
        ? "the upgrade did not fail with a RestartError"
        : `error: failed ${e.unit}, restarted ${list(e.restarted)}, not attempted ${list(e.notAttempted)}; host: ${onHost}`
    ),
    claim(
      step,
      "restored-byte-for-byte",
      "after the rollback every configuration path is byte-for-byte (and mode-for-mode) as before the upgrade",
      left.length === 0 && size.files > 0,
      left.length === 0
        ? `${plural(size.paths, "path")} compared (${plural(size.files, "file")}, ${size.bytes} bytes): all identical`
        : `${plural(left.length, "path")} differ: ${showDiffs(left)}`
    ),
    claim(
      step,
      "rollback-snapshot-removed",
      "the snapshot was removed after its restore",
      !o.snapshotLeft,
      o.snapshotLeft ? `${SnapshotDir} still exists` : `${SnapshotDir} is gone`
    ),
    claim(
      step,
      "node-back-on-old-config",
      "restarted on the restored configuration, the node runs again without the upgrade's drop-in",
      down.length === 0 && newDropIns.length === 0,
      `${Units.map((u) => `${u} ${o.activeAfterRecovery[u] ?? "unknown"}`).join(", ")}; kubelet drop-ins: ${list(o.kubeletDropIns)}`
    )
  ]
}

/** What was observed around the upgrade that succeeds. */
export interface UpgradeObservation {
  /** Each file the upgrade wrote: what it meant to write and what the host holds after (undefined when absent). */
  readonly written: ReadonlyArray<{
    readonly path: string
    readonly intended: Uint8Array
    readonly found: Uint8Array | undefined
  }>
  /** The units the upgrade counted as changed, in order. */
  readonly changedUnits: ReadonlyArray<string>
  /** Per unit: completed manual restarts during the step, MainPID before and after, ActiveState after. */
  readonly units: Readonly<
    Record<
      string,
      { readonly restarts: number; readonly pidBefore: number; readonly pidAfter: number; readonly active: string }
    >
  >
  /** kubelet.service's drop-ins as systemd loaded them after the upgrade. */
  readonly kubeletDropIns: ReadonlyArray<string>
  /** Whether the snapshot directory exists after the scope closed. */
  readonly snapshotLeft: boolean
}

/** The claims about the upgrade that succeeds, from what was observed. */
export const upgradeClaims = (o: UpgradeObservation): ReadonlyArray<Claim> => {
  const step: Step["id"] = "upgrade"
  const wrong = o.written.filter((w) => w.found === undefined || !sameBytes(w.intended, w.found)).map((w) => w.path)
  const notRestarted = o.changedUnits.filter((u) => {
    const s = o.units[u]
    return s === undefined || s.restarts !== 1 || s.pidBefore === s.pidAfter || s.active !== "active"
  })
  const dropIn = Object.keys(UpgradeFiles).find((p) => p.includes("kubelet.service.d/"))
  return [
    claim(
      step,
      "new-config-in-place",
      "the new configuration is in place, byte-for-byte as the upgrade wrote it",
      o.written.length > 0 && wrong.length === 0,
      wrong.length === 0
        ? `${plural(o.written.length, "file")} checked: ${list(o.written.map((w) => w.path))}`
        : `differs: ${list(wrong)}`
    ),
    claim(
      step,
      "units-restarted",
      "each unit whose configuration changed was restarted once and runs with a new MainPID",
      o.changedUnits.length > 0 && notRestarted.length === 0,
      o.changedUnits
        .map((u) => {
          const s = o.units[u]
          return s === undefined
            ? `${u}: not observed`
            : `${u}: ${plural(s.restarts, "restart")}, MainPID ${s.pidBefore} -> ${s.pidAfter}, ${s.active}`
        })
        .join("; ")
    ),
    claim(
      step,
      "new-drop-in-loaded",
      "systemd loaded the new kubelet drop-in",
      dropIn !== undefined && o.kubeletDropIns.includes(dropIn),
      `kubelet drop-ins: ${list(o.kubeletDropIns)}`
    ),
    claim(
      step,
      "snapshot-discarded",
      "the snapshot was discarded once the upgrade succeeded",
      !o.snapshotLeft,
      o.snapshotLeft ? `${SnapshotDir} still exists` : `${SnapshotDir} is gone`
    )
  ]
}

/** What was observed before and after the repave. */
export interface RepaveObservation {
  /** Mount points strictly below the kubelet directory, before and after. */
  readonly podMountsBefore: ReadonlyArray<string>
  readonly podMountsAfter: ReadonlyArray<string>
  /** Whether the kubelet directory's own mount is still there after. */
  readonly kubeletMountKept: boolean
  /** Entries of the pods directory, before and after. */
  readonly podsBefore: ReadonlyArray<string>
  readonly podsAfter: ReadonlyArray<string>
  /** The CSI volume's data at its source (outside the kubelet directory), before and after. */
  readonly csiBefore: Image
  readonly csiAfter: Image
  /** Entries of the CNI configuration directory after (undefined when the directory is gone). */
  readonly cniConfAfter: ReadonlyArray<string> | undefined
  /** Whether the CNI state directory exists after. */
  readonly cniStateLeft: boolean
  /** The kubelet's client credentials (pki entries and kubeconfig) before and after. */
  readonly credentialsBefore: ReadonlyArray<string>
  readonly credentialsAfter: ReadonlyArray<string>
  /** What must survive the identity reset (bootstrap kubeconfig, serving certificate, kubelet config), before and after. */
  readonly keptBefore: Image
  readonly keptAfter: Image
  /** The LocalDNS interface before and after (whether it exists), and the raw table's rules. */
  readonly linkBefore: boolean
  readonly linkAfter: boolean
  readonly rulesBefore: ReadonlyArray<string>
  readonly rulesAfter: ReadonlyArray<string>
}

export const isLocalDnsRule = (line: string) => line.includes(localDnsRuleComment)

/** The LocalDNS interface (the agent configuration's default name). */
export const localDnsLink = AgentConfig.Defaults.interfaceName

/** The claims about the repave, from what was observed. */
export const repaveClaims = (o: RepaveObservation): ReadonlyArray<Claim> => {
  const step: Step["id"] = "repave"
  const csi = diffImages(o.csiBefore, o.csiAfter)
  const csiSize = imageSize(o.csiBefore)
  const kept = diffImages(o.keptBefore, o.keptAfter)
  const keptSize = imageSize(o.keptBefore)
  const ours = o.rulesAfter.filter(isLocalDnsRule)
  const foreignBefore = o.rulesBefore.filter((r) => !isLocalDnsRule(r))
  const foreignAfter = o.rulesAfter.filter((r) => !isLocalDnsRule(r))
  return [
    claim(
      step,
      "pod-mounts-unmounted",
      `no mount is left strictly below ${kubeletDir}; the directory's own mount stays`,
      o.podMountsBefore.length > 0 && o.podMountsAfter.length === 0 && o.kubeletMountKept,
      `${plural(o.podMountsBefore.length, "mount")} before, ${o.podMountsAfter.length} after${o.podMountsAfter.length === 0 ? "" : ` (${list(o.podMountsAfter)})`}; ${kubeletDir} ${o.kubeletMountKept ? "still" : "no longer"} a mount point`
    ),
    claim(
      step,
      "pods-gone",
      `every pod directory below ${podsDir} is gone`,
      o.podsBefore.length > 0 && o.podsAfter.length === 0,
      `${plural(o.podsBefore.length, "pod")} before, ${o.podsAfter.length} after${o.podsAfter.length === 0 ? "" : ` (${list(o.podsAfter)})`}`
    ),
    claim(
      step,
      "csi-data-kept",
      "the CSI volume's data at its source is untouched (the bind mount was unmounted, never recursed into)",
      csi.length === 0 && csiSize.files > 0,
      csi.length === 0
        ? `${csiSource}: ${plural(csiSize.files, "file")}, ${csiSize.bytes} bytes, identical`
        : `${csiSource} differs: ${showDiffs(csi)}`
    ),
    claim(
      step,
      "cni-state-gone",
      `the CNI configuration is emptied (${Paths.Node.CniConfDir} kept) and the IPAM state (${Paths.Node.CniStateDir}) removed`,
      o.cniConfAfter !== undefined && o.cniConfAfter.length === 0 && !o.cniStateLeft,
      `${Paths.Node.CniConfDir}: ${o.cniConfAfter === undefined ? "missing" : o.cniConfAfter.length === 0 ? "empty" : list(o.cniConfAfter)}; ${Paths.Node.CniStateDir}: ${o.cniStateLeft ? "still there" : "gone"}`
    ),
    claim(
      step,
      "client-certs-removed",
      "the kubelet's rotated client certificates and its kubeconfig are removed",
      o.credentialsBefore.length > 0 && o.credentialsAfter.length === 0,
      `${plural(o.credentialsBefore.length, "credential")} before, ${o.credentialsAfter.length} after${o.credentialsAfter.length === 0 ? "" : ` (${list(o.credentialsAfter)})`}`
    ),
    claim(
      step,
      "bootstrap-kubeconfig-kept",
      "the bootstrap kubeconfig (and the serving certificate and kubelet config) are kept, unchanged",
      kept.length === 0 && keptSize.files > 0,
      kept.length === 0
        ? `${plural(keptSize.files, "file")} identical: ${list(Object.keys(o.keptBefore))}`
        : `changed: ${showDiffs(kept)}`
    ),
    claim(
      step,
      "network-clean",
      "the LocalDNS interface and its NOTRACK rules are gone; other rules are left alone",
      o.linkBefore &&
        !o.linkAfter &&
        o.rulesBefore.some(isLocalDnsRule) &&
        ours.length === 0 &&
        foreignAfter.join("\n") === foreignBefore.join("\n"),
      `interface ${localDnsLink}: ${o.linkBefore ? "present" : "absent"} -> ${o.linkAfter ? "present" : "absent"}; rules of ours: ${o.rulesBefore.filter(isLocalDnsRule).length} -> ${ours.length}; other rules kept: ${foreignAfter.length}/${foreignBefore.length}`
    )
  ]
}
