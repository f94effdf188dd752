/*
 * common/sys.h — every system call the store and the MMKV model make on
 * files, through one table, and the tests' fault injection over it.
 *
 * Owns: the list of those calls (PCB_SYS_CALLS: one line a call, read for
 * the enum, the names and the wrappers; as SQLite's os_unix.c keeps its
 * aSyscall[] table), the EINTR rule (a wrapper retries a call that a
 * signal interrupted, except close, whose descriptor is gone either way:
 * callers never loop on EINTR themselves), and the fault plan: armed by a
 * test (py/fault_py.c's `_core._fault`, tests only), it makes the N-th call
 * of a chosen set fail with a chosen errno (once, or from then on), return
 * EINTR once, or write short. Unarmed, a wrapper costs a direct call, one
 * relaxed load and a predictable branch beside the system call itself.
 *
 * Not here: anonymous memory (common/mem.c's mmap is memory, not a file;
 * its failure is an out-of-memory error), clocks and sleeps, directory
 * reads after fdopendir (readdir/closedir), munmap (it cannot fail on a
 * mapping we made), realpath and kill.
 *
 * Thread safety: the wrappers are safe from any thread (the plan's counter
 * is atomic, so the background writer's calls count in order with the
 * caller's); arming and disarming are for one thread while no store
 * operation runs (tests arm, run one operation, disarm). Counts are calls.
 */
#ifndef PCB_COMMON_SYS_H
#define PCB_COMMON_SYS_H

#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* The calls: X(name). Adding one: a line here and its wrapper below. */
#define PCB_SYS_CALLS(X) \
    X(open) X(close) X(read) X(pread) X(write) X(pwrite) X(fsync) X(fdatasync) \
    X(rename) X(link) X(unlink) X(unlinkat) X(ftruncate) X(posix_fallocate) X(fstat) X(stat) \
    X(lstat) X(readlink) X(fchmod) X(fchown) X(fdopendir) X(mmap) X(msync) \
    X(fcntl_lock) X(flock) X(getentropy)

typedef enum {
#define PCB_SYS_ENUM_(n) PCB_SYS_##n,
    PCB_SYS_CALLS(PCB_SYS_ENUM_)
#undef PCB_SYS_ENUM_
    PCB_SYS_COUNT
} pcb_sys_id;

/* How an armed fault fails its call. */
typedef enum {
    PCB_FAULT_ONCE,    /* the nth matching call fails with err; later calls succeed */
    PCB_FAULT_PERSIST, /* the nth and every later matching call fail with err */
    PCB_FAULT_SHORT    /* the nth matching write/pwrite writes half (others: fail with err) */
} pcb_fault_mode;

/* The name of call id ("open", "fcntl_lock", ...); NULL past the table. */
const char *pcb_sys_name(int id);
/* The id of a name, or -1. */
int pcb_sys_find(const char *name);

/* Arms a fault (replacing any): the nth (>= 1) call whose id is in mask
 * (bit 1 << id; 0: every call) fails as mode says, with errno err (EINTR:
 * once, and the wrapper's retry then runs the call). Counting starts at 0. */
void pcb_sys_fault_arm(uint64_t mask, uint64_t nth, int err, pcb_fault_mode mode);
/* Disarms; *calls: matching calls counted since arming, *fired: calls
 * failed (or shortened). Either may be NULL. */
void pcb_sys_fault_disarm(uint64_t *calls, uint64_t *fired);

/* The wrappers: each as the call it names (same arguments, result and
 * errno), counted by an armed plan, retried on EINTR except where said. */
int pcb_sys_open(const char *path, int flags, mode_t mode);
/* close: never retried (the descriptor is released even when it fails);
 * an injected failure still closes it, as the kernel does. EINTR is success. */
int pcb_sys_close(int fd);
ssize_t pcb_sys_read(int fd, void *buf, size_t n);
ssize_t pcb_sys_pread(int fd, void *buf, size_t n, off_t at);
/* write/pwrite: a short fault writes half (a 1-byte write fails with ENOSPC). */
ssize_t pcb_sys_write(int fd, const void *buf, size_t n);
ssize_t pcb_sys_pwrite(int fd, const void *buf, size_t n, off_t at);
int pcb_sys_fsync(int fd);
/* fdatasync where POSIX's synchronized I/O is there; fsync otherwise. */
int pcb_sys_fdatasync(int fd);
int pcb_sys_rename(const char *from, const char *to);
int pcb_sys_link(const char *from, const char *to);
int pcb_sys_unlink(const char *path);
int pcb_sys_unlinkat(int dfd, const char *name, int flags);
int pcb_sys_ftruncate(int fd, off_t len);
/* Reserves [at, at + len) of fd's file: blocks allocated now, so a later
 * store through a shared mapping cannot find the disk full (SIGBUS). 0, or
 * an errno (posix_fallocate's convention: it does not set errno); a file
 * system that cannot reserve (EOPNOTSUPP, EINVAL) is grown by ftruncate
 * instead, and the caller's writes then fault as a sparse file would. */
int pcb_sys_fallocate(int fd, off_t at, off_t len);
int pcb_sys_fstat(int fd, struct stat *sb);
int pcb_sys_stat(const char *path, struct stat *sb);
int pcb_sys_lstat(const char *path, struct stat *sb);
ssize_t pcb_sys_readlink(const char *path, char *buf, size_t cap);
int pcb_sys_fchmod(int fd, mode_t mode);
int pcb_sys_fchown(int fd, uid_t uid, gid_t gid);
DIR *pcb_sys_fdopendir(int fd); /* not retried */
void *pcb_sys_mmap(void *at, size_t len, int prot, int flags, int fd, off_t off); /* not retried */
int pcb_sys_msync(void *p, size_t len, int flags);
/* One lock request (F_OFD_SETLK, F_SETLK, F_GETLK ...; flock with LOCK_NB):
 * non-blocking, so an interrupted one is simply made again; a caller's wait
 * (lock.c) sleeps between requests and looks at Ctrl-C there. */
int pcb_sys_fcntl_lock(int fd, int cmd, struct flock *fl);
int pcb_sys_flock(int fd, int op);
/* Fills buf (at most 256 bytes) from the kernel's randomness without
 * blocking: getrandom(GRND_NONBLOCK) on Linux, getentropy elsewhere (or
 * forced). 0, or -1 with errno set. */
int pcb_sys_getentropy(void *buf, size_t len);

#endif /* PCB_COMMON_SYS_H */
