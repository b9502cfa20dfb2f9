// Runs vitest for `npm test`. Where it can (root, and unshare works), it starts
// vitest inside a private mount and network namespace with loopback up, so the
// real-host tests can mount, unmount and configure interfaces without touching
// the machine: everything they do vanishes with the namespace, even after a
// crash. Elsewhere it runs vitest directly and those tests skip with a reason
// (or fail under CI=true; see packages/test/src/Gate.ts).
import { spawnSync } from "node:child_process"
import { readlinkSync } from "node:fs"

const args = ["run", ...process.argv.slice(2)]
const isRoot = process.getuid?.() === 0
const canUnshare =
  isRoot &&
  spawnSync("unshare", ["--mount", "--propagation", "private", "--net", "true"], { stdio: "ignore" }).status === 0

let result
if (canUnshare && process.env.HOSTNODE_TEST_NAMESPACE !== "1") {
  result = spawnSync(
    "unshare",
    [
      "--mount",
      "--propagation",
      "private",
      "--net",
      "--",
      "sh",
      "-c",
      'ip link set lo up && exec vitest "$@"',
      "sh",
      ...args
    ],
    {
      stdio: "inherit",
      env: {
        ...process.env,
        HOSTNODE_TEST_NAMESPACE: "1",
        // The namespaces vitest is started from: Gate compares its own against
        // these to know it really runs in private ones.
        HOSTNODE_OUTER_MNT_NS: readlinkSync("/proc/self/ns/mnt"),
        HOSTNODE_OUTER_NET_NS: readlinkSync("/proc/self/ns/net")
      }
    }
  )
} else {
  if (!canUnshare)
    console.warn("vitest: not root or no unshare here; real-host tests will skip (or fail under CI=true)")
  result = spawnSync("vitest", args, { stdio: "inherit" })
}
if (result.error) {
  console.error(result.error.message)
  process.exit(1)
}
process.exit(result.status ?? 1)
