/*
 * store/lock.h — the lock that serializes the writers of one store file
 * across processes and Store objects, and how a writer learns that the file
 * changed under it.
 *
 * Owns: the lock file "<store path>-lock" (created 0600 beside the store by
 * the first writer and never removed: a removed lock file lets two writers
 * each hold "the" lock); the exclusive lock on it, taken on a new open file
 * description per acquisition, so two Store objects of one process exclude
 * each other, and a holder that dies releases it; the wait, which polls
 * with a growing sleep (0.1 ms doubling up to 10 ms) until the timeout, as
 * SQLite's busy handler does, and never waits forever (the timeout is
 * capped at PCB_LOCK_MAX_TIMEOUT); while it waits it runs the embedder's
 * wait hooks (common/wait.h: py/ releases the GIL) and asks at least every
 * PCB_WAIT_CHECK_NS whether to give up (py/: Ctrl-C); the change counter,
 * 8 little-endian bytes at the start of the lock file, bumped by each writer
 * after its rename; and a file's identity (device, inode, size, mtime).
 *
 * Which lock: an OFD lock (fcntl F_OFD_SETLK over the whole file) where the
 * headers define F_OFD_SETLK and the kernel has it; else flock(LOCK_EX),
 * also owned by the open file description. Built with -DPCB_FORCE_FALLBACKS
 * the flock path is used always (and mtimes are whole seconds, as where
 * struct stat has no st_mtim). What differs under flock: on Linux flock and
 * fcntl locks do not see each other, so every writer of a file must be
 * built alike (a process holding an OFD lock does not exclude a flock
 * writer); on NFS, Linux emulates flock with per-process POSIX locks, so
 * the kernel alone would not exclude two Store objects of one process.
 * They are excluded here anyway: a lock file (device, inode) that another
 * descriptor of this process holds counts as held before the kernel is
 * asked, whichever lock is in use.
 *
 * Fork: every lock-file descriptor is opened close-on-exec and recorded
 * (being acquired or held) in a process-wide table; lock.c's own
 * pthread_atfork child handler closes the child's copies of all of them, so
 * a child (even one forked while a parent's thread waits for the lock) never
 * keeps a parent's description open: the parent's lock is the parent's and
 * its close releases it. The parent's waiting thread goes on waiting and
 * takes the lock as usual.
 *
 * Knows paths and descriptors, not stores. Thread safety: the descriptor
 * table has its own mutex, held only around non-blocking calls (open,
 * close, one lock attempt); a descriptor is used by one thread at a time
 * (the store's io_lock). The wait blocks the calling thread: call it
 * without the GIL. Units: seconds for timeouts, nanoseconds for mtimes.
 */
#ifndef PCB_STORE_LOCK_H
#define PCB_STORE_LOCK_H

#include <stdint.h>

#include "common/status.h"

#define PCB_LOCK_SUFFIX "-lock"
#define PCB_LOCK_DEFAULT_TIMEOUT 10.0 /* seconds */
#define PCB_LOCK_MAX_TIMEOUT 86400.0   /* seconds: the longest lock_timeout accepted (a day) */

/* A file as last seen: what changes when any writer replaces it. */
typedef struct {
    int exists;
    uint64_t dev, ino, size, mtime_ns;
} pcb_file_id;

/* The identity of path now (exists = 0 if it is missing or unreadable). */
void pcb_file_id_of(const char *path, pcb_file_id *id);
/* 1 if both name the same file with the same size and mtime. */
int pcb_file_id_same(const pcb_file_id *a, const pcb_file_id *b);

/* Takes the exclusive lock on lock_path (created 0600 if absent, never
 * through a symbolic link), waiting at most timeout_s seconds: *fd gets the
 * descriptor that holds it (close-on-exec, closed in a forked child). 1, or 0
 * with st set: TimeoutError (PCB_E_OS, ETIMEDOUT) naming the lock file when
 * another writer held it all along, PCB_E_INTERRUPTED when the embedder gave
 * the wait up (common/wait.h; no lock taken), an OSError when it cannot be
 * opened. */
int pcb_lock_acquire(const char *lock_path, double timeout_s, int *fd, pcb_status *st);
/* Releases the lock: the descriptor is forgotten and closed. */
void pcb_lock_release(int fd);

/* The change counter, read through the held lock's descriptor (0 for a new
 * lock file). */
uint64_t pcb_lock_counter(int fd);
/* The counter read without the lock (at open, before the store file is
 * read): 0 when there is no lock file yet. */
uint64_t pcb_lock_peek_counter(const char *lock_path);
/* Bumps the counter (lock held): 1 and *now the new value, or 0 with st set. */
int pcb_lock_bump(int fd, const char *lock_path, uint64_t *now, pcb_status *st);

#endif /* PCB_STORE_LOCK_H */
