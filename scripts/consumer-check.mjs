// `npm run consumer-check`: uses the packages as a downstream Effect project
// does. It packs every workspace package (`npm pack`, after `npm run build`),
// then, in a new project in a temporary directory outside the workspace,
// installs the tarballs twice: once with the lowest and once with the newest
// versions the peer ranges allow (effect, @effect/platform-node, @effect/vitest,
// vitest). Each install must hold exactly one copy of effect (`npm ls effect`);
// a program composing Unmount.unmountStrictlyBelow, Repave.resetCniState and
// Snapshot.scoped must typecheck under TypeScript 7 and under the newest 5.x;
// and its vitest test on MemoryHost.layer must pass; and the `hostnode`
// executable npm linked (the bundle in @hostnode/cli, which carries its own
// copy of effect and loads koffi and @hostnode/node's files from the install)
// must answer --version and --help and dry-run reset-cni below an empty root.
// The README's program and its test (its ```ts blocks) and each packed
// package README's TypeScript example are typechecked there too (and run, the tests), as
// files of the consumer's project; and every relative link of every markdown
// file in a tarball (README, CHANGELOG, the docs/ it carries) must resolve to
// a file inside that tarball.
// The temporary directory is removed at the end, whatever happened.
//
// Usage: npm run consumer-check [-- lowest|newest]
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, posix } from "node:path"
import { fileURLToPath } from "node:url"
import { isRelative, linksOf, pathOf } from "./md-links.mjs"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const packages = ["core", "node", "sim", "test", "cli"]
const manifests = Object.fromEntries(
  packages.map((p) => [p, JSON.parse(readFileSync(join(root, "packages", p, "package.json"), "utf8"))])
)

const scratch = mkdtempSync(join(tmpdir(), "hostnode-consumer-"))
const cleanup = () => rmSync(scratch, { recursive: true, force: true })
process.on("exit", cleanup)
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    cleanup()
    process.exit(130)
  })
}

const run = (command, args, options = {}) => {
  const r = spawnSync(command, args, { encoding: "utf8", ...options })
  return { status: r.status ?? 1, stdout: r.stdout ?? "", stderr: r.stderr ?? "", error: r.error }
}
const must = (what, r) => {
  if (r.status !== 0) {
    console.error(`consumer check: ${what} failed (exit ${r.status})\n${r.stdout}${r.stderr}${r.error?.message ?? ""}`)
    process.exit(1)
  }
  return r
}

// The peer ranges, all packages together: each package's range of a peer must agree.
const ranges = {}
for (const m of Object.values(manifests)) {
  for (const [name, range] of Object.entries(m.peerDependencies ?? {})) {
    if (ranges[name] !== undefined && ranges[name] !== range) {
      console.error(`consumer check: ${name} has two peer ranges (${ranges[name]} and ${range}); make them one`)
      process.exit(1)
    }
    ranges[name] = range
  }
}
for (const [name, range] of Object.entries(ranges)) {
  if (!/^\^\d+\.\d+\.\d+$/.test(range)) {
    console.error(`consumer check: ${name}'s peer range ${range} is not a caret range`)
    process.exit(1)
  }
}

/** The versions the registry has in `range`, oldest first. */
const versionsIn = (name, range) => {
  const r = must(`npm view ${name}@${range}`, run("npm", ["view", `${name}@${range}`, "version", "--json"]))
  const v = JSON.parse(r.stdout)
  return Array.isArray(v) ? v : [v]
}
const scenarios = {
  lowest: Object.fromEntries(Object.entries(ranges).map(([n, r]) => [n, versionsIn(n, r)[0]])),
  newest: Object.fromEntries(Object.entries(ranges).map(([n, r]) => [n, versionsIn(n, r).at(-1)]))
}
for (const [name, range] of Object.entries(ranges)) {
  if (scenarios.lowest[name] !== range.slice(1)) {
    console.error(
      `consumer check: the lowest ${name} in ${range} is ${scenarios.lowest[name]}; the range must start at a release`
    )
    process.exit(1)
  }
}

// Pack what `npm run build` produces (tsc -b: a no-op when dist/ is current), with the API pages each package's
// prepack copies into it (`npm run docs` builds them; CI has just run it, so they are built only when missing).
must("npm run build", run("npm", ["run", "build"], { cwd: root }))
if (packages.some((p) => !existsSync(join(root, "docs", "api", p)))) {
  must("npm run docs", run("npm", ["run", "docs"], { cwd: root }))
}
const tarballs = join(scratch, "tarballs")
mkdirSync(tarballs)
for (const p of packages) {
  must(
    `npm pack @hostnode/${p}`,
    run("npm", ["pack", "--pack-destination", tarballs], { cwd: join(root, "packages", p) })
  )
}
const tarball = (p) =>
  join(
    tarballs,
    readdirSync(tarballs).find((f) => f.startsWith(`hostnode-${p}-`))
  )
for (const p of packages) {
  const listing = must("tar", run("tar", ["-tzf", tarball(p)])).stdout.split("\n")
  // No test files (docs/api/test/ is the API pages of @hostnode/test, not tests).
  const unwanted = listing.filter(
    (f) => f.endsWith(".tsbuildinfo") || (f.includes("/test/") && !f.startsWith("package/docs/"))
  )
  const required = [
    "package/LICENSE",
    "package/README.md",
    "package/CHANGELOG.md",
    "package/dist/index.js",
    "package/dist/index.d.ts",
    "package/docs/api/README.md"
  ]
  // The executable's bundle (its entry; its chunks are in dist/bundle/chunks).
  if (p === "cli") required.push("package/dist/bundle/bin.js")
  const absent = required.filter((f) => !listing.includes(f))
  if (unwanted.length > 0 || absent.length > 0) {
    console.error(
      `consumer check: @hostnode/${p}'s tarball ships ${unwanted.join(", ") || "nothing unwanted"}, lacks ${absent.join(", ") || "nothing"}`
    )
    process.exit(1)
  }
}

// Every relative link of every markdown file in a tarball resolves to a file of that tarball: a package's README
// is read in node_modules and on the registry's page, where nothing of the repository is beside it.
const unpacked = join(scratch, "unpacked")
const brokenLinks = []
for (const p of packages) {
  const dir = join(unpacked, p)
  mkdirSync(dir, { recursive: true })
  must("tar", run("tar", ["-xzf", tarball(p), "-C", dir]))
  const listing = new Set(
    must("tar", run("tar", ["-tzf", tarball(p)]))
      .stdout.split("\n")
      .filter((f) => f !== "")
  )
  const folders = new Set([...listing].flatMap((f) => f.split("/").map((_, i, parts) => parts.slice(0, i).join("/"))))
  let checked = 0
  const before = brokenLinks.length
  for (const file of [...listing].filter((f) => f.endsWith(".md"))) {
    for (const target of linksOf(readFileSync(join(dir, file), "utf8")).filter(isRelative)) {
      checked++
      const resolved = posix.normalize(posix.join(posix.dirname(file), pathOf(target))).replace(/\/$/, "")
      if (!resolved.startsWith("package/") || !(listing.has(resolved) || folders.has(resolved))) {
        brokenLinks.push(`@hostnode/${p}: ${file.slice("package/".length)} links ${target}, not in the tarball`)
      }
    }
  }
  const broken = brokenLinks.length - before
  console.log(
    broken === 0
      ? `ok   @hostnode/${p}: the ${checked} relative links of its packed markdown files resolve inside its tarball`
      : `FAIL @hostnode/${p}: ${broken} of the ${checked} relative links of its packed markdown files lead outside it`
  )
}
if (brokenLinks.length > 0) {
  console.error(`consumer check: links that lead outside their tarball:\n  ${brokenLinks.join("\n  ")}`)
  process.exit(1)
}

// The README's examples, as files of the consumer's project: the root README's ```ts blocks named after the file of
// examples/ each shows (so `./repave.ts` imports resolve), each packed package README's ```ts blocks as
// `<package>-<n>.ts` (`.test.ts` for one that imports @effect/vitest, which vitest then runs).
const tsBlocks = (markdown) => [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1])
const examples = Object.fromEntries(
  readdirSync(join(root, "examples"))
    .filter((f) => f.endsWith(".ts"))
    .map((f) => [readFileSync(join(root, "examples", f), "utf8"), f])
)
const readmeFiles = tsBlocks(readFileSync(join(root, "README.md"), "utf8")).map((code, i) => [
  examples[code] ?? `readme-${i + 1}.ts`,
  code
])
for (const p of packages) {
  tsBlocks(readFileSync(join(unpacked, p, "package", "README.md"), "utf8")).forEach((code, i) => {
    readmeFiles.push([`${p}-${i + 1}${code.includes('from "@effect/vitest"') ? ".test" : ""}.ts`, code])
  })
}
if (!readmeFiles.some(([f]) => f === "repave.ts")) {
  console.error("consumer check: the README shows no program (a ```ts block equal to examples/repave.ts)")
  process.exit(1)
}

// The consumer's program and its test, as a downstream agent would write them.
const program = `import { Paths, Repave, Snapshot, Unmount } from "@hostnode/core"
import type { Directory, Mounter, Systemd } from "@hostnode/core"
import { Effect, type FileSystem } from "effect"

/** A repave step under a snapshot of the CNI configuration: put back if anything fails. */
export const repave = Effect.fn("repave")(function* (snapshotDir: string) {
  yield* Snapshot.scoped({ dir: snapshotDir, paths: [Paths.Node.CniConfDir] })
  const unmounted = yield* Unmount.unmountStrictlyBelow([Paths.Node.KubeletDir])
  const cni = yield* Repave.resetCniState()
  return { unmounted: unmounted.unmounted.length, removed: cni.removed, kept: cni.kept }
}, Effect.scoped)

// What the program needs is exactly what these layers provide.
export const needs: Effect.Effect<
  unknown,
  unknown,
  FileSystem.FileSystem | Directory.Directories | Mounter.Mounter | Systemd.Systemd
> = repave("/var/lib/agent/snapshot")
`
const test = `import { assert, describe, it } from "@effect/vitest"
import { MemoryHost, RecordingSystemd } from "@hostnode/test"
import { Effect, FileSystem } from "effect"
import { repave } from "../src/program.ts"

const secret = "/var/lib/kubelet/pods/p1/volumes/kubernetes.io~secret/token"

describe("the consumer's repave step on MemoryHost.layer", () => {
  it.effect("unmounts the pod volume, resets CNI state and discards its snapshot", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const host = yield* MemoryHost.MemoryHost
      yield* host.tmpfs(secret)
      const report = yield* repave("/var/lib/agent/snapshot")
      assert.strictEqual(report.unmounted, 1)
      assert.deepStrictEqual(report.kept, [])
      assert.isFalse(yield* fs.exists("/etc/cni/net.d/10-bridge.conflist"))
      assert.isFalse(yield* fs.exists("/var/lib/agent/snapshot"))
      assert.deepStrictEqual(yield* RecordingSystemd.RecordingSystemd.use((r) => r.calls), [])
    }).pipe(
      Effect.provide(
        MemoryHost.layer({
          files: {
            [secret + "/.keep"]: "",
            "/etc/cni/net.d/10-bridge.conflist": "{}",
            "/var/lib/cni/networks/cbr0/10.244.0.7": "c0ffee",
            "/var/lib/agent": { directory: true }
          }
        })
      )
    )
  )
})
`
const tsconfig = {
  compilerOptions: {
    target: "ES2023",
    // DOM for the WebCrypto and timer types effect's and tinybench's declarations name.
    lib: ["ES2023", "DOM"],
    module: "NodeNext",
    moduleResolution: "NodeNext",
    types: ["node"],
    strict: true,
    exactOptionalPropertyTypes: true,
    noUncheckedIndexedAccess: true,
    allowImportingTsExtensions: true,
    noEmit: true,
    skipLibCheck: false
  },
  include: ["src", "test", "readme"]
}

const workspace = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))
const wanted = process.argv.slice(2)
const selected = wanted.length > 0 ? wanted : Object.keys(scenarios)
let failed = false
for (const name of selected) {
  const versions = scenarios[name]
  if (versions === undefined) {
    console.error(`unknown scenario ${name}; known: ${Object.keys(scenarios).join(", ")}`)
    process.exit(2)
  }
  const dir = join(scratch, name)
  mkdirSync(join(dir, "src"), { recursive: true })
  mkdirSync(join(dir, "test"))
  writeFileSync(join(dir, "src", "program.ts"), program)
  writeFileSync(join(dir, "test", "program.test.ts"), test)
  mkdirSync(join(dir, "readme"))
  for (const [file, code] of readmeFiles) writeFileSync(join(dir, "readme", file), code)
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify(tsconfig, null, 2))
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify(
      {
        name: `hostnode-consumer-${name}`,
        private: true,
        type: "module",
        dependencies: {
          ...Object.fromEntries(packages.map((p) => [`@hostnode/${p}`, `file:${tarball(p)}`])),
          ...versions
        },
        devDependencies: {
          "@types/node": workspace.devDependencies["@types/node"],
          typescript: "^7.0.2",
          "typescript-5": "npm:typescript@^5",
          vitest: versions.vitest
        },
        // vite 8.4.0 lists an optional dependency the registry does not serve,
        // so npm cannot install it: the same pin as the workspace's.
        overrides: { vite: workspace.overrides.vite }
      },
      null,
      2
    )
  )
  console.log(
    `\n## consumer (${name}): ${Object.entries(versions)
      .map(([n, v]) => `${n}@${v}`)
      .join(" ")}`
  )
  must(`npm install (${name})`, run("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: dir }))
  const ls = run("npm", ["ls", "effect"], { cwd: dir })
  console.log(ls.stdout.trim())
  const lsJson = JSON.parse(run("npm", ["ls", "effect", "--all", "--json"], { cwd: dir }).stdout)
  const copies = new Set()
  const walk = (node, path) => {
    for (const [dep, child] of Object.entries(node.dependencies ?? {})) {
      if (dep === "effect") copies.add(`${child.version}${child.resolved ? ` ${child.resolved}` : ""}`)
      walk(child, `${path}/${dep}`)
    }
  }
  walk(lsJson, "")
  const installed = run("find", [
    join(dir, "node_modules"),
    "-path",
    "*/effect/package.json",
    "-not",
    "-path",
    "*/effect/*/*"
  ])
  const physical = installed.stdout.split("\n").filter((l) => l.endsWith("/node_modules/effect/package.json"))
  if (ls.status !== 0 || copies.size !== 1 || physical.length !== 1) {
    console.error(
      `consumer (${name}): expected one copy of effect, found ${physical.length} (${[...copies].join("; ")})`
    )
    failed = true
    continue
  }
  for (const [label, tsc] of [
    ["TypeScript 7", join(dir, "node_modules", "typescript", "bin", "tsc")],
    ["TypeScript 5", join(dir, "node_modules", "typescript-5", "bin", "tsc")]
  ]) {
    const version = run(process.execPath, [tsc, "--version"], { cwd: dir }).stdout.trim()
    const r = run(process.execPath, [tsc, "-p", "."], { cwd: dir })
    console.log(
      `${r.status === 0 ? "ok  " : "FAIL"} typecheck, ${label} (${version}): the program, its test, the READMEs' examples (${readmeFiles.map(([f]) => f).join(", ")})`
    )
    if (r.status !== 0) {
      console.error(r.stdout, r.stderr)
      failed = true
    }
  }
  const vitest = run(process.execPath, [join(dir, "node_modules", "vitest", "vitest.mjs"), "run"], {
    cwd: dir,
    env: { ...process.env, CI: "true", NO_COLOR: "1" }
  })
  const ran = readmeFiles.filter(([f]) => f.endsWith(".test.ts")).map(([f]) => f)
  console.log(
    `${vitest.status === 0 ? "ok  " : "FAIL"} vitest on MemoryHost.layer (vitest ${versions.vitest}): the program's test and the READMEs' (${ran.join(", ")})`
  )
  if (vitest.status !== 0) {
    console.error(vitest.stdout, vitest.stderr)
    failed = true
  }
  // The executable as installed: npm's link to the bundle in node_modules/@hostnode/cli.
  const hostRoot = join(dir, "host-root")
  mkdirSync(hostRoot)
  const bin = join(dir, "node_modules", ".bin", "hostnode")
  for (const [label, args, ok] of [
    ["hostnode --version", ["--version"], (r) => r.stdout === `hostnode v${manifests.cli.version}\n`],
    ["hostnode --help", ["--help"], (r) => r.stdout.includes("SUBCOMMANDS")],
    [
      "hostnode --dry-run reset-cni",
      ["--host-root", hostRoot, "--dry-run", "reset-cni"],
      (r) => r.stdout.includes("dry run: nothing would be changed")
    ]
  ]) {
    const r = run(process.execPath, [bin, ...args], { cwd: dir })
    const passed = r.status === 0 && ok(r)
    console.log(`${passed ? "ok  " : "FAIL"} ${label} (the installed executable)`)
    if (!passed) {
      console.error(r.stdout, r.stderr)
      failed = true
    }
  }
}
process.exit(failed ? 1 : 0)
