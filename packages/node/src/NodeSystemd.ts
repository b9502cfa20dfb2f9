/**
 * The real `Systemd`: `systemctl` run through the spawner (see
 * `Systemd.makeCommand` in @hostnode/core for how calls and errors work).
 * `layer` drives this host's systemd; `layerIn(pid)` drives the systemd of
 * another machine (a container, a test machine) through `nsenter`. The
 * `Session` variants run every `systemctl` in one long-lived shell
 * (`ShellSession` in @hostnode/core) instead of a process spawned per call,
 * for loops of many short calls such as restarting a node's units.
 *
 * @since 0.1.0
 */
import { NodeServices } from "@effect/platform-node"
import { HostCommand, ShellSession, Systemd } from "@hostnode/core"
import { Layer } from "effect"

/** This host's systemd. */
export const layer = (options?: Systemd.CommandOptions): Layer.Layer<Systemd.Systemd> =>
  Systemd.layerCommand(options).pipe(Layer.provide(NodeServices.layer))

/** The systemd whose PID 1 is host process `pid`, reached with `nsenter -t pid -m -p`. */
export const layerIn = (pid: number, options?: Systemd.CommandOptions): Layer.Layer<Systemd.Systemd> =>
  Systemd.layerCommand(options).pipe(Layer.provide(HostCommand.layerNsenter(pid)), Layer.provide(NodeServices.layer))

/**
 * This host's systemd, every `systemctl` run by one shell kept for the
 * layer's lifetime: a call costs a fork and exec instead of a Node spawn.
 */
export const layerSession = (options?: Systemd.CommandOptions): Layer.Layer<Systemd.Systemd> =>
  Systemd.layerCommand(options).pipe(Layer.provide(ShellSession.layer), Layer.provide(NodeServices.layer))

/**
 * The systemd whose PID 1 is host process `pid`, every `systemctl` run by
 * one shell entered once with `nsenter -t pid -m -p` and kept for the
 * layer's lifetime.
 */
export const layerSessionIn = (pid: number, options?: Systemd.CommandOptions): Layer.Layer<Systemd.Systemd> =>
  Systemd.layerCommand(options).pipe(
    Layer.provide(ShellSession.layer),
    Layer.provide(HostCommand.layerNsenter(pid)),
    Layer.provide(NodeServices.layer)
  )
