// Vitest 5 does not read this file by itself: vitest.config.ts imports it and sets `test.projects`.
import type { TestProjectConfiguration } from "vitest/config"

const project = (name: string): TestProjectConfiguration => ({
  extends: true,
  test: {
    name,
    root: `packages/${name}`,
    include: ["test/**/*.test.ts"]
  }
})

/** One test project per package, so `vitest run --project core` runs one package's tests. */
export const projects: Array<TestProjectConfiguration> = [
  project("core"),
  project("node"),
  project("sim"),
  project("test"),
  project("cli"),
  // The README's example program and its test, so the README cannot rot.
  { extends: true, test: { name: "examples", root: "examples", include: ["*.test.ts"] } }
]
