/*
 * The floor of a snapshot restore (bench/snapshot.ts): the same protocol as
 * `Snapshot.restore` writes changed files with, and nothing else: each file
 * written beside its target under a temporary name created exclusively in
 * its directory (openat O_CREAT | O_EXCL | O_NOFOLLOW), its bytes copied
 * from the snapshot's data file (pread, pwrite), its owner checked (one
 * fstat; fchown where it differs), its mode and times set (fchmod,
 * futimens); then one syncfs, every temporary file renamed over its target
 * (renameat), and one syncfs again. No hashing, no comparing, no checks of
 * what is in the way.
 *
 * Usage: restore DATA LIST, LIST holding one file a line: offset, size,
 * mode (octal), uid, gid, atime and mtime (ns), and the target's absolute
 * path, separated by spaces. Prints {"ms", "peakKiB", "note"}.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "peak.h"

struct file {
  long long offset, size;
  unsigned mode;
  unsigned uid, gid;
  long long atime, mtime;
  char *dir, *name;
  int dirfd;
  char tmp[64];
};

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: restore DATA LIST\n");
    return 2;
  }
  int data = open(argv[1], O_RDONLY | O_CLOEXEC);
  FILE *list = fopen(argv[2], "r");
  if (data < 0 || list == NULL) {
    perror("open");
    return 1;
  }
  size_t n = 0, cap = 1024;
  struct file *files = malloc(cap * sizeof *files);
  char path[4096];
  struct file f;
  while (fscanf(list, "%lld %lld %o %u %u %lld %lld %4095s", &f.offset, &f.size, &f.mode, &f.uid, &f.gid, &f.atime,
                &f.mtime, path) == 8) {
    if (n == cap) files = realloc(files, (cap *= 2) * sizeof *files);
    char *slash = strrchr(path, '/');
    *slash = 0;
    f.dir = strdup(path);
    f.name = strdup(slash + 1);
    f.dirfd = -1;
    files[n++] = f;
  }
  static char buf[1 << 20];
  // Which directory each file is in (found before the clock starts; opened after).
  size_t ndirs = 0;
  char **dirs = malloc(n * sizeof *dirs);
  int *dirfds = malloc(n * sizeof *dirfds);
  size_t *dirOf = malloc(n * sizeof *dirOf);
  for (size_t i = 0; i < n; i++) {
    size_t j = 0;
    while (j < ndirs && strcmp(dirs[j], files[i].dir) != 0) j++;
    if (j == ndirs) dirs[ndirs++] = files[i].dir;
    dirOf[i] = j;
  }
  double start = now_ms();
  // Each directory opened once (the restore holds one descriptor per directory too).
  for (size_t j = 0; j < ndirs; j++) {
    dirfds[j] = open(dirs[j], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfds[j] < 0) {
      perror(dirs[j]);
      return 1;
    }
  }
  for (size_t i = 0; i < n; i++) files[i].dirfd = dirfds[dirOf[i]];
  for (size_t i = 0; i < n; i++) {
    struct file *e = &files[i];
    snprintf(e->tmp, sizeof e->tmp, ".hostnode-restore-%zu.tmp", i);
    int fd = openat(e->dirfd, e->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      perror(e->tmp);
      return 1;
    }
    for (long long at = 0; at < e->size;) {
      long long want = e->size - at < (long long)sizeof buf ? e->size - at : (long long)sizeof buf;
      ssize_t got = pread(data, buf, want, e->offset + at);
      if (got <= 0 || pwrite(fd, buf, got, at) != got) {
        perror("copy");
        return 1;
      }
      at += got;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) return 1;
    if ((st.st_uid != e->uid || st.st_gid != e->gid) && fchown(fd, e->uid, e->gid) != 0) return 1;
    if (fchmod(fd, e->mode) != 0) return 1;
    struct timespec times[2] = {{e->atime / 1000000000LL, e->atime % 1000000000LL},
                                {e->mtime / 1000000000LL, e->mtime % 1000000000LL}};
    if (futimens(fd, times) != 0) return 1;
    close(fd);
  }
  if (n > 0 && syncfs(files[0].dirfd) != 0) return 1;
  for (size_t i = 0; i < n; i++)
    if (renameat(files[i].dirfd, files[i].tmp, files[i].dirfd, files[i].name) != 0) {
      perror("renameat");
      return 1;
    }
  if (n > 0 && syncfs(files[0].dirfd) != 0) return 1;
  double ms = now_ms() - start;
  printf("{\"ms\":%.3f,\"peakKiB\":%ld,\"note\":\"%zu files\"}\n", ms, peak_kib(), n);
  return 0;
}
