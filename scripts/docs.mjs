// `npm run docs`: builds the API documentation of every package with Effect's
// docgen and fails when an export has no doc comment, no description or no
// `@since`, or when an `@example` does not typecheck.
//
// docgen parses the sources with the TypeScript compiler it bundles and checks
// the examples with the workspace's own `tsc` (TypeScript 7), so it works with
// this toolchain; its peer range still says TypeScript 5, which the root
// package.json overrides. Each package is documented from its directory
// (docgen rewrites an example's `@hostnode/<pkg>` import to `../../src`, so its
// output directory must sit one level below the package); the pages are then
// gathered below docs/api/ (gitignored), one folder per package, with an index.
//
// docgen leaves out what a class extends and what an alias names, so an
// error class shows none of its fields and `export type X = Y.X` no shape:
// scripts/docs-shapes.mjs adds both from the TypeScript checker. Each
// package's pages, and the pages of docs/ its README links, are then copied
// into the package (packages/<pkg>/docs/, by scripts/package-docs.mjs), so
// that its tarball carries them.
//
// Usage: npm run docs              build and check every package
//        npm run docs -- core test  only these packages
import { spawnSync } from "node:child_process"
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { shaper } from "./docs-shapes.mjs"
import { packageDocs } from "./package-docs.mjs"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const packages = ["core", "node", "sim", "test", "cli"]

// Files whose exports may still lack doc comments or `@since` tags: they are
// being rewritten in another branch, whose author adds the tags. Their missing
// tags are listed (as "tolerated") but do not fail the check, and a file here
// that still has a missing tag is left out of the built docs (docgen builds
// nothing while one is missing). Empty this list once they are tagged; a file
// here that has no missing tag any more is reported, so the list only shrinks.
const tolerated = []

// The examples are compiled as a consumer's code is, with the strictness of
// this repository and the packages resolved to their sources.
const examplesCompilerOptions = {
  noEmit: true,
  strict: true,
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
  skipLibCheck: true,
  target: "ES2023",
  lib: ["ES2023"],
  module: "ESNext",
  moduleResolution: "Bundler",
  customConditions: ["@hostnode/source"],
  allowImportingTsExtensions: true,
  types: ["node"]
}

const wanted = process.argv.slice(2)
for (const name of wanted) {
  if (!packages.includes(name)) {
    console.error(`unknown package ${name}; known: ${packages.join(", ")}`)
    process.exit(2)
  }
}
const selected = wanted.length > 0 ? wanted : packages

// docgen reads its configuration from docgen.json in the package directory
// (its command-line options take one --exclude only); the script writes that
// file for each run and removes it afterwards (it is gitignored).
const docgen = (cwd, exclude) => {
  const config = join(cwd, "docgen.json")
  // docgen writes its pages into the package's docs/ (where the pages its tarball carries go afterwards): start from
  // an empty one.
  rmSync(join(cwd, "docs"), { recursive: true, force: true })
  writeFileSync(
    config,
    JSON.stringify({
      enforceDescriptions: true,
      enforceVersion: true,
      exclude: ["src/internal/**/*.ts", ...exclude],
      examplesCompilerOptions
    })
  )
  const r = spawnSync("docgen", [], { cwd, encoding: "utf8", env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" } })
  rmSync(config, { force: true })
  if (r.status !== 0) rmSync(join(cwd, "docs"), { recursive: true, force: true })
  return { status: r.status ?? 1, output: `${r.stdout ?? ""}${r.stderr ?? ""}`, error: r.error }
}

// docgen's own sentences: `Missing @since tag in src/X.ts#name documentation`,
// `Missing description in src/X.ts#name documentation`. It stops at the first
// kind of declaration that fails in a module, so its list is not complete: the
// scan below is, and docgen's list is the backstop.
const missingLine = /Missing (?:(@\w+) tag|(description)) in (src\/[^\s#]+)#(.+?) documentation/g
const missingOf = (output) =>
  [...output.matchAll(missingLine)].map((m) => ({ file: m[3], name: m[4], problem: `no ${m[1] ?? m[2]} (docgen)` }))

// Every top-level export of a module (biome formats them at column 0), with
// the doc comment just above it: what it lacks, per export. An overload's
// later signatures share the first one's comment.
const declaration =
  /^export (?:declare )?(?:abstract )?(?:const|let|function\*?|class|interface|type|enum|namespace) (\w+)/
const namespaceExport = /^export \* as (\w+) from/
const listExport = /^export (?:type )?\{([^}]*)\}/
const scan = (file) => {
  const lines = readFileSync(join(root, file), "utf8").split("\n")
  const seen = new Set()
  const problems = []
  lines.forEach((line, i) => {
    const m = declaration.exec(line) ?? namespaceExport.exec(line)
    const names = m
      ? [m[1]]
      : (listExport
          .exec(line)?.[1]
          .split(",")
          .map((n) =>
            n
              .trim()
              .split(/\s+as\s+/)
              .pop()
          )
          .filter((n) => n !== "") ?? [])
    if (names.length === 0 || names.every((n) => seen.has(n))) return
    for (const n of names) seen.add(n)
    const end = i - 1
    const problem = (() => {
      if (end < 0 || !lines[end].trimEnd().endsWith("*/")) return "no doc comment (needs a description and @since)"
      let start = end
      while (start > 0 && !lines[start].trimStart().startsWith("/**")) start--
      const body = lines
        .slice(start, end + 1)
        .join("\n")
        .replace(/^\s*\/\*\*|\*\/\s*$/g, "")
        .split("\n")
        .map((l) => l.replace(/^\s*\* ?/, ""))
      const firstTag = body.findIndex((l) => l.trimStart().startsWith("@"))
      const description = (firstTag < 0 ? body : body.slice(0, firstTag)).join("").trim()
      const since = body.some((l) => /^@since\s+\d+\.\d+\.\d+/.test(l.trim()))
      if (description === "" && !since) return "doc comment without a description or @since"
      if (description === "") return "doc comment without a description"
      return since ? undefined : "doc comment without @since"
    })()
    if (problem !== undefined) problems.push({ file, name: names.join(", "), line: i + 1, problem })
  })
  return problems
}

const sourcesOf = (name) =>
  readdirSync(join(root, "packages", name, "src"))
    .filter((f) => f.endsWith(".ts"))
    .sort()
    .map((f) => `packages/${name}/src/${f}`)

const failures = []
const toleratedMissing = []
const stale = []
const shapes = shaper(root, selected)
for (const name of selected) {
  const cwd = join(root, "packages", name)
  const problems = sourcesOf(name).flatMap(scan)
  failures.push(...problems.filter((p) => !tolerated.includes(p.file)))
  const allowed = problems.filter((p) => tolerated.includes(p.file))
  toleratedMissing.push(...allowed)
  for (const file of tolerated.filter((f) => f.startsWith(`packages/${name}/`) && existsSync(join(root, f)))) {
    if (!allowed.some((p) => p.file === file)) stale.push(file)
  }
  // docgen builds nothing while one export lacks a tag: leave out the tolerated files that still do.
  const skipped = [...new Set(allowed.map((p) => p.file.slice(`packages/${name}/`.length)))]
  const run = docgen(cwd, skipped)
  if (run.error) {
    console.error(`docs ${name}: could not run docgen: ${run.error.message} (run npm ci first)`)
    process.exit(1)
  }
  if (run.status !== 0) {
    const missed = missingOf(run.output).map((m) => ({ ...m, file: `packages/${name}/${m.file}` }))
    const unseen = missed.filter((m) => !problems.some((p) => p.file === m.file && p.name.split(", ").includes(m.name)))
    if (missed.length > 0 && unseen.length === 0) continue // already listed by the scan
    failures.push(...unseen)
    if (missed.length === 0)
      failures.push({ file: `packages/${name}`, name: "docgen", problem: `failed:\n${run.output.trim()}` })
    continue
  }
  // Gather the pages: docs/api/<package>/<Module>.ts.md, without docgen's Jekyll front matter.
  const out = join(root, "docs", "api", name)
  rmSync(out, { recursive: true, force: true })
  mkdirSync(out, { recursive: true })
  const modules = join(cwd, "docs", "modules")
  const pages = new Map(
    readdirSync(modules)
      .filter((f) => f.endsWith(".ts.md"))
      .map((page) => [page, readFileSync(join(modules, page), "utf8").replace(/^(?:\*\*\*|---)\n[\s\S]*?\n---\n+/, "")])
  )
  rmSync(join(cwd, "docs"), { recursive: true, force: true })
  const shaped = shapes.add(name, pages)
  for (const [page, text] of pages) writeFileSync(join(out, page), text)
  const left = skipped.length === 0 ? "" : ` (left out until tagged: ${skipped.join(", ")})`
  console.log(
    `docs ${name}: ${pages.size} module pages in docs/api/${name}/${left}; fields shown for ${shaped.classes + shaped.reexports} classes and re-exports, ${shaped.aliases} aliases expanded`
  )
}
shapes.close()

const describe = (p) => `${p.file}${p.line === undefined ? "" : `:${p.line}`}: ${p.name}: ${p.problem}`

if (toleratedMissing.length > 0) {
  const files = new Set(toleratedMissing.map((p) => p.file))
  console.log(
    `\n${toleratedMissing.length} exports in ${files.size} tolerated files (scripts/docs.mjs) still lack a doc comment or @since:`
  )
  for (const p of toleratedMissing) console.log(`  ${describe(p)}`)
}
if (stale.length > 0) {
  console.log("\nThese tolerated files have every tag now; remove them from the list in scripts/docs.mjs:")
  for (const f of stale) console.log(`  ${f}`)
}
if (failures.length > 0) {
  console.error(`\ndocs check FAILED (${failures.length}):`)
  for (const p of failures) console.error(`  ${describe(p)}`)
  process.exit(1)
}

// An index of what was built, by package and module.
const index = [
  "# hostnode API documentation",
  "",
  "Built by `npm run docs` from the doc comments of each package's sources. The contract these packages",
  "implement is [the Go package, in this repository's words](../go-contract.md).",
  ""
]
for (const name of packages) {
  const dir = join(root, "docs", "api", name)
  if (!existsSync(dir)) continue
  index.push(`## @hostnode/${name}`, "")
  for (const page of readdirSync(dir).sort()) {
    const text = readFileSync(join(dir, page), "utf8")
    const overview = (text.match(/## .* overview\n\n([\s\S]*?)\n\n/)?.[1] ?? "")
      .replace(/\s+/g, " ")
      .split(/(?<=\.) /)[0]
    index.push(`- [${page.replace(/\.ts\.md$/, "")}](${name}/${page})${overview === "" ? "" : `: ${overview}`}`)
  }
  index.push("")
}
writeFileSync(join(root, "docs", "api", "README.md"), index.join("\n"))
cpSync(join(root, "docs", "api", "README.md"), join(root, "docs", "api", "index.md"))
console.log("docs: docs/api/README.md")

// What each package's tarball carries: its pages and the docs its README links.
for (const name of selected) {
  try {
    const written = packageDocs(root, name)
    console.log(`docs ${name}: packages/${name}/docs/, ${written.length} files for its tarball`)
  } catch (e) {
    console.error(`docs ${name}: ${e.message}`)
    process.exit(1)
  }
}
