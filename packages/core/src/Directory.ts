/**
 * Work below a root through directory handles: the `Directories` service.
 *
 * A path names a place only at the moment it is resolved, and a process that
 * writes below it can swap a directory for a link meanwhile. Every operation
 * here therefore acts on an open handle and one name in it (list, stat
 * without following, open a child without following a link or entering
 * another mount, unlink, create exclusively, rename between handles). A path
 * is resolved once, below a root handle, with chroot semantics: the kernel's
 * `openat2(RESOLVE_IN_ROOT)` where the layer has it, else the walk of
 * {@link make}, handle to handle. Names are bytes (`FileName`). The real
 * layer is in `@hostnode/node`, the simulated one in `@hostnode/sim`.
 *
 * @since 0.2.0
 */
import { Context, type Effect, type Scope } from "effect"
import type { DirectoryError } from "./DirectoryError.ts"
import type { HandleTypeId } from "./internal/directory/handle.ts"
import { derive } from "./internal/directory/resolve.ts"
import type { Identity, Program } from "./internal/programs/ops.ts"
import type { RemoveResult } from "./internal/programs/removeTree.ts"
import type {
  AppendedFile,
  BatchResult,
  CopyFile,
  Credentials,
  DirectoryToOpen,
  Entry,
  File,
  HashedFile,
  Move,
  OpenedDirectory,
  ReadFile,
  RemoveTreeOptions
} from "./Programs.ts"

/**
 * The errors of this module, defined in the leaf module `DirectoryError`.
 *
 * @since 0.4.0
 * @category errors
 */
export * from "./DirectoryError.ts"

/**
 * What `statx` says of a node, not following a link. `mountId` is the id of
 * the mount the node was reached in (the first field of `/proc/*\/mountinfo`):
 * a bind mount of a directory on the same device has the device of its
 * source but a mount id of its own, which is how a walk tells it apart.
 *
 * @since 0.2.0
 * @category models
 */
export interface Stat {
  /** What the node is, as `lstat` and `d_type` say; `Unknown` when a listing did not say (`DT_UNKNOWN`). */
  readonly type:
    | "File"
    | "Directory"
    | "SymbolicLink"
    | "BlockDevice"
    | "CharacterDevice"
    | "FIFO"
    | "Socket"
    | "Unknown"
  /** Permission bits only (0o7777). */
  readonly mode: number
  readonly uid: number
  readonly gid: number
  readonly size: number
  readonly nlink: number
  /** The device, as the mount table writes it: `major:minor`. */
  readonly device: string
  readonly inode: bigint
  readonly mountId: number
  readonly atimeNs: bigint
  readonly mtimeNs: bigint
}

/**
 * An open directory (or, from `openPath`, any node held without being
 * opened for reading). Implementations extend it with what they need (a file
 * descriptor, an inode) and mark it with `Programs.handle`; callers only pass
 * it back. It closes when the scope it was opened in closes.
 *
 * @since 0.2.0
 * @category models
 */
export interface Handle {
  readonly [HandleTypeId]: typeof HandleTypeId
  /** Where it was when it was opened, as a full path of this process (lossless string form), for reports. */
  readonly path: string
}

/**
 * What an implementation writes: one system call each, relative to a handle.
 * `resolveDirectory` is optional: a layer with the kernel's `openat2`
 * provides it; without it (or when it returns `undefined`) {@link make}
 * walks component by component.
 *
 * @since 0.2.0
 * @category models
 */
export interface Primitives {
  /**
   * Opens the directory at `path` (a full path trusted once: a decoded host
   * root) as a handle. The service `make` derives refuses a relative, empty
   * or climbing (`..`) path (`InvalidName`) before this is called.
   */
  readonly openRoot: (path: string) => Effect.Effect<Handle, DirectoryError, Scope.Scope>
  /**
   * Opens the child directory `name` of `dir` without following a link
   * (`SymbolicLink`, or `NotADirectory` for anything else). With
   * `sameMount`, a child that is the root of another mount is refused
   * (`OtherMount`) and closed again.
   */
  readonly openDirectory: (
    dir: Handle,
    name: Uint8Array,
    options?: { readonly sameMount?: boolean | undefined }
  ) => Effect.Effect<Handle, DirectoryError, Scope.Scope>
  /**
   * Opens the directory `..` of `dir` names now (`openat(fd, "..")`): the
   * directory it is in, or, at the root of a mount, the one the mount is on;
   * the process's root is its own parent. A directory moved since it was
   * opened gives its new parent: this is where it is, not how it was reached.
   */
  readonly openParent: (dir: Handle) => Effect.Effect<Handle, DirectoryError, Scope.Scope>
  /** The running process's effective ids and pid. */
  readonly credentials: Effect.Effect<Credentials>
  /** Holds the node `name` of `dir` (`O_PATH | O_NOFOLLOW`): a mount point held so is the mount's root. */
  readonly openPath: (dir: Handle, name: Uint8Array) => Effect.Effect<Handle, DirectoryError, Scope.Scope>
  readonly list: (dir: Handle) => Effect.Effect<ReadonlyArray<Entry>, DirectoryError>
  /** Stats `name` in `dir` without following it, or `dir` itself. */
  readonly stat: (dir: Handle, name?: Uint8Array) => Effect.Effect<Stat, DirectoryError>
  readonly readLink: (dir: Handle, name: Uint8Array) => Effect.Effect<Uint8Array, DirectoryError>
  /** Removes the name: a file, link or other non-directory; with `directory`, an empty directory. */
  readonly unlink: (
    dir: Handle,
    name: Uint8Array,
    options?: { readonly directory?: boolean | undefined }
  ) => Effect.Effect<void, DirectoryError>
  /**
   * Unlinks each of `names` in `dir` (none a directory), in order, and says
   * for each how it went (`undefined`: removed). Optional: a layer that can
   * make the calls in one tight loop provides it (removing a tree is mostly
   * this); otherwise {@link make} derives it from `unlink`.
   */
  readonly unlinkAll?:
    | ((dir: Handle, names: ReadonlyArray<Uint8Array>) => Effect.Effect<ReadonlyArray<DirectoryError | undefined>>)
    | undefined
  readonly makeDirectory: (dir: Handle, name: Uint8Array, permissions: number) => Effect.Effect<void, DirectoryError>
  readonly symlink: (dir: Handle, name: Uint8Array, target: Uint8Array) => Effect.Effect<void, DirectoryError>
  /** Renames within or between handles; `noReplace` refuses an existing target (`Exists`). */
  readonly rename: (
    from: Handle,
    fromName: Uint8Array,
    to: Handle,
    toName: Uint8Array,
    options?: { readonly noReplace?: boolean | undefined }
  ) => Effect.Effect<void, DirectoryError>
  /** Changes the owner of `name` in `dir` without following it (a link's own owner), or of `dir` itself. */
  readonly chown: (
    dir: Handle,
    name: Uint8Array | undefined,
    uid: number,
    gid: number
  ) => Effect.Effect<void, DirectoryError>
  /** Changes the permission bits of the directory `dir` itself (on the open handle). */
  readonly chmod: (dir: Handle, mode: number) => Effect.Effect<void, DirectoryError>
  /**
   * Opens a regular file `name` of `dir`; a node that is not a regular file is `WrongType` and closed again. A
   * link at the name is never followed, and opening never blocks. `create` creates it exclusively (`O_EXCL`):
   * a name already there, link or not, is `Exists`.
   */
  readonly openFile: (
    dir: Handle,
    name: Uint8Array,
    options:
      | { readonly mode: "read" }
      | { readonly mode: "write" }
      | { readonly mode: "create"; readonly permissions: number }
  ) => Effect.Effect<File, DirectoryError, Scope.Scope>
  /**
   * Takes an exclusive `flock` on the directory `dir` itself, without
   * waiting: true when taken, held until the scope closes (or the handle
   * closes, or the process dies), false when another open directory holds
   * it, in this process or another. Nothing is created, so a lock on a
   * directory that exists leaves nothing behind, even after a crash.
   */
  readonly lock: (dir: Handle) => Effect.Effect<boolean, DirectoryError, Scope.Scope>
  /** The pid of a process holding a lock on the directory `dir`, when the platform can say (`/proc/locks`). */
  readonly lockHolder: (dir: Handle) => Effect.Effect<number | undefined>
  /** fsync of the directory: its entries (renames, unlinks) are durable. */
  readonly sync: (dir: Handle) => Effect.Effect<void, DirectoryError>
  /** syncfs of the file system `dir` is on: everything written to it is durable, as one batch. */
  readonly syncFileSystem: (dir: Handle) => Effect.Effect<void, DirectoryError>
  /**
   * Resolves `components` (no `/` inside any) below `root` to a directory,
   * with chroot semantics, in one step (`openat2(RESOLVE_IN_ROOT)`), and says
   * where it ended (a path below the root). `undefined` when the layer
   * cannot here (no `openat2`): {@link make} walks instead.
   */
  readonly resolveDirectory?:
    | ((
        root: Handle,
        components: ReadonlyArray<Uint8Array>,
        options: { readonly noSymlinks: boolean }
      ) => Effect.Effect<{ readonly handle: Handle; readonly path: string } | undefined, DirectoryError, Scope.Scope>)
    | undefined /**
   * The identity of `name` in `dir` (not followed), or of `dir`: type,
   * device, inode and mount id, read without asking the file system for
   * fresh attributes (`statx(AT_STATX_DONT_SYNC)`), so a dead file system is
   * never asked. Optional: {@link make} derives it from `stat`.
   */
  readonly identify?: ((dir: Handle, name?: Uint8Array) => Effect.Effect<Identity, DirectoryError>) | undefined
  /**
   * Holds the node at `components` below `root` (`openat2(RESOLVE_BENEATH |
   * RESOLVE_NO_SYMLINKS)` with `O_PATH`): a link anywhere is `SymbolicLink`,
   * a non-directory before the last component `NotADirectory`; the last may
   * be anything. Optional: {@link make} walks with `openPath` and `identify`.
   */
  readonly openBeneath?:
    | ((
        root: Handle,
        components: ReadonlyArray<Uint8Array>
      ) => Effect.Effect<{ readonly handle: Handle; readonly identity: Identity }, DirectoryError, Scope.Scope>)
    | undefined
  /**
   * Runs the removal walk (`Programs.removeTree`) in one step, where the
   * layer can (the real one, in its helper process). Optional: {@link make}
   * runs the same program over the primitives.
   */
  readonly removeTree?:
    | ((dir: Handle, name: Uint8Array, path: string, options?: RemoveTreeOptions) => Effect.Effect<RemoveResult>)
    | undefined
  /**
   * The batches: each does what its primitives would, one after the other,
   * in one step where the layer can (the real one, in one call to its helper
   * process, where a call each would cost a round trip). Optional:
   * {@link make} derives each from the primitives. See
   * {@link Directories.statAll}, {@link Directories.openDirectories}, {@link Directories.readFiles},
   * {@link Directories.copyFiles}, {@link Directories.renameAll}, {@link Directories.ancestors}.
   */
  readonly statAll?: Directories["statAll"] | undefined
  readonly openDirectories?: Directories["openDirectories"] | undefined
  readonly readFiles?: Directories["readFiles"] | undefined
  readonly copyFiles?: Directories["copyFiles"] | undefined
  readonly renameAll?: Directories["renameAll"] | undefined
  readonly ancestors?: Directories["ancestors"] | undefined
  /**
   * The SHA-256 (lowercase hex) of each range of the open file `file`,
   * where the layer can hash without the bytes leaving it (the real one, in
   * its helper process, where they would otherwise cross to the agent to be
   * hashed). A range that ends past the file's end is an error. Optional,
   * and not derived: without it, a caller reads the bytes and hashes them
   * with the `Hashing` service.
   */
  readonly sha256?:
    | ((
        file: File,
        ranges: ReadonlyArray<{ readonly offset: number; readonly size: number }>
      ) => Effect.Effect<ReadonlyArray<string>, DirectoryError>)
    | undefined
  /**
   * {@link Directories.readFiles} of `names` of `dir`, each file's bytes
   * hashed (SHA-256, lowercase hex) where the layer can do so without the
   * bytes leaving it: for each, the stat of the open file, how many bytes
   * were read and their hash, or its error. Stops as `readFiles` does.
   * Optional, and not derived: without it, a caller reads the files and
   * hashes the bytes itself (a restore checks the files already in place
   * this way: the real layer would otherwise send every byte of them from
   * its helper process to be hashed).
   */
  readonly hashFiles?:
    | ((
        dir: Handle,
        names: ReadonlyArray<Uint8Array>,
        maxBytes: number
      ) => Effect.Effect<ReadonlyArray<HashedFile | DirectoryError>>)
    | undefined
  /**
   * {@link Directories.readFiles} of `names` of `dir`, each file's bytes
   * then written to the open file `to` from `at` on, one after the other,
   * and hashed (SHA-256, lowercase hex), where the layer can do so without
   * the bytes leaving it: for each, the stat of the open file, where its
   * bytes went and their hash, or its error (a file that fails adds no
   * bytes). Stops as `readFiles` does. Optional, and not derived: without
   * it, a caller reads the files and writes and hashes the bytes itself.
   */
  readonly appendFiles?:
    | ((
        to: File,
        at: number,
        dir: Handle,
        names: ReadonlyArray<Uint8Array>,
        maxBytes: number
      ) => Effect.Effect<ReadonlyArray<AppendedFile | DirectoryError>, DirectoryError>)
    | undefined
}

/**
 * The service: the primitives, and resolution derived from them.
 *
 * @since 0.2.0
 * @category models
 */
export interface Directories
  extends Omit<
    Primitives,
    | "resolveDirectory"
    | "unlinkAll"
    | "identify"
    | "openBeneath"
    | "removeTree"
    | "statAll"
    | "openDirectories"
    | "readFiles"
    | "copyFiles"
    | "renameAll"
    | "ancestors"
  > {
  /**
   * `stat` of each of `names` in `dir` (none followed): for each, its stat
   * or its error (`NotFound` for a name that is not there).
   */
  readonly statAll: (
    dir: Handle,
    names: ReadonlyArray<Uint8Array>
  ) => Effect.Effect<ReadonlyArray<Stat | DirectoryError>>
  /**
   * Opens each child directory of `dir` in `directories` as `openDirectory`
   * (with `options`) opens it, lists it, and stats the names asked of it:
   * for each, what it holds (see `Programs.OpenedDirectory`), or the error
   * of its open or its listing (then it is closed again). A walk that reads
   * a tree level by level asks for a directory's subdirectories together
   * (the real layer: one call to its helper process, where a call each
   * would cost three calls per directory).
   */
  readonly openDirectories: (
    dir: Handle,
    directories: ReadonlyArray<DirectoryToOpen>,
    options?: { readonly sameMount?: boolean | undefined }
  ) => Effect.Effect<ReadonlyArray<OpenedDirectory | DirectoryError>, never, Scope.Scope>
  /**
   * Reads the regular files `names` of `dir` whole, as `openFile` (read)
   * opens them: for each, the stat of the open file and its bytes (up to its
   * size then, or its end), or the error of its open or read. Reading stops
   * before the first file whose size (by the open file's stat) would take
   * the bytes read past `maxBytes`, the first one included: the results end
   * there (none, for a first file larger than `maxBytes`), and the caller
   * reads the rest with another call, or `openFile` and a buffer of its own.
   */
  readonly readFiles: (
    dir: Handle,
    names: ReadonlyArray<Uint8Array>,
    maxBytes: number
  ) => Effect.Effect<ReadonlyArray<ReadFile | DirectoryError>>
  /**
   * Makes each of `files` (see `Programs.CopyFile`) from the bytes of the open
   * file `from`, in order, each closed when done; stops at the first that
   * fails (it stays as far as it got). A source that ends before a file's
   * bytes is an error of that file.
   */
  readonly copyFiles: (from: File, files: ReadonlyArray<CopyFile>) => Effect.Effect<BatchResult>
  /** Renames each of `moves`, in order (as `rename` without `noReplace`); stops at the first that fails. */
  readonly renameAll: (moves: ReadonlyArray<Move>) => Effect.Effect<BatchResult>
  /** The identity of `name` in `dir`, or of `dir`, without asking the file system (see `Primitives.identify`). */
  readonly identify: (dir: Handle, name?: Uint8Array) => Effect.Effect<Identity, DirectoryError>
  /** Holds the node at `components` below `root`, no link followed (see `Primitives.openBeneath`). */
  readonly openBeneath: (
    root: Handle,
    components: ReadonlyArray<Uint8Array>
  ) => Effect.Effect<{ readonly handle: Handle; readonly identity: Identity }, DirectoryError, Scope.Scope>
  /**
   * Removes `name` of `dir` (full path `path`) with the removal walk
   * (`Programs.removeTree`): never following a link or entering another
   * mount, a bounded number of handles open; never fails, the result says
   * what was removed and kept, and where a call hung.
   */
  readonly removeTree: (
    dir: Handle,
    name: Uint8Array,
    path: string,
    options?: RemoveTreeOptions
  ) => Effect.Effect<RemoveResult>
  /** Runs a program of handle operations (`Programs`) over this service, one primitive per operation. */
  readonly run: <R>(program: Program<Handle, R>) => Effect.Effect<R>
  /** Unlinks each of `names` in `dir`, in order; for each, its error or `undefined` when it was removed. */
  readonly unlinkAll: (
    dir: Handle,
    names: ReadonlyArray<Uint8Array>
  ) => Effect.Effect<ReadonlyArray<DirectoryError | undefined>>
  /**
   * Resolves the host path `path` below `root` as though `root` were `/`:
   * `..` never climbs above it, an absolute link target starts again at it,
   * at most 40 links (then `TooManyLinks`); a missing or non-directory
   * component before the last is `NotFound` or `NotADirectory`. A trailing
   * `/` (in the path, or in the target of a link that ends it) means the last
   * component must be a directory, as the kernel reads it: a link there is
   * followed, a file is `NotADirectory`, a missing name stays a name. A path
   * of 4096 bytes or more, a component longer than 255 bytes
   * (`ENAMETOOLONG`) or a NUL byte (`EINVAL`) is
   * `InvalidName` before anything is looked at. The result is
   * the directory holding the last component, opened (in the caller's
   * scope), and that component's name: the caller acts on `(parent, name)`
   * and nothing is resolved again.
   */
  readonly resolve: (
    root: Handle,
    path: string,
    options?: {
      /** Follow a link in the last component, below the root (default false: the link itself is the result). */
      readonly followFinal?: boolean | undefined
      /** Refuse every link on the way (`SymbolicLink`): the path must lead where it says (a mount table's). */
      readonly noSymlinks?: boolean | undefined
      /**
       * Make each missing directory on the way (not the last component) with
       * these permission bits, as `mkdir -p` would below the root: where a link
       * leads to a missing directory, that is the one made, below the root.
       */
      readonly makeMissing?: number | undefined
    }
  ) => Effect.Effect<
    {
      /** The directory holding the final component, or the resolved directory itself when `name` is undefined. */
      readonly parent: Handle
      /** The final component as bytes; undefined when the path resolved to a directory through `.`, `..` or `/`. */
      readonly name: Uint8Array | undefined
      /** Where it resolved, as a path below the root (lossless string form, `/` for the root itself). */
      readonly path: string
    },
    DirectoryError,
    Scope.Scope
  >
  /**
   * The stats of `dir` and of every directory above it, nearest first, up to
   * the process's root, by `..` from the handle: where the directory really
   * is, whatever path reached it. Two directories are the same when
   * `Programs.identity` says so; a path at or below another is one whose
   * ancestors include it. A snapshot asks it of its own directory and of
   * each recorded path's parent before it writes (the real layer: one call
   * to its helper process, where `openParent` and `stat` would cost two per
   * directory on the way up).
   */
  readonly ancestors: (dir: Handle) => Effect.Effect<ReadonlyArray<Stat>, DirectoryError>
}

/**
 * The key of the {@link Directories} service.
 *
 * @since 0.2.0
 * @category services
 */
export const Directories = Context.Service<Directories>("@hostnode/core/Directory/Directories")

/**
 * The service from an implementation's primitives: `resolve` through the
 * layer's `resolveDirectory` where it has one, else by walking (see the
 * module comment). The walk opens every directory it passes with `O_NOFOLLOW`
 * from the handle before it, so a link swapped in meanwhile is met as a link
 * (and resolved below the root), never followed by the kernel.
 *
 * @since 0.2.0
 * @category constructors
 */
export const make = (p: Primitives): Directories => derive(p)
