/**
 * The simulated node the demo runs on: its files (units, configuration, pods,
 * a CSI volume, the kubelet's certificates), the node's start parameters and
 * the upgrade's files. Boundary: fixture data; nothing here runs.
 */
import { AgentConfig, NodeStart, Paths, Repave } from "@hostnode/core"
import type { MemoryHost } from "@hostnode/sim"
import { Effect, FileSystem } from "effect"

/** The node's units, in restart order (dependencies first), as the host-mode backend knows them. */
export const Units: ReadonlyArray<string> = AgentConfig.Defaults.units

/** The unit whose restart the first upgrade makes fail. */
export const FailingUnit = "kubelet.service"

/**
 * Where the upgrades keep their configuration snapshot (the agent configuration directory, as `Hooks.snapshotDir` puts it).
 */
export const SnapshotDir = `${AgentConfig.Defaults.configDir}/config-snapshot`

/** The kubelet's directory, and the pods in it. */
export const kubeletDir = Paths.Node.KubeletDir
export const podsDir = Repave.KubeletPaths.podsDir
export const webPod = `${podsDir}/6f1c2b7e-3d4a-4c1e-9b8f-0a1b2c3d4e5f`
export const dbPod = `${podsDir}/9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d`
const pvc = "pvc-3c1d5e7f"
/** Where the CSI driver keeps the volume's data (a local disk): the source of the bind mount into the pod. */
export const csiSource = `/mnt/disks/${pvc}`
export const csiTarget = `${dbPod}/volumes/kubernetes.io~csi/${pvc}/mount`
export const pki = Paths.Node.KubeletClientPkiDir
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
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=${NodeStart.Defaults.bootstrapKubeconfig} --kubeconfig=${Repave.KubeletPaths.kubeconfig}"
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

export const cniConf = JSON.stringify(
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
export const nodeFiles: MemoryHost.Fixture = {
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
  "/etc/systemd/resolved.conf.d/localdns.conf": `[Resolve]\nDNS=${NodeStart.Defaults.nodeListener}\nDomains=~.\n`,
  [`${AgentConfig.Defaults.configDir}/config.json`]: "{}\n",
  "/etc/cni/net.d/10-containerd-net.conflist": `${cniConf}\n`,
  "/var/lib/cni/networks/containerd-net/10.244.1.2": "4f9a0c1e2b3d\neth0",
  "/var/lib/cni/networks/containerd-net/10.244.1.3": "7b2e9d4c1a0f\neth0",
  "/var/lib/cni/networks/containerd-net/last_reserved_ip.0": "10.244.1.3",
  "/var/lib/cni/networks/containerd-net/lock": "",
  [`${kubeletDir}/config.yaml`]:
    "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\nrotateCertificates: true\nserverTLSBootstrap: true\n",
  [NodeStart.Defaults.bootstrapKubeconfig]:
    "apiVersion: v1\nkind: Config\nclusters:\n- name: default\n  cluster:\n    server: https://10.0.0.1:6443\nusers:\n- name: kubelet-bootstrap\n  user:\n    token: abcdef.0123456789abcdef\n",
  [Repave.KubeletPaths.kubeconfig]:
    `apiVersion: v1\nkind: Config\nusers:\n- name: default-auth\n  user:\n    client-certificate: ${pki}/kubelet-client-current.pem\n    client-key: ${pki}/kubelet-client-current.pem\n`,
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
export const atomicWriter = (dir: string, files: Readonly<Record<string, string>>) =>
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

export const serviceAccountToken = {
  token: "eyJhbGciOiJSUzI1NiJ9.demo.signature",
  "ca.crt": "-----BEGIN CERTIFICATE-----\n(cluster CA)\n-----END CERTIFICATE-----\n",
  namespace: "default"
}

/** The LocalDNS listeners and the kubelet's bootstrap-token authentication of the demo node. */
export const nodeStart: ReturnType<typeof NodeStart.decode> = NodeStart.decode({
  nodeName: "demo-node-0",
  apiServer: "https://10.0.0.1:6443",
  auth: { _tag: "BootstrapToken", token: "abcdef.0123456789abcdef" },
  localDns: { nodeListener: NodeStart.Defaults.nodeListener, clusterListener: NodeStart.Defaults.clusterListener }
})

/** A rule in the raw table that is not LocalDNS's (VXLAN traffic left untracked by an overlay), which a cleanup must leave. */
export const foreignRule = ["-A", "PREROUTING", "-p", "udp", "--dport", "4789", "-j", "NOTRACK"]

/**
 * The upgrade both upgrade steps write: containerd's configuration moves to
 * the version 3 schema, the kubelet gets another flag and a new drop-in.
 * Every path is inside `ConfSnap.DefaultPaths`, so the snapshot covers it.
 */
export const UpgradeFiles: Readonly<Record<string, string>> = {
  "/etc/containerd/config.toml": containerdConfigV3,
  "/etc/default/kubelet": kubeletDefaultsNew,
  "/etc/systemd/system/kubelet.service.d/20-hostnode-upgrade.conf": upgradeDropIn
}

/** Which unit reads a configuration path (the unit whose restart picks a change of it up). */
export const unitOf = (path: string): string | undefined =>
  path.startsWith("/etc/containerd/") || path.startsWith("/etc/systemd/system/containerd.service")
    ? "containerd.service"
    : path === "/etc/default/kubelet" ||
        path.startsWith("/etc/systemd/system/kubelet.service") ||
        path.startsWith("/etc/kubernetes/")
      ? "kubelet.service"
      : undefined
