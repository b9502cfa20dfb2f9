/*
 * What the bench's C programs share: a monotonic clock in milliseconds and
 * the process's own peak resident set (VmHWM, KiB), which each prints with
 * the time of its work as one JSON line.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static long peak_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = 0;
  if (f == NULL) return 0;
  while (fgets(line, sizeof line, f) != NULL)
    if (strncmp(line, "VmHWM:", 6) == 0) sscanf(line + 6, "%ld", &kib);
  fclose(f);
  return kib;
}
