/*
 * store/fileio.h — the store's file layer: whole-file reads and crash-safe
 * writes.
 *
 * Owns: reading a regular file whole (refused from its size before any
 * reading when too large, a big text file from its first bytes when they
 * hold a NUL; FIFOs and directories refused without blocking), reading a private
 * key file (no symbolic link, owned by the user, mode 0600 or stricter,
 * checked on the open descriptor), atomic replacement (a new temporary file
 * "<dir>/.<base>.<pid><random>.tmp", 8 hex digits each, written and
 * fsynced, renamed over the target, the directory fsynced: a crash leaves
 * the old file or the new one; a symbolic link is kept and its target
 * replaced; an existing file keeps its owner where permitted, and its mode
 * with it: see below), exclusive creation (the temp file linked into place, which fails
 * if another process was first), whether a file name leaves room for its
 * temporary file, whether two paths name one file, and the clean-up of
 * temporary files whose writer died (never a live pid's); a store's path
 * fixed at open (absolute, its final links followed). Every descriptor it
 * opens is close-on-exec.
 *
 * Links and other users' files (issue 25). The store follows links by hand
 * (lstat and readlink, for the path fixed at open and for each write's
 * target; realpath would too), where the kernel's fs.protected_symlinks
 * never sees them, so the kernel's rules are applied here, whatever the
 * sysctl says, root included:
 *   - a symbolic link (a directory's on the way or the final one) that lies
 *     in a sticky world-writable directory (as /tmp) is followed only when
 *     it belongs to the follower (the effective uid) or to the directory's
 *     owner: else PermissionError naming the link, its owner and the rule;
 *     a file read (pcb_read_whole_*) opens with O_NOFOLLOW and follows a
 *     final link only so;
 *   - an existing file in such a directory is read as the store's file
 *     (pcb_fixed_path) or replaced (pcb_atomic_write) only when it belongs
 *     to the effective user or to the directory's owner (fs.protected_
 *     regular's rule): else PermissionError naming the file and its owner;
 *   - elsewhere a replaced file's owner and group are kept where the writer
 *     may chown (root), and its mode only with them: a writer who cannot
 *     give the new file to the old owner (EPERM) writes its own file with
 *     the store's mode (0600), never the foreign file's (a 0666 another user
 *     chose).
 * Key files are never followed through a link (pcb_read_private_file,
 * O_NOFOLLOW) and are created with link(2), which does not follow; their
 * directories are walked under the rule first (a new key is not made in a
 * directory a planted link leads to); the lock file is opened O_NOFOLLOW
 * (lock.c) beside the store file, whose directories were walked at open,
 * and refused (EPERM) when another user's (pcb_foreign_in_shared_dir): the
 * store writes its change counter into it. Knows paths and
 * bytes, not stores or crypto. Sizes are bytes. Thread-safe (no state); concurrent
 * writers of one path are serialized by the store, not here.
 */
#ifndef PCB_STORE_FILEIO_H
#define PCB_STORE_FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
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
/* pcb_read_whole_file for a text file: one over 64 KiB whose first 4 KiB
 * hold a NUL is refused from them, before the rest is read. */
int pcb_read_whole_text(const char *path, size_t max_len, const char *what, pcb_file_bytes *f,
                        int *missing, pcb_status *st);
/* Reads a private file of exactly len bytes into out: refused (before
 * reading) if it is a symbolic link, not regular, not owned by the
 * effective user or accessible by group/others. *missing = 1 if absent.
 * `what` names it in messages ("master key file"). */
int pcb_read_private_file(const char *path, size_t len, const char *what, uint8_t *out,
                          int *missing, pcb_status *st);
/* Frees what pcb_read_whole_file read, wiping it first if it may hold secrets. */
void pcb_file_bytes_free(pcb_file_bytes *f, int wipe);

/* fsync of a directory; 1/0 (errno set). Filesystems that refuse it pass. */
int pcb_fsync_dir(const char *dir);
/* Replaces path with data atomically (see above); dir is path's directory. */
int pcb_atomic_write(const char *path, const char *dir, const char *data, size_t len,
                     mode_t mode, pcb_status *st);
/* After a failed pcb_atomic_write on this thread: 1 if it failed after the
 * rename put the new file in place (the directory's open or fsync), so the
 * file holds the new data and only its durability is unknown (the message
 * says so); 0 if the old file is untouched. */
int pcb_atomic_write_in_place(void);
/* Creates path with data unless it exists (then *exists = 1, nothing written). */
int pcb_atomic_create(const char *path, const char *dir, const char *data, size_t len,
                      mode_t mode, int *exists, pcb_status *st);
/* Refuses (PCB_E_VALUE) a path whose temporary file's name would exceed
 * NAME_MAX; `what` names the file in the message. */
int pcb_check_name_fits(const char *path, const char *what, pcb_status *st);
/* Whether a and b name one file: the same inode when both exist, else the
 * same path once links are followed and directories made canonical. */
int pcb_same_file(const char *a, const char *b);
/* Removes temporary files of path left in dir by writers that died (their
 * pid has no process); the store calls it only under its file lock. */
void pcb_remove_stale_tmp(const char *path, const char *dir);
/* The file a write to path lands in, fixed now as an absolute name: path's
 * directories made canonical (no ".", "..", or linked directories) and its
 * chain of final symbolic links followed (a dangling link gives the missing
 * file it names), every link under the rule above, its base name kept;
 * PermissionError for a refused link or another user's file (above). Later uses of the
 * result do not depend on the working directory or on links swapped after
 * this call. malloc'd, or NULL with st set: OSError "the <what>'s directory
 * ... is not usable" when the directory does not resolve to one. */
char *pcb_fixed_path(const char *path, const char *what, pcb_status *st);
/* 1 if the existing file path (stat'ed: *sb) belongs to another user than
 * the effective one and than its directory's owner, in a sticky
 * world-writable directory: a file the store must not write into (the rule
 * above; lock.c asks it of the lock file it opened). 1 also when out of
 * memory (refused). */
int pcb_foreign_in_shared_dir(const char *path, const struct stat *sb);
/* The directory part of path ("." for a bare name); malloc'd, NULL on failure. */
char *pcb_dir_of(const char *path);

#endif /* PCB_STORE_FILEIO_H */
