/*
 * The other way to read the mount table (bench/mounts.ts): every mount of
 * this namespace listed with listmount(2) and each described with
 * statmount(2) (its ids, propagation, file system type, root and mount
 * point: what an unmount plan needs of /proc/self/mountinfo), for scale
 * beside one read of that file. Both are in this kernel (6.8 on); where they
 * are not, it says so and prints no time.
 *
 * Usage: listmount. Prints {"ms", "peakKiB", "note"}: the whole walk's time;
 * the note splits it into listing, statmount without strings, and statmount
 * with the mount point and root.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "peak.h"

#ifndef SYS_statmount
#define SYS_statmount 457
#endif
#ifndef SYS_listmount
#define SYS_listmount 458
#endif

/* The kernel's struct mnt_id_req (version 0, 24 bytes). */
struct mnt_id_req {
  uint32_t size, spare;
  uint64_t mnt_id, param;
};
#define LSMT_ROOT 0xffffffffffffffffULL
#define STATMOUNT_SB_BASIC 0x1U
#define STATMOUNT_MNT_BASIC 0x2U
#define STATMOUNT_PROPAGATE_FROM 0x4U
#define STATMOUNT_MNT_ROOT 0x8U
#define STATMOUNT_MNT_POINT 0x10U
#define STATMOUNT_FS_TYPE 0x20U

int main(void) {
  size_t cap = 1 << 18, bufsize = 1 << 16;
  uint64_t *ids = malloc(cap * sizeof *ids);
  void *buf = malloc(bufsize);
  struct mnt_id_req req = {sizeof req, 0, LSMT_ROOT, 0};
  double t0 = now_ms();
  long n = syscall(SYS_listmount, &req, ids, cap, 0);
  if (n < 0) {
    printf("{\"ms\":0,\"peakKiB\":%ld,\"note\":\"listmount: errno %d\"}\n", peak_kib(), errno);
    return 0;
  }
  double t1 = now_ms();
  long ok = 0;
  for (long i = 0; i < n; i++) {
    struct mnt_id_req q = {sizeof q, 0, ids[i], STATMOUNT_SB_BASIC | STATMOUNT_MNT_BASIC | STATMOUNT_PROPAGATE_FROM};
    if (syscall(SYS_statmount, &q, buf, bufsize, 0) == 0) ok++;
  }
  double t2 = now_ms();
  for (long i = 0; i < n; i++) {
    struct mnt_id_req q = {sizeof q, 0, ids[i],
                           STATMOUNT_SB_BASIC | STATMOUNT_MNT_BASIC | STATMOUNT_PROPAGATE_FROM | STATMOUNT_MNT_ROOT |
                               STATMOUNT_MNT_POINT | STATMOUNT_FS_TYPE};
    if (syscall(SYS_statmount, &q, buf, bufsize, 0) == 0) ok++;
  }
  double t3 = now_ms();
  printf("{\"ms\":%.3f,\"peakKiB\":%ld,\"note\":\"%ld mounts: listmount %.0f ms, statmount ids only %.0f ms, with mount points %.0f ms\"}\n",
         t3 - t0, peak_kib(), n, t1 - t0, t2 - t1, t3 - t2);
  return ok == 2 * n ? 0 : 1;
}
