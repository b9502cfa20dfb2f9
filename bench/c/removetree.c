/*
 * The floor of a removal walk (bench/remove.ts): a directory tree removed
 * through descriptors, depth first: each directory opened from its parent's
 * descriptor without following a link (openat O_DIRECTORY | O_NOFOLLOW), its
 * device compared with the top's (fstat: one file system, as `rm
 * --one-file-system`), its entries read (getdents64), each non-directory
 * unlinked (unlinkat) and each directory walked, then removed (unlinkat
 * AT_REMOVEDIR).
 *
 * Usage: removetree PATH. Prints {"ms", "peakKiB", "note"} (the walk's time;
 * how many entries it removed).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "peak.h"

struct linux_dirent64 {
  ino64_t d_ino;
  off64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

static dev_t top_dev;
static long removed;

static int walk(int parent, const char *name) {
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_dev != top_dev) {
    close(fd);
    return -1;
  }
  char buf[32768];
  for (;;) {
    long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
      off += d->d_reclen;
      const char *e = d->d_name;
      if (e[0] == '.' && (e[1] == 0 || (e[1] == '.' && e[2] == 0))) continue;
      if (d->d_type == DT_DIR) {
        walk(fd, e);
      } else if (unlinkat(fd, e, 0) == 0) {
        removed++;
      } else if (d->d_type == DT_UNKNOWN) {
        walk(fd, e);
      }
    }
  }
  close(fd);
  if (unlinkat(parent, name, AT_REMOVEDIR) != 0) return -1;
  removed++;
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: removetree PATH\n");
    return 2;
  }
  char *path = argv[1];
  char *slash = strrchr(path, '/');
  if (slash == NULL || slash[1] == 0) {
    fprintf(stderr, "removetree: an absolute path, not ending in /\n");
    return 2;
  }
  *slash = 0;
  int parent = open(slash == path ? "/" : path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat st;
  if (parent < 0 || fstat(parent, &st) != 0) {
    perror("open");
    return 1;
  }
  top_dev = st.st_dev;
  double start = now_ms();
  int r = walk(parent, slash + 1);
  double ms = now_ms() - start;
  printf("{\"ms\":%.3f,\"peakKiB\":%ld,\"note\":\"%ld removed\"}\n", ms, peak_kib(), removed);
  return r == 0 ? 0 : 1;
}
