/**
 * The system calls the real layers make, through koffi (prebuilt, no
 * compiler): the `*at` family relative to directory file descriptors,
 * `statx` with the mount id, `getdents64` for names as bytes, `openat2`
 * (through `syscall`, which glibc does not wrap), `renameat2`, `umount2`.
 * Every call is synchronous, and made in the helper process (`io/server.ts`),
 * never on the agent's event loop: a call on a dead file system can block
 * forever, and only a process the agent can give up on may wait for it.
 *
 * Internal: the helper process binds them; the agent loads them only to
 * check, when a layer is built, that the helper will be able to. Loading fails (a `LibcUnavailable`) on a platform
 * without koffi's prebuilt binary, libc.so.6 or a known syscall table.
 *
 * @since 0.2.0
 */
import { getSystemErrorMap } from "node:util"
import koffi from "koffi"

/** Why the bindings could not be loaded. */
export class LibcUnavailable extends Error {
  override readonly name = "LibcUnavailable"
}

/** Open flags and other constants that differ between Linux architectures. */
interface ArchConstants {
  readonly O_DIRECTORY: number
  readonly O_NOFOLLOW: number
  readonly O_PATH: number
  readonly SYS_openat2: number
}

const arch: Readonly<Record<string, ArchConstants>> = {
  x64: { O_DIRECTORY: 0o200000, O_NOFOLLOW: 0o400000, O_PATH: 0o10000000, SYS_openat2: 437 },
  arm64: { O_DIRECTORY: 0o40000, O_NOFOLLOW: 0o100000, O_PATH: 0o10000000, SYS_openat2: 437 }
}

/** The flags and constants the layers use, for this architecture. */
export const constants = (() => {
  const a = arch[process.arch]
  const base = {
    O_RDONLY: 0,
    O_WRONLY: 1,
    O_CREAT: 0o100,
    O_EXCL: 0o200,
    O_NOCTTY: 0o400,
    O_NONBLOCK: 0o4000,
    O_CLOEXEC: 0o2000000,
    AT_FDCWD: -100,
    AT_SYMLINK_NOFOLLOW: 0x100,
    AT_REMOVEDIR: 0x200,
    AT_EMPTY_PATH: 0x1000,
    STATX_BASIC_STATS: 0x7ff,
    STATX_MNT_ID: 0x1000,
    RESOLVE_NO_XDEV: 0x01,
    RESOLVE_NO_MAGICLINKS: 0x02,
    RESOLVE_NO_SYMLINKS: 0x04,
    RESOLVE_BENEATH: 0x08,
    RESOLVE_IN_ROOT: 0x10,
    RENAME_NOREPLACE: 1,
    MNT_DETACH: 2,
    LOCK_EX: 2,
    LOCK_UN: 8,
    LOCK_NB: 4,
    SEEK_HOLE: 4,
    UMOUNT_NOFOLLOW: 8,
    AT_STATX_DONT_SYNC: 0x4000,
    F_GETFL: 3,
    F_SETFL: 4,
    F_DUPFD_CLOEXEC: 1030,
    POLLIN: 1,
    PR_SET_PDEATHSIG: 1,
    CLONE_FS: 0x200,
    CLONE_NEWNS: 0x20000,
    CLONE_NEWNET: 0x40000000,
    SIGKILL: 9,
    SYS_pidfd_open: 434,
    SYS_pidfd_send_signal: 424,
    SYS_pidfd_getfd: 438
  }
  return a === undefined ? undefined : { ...base, ...a }
})()

const errnoMap = getSystemErrorMap()

/** The errno name and message for a positive errno, as strerror would give them. */
export const describeErrno = (errno: number): { readonly errno: string; readonly message: string } => {
  const known = errnoMap.get(-errno)
  return known === undefined
    ? { errno: `E${errno}`, message: `errno ${errno}` }
    : { errno: known[0], message: known[1] }
}

type Ptr = Uint8Array | null

/** The bound functions; each returns -1 (and sets errno) on failure, as libc does. */
export interface Libc {
  readonly openat: (dirfd: number, path: Ptr, flags: number, mode: number) => number
  readonly openat2: (dirfd: number, path: Ptr, how: Uint8Array) => number
  readonly close: (fd: number) => number
  readonly statx: (dirfd: number, path: Ptr, flags: number, mask: number, buf: Uint8Array) => number
  readonly getdents64: (fd: number, buf: Uint8Array, count: number) => number
  readonly unlinkat: (dirfd: number, path: Ptr, flags: number) => number
  readonly mkdirat: (dirfd: number, path: Ptr, mode: number) => number
  readonly symlinkat: (target: Ptr, dirfd: number, path: Ptr) => number
  readonly readlinkat: (dirfd: number, path: Ptr, buf: Uint8Array, size: number) => number
  readonly renameat2: (olddirfd: number, oldpath: Ptr, newdirfd: number, newpath: Ptr, flags: number) => number
  readonly fchownat: (dirfd: number, path: Ptr, uid: number, gid: number, flags: number) => number
  readonly fchmod: (fd: number, mode: number) => number
  readonly fsync: (fd: number) => number
  readonly syncfs: (fd: number) => number
  readonly pread: (fd: number, buf: Uint8Array, count: number, offset: number) => number
  readonly pwrite: (fd: number, buf: Uint8Array, count: number, offset: number) => number
  readonly ftruncate: (fd: number, length: number) => number
  readonly futimens: (fd: number, times: Uint8Array) => number
  readonly umount2: (target: Ptr, flags: number) => number
  readonly readlink: (path: Ptr, buf: Uint8Array, size: number) => number
  readonly lseek: (fd: number, offset: number, whence: number) => number
  readonly flock: (fd: number, operation: number) => number
  readonly fcntl: (fd: number, cmd: number, arg: number) => number
  readonly poll: (fds: Uint8Array, nfds: number, timeout: number) => number
  readonly eventfd: (initval: number, flags: number) => number
  readonly prctl: (option: number, arg: number) => number
  readonly getppid: () => number
  readonly unshare: (flags: number) => number
  readonly setns: (fd: number, nstype: number) => number
  readonly fchdir: (fd: number) => number
  readonly chroot: (path: Uint8Array) => number
  /** A system call with integer arguments only (`pidfd_open`, `pidfd_send_signal`, `pidfd_getfd`). */
  readonly syscall3: (nr: number, a: number, b: number, c: number) => number
  readonly errno: () => number
}

let loaded: Libc | LibcUnavailable | undefined

/** The bindings, loaded once per process; a {@link LibcUnavailable} where they cannot be. */
export const load = (): Libc | LibcUnavailable => {
  if (loaded !== undefined) return loaded
  loaded = bind()
  return loaded
}

const bind = (): Libc | LibcUnavailable => {
  // koffi throws where it cannot load: the one place this module turns a throw into a value.
  try {
    if (process.platform !== "linux" || constants === undefined) {
      throw new Error(`no system call table for ${process.platform}/${process.arch}`)
    }
    const c = constants
    const libc = koffi.load("libc.so.6")
    const f = (decl: string) => libc.func(decl) as (...args: Array<unknown>) => number
    const syscall = f("intptr_t syscall(intptr_t nr, intptr_t a, const void *b, void *c, uintptr_t d)")
    const openat = f("int openat(int dirfd, const void *path, int flags, uint32_t mode)")
    const close = f("int close(int fd)")
    const statx = f("int statx(int dirfd, const void *path, int flags, uint32_t mask, void *buf)")
    const getdents64 = f("intptr_t getdents64(int fd, void *buf, uintptr_t count)")
    const unlinkat = f("int unlinkat(int dirfd, const void *path, int flags)")
    const mkdirat = f("int mkdirat(int dirfd, const void *path, uint32_t mode)")
    const symlinkat = f("int symlinkat(const void *target, int dirfd, const void *path)")
    const readlinkat = f("intptr_t readlinkat(int dirfd, const void *path, void *buf, uintptr_t size)")
    const renameat2 = f(
      "int renameat2(int olddirfd, const void *oldpath, int newdirfd, const void *newpath, uint32_t flags)"
    )
    const fchownat = f("int fchownat(int dirfd, const void *path, uint32_t uid, uint32_t gid, int flags)")
    const fchmod = f("int fchmod(int fd, uint32_t mode)")
    const fsync = f("int fsync(int fd)")
    const syncfs = f("int syncfs(int fd)")
    const pread = f("intptr_t pread64(int fd, void *buf, uintptr_t count, int64_t offset)")
    const pwrite = f("intptr_t pwrite64(int fd, const void *buf, uintptr_t count, int64_t offset)")
    const ftruncate = f("int ftruncate64(int fd, int64_t length)")
    const futimens = f("int futimens(int fd, const void *times)")
    const umount2 = f("int umount2(const void *target, int flags)")
    const readlink = f("intptr_t readlink(const void *path, void *buf, uintptr_t size)")
    const lseek = f("int64_t lseek64(int fd, int64_t offset, int whence)")
    const flock = f("int flock(int fd, int operation)")
    const fcntl = f("int fcntl(int fd, int cmd, int arg)")
    const poll = f("int poll(void *fds, uintptr_t nfds, int timeout)")
    const eventfd = f("int eventfd(unsigned int initval, int flags)")
    const prctl = f("int prctl(int option, uintptr_t arg)")
    const getppid = f("int getppid()")
    const unshare = f("int unshare(int flags)")
    const setns = f("int setns(int fd, int nstype)")
    const fchdir = f("int fchdir(int fd)")
    const chroot = f("int chroot(const void *path)")
    const syscallInts = libc.func("intptr_t syscall(intptr_t nr, intptr_t a, intptr_t b, intptr_t c)") as (
      ...args: Array<unknown>
    ) => number
    return {
      openat: (d, p, fl, m) => openat(d, p, fl, m),
      openat2: (d, p, how) => syscall(c.SYS_openat2, d, p, how, how.length),
      close: (fd) => close(fd),
      statx: (d, p, fl, m, b) => statx(d, p, fl, m, b),
      getdents64: (fd, b, n) => getdents64(fd, b, n),
      unlinkat: (d, p, fl) => unlinkat(d, p, fl),
      mkdirat: (d, p, m) => mkdirat(d, p, m),
      symlinkat: (t, d, p) => symlinkat(t, d, p),
      readlinkat: (d, p, b, n) => readlinkat(d, p, b, n),
      renameat2: (od, op, nd, np, fl) => renameat2(od, op, nd, np, fl),
      fchownat: (d, p, u, g, fl) => fchownat(d, p, u, g, fl),
      fchmod: (fd, m) => fchmod(fd, m),
      fsync: (fd) => fsync(fd),
      syncfs: (fd) => syncfs(fd),
      pread: (fd, b, n, o) => pread(fd, b, n, o),
      pwrite: (fd, b, n, o) => pwrite(fd, b, n, o),
      ftruncate: (fd, n) => ftruncate(fd, n),
      futimens: (fd, t) => futimens(fd, t),
      umount2: (t, fl) => umount2(t, fl),
      readlink: (p, b, n) => readlink(p, b, n),
      lseek: (fd, o, w) => lseek(fd, o, w),
      flock: (fd, op) => flock(fd, op),
      fcntl: (fd, cmd, arg) => fcntl(fd, cmd, arg),
      poll: (fds, n, t) => poll(fds, n, t),
      eventfd: (v, fl) => eventfd(v, fl),
      prctl: (o, a) => prctl(o, a),
      getppid: () => getppid(),
      unshare: (fl) => unshare(fl),
      setns: (fd, t) => setns(fd, t),
      fchdir: (fd) => fchdir(fd),
      chroot: (p) => chroot(p),
      syscall3: (nr, a, b, c3) => syscallInts(nr, a, b, c3),
      errno: () => koffi.errno()
    }
  } catch (e) {
    return new LibcUnavailable(e instanceof Error ? e.message : String(e))
  }
}

/** `bytes` with a terminating NUL, as a C string argument. */
export const cString = (bytes: Uint8Array): Uint8Array => {
  const out = new Uint8Array(bytes.length + 1)
  out.set(bytes)
  return out
}

/** The empty C string, for the `AT_EMPTY_PATH` calls on a descriptor itself. */
export const emptyPath = new Uint8Array(1)
