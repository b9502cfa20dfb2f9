/** The unit files of the Systemd suite and the observers of its two hosts (a `SystemdMachine`, the simulated systemd). */

import { MemorySystemd } from "@hostnode/sim"
import { Effect, FileSystem } from "effect"
import type { Observers } from "../SystemdConformance.ts"
import { SystemdMachine } from "../SystemdMachine.ts"

/**
 * Unit file texts the suite uses. The simulated host understands these ExecStart lines.
 */
export const Units = {
  sleeper: (description = "sleeper") =>
    `[Unit]\nDescription=${description}\n\n[Service]\nExecStart=/bin/sleep infinity\n`,
  failingOneshot: "[Unit]\nDescription=fails\n\n[Service]\nType=oneshot\nExecStart=/bin/false\n",
  /** A `Type=simple` unit whose program exits 3 right after it was started. */
  diesAtOnce: '[Unit]\nDescription=dies at once\n\n[Service]\nType=simple\nExecStart=/bin/sh -c "exit 3"\n',
  /**
   * A sleeper whose environment has `HN_FLAG=<flag>`: what a restart ran is in
   * its main process's environment. `Type=exec`: its start job ends once the
   * program was executed (a `Type=simple` job ends at the fork, when the
   * child still has the manager's environment).
   */
  withFlag: (flag: string) =>
    `[Unit]\nDescription=flag ${flag}\n\n[Service]\nType=exec\nEnvironment=HN_FLAG=${flag}\nExecStart=/bin/sleep infinity\n`
} as const

// A generator systemd runs at every daemon-reload (and nothing else), appending a line to a file of its /run.
const reloadCounter = "/etc/systemd/system-generators/hostnode-count-reloads"
const reloadCount = "/run/hostnode-daemon-reloads"

/**
 * The {@link Observers} of a `SystemdMachine`: a process's environment read
 * from the machine's `/proc`, and the reloads counted by a generator the
 * first reading installs in the machine (systemd runs every generator once
 * per daemon-reload; a reading before it ran is 0).
 */
export const machineObservers: Observers<SystemdMachine | FileSystem.FileSystem> = {
  environmentOf: (pid) =>
    Effect.gen(function* () {
      const m = yield* SystemdMachine
      const fs = yield* FileSystem.FileSystem
      const bytes = yield* fs.readFile(`${m.hostRoot}/proc/${pid}/environ`).pipe(Effect.orDie)
      return new TextDecoder()
        .decode(bytes)
        .split("\0")
        .filter((e) => e !== "")
    }),
  daemonReloads: Effect.gen(function* () {
    const m = yield* SystemdMachine
    const fs = yield* FileSystem.FileSystem
    const generator = `${m.hostRoot}${reloadCounter}`
    if (!(yield* fs.exists(generator).pipe(Effect.orDie))) {
      yield* fs.makeDirectory(`${m.hostRoot}/etc/systemd/system-generators`, { recursive: true }).pipe(Effect.orDie)
      yield* fs.writeFileString(generator, `#!/bin/sh\necho reload >> ${reloadCount}\n`).pipe(Effect.orDie)
      yield* fs.chmod(generator, 0o755).pipe(Effect.orDie)
    }
    const text = yield* fs.readFileString(`${m.hostRoot}${reloadCount}`).pipe(Effect.orElseSucceed(() => ""))
    return text.split("\n").filter((l) => l !== "").length
  })
}

/**
 * The {@link Observers} of the simulated systemd (`MemoryNode`): the
 * environment its main processes were started with, and its reload counter.
 */
export const memoryObservers: Observers<MemorySystemd.MemorySystemd> = {
  environmentOf: (pid) =>
    Effect.map(
      Effect.flatMap(Effect.service(MemorySystemd.MemorySystemd), (s) => s.processEnvironment(pid)),
      (env) => env ?? []
    ),
  daemonReloads: Effect.flatMap(Effect.service(MemorySystemd.MemorySystemd), (s) => s.daemonReloads)
}
