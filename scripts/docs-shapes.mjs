// What docgen's pages leave out, added from the TypeScript checker (the
// workspace's TypeScript 7, through its `typescript/unstable/sync` API): used
// by scripts/docs.mjs on each package's pages once docgen has written them.
//
// docgen prints a class as `export declare class X` with nothing of what it
// extends, so a class built with `Schema.TaggedError(...)` (every error and
// reason class) shows none of its fields; it prints a type alias as written,
// so `export type FixtureEntry = Seed.FixtureEntry` shows no shape; and a name
// re-exported with `export { X } from "./internal/..."` shows as
// `export declare const X: typeof X`. Here, for each page:
// - a class with an `extends` clause gets the signature
//   `export declare class X extends <what it extends, its field literal elided> { <fields> }`,
//   each field with the type the checker gives it (and its doc comment);
// - a type alias whose right-hand side is only a name (`A.B`, `typeof X.Type`)
//   gets a **Shape** block: the type it names, expanded;
// - a re-exported name gets the signature of what it names: the class as
//   above, an interface or type alias as declared, a value with its type.
import { join } from "node:path"
import { SyntaxKind } from "typescript/unstable/ast"
import { API, SymbolFlags } from "typescript/unstable/sync"

// TypeScript's NodeBuilderFlags: NoTruncation, MultilineObjectLiterals, InTypeAlias.
const NoTruncation = 1
const MultilineObjectLiterals = 1024
const InTypeAlias = 8388608

/** A name whose value or type is an alias of a single named type: expanded. */
const aliasOfAName = /^(?:typeof\s+)?[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*$/

/**
 * One checker for the packages `pkgs` under `root`: `add(pkg, pages)` adds
 * the shapes to the pages of `pkg` (file name `X.ts.md` → its markdown), in
 * place, and returns what it did, per kind; `close()` ends the checker.
 */
export const shaper = (root, pkgs) => {
  const configOf = (pkg) => join(root, "packages", pkg, "tsconfig.src.json")
  const api = new API({ cwd: root })
  const snapshot = api.updateSnapshot({ openProjects: pkgs.map(configOf) })
  return {
    add: (pkg, pages) => addShapes(root, snapshot.getProject(configOf(pkg)), pkg, pages),
    close: () => api.close()
  }
}

const addShapes = (root, project, pkg, pages) => {
  const counts = { classes: 0, aliases: 0, reexports: 0 }
  {
    const { checker } = project
    const nodeOf = (handle) => handle.resolve(project)
    const textOf = (node) => node.getText(node.getSourceFile())
    const inWorkspace = (path) => path.startsWith(join(root, "packages")) && !path.includes("/node_modules/")
    const declarationOf = (symbol, kind) => symbol.declarations.find((d) => kind === undefined || d.kind === kind)
    const kind = (name) => SyntaxKind[name]
    const docOf = (symbol, indent) => {
      const doc = symbol.getDocumentationComment(checker).trim()
      if (doc === "") return []
      const lines = doc.split("\n")
      return lines.length === 1
        ? [`${indent}/** ${lines[0]} */`]
        : [`${indent}/**`, ...lines.map((l) => `${indent} * ${l}`.trimEnd()), `${indent} */`]
    }
    // `import("./internal/x.ts").Name` is how the checker names a type the page's module does not import: `Name`.
    const unqualified = (text) => text.replace(/import\("[^"]*"\)\./g, "")
    const typeText = (type, at) => unqualified(checker.typeToString(type, at, NoTruncation))
    const isField = (handle) =>
      handle !== undefined &&
      (handle.kind === kind("PropertyAssignment") || handle.kind === kind("ShorthandPropertyAssignment"))

    // One member of a class or interface: `readonly name?: type`, its doc above it.
    const member = (p, at, indent) => {
      const type = checker.getTypeOfSymbol(p)
      const optional = (p.flags & SymbolFlags.Optional) !== 0
      const declaration = p.declarations[0]
      const node = declaration === undefined ? undefined : nodeOf(declaration)
      const written = node === undefined ? "" : textOf(node)
      const getterOnly = (p.flags & SymbolFlags.GetAccessor) !== 0 && (p.flags & SymbolFlags.SetAccessor) === 0
      // A Schema field (a property of the fields literal) is readonly, as is a getter alone; a declared one says so.
      const readonly =
        getterOnly || isField(declaration) || (p.checkFlags & 8) !== 0 || /^(?:\w+\s+)*readonly\s/.test(written)
      const shown = type === undefined ? "unknown" : typeText(type, at)
      return [...docOf(p, indent), `${indent}${readonly ? "readonly " : ""}${p.name}${optional ? "?" : ""}: ${shown}`]
    }

    // The members of a class worth showing: `_tag`, its fields (from what it extends, or declared), its getters;
    // in that order, each group as written.
    const classMembers = (symbol) => {
      const type = checker.getDeclaredTypeOfSymbol(symbol)
      const shown = checker.getPropertiesOfType(type).filter((p) => {
        if (p.name.startsWith("~") || p.name.startsWith("__@") || p.name.startsWith("#")) return false
        if (p.name === "_tag") return true
        if ((p.flags & SymbolFlags.Method) !== 0) return false
        const d = p.declarations[0]
        return d !== undefined && inWorkspace(d.path)
      })
      const rank = (p) => (p.name === "_tag" ? 0 : isField(p.declarations[0]) ? 1 : 2)
      const position = (p) => nodeOf(p.declarations[0])?.pos ?? 0
      return shown.sort((a, b) => rank(a) - rank(b) || position(a) - position(b))
    }

    // `extends Schema.TaggedError<X>()("X", { ... })`: the heritage as written, its object literals elided.
    const heritageOf = (node) => {
      const clause = node.heritageClauses?.find((h) => textOf(h).startsWith("extends"))
      if (clause === undefined) return undefined
      const sf = node.getSourceFile()
      const start = clause.getStart(sf)
      const literals = []
      const visit = (n) => {
        if (n.kind === kind("ObjectLiteralExpression")) literals.push(n)
        else n.forEachChild(visit)
      }
      clause.forEachChild(visit)
      let text = textOf(clause)
      for (const l of literals.sort((a, b) => b.getStart(sf) - a.getStart(sf))) {
        text = `${text.slice(0, l.getStart(sf) - start)}{ … }${text.slice(l.end - start)}`
      }
      return text.replace(/\s*\n\s*/g, " ")
    }

    const classSignature = (name, symbol) => {
      const handle = declarationOf(symbol, kind("ClassDeclaration"))
      if (handle === undefined) return undefined
      const node = nodeOf(handle)
      const heritage = heritageOf(node)
      if (heritage === undefined) return undefined
      const parameters = node.typeParameters?.length ? `<${node.typeParameters.map((t) => textOf(t)).join(", ")}>` : ""
      const members = classMembers(symbol).flatMap((p) => member(p, node, "  "))
      return [`export declare class ${name}${parameters} ${heritage} {`, ...members, "}"].join("\n")
    }

    // The type an alias names, expanded: an interface's or class's members, anything else as the checker prints it.
    const shapeOf = (symbol, node) => {
      const type = checker.getDeclaredTypeOfSymbol(symbol)
      if (type.isClassOrInterface?.()) {
        const members = checker.getPropertiesOfType(type).flatMap((p) => member(p, node, "  "))
        return ["{", ...members, "}"].join("\n")
      }
      const text = unqualified(checker.typeToString(type, node, NoTruncation | MultilineObjectLiterals | InTypeAlias))
      // The checker indents by four and ends members with `;`: the pages' style is two, and none.
      return text.replace(/;$/gm, "").replace(/^((?: {4})+)/gm, (indent) => " ".repeat(indent.length / 2))
    }

    const aliasShape = (symbol) => {
      const handle = declarationOf(symbol, kind("TypeAliasDeclaration"))
      if (handle === undefined) return undefined
      const node = nodeOf(handle)
      const written = textOf(node.type).trim()
      if (!aliasOfAName.test(written)) return undefined
      const shape = shapeOf(symbol, node)
      return shape.replace(/\s+/g, " ") === written.replace(/\s+/g, " ") ? undefined : shape
    }

    for (const [page, markdown] of pages) {
      const source = join(root, "packages", pkg, "src", page.replace(/\.md$/, ""))
      const sf = project.program.getSourceFile(source)
      if (sf === undefined) continue
      const module = checker.getSymbolAtLocation(sf)
      if (module === undefined) continue
      const exported = new Map(checker.getExportsOfModule(module).map((s) => [s.name, s]))
      const sections = markdown.split(/^(?=## )/m)
      const out = sections.map((section) => {
        const heading = /^## (\S+)(?: \(([a-z ]+)\))?\n/.exec(section)
        if (heading === null) return section
        const [, name, what] = heading
        const exportSymbol = exported.get(name)
        if (exportSymbol === undefined) return section
        const signature = /(\*\*Signature\*\*\n\n```ts\n)([\s\S]*?)(\n```\n)/.exec(section)
        if (signature === null) return section
        const replace = (text) =>
          section.slice(0, signature.index) +
          signature[1] +
          text +
          signature[3] +
          section.slice(signature.index + signature[0].length)
        const addShape = (shape) =>
          section.slice(0, signature.index + signature[0].length) +
          `\n**Shape**\n\n\`\`\`ts\n${shape}\n\`\`\`\n` +
          section.slice(signature.index + signature[0].length)
        const reexport = (exportSymbol.flags & SymbolFlags.Alias) !== 0
        const symbol = reexport ? checker.getAliasedSymbol(exportSymbol) : exportSymbol
        if (reexport && new RegExp(`^export declare const ${name}: typeof ${name}$`).test(signature[2])) {
          // A stub for a name declared elsewhere: what it names.
          if ((symbol.flags & SymbolFlags.Class) !== 0) {
            const text = classSignature(name, symbol)
            if (text !== undefined) {
              counts.reexports++
              return replace(text)
            }
          }
          for (const k of ["InterfaceDeclaration", "TypeAliasDeclaration"]) {
            const handle = declarationOf(symbol, kind(k))
            if (handle === undefined) continue
            counts.reexports++
            const declared = textOf(nodeOf(handle)).replace(/^(?!export )/, "export ")
            const shape = k === "TypeAliasDeclaration" ? aliasShape(symbol) : undefined
            const replaced = replace(declared)
            if (shape === undefined) return replaced
            counts.aliases++
            const at = replaced.indexOf(signature[3], replaced.indexOf(declared)) + signature[3].length
            return `${replaced.slice(0, at)}\n**Shape**\n\n\`\`\`ts\n${shape}\n\`\`\`\n${replaced.slice(at)}`
          }
          const valueHandle = symbol.valueDeclaration ?? symbol.declarations[0]
          const type = checker.getTypeOfSymbol(symbol)
          if (valueHandle !== undefined && type !== undefined) {
            counts.reexports++
            return replace(`export declare const ${name}: ${typeText(type, nodeOf(valueHandle))}`)
          }
          return section
        }
        if (what === "class" && (symbol.flags & SymbolFlags.Class) !== 0) {
          const text = classSignature(name, symbol)
          if (text === undefined) return section
          counts.classes++
          // docgen's constructor line, if it printed one, stays in the body.
          const ctor = /\{ (constructor[\s\S]*) \}$/.exec(signature[2])?.[1]
          return replace(ctor === undefined ? text : text.replace(/\n}$/, `\n  ${ctor}\n}`))
        }
        if (what === "type alias" && (symbol.flags & SymbolFlags.TypeAlias) !== 0) {
          const shape = aliasShape(symbol)
          if (shape === undefined) return section
          counts.aliases++
          return addShape(shape)
        }
        return section
      })
      pages.set(page, out.join(""))
    }
  }
  return counts
}
