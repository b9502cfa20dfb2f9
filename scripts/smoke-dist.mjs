// Checks what `npm run build` promises: a plain Node ESM script (no TypeScript,
// no custom export condition) can import every package from its dist/ output.
import * as Cli from "@hostnode/cli"
import * as Core from "@hostnode/core"
import * as Node from "@hostnode/node"
import * as Test from "@hostnode/test"

const checks = [
  ["@hostnode/core", typeof Core.HostPath?.join === "function" && Core.Paths?.KubeletDir === "/var/lib/kubelet"],
  ["@hostnode/node", typeof Node.NodeHost?.layer === "object"],
  ["@hostnode/test", typeof Test.Gate?.check === "function"],
  ["@hostnode/cli", typeof Cli.Cli?.run === "function"]
]
const failed = checks.filter(([, ok]) => !ok)
for (const [name, ok] of checks) console.log(`${ok ? "ok  " : "FAIL"} import ${name} from dist`)
if (failed.length > 0) process.exit(1)
