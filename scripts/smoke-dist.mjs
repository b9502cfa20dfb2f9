// Checks what `npm run build` promises: a plain Node ESM script (no TypeScript,
// no custom export condition) can import every package from its dist/ output,
// and the `hostnode` executable (packages/cli/bin/hostnode.mjs, which runs the
// bundle packages/cli/dist/bundle/bin.js) answers --version and --help, refuses
// bad usage with exit 2, and runs a command on the real host's layers (a dry run
// of reset-cni below an empty temporary root: it loads the FFI and the D-Bus
// client from the bundle's chunks and changes nothing).
import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Cli from "@hostnode/cli"
import * as Core from "@hostnode/core"
import * as Node from "@hostnode/node"
import * as Sim from "@hostnode/sim"
import * as Test from "@hostnode/test"

const bin = new URL("../packages/cli/bin/hostnode.mjs", import.meta.url).pathname
const { version } = JSON.parse(readFileSync(new URL("../packages/cli/package.json", import.meta.url), "utf8"))
const hostnode = (...args) => spawnSync(process.execPath, [bin, ...args], { encoding: "utf8" })
const root = mkdtempSync(join(tmpdir(), "hostnode-smoke-"))
process.on("exit", () => rmSync(root, { recursive: true, force: true }))

const versionRun = hostnode("--version")
const help = hostnode("--help")
const usage = hostnode("reset-cnii")
const dryRun = hostnode("--host-root", root, "--dry-run", "reset-cni")
const checks = [
  [
    "@hostnode/core",
    typeof Core.HostPath?.resolve === "function" && Core.Paths?.Node?.KubeletDir === "/var/lib/kubelet"
  ],
  ["@hostnode/node", typeof Node.NodeHost?.layer === "object"],
  ["@hostnode/sim", typeof Sim.MemoryNode?.layer === "function" && typeof Sim.DryRun === "object"],
  // test re-exports sim's namespaces: the same objects, so a service key is one key whichever import a test uses.
  ["@hostnode/test", typeof Test.Gate?.check === "function" && Test.MemoryHost === Sim.MemoryHost],
  ["@hostnode/cli", typeof Cli.Cli?.run === "function"],
  ["hostnode --version", versionRun.status === 0 && versionRun.stdout === `hostnode v${version}\n`],
  ["hostnode --help", help.status === 0 && help.stdout.includes("SUBCOMMANDS") && help.stderr === ""],
  ["hostnode reset-cnii (exit 2)", usage.status === 2 && usage.stderr.includes("did you mean reset-cni?")],
  ["hostnode --dry-run reset-cni", dryRun.status === 0 && dryRun.stdout.includes("dry run: nothing would be changed")]
]
const failed = checks.filter(([, ok]) => !ok)
for (const [name, ok] of checks)
  console.log(`${ok ? "ok  " : "FAIL"} ${name.startsWith("@") ? `import ${name} from dist` : name}`)
if (failed.length > 0) {
  for (const [name, r] of [
    ["--version", versionRun],
    ["--help", help],
    ["reset-cnii", usage],
    ["--dry-run reset-cni", dryRun]
  ]) {
    console.error(`hostnode ${name}: exit ${r.status}\n${r.stdout}${r.stderr}`)
  }
  process.exit(1)
}
