/**
 * `MemoryNode.layer`: one simulated host whose command line reaches every
 * simulation (systemd, network, mounts) through `nsenter` as the real host's
 * does, with commands it has no interpreter for failing to spawn like a
 * missing executable.
 */
import { assert, describe, it } from "@effect/vitest"
import { HostCommand } from "@hostnode/core"
import { MemoryHost, MemoryNode } from "@hostnode/sim"
import { Effect, FileSystem } from "effect"

describe("MemoryNode", () => {
  it.effect("one command line for systemctl, ip, iptables, mount and umount, nsenter included", () =>
    Effect.gen(function* () {
      const nsenter = ["nsenter", "-t", "1", "-m", "-p", "-n", "--"]
      const run = (command: string, args: ReadonlyArray<string>) =>
        HostCommand.run(nsenter[0] as string, [...nsenter.slice(1), command, ...args])
      assert.strictEqual((yield* run("systemctl", ["is-active", "--", "kubelet.service"])).stdout, "inactive\n")
      const lo = JSON.parse((yield* run("ip", ["-j", "link", "show", "dev", "lo"])).stdout)
      assert.strictEqual(lo[0].ifname, "lo")
      assert.strictEqual(
        (yield* run("iptables", ["-w", "-t", "raw", "-S"])).stdout,
        "-P PREROUTING ACCEPT\n-P OUTPUT ACCEPT\n"
      )
      const fs = yield* FileSystem.FileSystem
      const host = yield* MemoryHost.MemoryHost
      yield* fs.makeDirectory("/mnt/x", { recursive: true })
      assert.strictEqual((yield* run("mount", ["-t", "tmpfs", "tmpfs", "/mnt/x"])).exitCode, 0)
      assert.isTrue((yield* host.mountTable).some((m) => m.mountPoint === "/mnt/x"))
      assert.strictEqual((yield* run("umount", ["-l", "--", "/mnt/x"])).exitCode, 0)
      assert.isFalse((yield* host.mountTable).some((m) => m.mountPoint === "/mnt/x"))
      const missing = yield* Effect.flip(run("dnsmasq", ["--version"]))
      assert.strictEqual(missing._tag, "CommandError")
      assert.deepStrictEqual(
        (yield* (yield* MemoryNode.MemoryNode).invocations).map((i) => i.command),
        ["systemctl", "ip", "iptables", "mount", "umount"]
      )
    }).pipe(Effect.provide(MemoryNode.layer()))
  )
})
