/*
 * common/sys.c — the system-call table's names, the fault plan, and the
 * two calls too long to inline (see sys.h).
 */
#define _GNU_SOURCE
#include "common/sys.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>
/* getrandom on Linux; getentropy (POSIX 2024: glibc >= 2.25, musl, macOS, the
 * BSDs, bionic) elsewhere and with -DPCB_FORCE_FALLBACKS. Both headers on every
 * system: macOS declares getentropy in <sys/random.h>, OpenBSD in <unistd.h>. */
#if defined(__linux__) || defined(__APPLE__) || defined(__FreeBSD__)
#include <sys/random.h>
#endif
#if defined(__linux__) && !defined(PCB_FORCE_FALLBACKS)
#define PCB_HAVE_GETRANDOM 1
#endif

static const char *const names[PCB_SYS_COUNT] = {
#define PCB_SYS_NAME_(n) #n,
    PCB_SYS_CALLS(PCB_SYS_NAME_)
#undef PCB_SYS_NAME_
};

const char *pcb_sys_name(int id) { return id >= 0 && id < PCB_SYS_COUNT ? names[id] : NULL; }

int pcb_sys_find(const char *name)
{
    for (int i = 0; i < PCB_SYS_COUNT; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

/* The plan: written by arm/disarm while pcb_sys_armed_ is 0 (release and
 * acquire order it against the wrappers' reads), counted atomically. */
static int pcb_sys_armed_;
static struct {
    uint64_t mask, nth;
    int err;
    pcb_fault_mode mode;
    uint64_t calls, fired;
} plan;

void pcb_sys_fault_arm(uint64_t mask, uint64_t nth, int err, pcb_fault_mode mode)
{
    __atomic_store_n(&pcb_sys_armed_, 0, __ATOMIC_SEQ_CST);
    plan.mask = mask;
    plan.nth = nth ? nth : 1;
    plan.err = err ? err : EIO;
    plan.mode = mode;
    __atomic_store_n(&plan.calls, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&plan.fired, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&pcb_sys_armed_, 1, __ATOMIC_RELEASE);
}

void pcb_sys_fault_disarm(uint64_t *calls, uint64_t *fired)
{
    __atomic_store_n(&pcb_sys_armed_, 0, __ATOMIC_SEQ_CST);
    if (calls != NULL)
        *calls = __atomic_load_n(&plan.calls, __ATOMIC_RELAXED);
    if (fired != NULL)
        *fired = __atomic_load_n(&plan.fired, __ATOMIC_RELAXED);
}

/* Counts one call of id; 0: run it; 1: fail it (errno set); 2: shorten it. */
static int pcb_sys_fault_(int id)
{
    if (!__atomic_load_n(&pcb_sys_armed_, __ATOMIC_ACQUIRE))
        return 0;
    if (plan.mask != 0 && !(plan.mask & ((uint64_t)1 << id)))
        return 0;
    uint64_t n = __atomic_add_fetch(&plan.calls, 1, __ATOMIC_RELAXED);
    int hit = n == plan.nth || (plan.mode == PCB_FAULT_PERSIST && n > plan.nth && plan.err != EINTR);
    if (!hit)
        return 0;
    __atomic_add_fetch(&plan.fired, 1, __ATOMIC_RELAXED);
    if (plan.mode == PCB_FAULT_SHORT && (id == PCB_SYS_write || id == PCB_SYS_pwrite))
        return 2;
    errno = plan.err;
    return 1;
}

/* The wrappers' test: nonzero only while a fault is armed. */
#define PCB_SYS_ARMED() __builtin_expect(__atomic_load_n(&pcb_sys_armed_, __ATOMIC_RELAXED), 0)
/* Whether an armed plan fails this call: FAULT_RET(id, failed value). */
#define PCB_SYS_CHECK_(id, failed)                        \
    do {                                                  \
        if (PCB_SYS_ARMED() && pcb_sys_fault_(id) == 1)   \
            return failed;                                \
    } while (0)
/* The call, retried while a signal interrupts it (an injected EINTR too). */
#define PCB_SYS_RETRY_(id, type, failed, call)            \
    type r_;                                              \
    for (;;) {                                            \
        if (PCB_SYS_ARMED() && pcb_sys_fault_(id) == 1) { \
            if (errno == EINTR)                           \
                continue;                                 \
            return failed;                                \
        }                                                 \
        r_ = (call);                                      \
        if (r_ != (failed) || errno != EINTR)             \
            return r_;                                    \
    }

int pcb_sys_open(const char *path, int flags, mode_t mode)
{
    PCB_SYS_RETRY_(PCB_SYS_open, int, -1, open(path, flags, mode));
}
/* close: never retried (the descriptor is released even when it fails);
 * an injected failure still closes it, as the kernel does. EINTR is success. */
int pcb_sys_close(int fd)
{
    int fail = PCB_SYS_ARMED() && pcb_sys_fault_(PCB_SYS_close) == 1;
    int err = errno, r = close(fd);
    if (fail) {
        errno = err;
        return err == EINTR ? 0 : -1;
    }
    return r != 0 && errno == EINTR ? 0 : r;
}
ssize_t pcb_sys_read(int fd, void *buf, size_t n)
{
    PCB_SYS_RETRY_(PCB_SYS_read, ssize_t, -1, read(fd, buf, n));
}
ssize_t pcb_sys_pread(int fd, void *buf, size_t n, off_t at)
{
    PCB_SYS_RETRY_(PCB_SYS_pread, ssize_t, -1, pread(fd, buf, n, at));
}
/* write/pwrite: a short fault writes half (a 1-byte write fails instead). */
ssize_t pcb_sys_write(int fd, const void *buf, size_t n)
{
    for (;;) {
        int f = PCB_SYS_ARMED() ? pcb_sys_fault_(PCB_SYS_write) : 0;
        if (f == 1 && errno == EINTR)
            continue;
        if (f == 1 || (f == 2 && n < 2))
            return (errno = f == 2 ? ENOSPC : errno), -1;
        ssize_t r = write(fd, buf, f == 2 ? n / 2 : n);
        if (r >= 0 || errno != EINTR)
            return r;
    }
}
ssize_t pcb_sys_pwrite(int fd, const void *buf, size_t n, off_t at)
{
    for (;;) {
        int f = PCB_SYS_ARMED() ? pcb_sys_fault_(PCB_SYS_pwrite) : 0;
        if (f == 1 && errno == EINTR)
            continue;
        if (f == 1 || (f == 2 && n < 2))
            return (errno = f == 2 ? ENOSPC : errno), -1;
        ssize_t r = pwrite(fd, buf, f == 2 ? n / 2 : n, at);
        if (r >= 0 || errno != EINTR)
            return r;
    }
}
int pcb_sys_fsync(int fd) { PCB_SYS_RETRY_(PCB_SYS_fsync, int, -1, fsync(fd)); }
/* fdatasync where POSIX's synchronized I/O is there; fsync otherwise. */
int pcb_sys_fdatasync(int fd)
{
#if defined(_POSIX_SYNCHRONIZED_IO) && _POSIX_SYNCHRONIZED_IO > 0
    PCB_SYS_RETRY_(PCB_SYS_fdatasync, int, -1, fdatasync(fd));
#else
    PCB_SYS_RETRY_(PCB_SYS_fdatasync, int, -1, fsync(fd));
#endif
}
int pcb_sys_rename(const char *from, const char *to)
{
    PCB_SYS_RETRY_(PCB_SYS_rename, int, -1, rename(from, to));
}
int pcb_sys_link(const char *from, const char *to)
{
    PCB_SYS_RETRY_(PCB_SYS_link, int, -1, link(from, to));
}
int pcb_sys_unlink(const char *path)
{
    PCB_SYS_RETRY_(PCB_SYS_unlink, int, -1, unlink(path));
}
int pcb_sys_unlinkat(int dfd, const char *name, int flags)
{
    PCB_SYS_RETRY_(PCB_SYS_unlinkat, int, -1, unlinkat(dfd, name, flags));
}
int pcb_sys_ftruncate(int fd, off_t len)
{
    PCB_SYS_RETRY_(PCB_SYS_ftruncate, int, -1, ftruncate(fd, len));
}
int pcb_sys_fstat(int fd, struct stat *sb)
{
    PCB_SYS_RETRY_(PCB_SYS_fstat, int, -1, fstat(fd, sb));
}
int pcb_sys_stat(const char *path, struct stat *sb)
{
    PCB_SYS_RETRY_(PCB_SYS_stat, int, -1, stat(path, sb));
}
int pcb_sys_lstat(const char *path, struct stat *sb)
{
    PCB_SYS_RETRY_(PCB_SYS_lstat, int, -1, lstat(path, sb));
}
ssize_t pcb_sys_readlink(const char *path, char *buf, size_t cap)
{
    PCB_SYS_RETRY_(PCB_SYS_readlink, ssize_t, -1, readlink(path, buf, cap));
}
int pcb_sys_fchmod(int fd, mode_t mode)
{
    PCB_SYS_RETRY_(PCB_SYS_fchmod, int, -1, fchmod(fd, mode));
}
int pcb_sys_fchown(int fd, uid_t uid, gid_t gid)
{
    PCB_SYS_RETRY_(PCB_SYS_fchown, int, -1, fchown(fd, uid, gid));
}
DIR *pcb_sys_fdopendir(int fd)
{
    PCB_SYS_CHECK_(PCB_SYS_fdopendir, NULL);
    return fdopendir(fd);
}
void *pcb_sys_mmap(void *at, size_t len, int prot, int flags, int fd, off_t off)
{
    PCB_SYS_CHECK_(PCB_SYS_mmap, MAP_FAILED);
    return mmap(at, len, prot, flags, fd, off);
}
int pcb_sys_msync(void *p, size_t len, int flags)
{
    PCB_SYS_RETRY_(PCB_SYS_msync, int, -1, msync(p, len, flags));
}
/* One non-blocking lock request (F_OFD_SETLK, F_SETLK, F_GETLK ...). An
 * interrupted request is not retried: the caller's wait loop tries again. */
int pcb_sys_fcntl_lock(int fd, int cmd, struct flock *fl)
{
    PCB_SYS_RETRY_(PCB_SYS_fcntl_lock, int, -1, fcntl(fd, cmd, fl));
}
int pcb_sys_flock(int fd, int op) { PCB_SYS_RETRY_(PCB_SYS_flock, int, -1, flock(fd, op)); }


int pcb_sys_fallocate(int fd, off_t at, off_t len)
{
    if (PCB_SYS_ARMED() && pcb_sys_fault_(PCB_SYS_posix_fallocate) == 1 && errno != EINTR)
        return errno;
    int rc;
    do
        rc = posix_fallocate(fd, at, len);
    while (rc == EINTR);
    if (rc == EOPNOTSUPP || rc == EINVAL) { /* no reservation here: grow it sparse */
        struct stat sb;
        if (pcb_sys_fstat(fd, &sb) != 0)
            return errno;
        if (sb.st_size < at + len && pcb_sys_ftruncate(fd, at + len) != 0)
            return errno;
        rc = 0;
    }
    return rc;
}

int pcb_sys_getentropy(void *buf, size_t len)
{
    for (;;) {
        if (PCB_SYS_ARMED() && pcb_sys_fault_(PCB_SYS_getentropy) == 1) {
            if (errno == EINTR)
                continue;
            return -1;
        }
#ifdef PCB_HAVE_GETRANDOM
        ssize_t r = getrandom(buf, len, GRND_NONBLOCK);
        if (r == (ssize_t)len)
            return 0;
        if (r >= 0)
            errno = EAGAIN; /* a short read: the pool is not ready */
#else
        if (getentropy(buf, len) == 0)
            return 0;
#endif
        if (errno != EINTR)
            return -1;
    }
}
