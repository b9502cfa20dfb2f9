/**
 * The `hostnode` executable as a process: the exit codes `runMain` gives
 * (0, 1, 2), bad input refused with one line on stderr (or one JSON document
 * with `--json`), a relative `--host-root` taken from the working directory,
 * and progress drawn only when stdout and stderr are terminals (`script`
 * gives the run a pseudo-terminal). Everything runs on a temporary host root;
 * nothing here may reach this machine's own configuration or systemd (the
 * bad inputs are refused before any command would run).
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

  it.live("a relative --host-root is taken from the working directory, and the root used is said on stderr", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const { root } = yield* sandbox
        yield* fs.makeDirectory(`${root}/etc/cni/net.d`, { recursive: true })
        yield* fs.writeFileString(`${root}/etc/cni/net.d/10-bridge.conflist`, "{}")
        const parent = root.slice(0, root.lastIndexOf("/"))
        const quote = (w: string) => `'${w.replaceAll("'", `'\\''`)}'`
        const inDir = (dir: string, args: ReadonlyArray<string>) =>
          HostCommand.run("sh", ["-c", `cd ${quote(dir)} && exec ${[...node, ...args].map(quote).join(" ")}`])
        for (const [dir, given] of [
          [parent, "root"],
          [root, "."],
          [`${root}/etc`, ".."]
        ] as const) {
          yield* fs.writeFileString(`${root}/etc/cni/net.d/10-bridge.conflist`, "{}")
          const out = yield* inDir(dir, ["--host-root", given, "reset-cni"])
          assert.strictEqual(out.exitCode, 0, out.stderr)
          assert.include(out.stderr, `--host-root ${JSON.stringify(given)} is taken as ${root}`)
          assert.include(out.stdout, `${root}/etc/cni/net.d/10-bridge.conflist`)
          assert.isFalse(yield* fs.exists(`${root}/etc/cni/net.d/10-bridge.conflist`))
        }
      })
    ).pipe(Effect.provide(NodeServices.layer))
  )

  it.live(
    "bad input exits 2 with one line on stderr, no help text; with --json exactly one document",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { root } = yield* sandbox
          const cases: ReadonlyArray<ReadonlyArray<string>> = [
            ["unmount-below"],
            ["reset-cni", "--bogus"],
            ["--host-root", `${root}/nope`, "reset-cni"],
            ["--host-root", `${root}/etc/containerd/d0/config.toml`, "teardown-kubelet-dir"],
            ["--host-root", root, "unmount-below", ""],
            ["--host-root", root, "unmount-below", "/var/.."],
            ["--host-root", root, "unmount-below", "relative/../.."],
            ["restart-changed", "kubelet.service", "a;rm -rf /.service"],
            ["localdns", "await", "--node-listener", "999.1.1.1"],
            ["localdns", "await", "--timeout", "-5"],
            ["localdns", "setup", "--node-listener", "169.254.010.10"]
          ]
          // Every case as text; a few also with --json (the in-process tests cover the rest).
          const asJson = new Set([0, 2, 4, 8])
          for (const [i, args] of cases.entries()) {
            const text = yield* hostnode(args)
            const what = args.join(" ")
            assert.strictEqual(text.exitCode, 2, `${what}: ${text.stderr}`)
            assert.strictEqual(text.stdout, "", `${what}: nothing on stdout`)
            const lines = text.stderr.split("\n").filter((l) => l !== "")
            assert.strictEqual(lines.length, 1, `${what}: one line, got ${JSON.stringify(lines)}`)
            if (!asJson.has(i)) continue
            const json = yield* hostnode(["--json", ...args])
            assert.strictEqual(json.exitCode, 2, what)
            const docs = json.stdout.split("\n").filter((l) => l !== "")
            assert.strictEqual(docs.length, 1, `${what}: ${json.stdout}`)
            const doc = JSON.parse(docs[0] ?? "")
            assert.strictEqual(doc.ok, false)
            assert.isString(doc.error._tag)
            assert.isString(doc.error.message)
          }
        })
      ).pipe(Effect.provide(NodeServices.layer)),
    { timeout: 120_000 }
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
