/*
 * The floor of a verified unmount (bench/mounts.ts): for each target of a
 * list, the calls the helper process makes and nothing else: the path held
 * below the root without following a link (openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS, O_PATH), its mount id read without asking its file
 * system (statx AT_STATX_DONT_SYNC) and compared with the table's, the mount
 * detached through that descriptor (umount2 of /proc/self/fd/N, MNT_DETACH),
 * the descriptor closed.
 *
 * With --bare, each target is only detached by its path (umount2 of
 * ROOT/PATH, MNT_DETACH): the loop a shell script or the bench's koffi floor
 * runs, here in a process of its own.
 *
 * Usage: unmount [--bare] ROOT LIST, LIST holding one target a line: the
 * mount id, a space, the path below ROOT. Prints {"ms", "peakKiB", "note"}
 * (the loop's time; how many were unmounted and how many not verified).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "peak.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

int main(int argc, char **argv) {
  int bare = argc == 4 && strcmp(argv[1], "--bare") == 0;
  if (bare) argv++, argc--;
  if (argc != 3) {
    fprintf(stderr, "usage: unmount [--bare] ROOT LIST\n");
    return 2;
  }
  int root = open(argv[1], O_PATH | O_DIRECTORY | O_CLOEXEC);
  FILE *list = fopen(argv[2], "r");
  if (root < 0 || list == NULL) {
    perror("open");
    return 1;
  }
  size_t n = 0, cap = 1024;
  char **paths = malloc(cap * sizeof *paths);
  uint64_t *ids = malloc(cap * sizeof *ids);
  char *line = NULL;
  size_t len = 0;
  ssize_t got;
  while ((got = getline(&line, &len, list)) > 0) {
    if (line[got - 1] == '\n') line[got - 1] = 0;
    char *space = strchr(line, ' ');
    if (space == NULL) continue;
    if (n == cap) {
      cap *= 2;
      paths = realloc(paths, cap * sizeof *paths);
      ids = realloc(ids, cap * sizeof *ids);
    }
    *space = 0;
    ids[n] = strtoull(line, NULL, 10);
    paths[n] = strdup(space + 1);
    n++;
  }
  struct open_how how = {
    .flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
  };
  char proc[64];
  size_t unmounted = 0, unverified = 0;
  if (bare) {
    char full[8192];
    double start = now_ms();
    for (size_t i = 0; i < n; i++) {
      snprintf(full, sizeof full, "%s/%s", argv[1], paths[i]);
      if (umount2(full, MNT_DETACH) == 0) unmounted++;
    }
    double ms = now_ms() - start;
    printf("{\"ms\":%.3f,\"peakKiB\":%ld,\"note\":\"%zu unmounted\"}\n", ms, peak_kib(), unmounted);
    return 0;
  }
  double start = now_ms();
  for (size_t i = 0; i < n; i++) {
    int fd = syscall(SYS_openat2, root, paths[i], &how, sizeof how);
    if (fd < 0) {
      unverified++;
      continue;
    }
    struct statx sx;
    if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_BASIC_STATS | STATX_MNT_ID, &sx) != 0 ||
        sx.stx_mnt_id != ids[i]) {
      unverified++;
      close(fd);
      continue;
    }
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    if (umount2(proc, MNT_DETACH) == 0) unmounted++;
    close(fd);
  }
  double ms = now_ms() - start;
  printf("{\"ms\":%.3f,\"peakKiB\":%ld,\"note\":\"%zu unmounted, %zu not verified\"}\n", ms, peak_kib(), unmounted, unverified);
  return 0;
}
