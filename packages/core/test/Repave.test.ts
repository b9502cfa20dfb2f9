import { assert, describe, it } from "@effect/vitest"
import { Repave } from "@hostnode/core"

describe("Repave", () => {
  it("isClientCredential: the rotated client pairs, the current and updated links, the pending key; nothing else", () => {
    for (const name of [
      "kubelet-client-2024-01-01-00-00-00.pem",
      "kubelet-client-current.pem",
      "kubelet-client-updated.pem",
      "kubelet-client.key.tmp"
    ]) {
      assert.isTrue(Repave.isClientCredential(name), name)
    }
    for (const name of [
      "kubelet.crt",
      "kubelet.key",
      "kubelet-server-2024-01-01-00-00-00.pem",
      "kubelet-server-current.pem",
      "kubelet-client-.pem",
      "kubelet-client.crt",
      "kubelet-client.key",
      "ca.crt",
      "bootstrap-kubeconfig",
      "xkubelet-client-current.pem",
      "kubelet-client-current.pem.bak"
    ]) {
      assert.isFalse(Repave.isClientCredential(name), name)
    }
  })

  it("ResetError names the operation, what was kept and why, and how much was removed", () => {
    const e = new Repave.ResetError({
      operation: "resetCniState",
      reason: "MountBelow",
      kept: [
        {
          path: "/r/etc/cni/net.d/x",
          reason: "MountBelow",
          mountPoint: "/r/etc/cni/net.d/x",
          detail: "a mount at or below it: tmpfs"
        }
      ],
      removed: ["/r/var/lib/cni"]
    })
    assert.include(e.message, "resetCniState")
    assert.include(e.message, "/r/etc/cni/net.d/x")
    assert.include(e.message, "MountBelow")
    assert.include(e.message, "1 removed, 1 kept")
  })
})
