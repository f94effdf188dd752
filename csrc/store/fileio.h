/*
 * store/fileio.h — the store's file layer: whole-file reads and crash-safe
 * writes.
 *
 * Owns: reading a regular file whole (refused from its size before any
 * reading when too large; FIFOs and directories refused without blocking),
 * atomic replacement (a new temporary file "<dir>/.<base>.<pid><random>.tmp",
 * 8 hex digits each, written and fsynced, renamed over the target, the directory fsynced: a
 * crash leaves the old file or the new one), exclusive creation (the temp
 * file linked into place, which fails if another process was first), and
 * the clean-up of temporary files whose writer died (never a live pid's).
 * Knows paths and bytes, not stores or crypto. Sizes are bytes. Thread-safe (no state); concurrent
 * writers of one path are serialized by the store, not here.
 */
#ifndef PCB_STORE_FILEIO_H
#define PCB_STORE_FILEIO_H

#include <stddef.h>
#include <sys/types.h>

#include "common/status.h"

/* A file's bytes as read: data[len] is a NUL, cap is the allocation. */
typedef struct {
    char *data;
    size_t len, cap;
} pcb_file_bytes;

/* Reads a regular file of at most max_len bytes; *missing = 1 (and 1
 * returned) if it does not exist. `what` names it in messages. A large file
 * lands in pcb_big_alloc memory. Returns 1, or 0 with st set. */
int pcb_read_whole_file(const char *path, size_t max_len, const char *what, pcb_file_bytes *f,
                        int *missing, pcb_status *st);
/* Frees what pcb_read_whole_file read, wiping it first if it may hold secrets. */
void pcb_file_bytes_free(pcb_file_bytes *f, int wipe);

/* fsync of a directory; 1/0 (errno set). Filesystems that refuse it pass. */
int pcb_fsync_dir(const char *dir);
/* Replaces path with data atomically (see above); dir is path's directory. */
int pcb_atomic_write(const char *path, const char *dir, const char *data, size_t len,
                     mode_t mode, pcb_status *st);
/* Creates path with data unless it exists (then *exists = 1, nothing written). */
int pcb_atomic_create(const char *path, const char *dir, const char *data, size_t len,
                      mode_t mode, int *exists, pcb_status *st);
/* Removes temporary files of path left in dir by writers that died (their
 * pid has no process); the store calls it only under its file lock. */
void pcb_remove_stale_tmp(const char *path, const char *dir);
/* The directory part of path ("." for a bare name); malloc'd, NULL on failure. */
char *pcb_dir_of(const char *path);

#endif /* PCB_STORE_FILEIO_H */
