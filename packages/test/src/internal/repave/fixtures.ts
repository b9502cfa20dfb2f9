/**
 * What the repave suites build their hosts from: node starts of each auth
 * mode, the kubelet pki, CNI and sentinel trees, a fresh sandbox with a host
 * root, the kubelet layout with its pod mounts, and a reset's outcome as a
 * value. Internal: `RepaveConformance` re-exports `nodeStarts`,
 * `KubeletLayout` and `buildKubeletLayout`.
 *
 * @since 0.3.0
 */
import { type HostPath, type MountInfo, NodeStart, type Repave, type SafeRemove } from "@hostnode/core"
import { Effect, FileSystem } from "effect"
import { MountFixture } from "../../MountFixture.ts"
import { type Plant, plant } from "./trees.ts"

export const nodeBase = { nodeName: "node-a", apiServer: "https://10.0.0.1:6443" }

/**
 * A node start with each auth mode.
 */
export const nodeStarts: Readonly<Record<NodeStart.NodeStart["auth"]["_tag"], Effect.Effect<NodeStart.NodeStart>>> = {
  BootstrapToken: Effect.orDie(
    NodeStart.decode({ ...nodeBase, auth: { _tag: "BootstrapToken", token: "abcdef.0123456789abcdef" } })
  ),
  Kubeconfig: Effect.orDie(
    NodeStart.decode({ ...nodeBase, auth: { _tag: "Kubeconfig", path: "/etc/kubernetes/kubelet.conf" } })
  ),
  ExecCredential: Effect.orDie(
    NodeStart.decode({ ...nodeBase, auth: { _tag: "ExecCredential", command: "/usr/bin/cred" } })
  )
}

export const kubeletPki = {
  "root/var/lib/kubelet/pki/kubelet-client-2024-01-01-00-00-00.pem": "client cert 1",
  "root/var/lib/kubelet/pki/kubelet-client-2024-06-01-00-00-00.pem": "client cert 2",
  "root/var/lib/kubelet/pki/kubelet-client-current.pem": {
    link: "/var/lib/kubelet/pki/kubelet-client-2024-06-01-00-00-00.pem"
  },
  "root/var/lib/kubelet/pki/kubelet-client.key.tmp": "pending key",
  "root/var/lib/kubelet/pki/kubelet.crt": "serving cert",
  "root/var/lib/kubelet/pki/kubelet.key": "serving key",
  "root/var/lib/kubelet/pki/kubelet-server-2024-01-01-00-00-00.pem": "rotated serving cert",
  "root/var/lib/kubelet/pki/kubelet-server-current.pem": {
    link: "/var/lib/kubelet/pki/kubelet-server-2024-01-01-00-00-00.pem"
  },
  "root/var/lib/kubelet/kubeconfig": "current kubeconfig",
  "root/var/lib/kubelet/bootstrap-kubeconfig": "bootstrap kubeconfig",
  "root/var/lib/kubelet/config.yaml": "kubelet config",
  "root/etc/kubernetes/pki/ca.crt": "cluster CA"
} satisfies Record<string, Plant>

/** The client credentials and kubeconfig of {@link kubeletPki}: exactly what the identity reset removes. */
export const identityFiles = [
  "root/var/lib/kubelet/pki/kubelet-client-2024-01-01-00-00-00.pem",
  "root/var/lib/kubelet/pki/kubelet-client-2024-06-01-00-00-00.pem",
  "root/var/lib/kubelet/pki/kubelet-client-current.pem",
  "root/var/lib/kubelet/pki/kubelet-client.key.tmp",
  "root/var/lib/kubelet/kubeconfig"
]

export const cniTree = {
  "root/etc/cni/net.d/10-calico.conflist": '{"cniVersion":"1.0.0","name":"k8s-pod-network"}',
  "root/etc/cni/net.d/99-loopback.conf": '{"type":"loopback"}',
  "root/etc/cni/net.d/multus.d/multus.kubeconfig": "multus",
  "root/var/lib/cni/networks/k8s-pod-network/10.244.1.7": "container-id\neth0",
  "root/var/lib/cni/networks/k8s-pod-network/last_reserved_ip.0": "10.244.1.7",
  "root/var/lib/cni/networks/k8s-pod-network/lock": "",
  "root/var/lib/cni/results/k8s-pod-network-abc-eth0": "{}",
  "root/opt/cni/bin/bridge": "binary"
} satisfies Record<string, Plant>

export const sentinel = {
  "outside/sentinel": "must survive",
  "outside/kubelet-client-current.pem": "someone else's certificate",
  "outside/kubeconfig": "someone else's kubeconfig",
  "outside/10-evil.conf": "not ours",
  "outside/cni/networks/x/10.0.0.1": "not ours",
  "outside/pki/kubelet-client-current.pem": "not ours",
  "outside/pki/kubelet-client-2024-01-01-00-00-00.pem": "not ours",
  "outside/netd/10-evil.conf": "not ours",
  "outside/kubelet/pki/kubelet-client-current.pem": "not ours",
  "root/outside/file": "outside the targets, inside the root"
} satisfies Record<string, Plant>

/** A fresh sandbox, canonical, with `root/` as the host root and `outside/` beside it. */
export const makeSandbox = Effect.gen(function* () {
  const fx = yield* MountFixture
  const fs = yield* FileSystem.FileSystem
  const sandbox = yield* fs.realPath(yield* fx.sandbox).pipe(Effect.orDie)
  return { sandbox, root: `${sandbox}/root`, outside: `${sandbox}/outside`, mountInfo: fx.mountInfo }
})

export type Outcome =
  | { readonly _tag: "Report"; readonly report: SafeRemove.Report }
  | { readonly _tag: "ResetError"; readonly error: Repave.ResetError }

export const outcome = <R>(
  effect: Effect.Effect<SafeRemove.Report, Repave.ResetError | HostPath.HostPathError | MountInfo.MountInfoError, R>
): Effect.Effect<Outcome, HostPath.HostPathError | MountInfo.MountInfoError, R> =>
  effect.pipe(
    Effect.map((report): Outcome => ({ _tag: "Report", report })),
    Effect.catchTag("ResetError", (error) => Effect.succeed<Outcome>({ _tag: "ResetError", error }))
  )

export const keptOf = (o: Outcome): ReadonlyArray<SafeRemove.Kept> =>
  o._tag === "Report" ? o.report.kept : o.error.kept
export const removedOf = (o: Outcome): ReadonlyArray<string> =>
  o._tag === "Report" ? o.report.removed : o.error.removed

/**
 * The paths of the kubelet layout built by {@link buildKubeletLayout}.
 */
export interface KubeletLayout {
  readonly sandbox: string
  readonly root: string
  readonly mountInfo: string
  readonly kubelet: string
  readonly pods: { readonly a: string; readonly b: string; readonly c: string; readonly d: string }
  readonly csiData: string
  readonly csiMount: string
  readonly secretB: string
  readonly nestedD: string
}

/**
 * Below a fresh sandbox, a host root whose kubelet directory has four pods:
 * `a` with a tmpfs secret and a projected volume (atomic-writer symlinks
 * inside), `b` with a CSI bind mount whose source `csi-data/` lies outside the
 * kubelet directory and a tmpfs secret, `c` with no mounts but symlinks to
 * `/`, outside and upwards, `d` with a tmpfs inside a tmpfs.
 */
export const buildKubeletLayout = Effect.gen(function* () {
  const fx = yield* MountFixture
  const fs = yield* FileSystem.FileSystem
  const s = yield* makeSandbox
  const kubelet = `${s.root}/var/lib/kubelet`
  const pods = {
    a: `${kubelet}/pods/aaaaaaaa-1111`,
    b: `${kubelet}/pods/bbbbbbbb-2222`,
    c: `${kubelet}/pods/cccccccc-3333`,
    d: `${kubelet}/pods/dddddddd-4444`
  }
  const mkdir = (p: string) => Effect.orDie(fs.makeDirectory(p, { recursive: true }))
  yield* plant(s.sandbox, {
    ...kubeletPki,
    ...sentinel,
    "root/var/lib/kubelet/plugins/kubernetes.io/csi/driver.example/abc/globalmount/keep": "plugin data",
    "csi-data/db": "precious",
    "csi-data/sub/deep/file": "precious too"
  })
  // pod a: a tmpfs secret and a projected volume written the kubelet's atomic way
  const secretA = `${pods.a}/volumes/kubernetes.io~secret/default-token`
  yield* mkdir(secretA)
  yield* fx.tmpfs(secretA)
  const projected = `${pods.a}/volumes/kubernetes.io~projected/kube-api-access-x1`
  yield* mkdir(projected)
  yield* fx.tmpfs(projected)
  yield* plant(pods.a, {
    "volumes/kubernetes.io~secret/default-token/token": "s3cr3t",
    "volumes/kubernetes.io~projected/kube-api-access-x1/..2024_01_01_00_00_00.1/token": "projected token",
    "volumes/kubernetes.io~projected/kube-api-access-x1/..data": { link: "..2024_01_01_00_00_00.1" },
    "volumes/kubernetes.io~projected/kube-api-access-x1/token": { link: "..data/token" },
    "volumes/kubernetes.io~empty-dir/cache/blob": "empty dir content",
    "etc-hosts": "127.0.0.1 localhost",
    "containers/app/0": ""
  })
  // pod b: the CSI bind mount, and a secret
  const csiMount = `${pods.b}/volumes/kubernetes.io~csi/pvc-1/mount`
  yield* mkdir(csiMount)
  yield* fx.bind(`${s.sandbox}/csi-data`, csiMount)
  const secretB = `${pods.b}/volumes/kubernetes.io~secret/s`
  yield* mkdir(secretB)
  yield* fx.tmpfs(secretB)
  yield* plant(pods.b, {
    "volumes/kubernetes.io~csi/pvc-1/vol_data.json": "{}",
    "volumes/kubernetes.io~secret/s/password": "hunter2",
    "etc-hosts": "127.0.0.1 localhost"
  })
  // pod c: no mounts, links that must never be followed
  yield* plant(pods.c, {
    "etc-hosts": "127.0.0.1 localhost",
    "volumes/kubernetes.io~empty-dir/data/to-root": { link: "/" },
    "volumes/kubernetes.io~empty-dir/data/to-outside": { link: `${s.outside}` },
    "volumes/kubernetes.io~empty-dir/data/upwards": { link: "../../../../../../../../../../outside" }
  })
  // pod d: a tmpfs inside a tmpfs
  const nestedD = `${pods.d}/volumes/v1/v2`
  yield* mkdir(`${pods.d}/volumes/v1`)
  yield* fx.tmpfs(`${pods.d}/volumes/v1`)
  yield* mkdir(nestedD)
  yield* fx.tmpfs(nestedD)
  yield* plant(pods.d, { "volumes/v1/a": "outer", "volumes/v1/v2/b": "inner", beside: "plain file" })
  return {
    ...s,
    kubelet,
    pods,
    csiData: `${s.sandbox}/csi-data`,
    csiMount,
    secretB,
    nestedD
  } satisfies KubeletLayout
})
