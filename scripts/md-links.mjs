// The relative links of a markdown text: what scripts/package-docs.mjs copies
// into a package and scripts/consumer-check.mjs checks in each tarball.
// Inline links `[text](target "title")`, images, and reference definitions
// `[label]: target`; links inside code (fenced blocks, `code spans`) are not
// links. A relative link is one with no scheme (`https:`, `mailto:`) that is
// not only an anchor (`#section`).

const withoutCode = (markdown) =>
  markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "").replace(/``[^`\n]*``|`[^`\n]*`/g, "")

/** Every link target of `markdown`, in order, as written (anchor included). */
export const linksOf = (markdown) => {
  const text = withoutCode(markdown)
  const inline = [...text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1])
  const references = [...text.matchAll(/^ {0,3}\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)].map((m) => m[1])
  return [...inline, ...references]
}

/** Whether `target` is relative: a path in the same tree, not a URL or a bare anchor. */
export const isRelative = (target) => !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith("#")

/** The path part of a relative link (no anchor or query), decoded. */
export const pathOf = (target) => decodeURIComponent(target.replace(/[#?].*$/, ""))
