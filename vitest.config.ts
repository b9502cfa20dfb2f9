import { defineConfig } from "vitest/config"
import { projects } from "./vitest.workspace.ts"

export default defineConfig({
  // Resolve workspace packages to their TypeScript sources (the `@hostnode/source`
  // export condition), so tests never run against a stale `dist/`.
  resolve: { conditions: ["@hostnode/source"] },
  ssr: { resolve: { conditions: ["@hostnode/source"] } },
  test: {
    projects,
    testTimeout: 30_000,
    hookTimeout: 60_000
  }
})
