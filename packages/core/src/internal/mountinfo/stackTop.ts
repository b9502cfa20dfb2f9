/**
 * The order of a stack of mounts on one path, told by parent ids: the kernel
 * gives a new mount the lowest free id, so the top of a stack is not the
 * mount with the highest id. `Programs` exports it for the simulated `umount`,
 * the fixtures and the suites.
 *
 * @since 0.4.0
 */

interface Stacked {
  readonly id: number
  readonly parentId: number
}

/** The mounts of one stack, top first: each above the one it sits on. */
export const topFirst = <E extends Stacked>(here: ReadonlyArray<E>): Array<E> => {
  const byId = new Map(here.map((e) => [e.id, e] as const))
  const height = (e: E): number => {
    let h = 0
    for (let at = byId.get(e.parentId); at !== undefined && h < here.length; at = byId.get(at.parentId)) h++
    return h
  }
  return here
    .map((e) => ({ e, h: height(e) }))
    .sort((a, b) => b.h - a.h)
    .map(({ e }) => e)
}

/** The top of a stack: the mount no other one there sits on. */
export const topOf = <E extends Stacked>(here: ReadonlyArray<E>): E | undefined =>
  here.find((e) => !here.some((x) => x !== e && x.parentId === e.id))
