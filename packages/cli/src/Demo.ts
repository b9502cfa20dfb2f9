/**
 * `hostnode demo`: a guided run of the library's main operations on a
 * simulated Kubernetes node, for a person meeting hostnode for the first
 * time. It seeds a realistic node, then runs an upgrade that fails and is
 * rolled back by `Snapshot.scoped`, the same upgrade succeeding, and a
 * repave; every step is timed with the Effect `Clock`, and the run ends with
 * claims, each checked against the simulated host's state.
 *
 * Boundary: {@link run} builds and provides its own `MemoryNode.layer` (files,
 * mounts, systemd and network all in memory), so whatever the caller's
 * context holds (the real host's layers, `--host-root`), the demo never reads
 * or changes this machine. It returns a {@link DemoReport} and prints
 * nothing: the CLI prints it ({@link renderText}, or the report as JSON). The
 * claims are pure functions over what was observed ({@link rollbackClaims},
 * {@link upgradeClaims}, {@link repaveClaims}), so a test can feed them a
 * tampered observation.
 *
 * @since 0.1.0
 */
import {
  AgentConfig,
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
import { MemoryHost, MemoryNetwork, MemoryNode, MemorySystemd, TreeWalk } from "@hostnode/test"
import { Clock, Effect, FileSystem, Schema } from "effect"
import type { PlatformError } from "effect/PlatformError"
import { plural } from "./internal/text.ts"

// ---------------------------------------------------------------------------
// the report

/**
 * One claim of the verification summary: what is asserted, whether the simulated host bears it out, and the evidence.
 *
 * @since 0.1.0
 */
export interface Claim {
  /** A stable name, for machines and tests (`restored-byte-for-byte`, `pods-gone`, ...). */
  readonly id: string
  /** The step whose outcome it is about. */
  readonly step: StepId
  /** What is claimed, in a sentence. */
  readonly statement: string
  /** Whether the observed state bears it out. */
  readonly ok: boolean
  /** What was observed, so a failure says what went wrong. */
  readonly evidence: string
}

/**
 * The steps of the demo, in order.
 *
 * @since 0.1.0
 */
export type StepId = "prepare" | "upgrade-rollback" | "upgrade" | "repave"

/**
 * One step as it ran: what it did, for a person (`lines`) and for a machine (`details`), and how long it took.
 *
 * @since 0.1.0
 */
export interface Step {
  readonly id: StepId
  readonly title: string
  /** Wall time on the Effect `Clock`, in milliseconds. */
  readonly durationMs: number
  /** What happened, one sentence a line. */
  readonly lines: ReadonlyArray<string>
  /** The same, structured. */
  readonly details: Readonly<Record<string, unknown>>
}

/**
 * What {@link run} returns: the steps, the claims, and `ok` when every claim holds.
 *
 * @since 0.1.0
 */
export interface DemoReport {
  readonly ok: boolean
  readonly steps: ReadonlyArray<Step>
  readonly claims: ReadonlyArray<Claim>
  /** The whole run on the Effect `Clock`, in milliseconds. */
  readonly durationMs: number
}

/**
 * A step failed in a way the demo does not expect (the seeding, the
 * successful upgrade or the repave returned an error): the demo cannot go
 * on, so there is no report. Names the step and what failed.
 *
 * @since 0.1.0
 */
export class DemoError extends Schema.TaggedError<DemoError>()("DemoError", {
  step: Schema.String,
  reason: Schema.Literals(["OperationFailed", "UnexpectedOutcome"]),
  detail: Schema.String
}) {
  override get message(): string {
    return `demo step ${JSON.stringify(this.step)}: ${this.reason === "OperationFailed" ? "an operation failed" : "unexpected outcome"}: ${this.detail}`
  }
}

// ---------------------------------------------------------------------------
// the simulated node

/**
 * The node's units, in restart order (dependencies first), as the host-mode backend knows them.
 *
 * @since 0.1.0
 */
export const Units: ReadonlyArray<string> = IsolationBackend.DefaultHostUnits

/**
 * The unit whose restart the first upgrade makes fail.
 *
 * @since 0.1.0
 */
export const FailingUnit = "kubelet.service"

/**
 * Where the upgrades keep their configuration snapshot (the agent configuration directory, as `Hooks.snapshotDir` puts it).
 *
 * @since 0.1.0
 */
export const SnapshotDir = `${AgentConfig.DefaultConfigDir}/config-snapshot`

/** The kubelet's directory, and the pods in it. */
const kubeletDir = Paths.KubeletDir
const podsDir = Repave.KubeletPodsDir
const webPod = `${podsDir}/6f1c2b7e-3d4a-4c1e-9b8f-0a1b2c3d4e5f`
const dbPod = `${podsDir}/9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d`
const pvc = "pvc-3c1d5e7f"
/** Where the CSI driver keeps the volume's data (a local disk): the source of the bind mount into the pod. */
const csiSource = `/mnt/disks/${pvc}`
const csiTarget = `${dbPod}/volumes/kubernetes.io~csi/${pvc}/mount`
const pki = Paths.KubeletClientPkiDir
const clientCertOld = `${pki}/kubelet-client-2026-05-30-08-15-42.pem`
const clientCertNew = `${pki}/kubelet-client-2026-11-28-08-15-42.pem`

const kubeletUnit = `[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=https://kubernetes.io/docs/
Wants=network-online.target
After=network-online.target containerd.service

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
RestartSec=10

[Install]
WantedBy=multi-user.target
`

const kubeadmDropIn = `[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=${NodeStart.DefaultBootstrapKubeconfig} --kubeconfig=${Repave.KubeletKubeconfig}"
Environment="KUBELET_CONFIG_ARGS=--config=${kubeletDir}/config.yaml"
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_EXTRA_ARGS
`

const containerdUnit = `[Unit]
Description=containerd container runtime
Documentation=https://containerd.io
After=network.target local-fs.target

[Service]
ExecStartPre=-/sbin/modprobe overlay
ExecStart=/usr/local/bin/containerd
Type=notify
Delegate=yes
KillMode=process
Restart=always
RestartSec=5
LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
OOMScoreAdjust=-999

[Install]
WantedBy=multi-user.target
`

const containerdConfigV2 = `version = 2

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.9"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = true

[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = "/etc/containerd/certs.d"
`

const containerdConfigV3 = `version = 3

[plugins."io.containerd.cri.v1.images".pinned_images]
  sandbox = "registry.k8s.io/pause:3.10"

[plugins."io.containerd.cri.v1.images".registry]
  config_path = "/etc/containerd/certs.d"

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
  SystemdCgroup = true
`

const kubeletDefaults = `KUBELET_EXTRA_ARGS=--node-labels=node.kubernetes.io/pool=demo\n`
const kubeletDefaultsNew = `KUBELET_EXTRA_ARGS=--node-labels=node.kubernetes.io/pool=demo --image-gc-high-threshold=80\n`

const upgradeDropIn = `# Written by the node agent's upgrade.
[Service]
Environment="KUBELET_UPGRADE_ARGS=--image-credential-provider-config=/etc/kubernetes/credential-provider.yaml"
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_EXTRA_ARGS $KUBELET_UPGRADE_ARGS
`

const cniConf = JSON.stringify(
  {
    cniVersion: "1.0.0",
    name: "containerd-net",
    plugins: [
      {
        type: "bridge",
        bridge: "cni0",
        isGateway: true,
        ipMasq: true,
        ipam: { type: "host-local", ranges: [[{ subnet: "10.244.1.0/24" }]], routes: [{ dst: "0.0.0.0/0" }] }
      },
      { type: "portmap", capabilities: { portMappings: true } }
    ]
  },
  null,
  2
)

/** The files of the node before anything runs: what a kubeadm-style node with containerd, a bootstrapped kubelet and CNI has. */
const nodeFiles: MemoryHost.Fixture = {
  "/etc/systemd/system/kubelet.service": kubeletUnit,
  "/etc/systemd/system/kubelet.service.d/10-kubeadm.conf": kubeadmDropIn,
  "/etc/systemd/system/containerd.service": containerdUnit,
  "/etc/containerd/config.toml": containerdConfigV2,
  "/etc/containerd/certs.d/docker.io/hosts.toml":
    'server = "https://registry-1.docker.io"\n\n[host."https://mirror.example.internal"]\n  capabilities = ["pull", "resolve"]\n',
  "/etc/default/kubelet": kubeletDefaults,
  "/etc/kubernetes/manifests": { directory: true },
  "/etc/kubernetes/pki/ca.crt": { content: "-----BEGIN CERTIFICATE-----\n(cluster CA)\n-----END CERTIFICATE-----\n" },
  "/etc/sysctl.d/k8s.conf": "net.bridge.bridge-nf-call-iptables = 1\nnet.ipv4.ip_forward = 1\n",
  "/etc/modules-load.d/k8s.conf": "overlay\nbr_netfilter\n",
  "/etc/systemd/resolved.conf.d/localdns.conf": `[Resolve]\nDNS=${NodeStart.NodeListener}\nDomains=~.\n`,
  [`${AgentConfig.DefaultConfigDir}/config.json`]: "{}\n",
  "/etc/cni/net.d/10-containerd-net.conflist": `${cniConf}\n`,
  "/var/lib/cni/networks/containerd-net/10.244.1.2": "4f9a0c1e2b3d\neth0",
  "/var/lib/cni/networks/containerd-net/10.244.1.3": "7b2e9d4c1a0f\neth0",
  "/var/lib/cni/networks/containerd-net/last_reserved_ip.0": "10.244.1.3",
  "/var/lib/cni/networks/containerd-net/lock": "",
  [`${kubeletDir}/config.yaml`]:
    "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\nrotateCertificates: true\nserverTLSBootstrap: true\n",
  [NodeStart.DefaultBootstrapKubeconfig]:
    "apiVersion: v1\nkind: Config\nclusters:\n- name: default\n  cluster:\n    server: https://10.0.0.1:6443\nusers:\n- name: kubelet-bootstrap\n  user:\n    token: abcdef.0123456789abcdef\n",
  [Repave.KubeletKubeconfig]: `apiVersion: v1\nkind: Config\nusers:\n- name: default-auth\n  user:\n    client-certificate: ${pki}/kubelet-client-current.pem\n    client-key: ${pki}/kubelet-client-current.pem\n`,
  [clientCertOld]: { content: "-----BEGIN CERTIFICATE-----\n(client, May)\n-----END CERTIFICATE-----\n", mode: 0o600 },
  [clientCertNew]: {
    content: "-----BEGIN CERTIFICATE-----\n(client, November)\n-----END CERTIFICATE-----\n",
    mode: 0o600
  },
  [`${pki}/kubelet-client-current.pem`]: { symlink: clientCertNew },
  [`${pki}/kubelet.crt`]: "-----BEGIN CERTIFICATE-----\n(serving)\n-----END CERTIFICATE-----\n",
  [`${pki}/kubelet.key`]: {
    content: "-----BEGIN PRIVATE KEY-----\n(serving)\n-----END PRIVATE KEY-----\n",
    mode: 0o600
  },
  [`${webPod}/etc-hosts`]: "127.0.0.1 localhost\n10.244.1.2 web-0\n",
  [`${webPod}/containers/nginx/4f9a0c1e`]: "",
  [`${webPod}/volumes/kubernetes.io~secret/tls`]: { directory: true },
  [`${webPod}/volumes/kubernetes.io~projected/kube-api-access-7xk2p`]: { directory: true },
  [`${webPod}/volumes/kubernetes.io~empty-dir/cache/index.html`]: "<h1>cached</h1>\n",
  [`${dbPod}/etc-hosts`]: "127.0.0.1 localhost\n10.244.1.3 db-0\n",
  [`${dbPod}/volumes/kubernetes.io~csi/${pvc}/vol_data.json`]:
    '{"driverName":"disk.csi.example.com","volumeHandle":"disk-0042","specVolID":"pvc-3c1d5e7f"}',
  [csiTarget]: { directory: true },
  [`${dbPod}/volumes/kubernetes.io~projected/kube-api-access-q9w4z`]: { directory: true },
  [`${csiSource}/pgdata/PG_VERSION`]: "16\n",
  [`${csiSource}/pgdata/base/1/1259`]: new Uint8Array([0x00, 0x01, 0x02, 0xfe, 0xff, 0x10, 0x20, 0x30]),
  [`${csiSource}/pgdata/postgresql.auto.conf`]: "# Do not edit this file manually!\nmax_connections = '200'\n"
}

/** The kubelet's atomic-writer layout of a secret or projected volume: timestamped data, a `..data` link, a link per key. */
const atomicWriter = (dir: string, files: Readonly<Record<string, string>>) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const stamp = "..2026_11_30_08_00_00.271828"
    yield* fs.makeDirectory(`${dir}/${stamp}`, { recursive: true })
    for (const [name, content] of Object.entries(files)) {
      yield* fs.writeFileString(`${dir}/${stamp}/${name}`, content)
      yield* fs.symlink(`..data/${name}`, `${dir}/${name}`)
    }
    yield* fs.symlink(stamp, `${dir}/..data`)
  })

const serviceAccountToken = {
  token: "eyJhbGciOiJSUzI1NiJ9.demo.signature",
  "ca.crt": "-----BEGIN CERTIFICATE-----\n(cluster CA)\n-----END CERTIFICATE-----\n",
  namespace: "default"
}

/** The LocalDNS listeners and the kubelet's bootstrap-token authentication of the demo node. */
const nodeStart = NodeStart.decode({
  nodeName: "demo-node-0",
  apiServer: "https://10.0.0.1:6443",
  auth: { _tag: "BootstrapToken", token: "abcdef.0123456789abcdef" },
  localDns: { nodeListener: NodeStart.NodeListener, clusterListener: NodeStart.ClusterListener }
})

/** A rule in the raw table that is not LocalDNS's (VXLAN traffic left untracked by an overlay), which a cleanup must leave. */
const foreignRule = ["-A", "PREROUTING", "-p", "udp", "--dport", "4789", "-j", "NOTRACK"]

/**
 * The upgrade both upgrade steps write: containerd's configuration moves to
 * the version 3 schema, the kubelet gets another flag and a new drop-in.
 * Every path is inside `ConfSnap.DefaultPaths`, so the snapshot covers it.
 *
 * @since 0.1.0
 */
export const UpgradeFiles: Readonly<Record<string, string>> = {
  "/etc/containerd/config.toml": containerdConfigV3,
  "/etc/default/kubelet": kubeletDefaultsNew,
  "/etc/systemd/system/kubelet.service.d/20-hostnode-upgrade.conf": upgradeDropIn
}

/**
 * Which unit reads a configuration path (the unit whose restart picks a change of it up).
 *
 * @since 0.1.0
 */
export const unitOf = (path: string): string | undefined =>
  path.startsWith("/etc/containerd/") || path.startsWith("/etc/systemd/system/containerd.service")
    ? "containerd.service"
    : path === "/etc/default/kubelet" ||
        path.startsWith("/etc/systemd/system/kubelet.service") ||
        path.startsWith("/etc/kubernetes/")
      ? "kubelet.service"
      : undefined

// ---------------------------------------------------------------------------
// observing the host

/**
 * One path of a configuration {@link Image}: a file's mode and bytes, a directory's mode, a link's target, or nothing.
 *
 * @since 0.1.0
 */
export type ImageEntry =
  | { readonly type: "File"; readonly mode: number; readonly bytes: Uint8Array }
  | { readonly type: "Directory"; readonly mode: number }
  | { readonly type: "SymbolicLink"; readonly target: string }
  | { readonly type: "Absent" }
  | { readonly type: "Other"; readonly kind: string }

/**
 * Everything at and below some paths, by path: what a byte-for-byte comparison compares.
 *
 * @since 0.1.0
 */
export type Image = Readonly<Record<string, ImageEntry>>

/**
 * Reads the image of `paths` from the host in context: each path, and each
 * path below a directory (except `exclude`, as the snapshot's walk skips
 * it), with file bytes read in full. A missing path is `Absent`.
 *
 * @since 0.1.0
 */
export const captureImage = (
  paths: ReadonlyArray<string>,
  exclude: ReadonlyArray<string> = ConfSnap.Exclude
): Effect.Effect<Image, PlatformError, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const out: Record<string, ImageEntry> = {}
    for (const top of paths) {
      const visited = yield* TreeWalk.walk(top, { skip: (p) => exclude.includes(p) })
      if (visited.length === 0) out[top] = { type: "Absent" }
      for (const v of visited) {
        const mode = v.info.mode & 0o7777
        out[v.path] =
          v.type === "File"
            ? { type: "File", mode, bytes: v.bytes }
            : v.type === "SymbolicLink"
              ? { type: "SymbolicLink", target: v.target }
              : v.type === "Directory"
                ? { type: "Directory", mode }
                : { type: "Other", kind: v.info.type }
      }
    }
    return out
  })

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((x, i) => x === b[i])

/**
 * How a path differs between two images.
 *
 * @since 0.1.0
 */
export interface Difference {
  readonly path: string
  /** `added`/`removed` (present in only one image), or what differs: `type`, `content`, `mode`, `target`. */
  readonly what: "added" | "removed" | "type" | "content" | "mode" | "target"
}

/**
 * The paths whose entries differ between `before` and `after` (present on one side only, or different), sorted.
 *
 * @since 0.1.0
 */
export const diffImages = (before: Image, after: Image): ReadonlyArray<Difference> => {
  const out: Array<Difference> = []
  const present = (e: ImageEntry | undefined) => e !== undefined && e.type !== "Absent"
  for (const path of [...new Set([...Object.keys(before), ...Object.keys(after)])].sort()) {
    const a = before[path]
    const b = after[path]
    if (!present(a) && !present(b)) continue
    if (!present(a)) out.push({ path, what: "added" })
    else if (!present(b)) out.push({ path, what: "removed" })
    else if (a === undefined || b === undefined || a.type !== b.type) out.push({ path, what: "type" })
    else if (a.type === "File" && b.type === "File") {
      if (!sameBytes(a.bytes, b.bytes)) out.push({ path, what: "content" })
      else if (a.mode !== b.mode) out.push({ path, what: "mode" })
    } else if (a.type === "Directory" && b.type === "Directory") {
      if (a.mode !== b.mode) out.push({ path, what: "mode" })
    } else if (a.type === "SymbolicLink" && b.type === "SymbolicLink") {
      if (a.target !== b.target) out.push({ path, what: "target" })
    } else if (a.type === "Other" && b.type === "Other" && a.kind !== b.kind) {
      out.push({ path, what: "type" })
    }
  }
  return out
}

/**
 * How much an image holds: paths present, files among them, and their bytes.
 *
 * @since 0.1.0
 */
export const imageSize = (image: Image): { readonly paths: number; readonly files: number; readonly bytes: number } => {
  let paths = 0
  let files = 0
  let bytes = 0
  for (const e of Object.values(image)) {
    if (e.type === "Absent") continue
    paths++
    if (e.type === "File") {
      files++
      bytes += e.bytes.length
    }
  }
  return { paths, files, bytes }
}

/**
 * The mount points strictly below `prefix` in a mount table, in table order.
 *
 * @since 0.1.0
 */
export const mountsStrictlyBelow = (
  table: ReadonlyArray<{ readonly mountPoint: string }>,
  prefix: string
): ReadonlyArray<string> => table.map((m) => m.mountPoint).filter((p) => p.startsWith(`${prefix}/`))

/** `onMissing` when `path` does not exist; any other failure stays a failure (it is not evidence of absence). */
const orMissing = <A, B>(effect: Effect.Effect<A, PlatformError>, onMissing: B): Effect.Effect<A | B, PlatformError> =>
  Effect.catchIf(
    effect,
    (e) => e.reason._tag === "NotFound",
    () => Effect.succeed(onMissing)
  )

/** Whether `path` exists (not followed if a link). */
const exists = (path: string) =>
  Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) => orMissing(Effect.as(fs.lstat(path), true), false))

/** The names in directory `path`, sorted; none when it does not exist. */
const listDir = (path: string) =>
  Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) =>
    orMissing(
      Effect.map(fs.readDirectory(path), (names) => [...names].sort()),
      [] as ReadonlyArray<string>
    )
  )

// ---------------------------------------------------------------------------
// the claims (pure)

const claim = (step: StepId, id: string, statement: string, ok: boolean, evidence: string): Claim => ({
  id,
  step,
  statement,
  ok,
  evidence
})

const list = (xs: ReadonlyArray<string>) => (xs.length === 0 ? "none" : xs.join(", "))
const showDiffs = (ds: ReadonlyArray<Difference>) =>
  ds
    .slice(0, 4)
    .map((d) => `${d.path} (${d.what})`)
    .join(", ") + (ds.length > 4 ? `, and ${ds.length - 4} more` : "")

/**
 * What was observed around the upgrade that fails and is rolled back.
 *
 * @since 0.1.0
 */
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

/**
 * The claims about the rolled-back upgrade, from what was observed.
 *
 * @since 0.1.0
 */
export const rollbackClaims = (o: RollbackObservation): ReadonlyArray<Claim> => {
  const step: StepId = "upgrade-rollback"
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

/**
 * What was observed around the upgrade that succeeds.
 *
 * @since 0.1.0
 */
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

/**
 * The claims about the upgrade that succeeds, from what was observed.
 *
 * @since 0.1.0
 */
export const upgradeClaims = (o: UpgradeObservation): ReadonlyArray<Claim> => {
  const step: StepId = "upgrade"
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

/**
 * What was observed before and after the repave.
 *
 * @since 0.1.0
 */
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

const isLocalDnsRule = (line: string) => line.includes(LocalDns.RuleComment)

/** The LocalDNS interface (the agent configuration's default name). */
const localDnsLink = AgentConfig.DefaultInterfaceName

/**
 * The claims about the repave, from what was observed.
 *
 * @since 0.1.0
 */
export const repaveClaims = (o: RepaveObservation): ReadonlyArray<Claim> => {
  const step: StepId = "repave"
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
      `the CNI configuration is emptied (${Paths.CniConfDir} kept) and the IPAM state (${Paths.CniStateDir}) removed`,
      o.cniConfAfter !== undefined && o.cniConfAfter.length === 0 && !o.cniStateLeft,
      `${Paths.CniConfDir}: ${o.cniConfAfter === undefined ? "missing" : o.cniConfAfter.length === 0 ? "empty" : list(o.cniConfAfter)}; ${Paths.CniStateDir}: ${o.cniStateLeft ? "still there" : "gone"}`
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

// ---------------------------------------------------------------------------
// the steps

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
  id: StepId,
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
        e instanceof DemoError ? e : new DemoError({ step: id, reason: "OperationFailed", detail: describeError(e) })
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
          yield* Snapshot.scoped({ dir: SnapshotDir, hostRoot: "/" })
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
        reason: "UnexpectedOutcome",
        detail: `the restart of ${FailingUnit} was made to fail, but the upgrade succeeded`
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
      yield* Snapshot.scoped({ dir: SnapshotDir, hostRoot: "/" })
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

const credentials = Effect.gen(function* () {
  const names = (yield* listDir(pki)).filter(Repave.isClientCredential).map((n) => `${pki}/${n}`)
  return (yield* exists(Repave.KubeletKubeconfig)) ? [...names, Repave.KubeletKubeconfig] : names
})

const keptPaths = [
  NodeStart.DefaultBootstrapKubeconfig,
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
    cniConfAfter: (yield* exists(Paths.CniConfDir)) ? yield* listDir(Paths.CniConfDir) : undefined,
    cniStateLeft: yield* exists(Paths.CniStateDir),
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
  const confRemoved = cni.removed.filter((p) => p.startsWith(`${Paths.CniConfDir}/`)).map(baseName)
  const stateRemoved = cni.removed.filter((p) => p === Paths.CniStateDir || p.startsWith(`${Paths.CniStateDir}/`))
  const oursBefore = rulesBefore.filter(isLocalDnsRule).length
  const oursAfter = observation.rulesAfter.filter(isLocalDnsRule).length
  return {
    lines: [
      `stopped ${list([...Units].reverse())} (a repave runs with the node stack down)`,
      `Unmount.unmountStrictlyBelow ${kubeletDir}: ${plural(podMountsBefore.length, "pod volume")} unmounted, the directory's own mount kept`,
      `Repave.teardownKubeletDir: ${plural(teardown.prefixes.length, "pod directory", "pod directories")} removed (${plural(teardown.removed.length, "path")}), ${teardown.kept.length} kept`,
      `Repave.resetCniState: removed ${list(confRemoved)} from ${Paths.CniConfDir} (the directory stays)`,
      `  and ${Paths.CniStateDir} (${plural(stateRemoved.length, "path")}: the IPAM reservations and their bookkeeping)`,
      `Repave.resetKubeletIdentity (bootstrap-token mode): removed ${list(identity.removed.map(baseName))}`,
      `  and kept ${baseName(NodeStart.DefaultBootstrapKubeconfig)}, so the next start bootstraps a new identity`,
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

// ---------------------------------------------------------------------------
// running

/**
 * Seams for tests of the demo itself.
 *
 * @since 0.1.0
 */
export interface Options {
  /**
   * Runs on the simulated node right after the failed upgrade's rollback,
   * before the host is compared with its state before the upgrade: a test
   * tampers with a file here to see the `restored-byte-for-byte` claim fail.
   */
  readonly afterRollback?: Effect.Effect<void, never, MemoryNode.Services> | undefined
}

/**
 * {@link run} with seams (see {@link Options}).
 *
 * @since 0.1.0
 */
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

/**
 * The demo: seeds a fresh simulated node (its own `MemoryNode.layer`, never
 * the host in context), runs the three scenarios and checks every claim
 * against the simulated host. A claim that does not hold makes `ok` false;
 * an operation that fails unexpectedly is a {@link DemoError}.
 *
 * @since 0.1.0
 */
export const run: Effect.Effect<DemoReport, DemoError> = runWith()

// ---------------------------------------------------------------------------
// rendering

const ms = (n: number) => `${n.toFixed(1)} ms`

/** `text` broken at spaces into lines of at most `width` (a longer word stays whole), continuation lines indented by `indent`. */
const wrap = (text: string, width: number, indent: string): ReadonlyArray<string> => {
  const lead = /^ */.exec(text)?.[0] ?? ""
  const out: Array<string> = []
  let line = lead
  for (const word of text.slice(lead.length).split(" ")) {
    if (line.trim() !== "" && line.length + 1 + word.length > width) {
      out.push(line)
      line = `${lead}${indent}${word}`
    } else {
      line = line.trim() === "" ? `${line}${word}` : `${line} ${word}`
    }
  }
  out.push(line)
  return out
}

/**
 * The report for a person: each step with its duration and what it did, then every claim with PASS or FAIL.
 *
 * @since 0.1.0
 */
export const renderText = (report: DemoReport): string => {
  const width = 110
  const out: Array<string> = [
    "hostnode demo: the library's operations on a simulated Kubernetes node",
    "Everything runs on an in-memory node (MemoryNode from @hostnode/test: files, mounts, systemd, network);",
    "nothing on this machine is read or changed.",
    ""
  ]
  report.steps.forEach((step, i) => {
    const head = `${i}. ${step.title}`
    out.push(
      `${head} ${".".repeat(Math.max(2, width - head.length - ms(step.durationMs).length - 2))} ${ms(step.durationMs)}`
    )
    for (const line of step.lines) out.push(...wrap(`   ${line}`, width, "  "))
    out.push("")
  })
  out.push(`Verification: ${plural(report.claims.length, "claim")}, each checked against the simulated host's state`)
  report.steps.forEach((step, i) => {
    const claims = report.claims.filter((c) => c.step === step.id)
    if (claims.length === 0) return
    out.push(`  after step ${i}:`)
    for (const c of claims) {
      out.push(...wrap(`    ${c.ok ? "PASS" : "FAIL"}  ${c.statement}`, width, "      "))
      out.push(...wrap(`          ${c.evidence}`, width, "  "))
    }
  })
  const passed = report.claims.filter((c) => c.ok).length
  out.push("")
  out.push(
    report.ok
      ? `All ${report.claims.length} claims hold. Total ${ms(report.durationMs)}.`
      : `${report.claims.length - passed} of ${report.claims.length} claims FAILED. Total ${ms(report.durationMs)}.`
  )
  return out.join("\n")
}

/**
 * The report as the one JSON document of `hostnode demo --json`: `ok`, the command, the steps and the summary.
 *
 * @since 0.1.0
 */
export const toJson = (report: DemoReport): Record<string, unknown> => {
  const passed = report.claims.filter((c) => c.ok).length
  return {
    ok: report.ok,
    command: "demo",
    result: {
      durationMs: report.durationMs,
      steps: report.steps,
      summary: { passed, failed: report.claims.length - passed, claims: report.claims }
    }
  }
}
