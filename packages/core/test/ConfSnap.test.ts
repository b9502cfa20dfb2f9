import { assert, describe, it } from "@effect/vitest"
import { ConfSnap } from "@hostnode/core"
import { Lexical } from "@hostnode/core/Programs"

const isBelow = (a: string, p: string) => p.startsWith(`${a}/`)

describe("ConfSnap", () => {
  it("every default path is a clean absolute host path, listed once, none below another", () => {
    for (const p of ConfSnap.DefaultPaths) {
      assert.strictEqual(Lexical.clean(p), p)
      assert.notStrictEqual(p, "/")
    }
    assert.strictEqual(new Set(ConfSnap.DefaultPaths).size, ConfSnap.DefaultPaths.length)
    for (const p of ConfSnap.DefaultPaths) {
      for (const q of ConfSnap.DefaultPaths) assert.isFalse(isBelow(q, p), `${p} is below ${q}`)
    }
  })

  it("holds the units and drop-ins of kubelet and containerd, their configuration, sysctl and resolved/networkd drop-ins", () => {
    for (const p of [
      "/etc/systemd/system/kubelet.service",
      "/etc/systemd/system/kubelet.service.d",
      "/etc/systemd/system/containerd.service",
      "/etc/systemd/system/containerd.service.d",
      "/etc/containerd",
      "/etc/default/kubelet",
      "/etc/kubernetes",
      "/etc/sysctl.d/k8s.conf",
      "/etc/systemd/resolved.conf.d",
      "/etc/systemd/network"
    ]) {
      assert.include(ConfSnap.DefaultPaths, p)
    }
  })

  it("excludes the Kubernetes PKI, which lies inside a default path", () => {
    assert.deepStrictEqual(ConfSnap.Exclude, ["/etc/kubernetes/pki"])
    for (const x of ConfSnap.Exclude) assert.isTrue(ConfSnap.DefaultPaths.some((p) => isBelow(p, x)))
  })

  it("pathsFor: nspawn is the default list; container and none add what their stacks write in place", () => {
    assert.deepStrictEqual(ConfSnap.pathsFor("nspawn"), ConfSnap.DefaultPaths)
    const container = ConfSnap.pathsFor("container")
    const none = ConfSnap.pathsFor("none")
    for (const p of ConfSnap.DefaultPaths) {
      assert.include(container, p)
      assert.include(none, p)
    }
    assert.include(container, "/etc/cni/net.d")
    for (const p of container) assert.include(none, p)
    assert.include(none, "/usr/local/bin/kubelet")
    assert.include(none, "/opt/cni/bin")
    for (const list of [container, none]) {
      assert.strictEqual(new Set(list).size, list.length)
      for (const p of list) for (const q of list) assert.isFalse(isBelow(q, p), `${p} is below ${q}`)
    }
  })
})
