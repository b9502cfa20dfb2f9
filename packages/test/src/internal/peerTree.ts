/**
 * The tree the resolution vectors run on, after the peers' suites
 * (filepath-securejoin's `SecureJoin` and `OpenInRoot` tests, Go's `os.Root`
 * tests, runc's): climbing links, absolute and relative links, chains,
 * dangling links, loops, a link to a file used as a directory, a
 * `/proc/self/root` stand-in, a 40-link chain and a 41-link one. Paths are
 * relative to the root under test; `outside` is a sibling directory of the
 * root that the test owns, the only place links out of the root point at.
 */
import type { Plant } from "./repave/trees.ts"

/** The chain `name0` -> `name1` -> ... -> `target`, `links` links long. */
const chain = (dir: string, name: string, links: number, target: string): Record<string, Plant> => {
  const out: Record<string, Plant> = {}
  for (let i = 0; i < links; i++) {
    out[`${dir}/${name}${i}`] = { link: i === links - 1 ? target : `${name}${i + 1}` }
  }
  return out
}

/**
 * The tree, relative to the root under test; `outside` is the sibling directory links out of the root name.
 *
 * @since 0.2.0
 */
export const peerTree = (outside: string): Record<string, Plant> => ({
  a: { dir: true },
  "b/c/d/e/f": { dir: true },
  "b/c/file": "a file",
  e: { link: "/b/c/d/e" },
  "b-file": { link: "b/c/file" },
  // Dangling links.
  "a-fake1": { link: "a/fake" },
  "a-fake2": { link: "a/fake/foo/bar/.." },
  "a-fake3": { link: "a/fake/../../b" },
  "c/a-fake1": { link: "a/fake" },
  // Non-lexical links: `..` after a link is the link target's parent.
  target: { dir: true },
  "link1/target_abs": { link: "/target" },
  "link1/target_rel": { link: "../target" },
  "link2/link1_abs": { link: "/link1" },
  "link2/link1_rel": { link: "../link1" },
  "link3/target_abs": { link: "/link2/link1_rel/target_rel" },
  "link3/target_rel": { link: "../link2/link1_rel/target_rel" },
  "link3/deep_dangling1": { link: "../link2/link1_rel/target_rel/nonexist" },
  "subdir/cousin_rel": { link: "../cousinparent/cousin" },
  "subdir/cousin_abs": { link: "/../cousinparent/cousin" },
  "subdir/cousin_deep": { link: "/../../../../../../../../../../../../../../../../cousinparent/cousin" },
  "cousinparent/cousin": { dir: true },
  // Deep dangling links, one component each; the second ends in a file used as a directory.
  "dangling/a": { link: "b/c" },
  "dangling/b/c": { link: "../c" },
  "dangling/c": { link: "d/e" },
  "dangling/d/e": { link: "../e" },
  "dangling/e": { link: "f/../g" },
  "dangling/f": { dir: true },
  "dangling/g": { link: "h/i/j/nonexistent" },
  "dangling/h/i/j": { dir: true },
  "dangling-file/a": { link: "b/c" },
  "dangling-file/b/c": { link: "../c" },
  "dangling-file/c": { link: "d/e" },
  "dangling-file/d/e": { link: "../e" },
  "dangling-file/e": { link: "f/../g" },
  "dangling-file/f": { dir: true },
  "dangling-file/g": { link: "h/i/j/file/foo" },
  "dangling-file/h/i/j/file": "a file",
  // Loops.
  "loop/basic-loop1": { link: "basic-loop1" },
  "loop/basic-loop2": { link: "/loop/basic-loop2" },
  "loop/basic-loop3": { link: "../loop/basic-loop3" },
  "loop/a/link": { link: "../b/link" },
  "loop/b/link": { link: "/loop/c/link" },
  "loop/c/link": { link: "/loop/d/link" },
  "loop/d": { link: "e" },
  "loop/e/link": { link: "../a/link" },
  "loop/link": { link: "a/link" },
  self: { link: "/../../../../../../../../self" },
  // Climbing out, lexically and through links.
  up: { link: "../../../../../../../.." },
  "b/c/d/out": { link: "../../../../../../outside" },
  "rel-out": { link: "../outside" },
  "abs-out": { link: outside },
  "abs-out-file": { link: `${outside}/secret` },
  // What `/proc/self/root` and `/proc/self/cwd` are, as plain links: `/` and a directory.
  "proc/self/root": { link: "/" },
  "proc/self/cwd": { link: "/a" },
  // Exactly 40 links (followed), and 41 (one too many).
  ...chain("chain", "l", 40, "/target"),
  ...chain("chain", "m", 41, "/target")
})
