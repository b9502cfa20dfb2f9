// The documentation a package carries in its tarball, so that its README's
// links work in node_modules and on the registry's page: packages/<pkg>/docs/
// (gitignored), made from the repository's docs/, with
// - api/README.md, an index of the package's API pages, and api/<pkg>/, the
//   pages themselves (built by `npm run docs` into docs/api/<pkg>/);
// - every page of docs/ the README links to, and the pages those link to in
//   turn, at the same paths as in the repository (a link from a package's
//   README is written `docs/...`, as from the repository's root).
// A link in a copied page to a file of the repository the package does not
// carry (the root README, bench/README.md, a source file) is made an absolute
// link to that file in the repository. A README link to anything outside the
// package (`../../docs/...`), or a link to a file that does not exist, fails.
//
// `npm run docs` runs it for every package it builds; each package's
// `prepack` runs it for itself (`npm pack`, `npm publish`), from the pages
// `npm run docs` left in docs/api/.
//
// Usage: node scripts/package-docs.mjs [core|node|sim|test|cli ...]
//        (no argument, from a package's directory: that package)
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { basename, dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { isRelative, linksOf, pathOf } from "./md-links.mjs"

const here = join(dirname(fileURLToPath(import.meta.url)), "..")
const packages = ["core", "node", "sim", "test", "cli"]

/** The repository's address for a file of it, from the package's `repository` field. */
const repositoryUrl = (root, pkg) => {
  const manifest = JSON.parse(readFileSync(join(root, "packages", pkg, "package.json"), "utf8"))
  const url = (manifest.repository?.url ?? "").replace(/^git\+/, "").replace(/\.git$/, "")
  if (!url.startsWith("https://")) throw new Error(`packages/${pkg}/package.json: no https repository url`)
  return (path) => `${url}/${statSync(join(root, path)).isDirectory() ? "tree" : "blob"}/main/${path}`
}

const overviewOf = (page) =>
  (page.match(/## .* overview\n\n([\s\S]*?)\n\n/)?.[1] ?? "").replace(/\s+/g, " ").split(/(?<=\.) /)[0]

/**
 * Builds packages/<pkg>/docs/ from the repository's docs/ under `root`.
 * Returns the files written, relative to the package.
 */
export const packageDocs = (root, pkg) => {
  const packageDir = join(root, "packages", pkg)
  const pagesDir = join(root, "docs", "api", pkg)
  if (!existsSync(pagesDir)) {
    throw new Error(`docs/api/${pkg}/ is not built: run \`npm run docs\` (after \`npm run build\`) first`)
  }
  const out = join(packageDir, "docs")
  rmSync(out, { recursive: true, force: true })
  const written = []
  const write = (path, text) => {
    mkdirSync(dirname(join(packageDir, path)), { recursive: true })
    writeFileSync(join(packageDir, path), text)
    written.push(path)
  }

  // The API pages, and their index.
  const pages = readdirSync(pagesDir)
    .filter((f) => f.endsWith(".ts.md"))
    .sort()
  for (const page of pages) {
    cpSync(join(pagesDir, page), join(out, "api", pkg, page))
    written.push(`docs/api/${pkg}/${page}`)
  }
  write(
    "docs/api/README.md",
    [
      `# @hostnode/${pkg} API`,
      "",
      "One page per module, built from the doc comments of the package's sources (`npm run docs` in the repository).",
      "",
      ...pages.map((page) => {
        const overview = overviewOf(readFileSync(join(pagesDir, page), "utf8"))
        return `- [${page.replace(/\.ts\.md$/, "")}](${pkg}/${page})${overview === "" ? "" : `: ${overview}`}`
      }),
      ""
    ].join("\n")
  )

  // The README's links into docs/, and what those pages link to, copied; links elsewhere made absolute.
  const urlOf = repositoryUrl(root, pkg)
  const problems = []
  const readme = readFileSync(join(packageDir, "README.md"), "utf8")
  const queue = []
  for (const target of linksOf(readme).filter(isRelative)) {
    const path = pathOf(target)
    const inPackage = relative(packageDir, resolve(packageDir, path))
    if (inPackage.startsWith("..")) {
      problems.push(`README.md links ${target}, outside the package: link docs/... (copied here) or an absolute URL`)
    } else if (inPackage.startsWith("docs/") && !inPackage.startsWith("docs/api/")) {
      queue.push(inPackage)
    } else if (!existsSync(join(packageDir, inPackage))) {
      problems.push(`README.md links ${target}, which the package does not have`)
    }
  }
  const copied = new Set()
  while (queue.length > 0) {
    const path = queue.shift()
    if (copied.has(path)) continue
    copied.add(path)
    const source = join(root, path)
    if (!existsSync(source)) {
      problems.push(`${path} is linked but the repository has no ${path}`)
      continue
    }
    if (!path.endsWith(".md")) {
      mkdirSync(dirname(join(packageDir, path)), { recursive: true })
      cpSync(source, join(packageDir, path))
      written.push(path)
      continue
    }
    const text = readFileSync(source, "utf8")
    // Links outside fenced code blocks (the odd parts of this split are the blocks).
    const rewrite = (prose) =>
      prose.replace(/(\]\(\s*<?|^ {0,3}\[[^\]\n]+\]:\s*<?)([^)\s>]+)/gm, (whole, lead, target) => {
        if (!isRelative(target)) return whole
        const inRepository = relative(root, resolve(dirname(source), pathOf(target)))
        const cut = target.search(/[#?]/)
        const anchor = cut < 0 ? "" : target.slice(cut)
        if (inRepository.startsWith("..") || !existsSync(join(root, inRepository))) {
          problems.push(`${path} links ${target}, which the repository does not have`)
          return whole
        }
        if (inRepository === `docs/api/README.md` || inRepository.startsWith(`docs/api/${pkg}/`)) return whole
        if (inRepository.startsWith("docs/") && !inRepository.startsWith("docs/api/")) {
          queue.push(inRepository)
          return whole
        }
        if (inRepository.startsWith("docs/api/")) {
          problems.push(`${path} links ${target}: another package's API pages, which this package does not carry`)
          return whole
        }
        return `${lead}${urlOf(inRepository)}${anchor}`
      })
    const parts = text.split(/(^```[^\n]*\n[\s\S]*?^```$)/m)
    write(path, parts.map((part, i) => (i % 2 === 1 ? part : rewrite(part))).join(""))
  }
  if (problems.length > 0) {
    throw new Error(`packages/${pkg}: the docs it carries have broken links:\n  ${problems.join("\n  ")}`)
  }
  return written
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const wanted = process.argv.slice(2)
  const selected = wanted.length > 0 ? wanted : [basename(process.cwd())]
  for (const pkg of selected) {
    if (!packages.includes(pkg)) {
      console.error(`package-docs: unknown package ${pkg}; known: ${packages.join(", ")}`)
      process.exit(2)
    }
    try {
      const written = packageDocs(here, pkg)
      console.log(`package-docs ${pkg}: ${written.length} files in packages/${pkg}/docs/`)
    } catch (e) {
      console.error(`package-docs ${pkg}: ${e.message}`)
      process.exit(1)
    }
  }
}
