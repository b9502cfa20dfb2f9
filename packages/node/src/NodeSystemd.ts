/**
 * The real `Systemd`: `systemctl` run through the spawner (see
 * `Systemd.makeCommand` in @hostnode/core for how calls and errors work).
 * `layer` drives this host's systemd; `layerIn(pid)` drives the systemd of
 * another machine (a container, a test machine) through `nsenter`.
 *
 * @since 0.1.0
 */
import { NodeServices } from "@effect/platform-node"
import { HostCommand, Systemd } from "@hostnode/core"
import { Layer } from "effect"

/** This host's systemd. */
export const layer = (options?: Systemd.CommandOptions): Layer.Layer<Systemd.Systemd> =>
  Systemd.layerCommand(options).pipe(Layer.provide(NodeServices.layer))

/** The systemd whose PID 1 is host process `pid`, reached with `nsenter -t pid -m -p`. */
export const layerIn = (pid: number, options?: Systemd.CommandOptions): Layer.Layer<Systemd.Systemd> =>
  Systemd.layerCommand(options).pipe(Layer.provide(HostCommand.layerNsenter(pid)), Layer.provide(NodeServices.layer))
