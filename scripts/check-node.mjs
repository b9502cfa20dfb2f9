// Plain JavaScript on purpose: this guard must run on whatever Node the machine has
// (20, 22, 24) and say how to fix things before TypeScript or vitest crash obscurely.
import { readFileSync } from "node:fs"

const [major, minor] = process.versions.node.split(".").map(Number)
const ok = major > 22 || (major === 22 && minor >= 19)
if (!ok) {
  const pinned = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).devDependencies.node
  console.error(
    [
      `hostnode needs Node >= 22.19, but this script runs on Node ${process.versions.node}.`,
      `The project pins Node ${pinned} as the \`node\` dev dependency; npm scripts put it first on PATH.`,
      "Fix: run through npm (`npm test`, `npm start`), and if that still fails the pinned",
      "binary was not installed (an install with --ignore-scripts): run `npm rebuild node`,",
      `or install again as the README says: \`npx -y -p node@${pinned} -- npm ci\`.`
    ].join("\n")
  )
  process.exit(1)
}
