/**
 * A node agent's upgrade step under a snapshot of the node's shared
 * configuration: the new kubelet flags are written, then the kubelet is
 * restarted, after a daemon-reload: a running unit keeps the definition
 * systemd loaded, so without one the restart would ignore the new drop-in.
 * If anything fails, `Snapshot.guarded` puts every saved path back
 * (and has systemd read the restored unit files), and the step's own error is
 * the failure; if the rollback fails too, the one failure is a
 * `Snapshot.SnapshotError` whose reason is `RollbackFailed`, carrying both.
 * If the step succeeds, the saved copy is discarded.
 */
import type { Directory, HostPath, Systemd, UnitName } from "@hostnode/core"
import { RestartChanged, Snapshot } from "@hostnode/core"
import { Effect, FileSystem, type PlatformError } from "effect"

export const SnapshotDir = "/var/lib/hostnode/snapshots/upgrade"

export const upgrade: (
  kubeletFlags: string
) => Effect.Effect<
  void,
  | Snapshot.SnapshotError
  | HostPath.HostPathError
  | PlatformError.PlatformError
  | RestartChanged.RestartError
  | UnitName.UnitNameError,
  FileSystem.FileSystem | Directory.Directories | Systemd.Systemd
> = Effect.fn("upgrade")(function* (kubeletFlags: string) {
  const step = Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    yield* fs.writeFileString(
      "/etc/systemd/system/kubelet.service.d/20-upgrade.conf",
      "[Service]\nEnvironment=UPGRADED=1\n"
    )
    yield* fs.writeFileString("/etc/default/kubelet", `KUBELET_EXTRA_ARGS=${kubeletFlags}\n`)
    // One daemon-reload, then the restart: systemd reads the new drop-in only at a reload.
    yield* RestartChanged.restartChanged({
      wasRunning: true,
      units: [{ unit: "kubelet.service", changed: true }],
      reload: "always"
    })
  })
  yield* Snapshot.guarded(step, { dir: SnapshotDir })
})
