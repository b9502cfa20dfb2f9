/**
 * A long-lived `sh` that runs commands one after another, as a
 * `ChildProcessSpawner`: a command then costs a fork and exec inside the
 * shell instead of a process spawned from Node (7–12 ms each, measured), which
 * is what a loop of short commands such as `systemctl restart` pays for.
 *
 * - Only plain argv commands without options go through the shell; the rest
 *   go to the spawner in context, which also starts the shell (one wrapped
 *   with `nsenter` gives a session inside another machine).
 * - Commands run one at a time, stdin `/dev/null`, output read as UTF-8. A
 *   shell that exits or a command abandoned midway ends the session; the next
 *   command starts a new shell.
 *
 * @since 0.3.0
 */
import { Layer } from "effect"
import { ChildProcessSpawner } from "effect/process"
import { make } from "./internal/shellSession.ts"

/**
 * The session spawner as a layer over the spawner in context; the shell is
 * ended with the layer's scope. `NodeSystemd.layer({ session: true })` runs
 * `systemctl` through it.
 *
 * @category layers
 * @since 0.3.0
 */
export const layer: Layer.Layer<
  ChildProcessSpawner.ChildProcessSpawner,
  never,
  ChildProcessSpawner.ChildProcessSpawner
> = Layer.effect(ChildProcessSpawner.ChildProcessSpawner, make)
