/**
 * The `hostnode` executable as a process: the exit codes `runMain` gives
 * (0, 1, 2), and progress drawn only when stdout and stderr are terminals
 * (`script` gives the run a pseudo-terminal). Everything runs on a temporary
 * host root.
 */
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { HostCommand } from "@hostnode/core"
import { Gate } from "@hostnode/test"
import { Effect, FileSystem } from "effect"

const bin = fileURLToPath(new URL("../src/bin.ts", import.meta.url))
const node = [process.execPath, "--conditions=@hostnode/source", bin]

const gate = Gate.check("the hostnode executable under a pseudo-terminal", [{ command: "script", args: ["--version"] }])

/** A host root with 30 configuration files, and a snapshot directory beside it. */
const sandbox = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-bin-" })
  for (let i = 0; i < 30; i++) {
    yield* fs.makeDirectory(`${dir}/root/etc/containerd/d${i}`, { recursive: true })
    yield* fs.writeFileString(`${dir}/root/etc/containerd/d${i}/config.toml`, `version = ${i}\n`)
  }
  return { root: `${dir}/root`, snap: `${dir}/snap` }
})

const hostnode = (args: ReadonlyArray<string>) => HostCommand.run(node[0] ?? "node", [...node.slice(1), ...args])

describe.skipIf(gate.skip)("the hostnode executable", () => {
  it.live("exit codes: 0 on success, 1 when the operation fails, 2 on bad usage", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { root, snap } = yield* sandbox
        const ok = yield* hostnode([
          "--host-root",
          root,
          "snapshot",
          "take",
          "--dir",
          snap,
          "--path",
          "/etc/containerd"
        ])
        assert.strictEqual(ok.exitCode, 0, ok.stderr)
        const failed = yield* hostnode(["--host-root", root, "snapshot", "restore", "--dir", `${snap}-missing`])
        assert.strictEqual(failed.exitCode, 1)
        assert.include(failed.stderr, "what to check")
        const usage = yield* hostnode(["snapshot", "take", "--bogus"])
        assert.strictEqual(usage.exitCode, 2)
      })
    ).pipe(Effect.provide(NodeServices.layer))
  )

  it.live("progress is drawn on a terminal, and never when the output is a pipe or JSON", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { root, snap } = yield* sandbox
        const take = (dir: string, extra: ReadonlyArray<string> = []) => [
          ...extra,
          "--host-root",
          root,
          "snapshot",
          "take",
          "--dir",
          dir,
          "--path",
          "/etc/containerd"
        ]
        const quote = (w: string) => `'${w.replaceAll("'", `'\\''`)}'`
        const onTerminal = (args: ReadonlyArray<string>) =>
          HostCommand.run("script", ["-qec", [...node, ...args].map(quote).join(" "), "/dev/null"])
        const redraw = "\r\x1b[2K"

        const piped = yield* hostnode(take(`${snap}-piped`))
        assert.strictEqual(piped.exitCode, 0, piped.stderr)
        assert.notInclude(piped.stderr + piped.stdout, redraw)

        const terminal = yield* onTerminal(take(`${snap}-tty`))
        assert.strictEqual(terminal.exitCode, 0, terminal.stdout)
        assert.match(terminal.stdout.split(redraw)[1] ?? "", /^hostnode snapshot take: \d+ files/)

        const json = yield* onTerminal(take(`${snap}-json`, ["--json"]))
        assert.strictEqual(json.exitCode, 0, json.stdout)
        assert.notInclude(json.stdout, redraw)
      })
    ).pipe(Effect.provide(NodeServices.layer))
  )
})
