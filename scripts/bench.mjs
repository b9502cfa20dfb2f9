// `npm run bench`: runs each benchmark in bench/ and prints its table. Each
// benchmark measures its baseline in the same process, so the ratios hold on
// any machine. Benchmarks that need mounts run under `unshare --mount` (root).
// Usage: npm run bench [-- name...]   (names: mounts, systemd, snapshot, remove, start, mountinfo)
import { spawnSync } from "node:child_process"

const all = {
  mounts: { file: "bench/mounts.ts", unshare: ["--mount", "--propagation", "private"] },
  // boots its own systemd in its own namespaces (SystemdMachine); needs root
  systemd: { file: "bench/systemd.ts", unshare: [], root: true },
  // a temporary tree on the real disk (the system temporary directory); needs no root
  snapshot: { file: "bench/snapshot.ts", unshare: [] },
  // a temporary tree on the real disk: SafeRemove against rm -rf --one-file-system
  remove: { file: "bench/remove.ts", unshare: [] },
  // `hostnode --version`/`--help` as processes against `node -e 0`; runs the build first (the shipped bundle)
  start: { file: "bench/start.ts", unshare: [], build: true },
  // MountInfo.parse against moby/sys's Go parser (built when Go and HOSTNODE_MOBY_SYS are there); a table on the real disk
  mountinfo: { file: "bench/mountinfo.ts", unshare: [], node: ["--expose-gc"] }
}
const wanted = process.argv.slice(2)
const names = wanted.length > 0 ? wanted : Object.keys(all)
let failed = false
for (const name of names) {
  const b = all[name]
  if (b === undefined) {
    console.error(`unknown benchmark ${name}; known: ${Object.keys(all).join(", ")}`)
    process.exit(2)
  }
  if (b.build) {
    const built = spawnSync("npm", ["run", "build"], { stdio: ["ignore", "ignore", "inherit"] })
    if (built.status !== 0) {
      console.error(`bench ${name}: npm run build failed`)
      failed = true
      continue
    }
  }
  const node = [process.execPath, ...(b.node ?? []), "--conditions=@hostnode/source", b.file]
  const cmd = b.unshare.length > 0 ? ["unshare", ...b.unshare, "--", ...node] : node
  if ((b.unshare.length > 0 || b.root) && process.getuid?.() !== 0) {
    console.error(`bench ${name}: needs root${b.unshare.length > 0 ? " (for unshare)" : ""}; skipped`)
    failed = true
    continue
  }
  console.log(`\n## bench ${name}: ${cmd.join(" ")}`)
  const r = spawnSync(cmd[0], cmd.slice(1), { stdio: "inherit" })
  if (r.status !== 0) failed = true
}
process.exit(failed ? 1 : 0)
