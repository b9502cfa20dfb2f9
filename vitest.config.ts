import { defineConfig } from "vitest/config"
import { projects } from "./vitest.workspace.ts"

export default defineConfig({
  // Resolve workspace packages to their TypeScript sources (the `@hostnode/source`
  // export condition), so tests never run against a stale `dist/`.
  resolve: { conditions: ["@hostnode/source"] },
  ssr: { resolve: { conditions: ["@hostnode/source"] } },
  test: {
    projects,
    // The operations log at INFO (every restart, every snapshot); printed for
    // every passing test they bury the report. A failing test's logs are kept.
    silent: "passed-only",
    testTimeout: 30_000,
    hookTimeout: 60_000
  }
})
