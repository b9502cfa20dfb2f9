/**
 * The `hostnode` executable as it ships: one ESM bundle (scripts/bundle-cli.mjs)
 * whose entry answers `--version`, `--help` and a usage error without loading
 * any of the work behind the commands. The bundle is built from the sources
 * into a scratch directory below the workspace (so it resolves koffi and
 * @hostnode/node as an installed one does), and each run records every module
 * Node loads (a `module.registerHooks` load hook given with `--import`):
 * - for `--version`, `--help`, `help SUBCOMMAND`, a usage error and the bare
 *   command, no loaded file holds code of @hostnode/node, @hostnode/core,
 *   @hostnode/sim, @hostnode/test or @effect/platform-node (the bundle's chunks are mapped
 *   to their inputs through esbuild's metafile), koffi is not loaded, and the
 *   entry's static imports hold none of them either;
 * - a command that works on the host does load them (the control: the
 *   recorder and the mapping see what they are meant to see);
 * - the bundle prints what the source prints, with the same exit code;
 * - the source executable (`src/bin.ts`) loads none of those packages'
 *   files for the same arguments;
 * - @hostnode/node's code in the bundle names files by their place in the
 *   @hostnode/node package, not by the chunk's.
 */
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { HostCommand, NodeStart, Paths, Repave } from "@hostnode/core"
import { Effect, FileSystem } from "effect"

const workspace = fileURLToPath(new URL("../../..", import.meta.url))
const sourceBin = fileURLToPath(new URL("../src/bin.ts", import.meta.url))

/** What no answer that needs no command may load: the real host's packages and the library. */
const heavy = /\/packages\/(node|core|sim|test)\/|@hostnode\/(node|core|sim|test)\/|@effect\/platform-node|\/koffi\//

/** Records every module URL Node loads into the file named by HOSTNODE_LOADED, at exit. */
const recorder = `import { writeFileSync } from "node:fs"
import { registerHooks } from "node:module"
const loaded = []
registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context) } })
process.on("exit", () => writeFileSync(process.env.HOSTNODE_LOADED, loaded.join("\\n")))
`

interface Metafile {
  readonly outputs: Record<
    string,
    {
      readonly inputs: Record<string, unknown>
      readonly imports: ReadonlyArray<{ readonly path: string; readonly kind: string; readonly external?: boolean }>
    }
  >
}

/** The bundle, built from the sources into a scratch directory below the workspace; removed with the scope. */
const bundle = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  yield* fs.makeDirectory(`${workspace}.tsbuild`, { recursive: true })
  const dir = yield* fs.makeTempDirectoryScoped({ directory: `${workspace}.tsbuild`, prefix: "bundle-test-" })
  const built = yield* HostCommand.run(process.execPath, [
    `${workspace}scripts/bundle-cli.mjs`,
    "--from",
    "source",
    "--outdir",
    `${dir}/out`
  ])
  assert.strictEqual(built.exitCode, 0, built.stderr)
  yield* fs.writeFileString(`${dir}/record.mjs`, recorder)
  const meta: Metafile = JSON.parse(yield* fs.readFileString(`${dir}/out/meta.json`))
  /** The bundle's inputs (source files) in the output file at `url`, keyed as the metafile keys outputs. */
  const inputsOf = (url: string): ReadonlyArray<string> =>
    Object.keys(meta.outputs[fileURLToPath(url).slice(workspace.length)]?.inputs ?? {}).map((i) => `/${i}`)
  let runs = 0
  /** Runs `node [flags] script args` with the recorder; what it printed, its exit code, and every file it loaded. */
  const run = (flags: ReadonlyArray<string>, script: string, args: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      const loaded = `${dir}/loaded-${runs++}`
      const out = yield* HostCommand.run("env", [
        `HOSTNODE_LOADED=${loaded}`,
        process.execPath,
        "--import",
        `${dir}/record.mjs`,
        ...flags,
        script,
        ...args
      ])
      const urls = (yield* fs.readFileString(loaded)).split("\n").filter((u) => u !== "")
      // A chunk of the bundle stands for the source files in it; any other file for itself.
      const files = urls.flatMap((u) => (u.startsWith(`file://${dir}/out/`) ? inputsOf(u) : [u]))
      return { ...out, files }
    })
  return { dir, meta, run }
})

/** Answers that need no command: each must load none of the work behind the commands. */
const answers: ReadonlyArray<ReadonlyArray<string>> = [
  ["--version"],
  ["--help"],
  ["-h"],
  ["help", "snapshot", "restore"],
  ["unmount-below", "--help"],
  ["--json", "--version"],
  ["--json", "--help"],
  [],
  ["reset-cnii"],
  ["unmount-below", "--bogus"],
  ["--json", "restart-changed"]
]

describe("the bundled hostnode executable", () => {
  it.live(
    "--version, --help and a usage error load no platform layer, no FFI and nothing of @hostnode/*; a command does",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const { dir, meta, run } = yield* bundle
          const entry = `${dir}/out/bin.js`

          // The entry's static imports, followed: the part of the bundle every start loads.
          const staticClosure = new Set<string>()
          const pending = [`${dir.slice(workspace.length)}/out/bin.js`]
          for (let key = pending.pop(); key !== undefined; key = pending.pop()) {
            if (staticClosure.has(key)) continue
            staticClosure.add(key)
            for (const i of meta.outputs[key]?.imports ?? []) {
              if (i.kind === "import-statement") {
                assert.isFalse(i.external === true && heavy.test(`/${i.path}/`), `the entry imports ${i.path}`)
                if (i.external !== true) pending.push(i.path)
              }
            }
          }
          const startInputs = [...staticClosure].flatMap((k) =>
            Object.keys(meta.outputs[k]?.inputs ?? {}).map((i) => `/${i}`)
          )
          assert.isAbove(startInputs.length, 10)
          assert.deepStrictEqual(
            startInputs.filter((i) => heavy.test(i)),
            [],
            "the entry's static chunks hold code of the work behind the commands"
          )

          for (const args of answers) {
            const what = `hostnode ${args.join(" ")}`
            const bundled = yield* run([], entry, args)
            assert.deepStrictEqual(
              bundled.files.filter((f) => heavy.test(f)),
              [],
              `${what} loaded the work behind the commands`
            )
            const source = yield* run(["--conditions=@hostnode/source"], sourceBin, args)
            assert.deepStrictEqual(
              source.files.filter((f) => heavy.test(f)),
              [],
              `${what} (from source) loaded the work behind the commands`
            )
            assert.strictEqual(bundled.exitCode, source.exitCode, what)
            assert.strictEqual(bundled.stdout, source.stdout, what)
            assert.strictEqual(bundled.stderr, source.stderr, what)
          }

          // The control: a command on the host (a dry run below an empty root) loads the host's layers and the FFI.
          const root = `${dir}/root`
          yield* fs.makeDirectory(root)
          const command = yield* run([], entry, ["--host-root", root, "--dry-run", "reset-cni"])
          assert.strictEqual(command.exitCode, 0, command.stderr)
          assert.include(command.stdout, "dry run: nothing would be changed")
          assert.isTrue(
            command.files.some((f) => /packages\/node\/src\/NodeHost\.ts$/.test(f)),
            "reset-cni runs on NodeHost.layer"
          )
          assert.isTrue(
            command.files.some((f) => /@effect\/platform-node\//.test(f)),
            "and the platform layer"
          )
          assert.isTrue(
            command.files.some((f) => f.includes("/koffi/")),
            "and the FFI"
          )
        })
      ).pipe(Effect.provide(NodeServices.layer)),
    { timeout: 120_000 }
  )

  it.live("@hostnode/node's code in the bundle names files by their place in the @hostnode/node package", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const { meta } = yield* bundle
        let rewritten = 0
        for (const [output, { inputs }] of Object.entries(meta.outputs)) {
          const code = yield* fs.readFileString(`${workspace}${output}`)
          for (const input of Object.keys(inputs)) {
            const inside = /packages\/node\/(src\/.*)$/.exec(input)?.[1]
            if (inside === undefined) continue
            const source = yield* fs.readFileString(`${workspace}packages/node/${inside}`)
            if (!source.includes("import.meta.url")) continue
            assert.include(
              code,
              `new URL(${JSON.stringify(inside)},import.meta.resolve("@hostnode/node/package.json"))`,
              `${inside} in ${output}`
            )
            rewritten++
          }
        }
        // DbusConnection resolves its D-Bus library from its own package (createRequire(import.meta.url)).
        assert.isAtLeast(rewritten, 1)
      })
    ).pipe(Effect.provide(NodeServices.layer))
  )

  // The command tree keeps its own copies of these (so that --help loads no @hostnode/core): they must be the library's.
  it.live("the defaults --help names are the library's", () =>
    Effect.gen(function* () {
      const help = (args: ReadonlyArray<string>) =>
        HostCommand.run(process.execPath, ["--conditions=@hostnode/source", sourceBin, ...args, "--help"]).pipe(
          Effect.map((out) => out.stdout)
        )
      const top = yield* help([])
      assert.include(
        top,
        `Remove the CNI configuration (${Paths.Node.CniConfDir}/*) and state (${Paths.Node.CniStateDir})`
      )
      assert.include(top, `Unmount and remove each pod's directory below ${Repave.KubeletPaths.podsDir}`)
      assert.include(yield* help(["reset-kubelet-identity"]), `(default: ${NodeStart.Defaults.bootstrapKubeconfig})`)
      const setup = yield* help(["localdns", "setup"])
      assert.include(setup, `(default: ${NodeStart.Defaults.nodeListener})`)
      assert.include(setup, `(default: ${NodeStart.Defaults.clusterListener})`)
    }).pipe(Effect.provide(NodeServices.layer))
  )
})
