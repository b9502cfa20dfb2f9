/**
 * Trees a hostile pod can make, removed on real mounts (built fast by
 * `fixtures/bigtree.c`): a chain of directories 100,000 deep in an emptyDir,
 * removed with the helper process limited to 64 descriptors more than it
 * holds idle (a walk that held one per level would fail `EMFILE`); three
 * chains 14,000 deep, whose report stays small; and 1,000,000 files in
 * `/var/lib/cni`, reset by the CLI within 128 MiB of memory above what the
 * same command takes on an empty directory, with a JSON document under 1 MB.
 * The counts come from `Gate.loops` (CI runs them in full).
 */
import { spawn } from "node:child_process"
import { readdirSync, readFile } from "node:fs"
import { fileURLToPath } from "node:url"
import { assert, describe, layer } from "@effect/vitest"
import { Directory, HostCommand, HostPath, Repave } from "@hostnode/core"
import { Gate, MountFixture } from "@hostnode/test"
import { Effect, FileSystem } from "effect"
import { realHost } from "./realHost.ts"

const gate = Gate.check("trees a pod can make (real mounts)", [
  "root",
  "private-mount-namespace",
  { command: "mount" },
  { command: "cc", args: ["--version"] },
  { command: "prlimit", args: ["--version"] }
])

const source = fileURLToPath(new URL("./fixtures/bigtree.c", import.meta.url))

const buildTool = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-bigtree-" }).pipe(Effect.orDie)
  const binary = `${dir}/bigtree`
  const out = yield* HostCommand.run("cc", ["-O2", "-Wall", "-o", binary, source]).pipe(Effect.orDie)
  if (out.exitCode !== 0) return yield* Effect.die(new Error(`cc failed: ${out.stderr}`))
  return binary
})

const make = (tool: string, kind: "chain" | "files", dir: string, n: number) =>
  Effect.gen(function* () {
    const out = yield* HostCommand.run(tool, [kind, dir, String(n)]).pipe(Effect.orDie)
    if (out.exitCode !== 0) return yield* Effect.die(new Error(`bigtree ${kind} failed: ${out.stderr}`))
  })

/** A host root on a tmpfs large enough for the trees (the fixture's own are small). */
const bigRoot = Effect.gen(function* () {
  const fx = yield* MountFixture.MountFixture
  const root = `${yield* fx.sandbox}/root`
  const fs = yield* FileSystem.FileSystem
  yield* fs.makeDirectory(root).pipe(Effect.orDie)
  const mounted = yield* HostCommand.run("mount", ["-t", "tmpfs", "-o", "size=2g,nr_inodes=0", "tmpfs", root]).pipe(
    Effect.orDie
  )
  if (mounted.exitCode !== 0) return yield* Effect.die(new Error(`mount: ${mounted.stderr}`))
  return root
})

const fdsOf = (pid: number) => readdirSync(`/proc/${pid}/fd`).length

/** Calls `then` with the peak resident memory (VmHWM, KiB) of `pid` (nothing once it is gone). */
const peakOf = (pid: number, then: (kib: number) => void): void =>
  readFile(`/proc/${pid}/status`, "latin1", (err, text) => {
    const m = err === null ? /^VmHWM:\s+(\d+) kB/m.exec(text) : null
    if (m !== null) then(Number(m[1]))
  })

/** Calls `then` with each child of `pid` (its helper processes). */
const childrenOf = (pid: number, then: (child: number) => void): void =>
  readFile(`/proc/${pid}/task/${pid}/children`, "latin1", (err, text) => {
    if (err !== null) return
    for (const c of text.trim().split(/\s+/)) if (c !== "") then(Number(c))
  })

/**
 * Runs the CLI with `args`; its stdout, and the peak memory (KiB) of the
 * command and of its helper process, sampled every 20 ms from procfs.
 */
const cli = (args: ReadonlyArray<string>) =>
  Effect.callback<{
    readonly code: number | null
    readonly stdout: string
    readonly main: number
    readonly helper: number
  }>((resume) => {
    const bin = fileURLToPath(new URL("../../cli/src/bin.ts", import.meta.url))
    const child = spawn(process.execPath, ["--conditions=@hostnode/source", bin, ...args], {
      stdio: ["ignore", "pipe", "ignore"]
    })
    let stdout = ""
    let main = 0
    let helper = 0
    const pid = child.pid as number
    const sample = setInterval(() => {
      peakOf(pid, (kib) => {
        main = Math.max(main, kib)
      })
      childrenOf(pid, (c) =>
        peakOf(c, (kib) => {
          helper = Math.max(helper, kib)
        })
      )
    }, 20)
    child.stdout.on("data", (b: Buffer) => {
      stdout += b.toString()
    })
    child.on("exit", (code) => {
      clearInterval(sample)
      resume(Effect.succeed({ code, stdout, main, helper }))
    })
  })

describe.skipIf(gate.skip)("trees a pod can make, on real mounts", () => {
  layer(realHost(), { excludeTestServices: true })((it) => {
    it.effect(
      "a chain of directories 100,000 deep in an emptyDir is removed with at most 64 descriptors open",
      () =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const dirs = yield* Directory.Directories
          const tool = yield* buildTool
          const root = yield* bigRoot
          const depth = Gate.loops(100_000)
          const emptyDir = `${root}/var/lib/kubelet/pods/p1/volumes/kubernetes.io~empty-dir/cache`
          yield* fs.makeDirectory(emptyDir, { recursive: true }).pipe(Effect.orDie)
          yield* make(tool, "chain", emptyDir, depth)
          // The helper, idle, and its descriptors: from now on it may hold 64 more, no more.
          const { pid } = yield* dirs.credentials
          const limit = fdsOf(pid) + 64
          const set = yield* HostCommand.run("prlimit", ["--pid", String(pid), `--nofile=${limit}:${limit}`]).pipe(
            Effect.orDie
          )
          assert.strictEqual(set.exitCode, 0, set.stderr)
          const report = yield* Repave.teardownKubeletDir({
            hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie)
          })
          assert.strictEqual((yield* dirs.credentials).pid, pid, "the same helper did the whole walk")
          assert.deepStrictEqual(report.kept, [])
          assert.isFalse(yield* fs.exists(`${root}/var/lib/kubelet/pods/p1`))
          // Every level of the chain, then cache, the emptyDir plugin's directory, volumes and the pod.
          assert.strictEqual(report.removedCount, depth + 4)
          assert.isBelow(JSON.stringify(report).length, 1_000_000)
        }).pipe(Effect.scoped),
      600_000
    )

    it.effect(
      "three chains 14,000 deep: everything removed, and the report stays small",
      () =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const tool = yield* buildTool
          const root = yield* bigRoot
          const depth = Gate.loops(14_000)
          const emptyDir = `${root}/var/lib/kubelet/pods/p1/volumes/kubernetes.io~empty-dir/cache`
          for (const c of ["a", "b", "c"]) {
            yield* fs.makeDirectory(`${emptyDir}/${c}`, { recursive: true }).pipe(Effect.orDie)
            yield* make(tool, "chain", `${emptyDir}/${c}`, depth)
          }
          const report = yield* Repave.teardownKubeletDir({
            hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie)
          })
          assert.deepStrictEqual(report.kept, [])
          assert.strictEqual(report.removedCount, 3 * (depth + 1) + 4)
          assert.isFalse(yield* fs.exists(`${root}/var/lib/kubelet/pods/p1`))
          assert.isBelow(JSON.stringify(report).length, 1_000_000)
        }).pipe(Effect.scoped),
      600_000
    )

    it.effect(
      "1,000,000 files in /var/lib/cni: reset-cni within 128 MiB above its baseline, its JSON under 1 MB",
      () =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const tool = yield* buildTool
          const root = yield* bigRoot
          const n = Gate.loops(1_000_000)
          const net = `${root}/var/lib/cni/networks/cbr0`
          yield* fs.makeDirectory(net, { recursive: true }).pipe(Effect.orDie)
          yield* fs.makeDirectory(`${root}/etc/cni/net.d`, { recursive: true }).pipe(Effect.orDie)
          const args = ["--host-root", root, "--json", "reset-cni"]
          // The baseline: the same command on an empty state directory.
          const empty = yield* cli(args)
          assert.strictEqual(empty.code, 0)
          yield* fs.makeDirectory(net, { recursive: true }).pipe(Effect.orDie)
          yield* make(tool, "files", net, n)
          const full = yield* cli(args)
          assert.strictEqual(full.code, 0, full.stdout)
          assert.isBelow(full.stdout.length, 1_000_000)
          const doc = JSON.parse(full.stdout) as { readonly result: { readonly removedCount: number } }
          assert.strictEqual(doc.result.removedCount, n + 3)
          assert.isFalse(yield* fs.exists(`${root}/var/lib/cni`))
          yield* Effect.log(
            `reset-cni of ${n} files: command ${empty.main} -> ${full.main} KiB, helper ${empty.helper} -> ${full.helper} KiB, JSON ${full.stdout.length} bytes`
          )
          assert.isAtMost(full.main - empty.main, 128 * 1024, `the command: ${empty.main} KiB, then ${full.main} KiB`)
          assert.isAtMost(
            full.helper - empty.helper,
            128 * 1024,
            `its helper: ${empty.helper} KiB, then ${full.helper} KiB`
          )
        }).pipe(Effect.scoped),
      600_000
    )
  })
})
