// tsc writes files without the executable bit; the `hostnode` bin needs it so that
// `npx hostnode` works after `npm run build`.
import { chmodSync } from "node:fs"

chmodSync(new URL("../packages/cli/dist/bin.js", import.meta.url), 0o755)
