/*
 * store/lock.c — the writers' file lock, its change counter and file
 * identities (see lock.h).
 */
#define _GNU_SOURCE
#include "store/lock.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/bytes.h"
#include "common/sys.h"
#include "common/timing.h"
#include "common/wait.h"
#include "store/fileio.h"

/* Which lock (see lock.h): OFD where the headers have it, unless the build
 * forces the fallbacks (-DPCB_FORCE_FALLBACKS: flock, and seconds-only
 * mtimes, so that a Linux CI run exercises the code other systems get). */
#if defined(F_OFD_SETLK) && !defined(PCB_FORCE_FALLBACKS)
#define PCB_HAVE_OFD 1
#endif
#ifdef PCB_FORCE_FALLBACKS /* and FD_CLOEXEC set after the open */
#undef O_CLOEXEC
#endif
#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif
#ifndef O_NOFOLLOW
#define O_NOFOLLOW 0
#endif

/* A stat's mtime in ns: st_mtim (POSIX 2008), st_mtimespec (Apple), or
 * whole seconds where neither exists (or forced). */
#if defined(PCB_FORCE_FALLBACKS) || defined(PCB_NO_ST_MTIM)
#define MTIME_NS(sb) ((uint64_t)(sb).st_mtime * 1000000000u)
#elif defined(__APPLE__)
#define MTIME_NS(sb) ((uint64_t)(sb).st_mtimespec.tv_sec * 1000000000u + (uint64_t)(sb).st_mtimespec.tv_nsec)
#else
#define MTIME_NS(sb) ((uint64_t)(sb).st_mtim.tv_sec * 1000000000u + (uint64_t)(sb).st_mtim.tv_nsec)
#endif

void pcb_file_id_of(const char *path, pcb_file_id *id)
{
    struct stat sb;
    memset(id, 0, sizeof *id);
    if (pcb_sys_stat(path, &sb) != 0)
        return;
    id->exists = 1;
    id->dev = (uint64_t)sb.st_dev;
    id->ino = (uint64_t)sb.st_ino;
    id->size = (uint64_t)sb.st_size;
    id->mtime_ns = MTIME_NS(sb);
}

int pcb_file_id_same(const pcb_file_id *a, const pcb_file_id *b)
{
    return a->exists == b->exists
           && (!a->exists
               || (a->dev == b->dev && a->ino == b->ino && a->size == b->size
                   && a->mtime_ns == b->mtime_ns));
}

/* ------------------------------------------- the process's lock descriptors */

/* Every lock-file descriptor this process has open, being acquired or held.
 * `guard` makes each open/close and its slot one step as a fork sees it
 * (the prepare handler takes it), so a forked child closes exactly the
 * descriptors open at the fork, never a number reused since. */
typedef struct {
    int fd, held;
    uint64_t dev, ino;
} lock_slot;

static pthread_mutex_t guard = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static lock_slot *slots;
static size_t n_slots, cap_slots;

static void fork_prepare(void) { pthread_mutex_lock(&guard); }
static void fork_parent(void) { pthread_mutex_unlock(&guard); }

static void fork_child(void)
{
    /* Only the forking thread exists: a parent's thread waiting for a lock
     * does not, and the child must not keep the parent's descriptions open
     * (the parent's lock would then outlive the parent's close). */
    for (size_t i = 0; i < n_slots; i++)
        pcb_sys_close(slots[i].fd);
    n_slots = 0;
    pthread_mutex_init(&guard, NULL);
}

static void atfork_init(void) { pthread_atfork(fork_prepare, fork_parent, fork_child); }

static lock_slot *slot_of(int fd)
{
    for (size_t i = 0; i < n_slots; i++)
        if (slots[i].fd == fd)
            return &slots[i];
    return NULL;
}

/* Opens lock_path close-on-exec and records the descriptor: -1, errno set. */
static int open_tracked(const char *lock_path)
{
    pthread_once(&atfork_once, atfork_init);
    pthread_mutex_lock(&guard);
    int err = 0, f = -1;
    if (n_slots == cap_slots) {
        size_t cap = cap_slots ? cap_slots * 2 : 8;
        lock_slot *more = realloc(slots, cap * sizeof *more);
        if (more == NULL)
            err = ENOMEM;
        else {
            slots = more;
            cap_slots = cap;
        }
    }
    if (err == 0) {
        f = pcb_sys_open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        err = f < 0 ? errno : 0;
    }
    struct stat sb;
    if (f >= 0 && (O_CLOEXEC == 0 && fcntl(f, F_SETFD, FD_CLOEXEC) != 0)) {
        err = errno;
        pcb_sys_close(f);
        f = -1;
    }
    if (f >= 0 && pcb_sys_fstat(f, &sb) != 0) {
        err = errno;
        pcb_sys_close(f);
        f = -1;
    }
    if (f >= 0 && pcb_foreign_in_shared_dir(lock_path, &sb)) { /* fileio.h: issue 25 */
        err = EPERM; /* another user's file in a sticky shared directory: its counter is written */
        pcb_sys_close(f);
        f = -1;
    }
    if (f >= 0)
        slots[n_slots++] = (lock_slot){f, 0, (uint64_t)sb.st_dev, (uint64_t)sb.st_ino};
    pthread_mutex_unlock(&guard);
    errno = err;
    return f;
}

/* Forgets the descriptor and closes it (which drops its lock). */
static void close_tracked(int fd)
{
    pthread_mutex_lock(&guard);
    lock_slot *sl = slot_of(fd);
    if (sl != NULL)
        *sl = slots[--n_slots];
    pcb_sys_close(fd);
    pthread_mutex_unlock(&guard);
}

/* The kernel's lock, one non-blocking attempt: 1 taken, 0 held by another,
 * -1 error (errno set). */
static int kernel_try(int fd)
{
#ifdef PCB_HAVE_OFD
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET; /* l_start = l_len = 0: the whole file */
    if (pcb_sys_fcntl_lock(fd, F_OFD_SETLK, &fl) == 0)
        return 1;
    if (errno == EAGAIN || errno == EACCES) /* EINTR: retried by common/sys.c */
        return 0;
    if (errno != EINVAL) /* EINVAL: no OFD locks (before Linux 3.15): flock below */
        return -1;
#endif
    if (pcb_sys_flock(fd, LOCK_EX | LOCK_NB) == 0)
        return 1;
    return errno == EWOULDBLOCK || errno == EAGAIN ? 0 : -1;
}

/* One attempt: 1 taken, 0 held by another, -1 error (errno set). A lock
 * file another descriptor of this process holds counts as held whatever
 * the kernel says: Store objects of one process exclude each other even
 * where the kernel's lock is per process (flock emulated on NFS). */
static int try_lock(int fd)
{
    pthread_mutex_lock(&guard);
    lock_slot *me = slot_of(fd);
    int r = 1;
    for (size_t i = 0; me != NULL && i < n_slots; i++)
        if (slots[i].held && slots[i].dev == me->dev && slots[i].ino == me->ino)
            r = 0;
    if (r == 1 && (r = kernel_try(fd)) == 1 && me != NULL)
        me->held = 1;
    int err = errno;
    pthread_mutex_unlock(&guard);
    errno = err;
    return r;
}

int pcb_lock_acquire(const char *lock_path, double timeout_s, int *fd, pcb_status *st)
{
    *fd = -1;
    int f = open_tracked(lock_path);
    if (f < 0)
        return pcb_fail_os(st, "cannot open the store's lock file %s", lock_path);
    /* The limit in whole ns, bounded before the conversion (NaN: try once). */
    const double t = timeout_s > PCB_LOCK_MAX_TIMEOUT ? PCB_LOCK_MAX_TIMEOUT
                     : timeout_s > 0 ? timeout_s : 0;
    const uint64_t limit_ns = (uint64_t)(t * 1e9);
    const uint64_t start = pcb_clock_ns();
    uint64_t asked = start; /* when interrupted() was last asked */
    long sleep_ns = 100000; /* 0.1 ms, doubling up to 10 ms (<= PCB_WAIT_SLICE_NS) */
    int woken = 0, began = 0, r;
    void *token = NULL;
    for (;;) {
        if ((r = try_lock(f)) != 0)
            break;
        const uint64_t now = pcb_clock_ns(), waited = now - start;
        if (waited >= limit_ns) {
            r = -2;
            break;
        }
        if (!began) { /* a wait, not one attempt: the embedder's hooks (the GIL) */
            token = pcb_wait_begin();
            began = 1;
        }
        if (woken || now - asked >= PCB_WAIT_CHECK_NS) {
            asked = now;
            if (pcb_wait_interrupted()) {
                r = -3;
                break;
            }
        }
        const uint64_t left = limit_ns - waited;
        struct timespec ts = {0, (uint64_t)sleep_ns < left ? sleep_ns : (long)left + 1};
        /* A signal ends the sleep: the embedder is asked at once. */
        woken = nanosleep(&ts, NULL) != 0 && errno == EINTR;
        if (sleep_ns < 10000000)
            sleep_ns *= 2;
    }
    int err = errno;
    if (began)
        pcb_wait_end(token);
    if (r == 1) {
        *fd = f;
        return 1;
    }
    close_tracked(f);
    if (r == -3)
        return pcb_fail(st, PCB_E_INTERRUPTED, "interrupted while waiting for another writer's "
                        "lock on %s; nothing was written", lock_path);
    if (r == -2) {
        errno = ETIMEDOUT;
        return pcb_fail_os(st, "another writer held the store's lock file %s for %.3g s "
                           "(lock_timeout); nothing was written", lock_path,
                           (double)(pcb_clock_ns() - start) / 1e9);
    }
    errno = err;
    return pcb_fail_os(st, "cannot lock the store's lock file %s", lock_path);
}

void pcb_lock_release(int fd)
{
    if (fd >= 0)
        close_tracked(fd); /* drops the OFD (or flock) lock with the description */
}

uint64_t pcb_lock_counter(int fd)
{
    uint8_t b[8];
    ssize_t n = pcb_sys_pread(fd, b, sizeof b, 0);
    return n == (ssize_t)sizeof b ? pcb_load_le64(b) : 0;
}

uint64_t pcb_lock_peek_counter(const char *lock_path)
{
    int fd = pcb_sys_open(lock_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0);
    if (fd < 0)
        return 0;
    if (O_CLOEXEC == 0)
        (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    uint64_t c = pcb_lock_counter(fd);
    pcb_sys_close(fd);
    return c;
}

int pcb_lock_bump(int fd, const char *lock_path, uint64_t *now, pcb_status *st)
{
    uint8_t b[8];
    *now = pcb_lock_counter(fd) + 1;
    pcb_store_le32(b, (uint32_t)*now);
    pcb_store_le32(b + 4, (uint32_t)(*now >> 32));
    ssize_t n = pcb_sys_pwrite(fd, b, sizeof b, 0);
    if (n != (ssize_t)sizeof b) {
        if (n >= 0)
            errno = EIO;
        return pcb_fail_os(st, "cannot update the store's lock file %s", lock_path);
    }
    return 1;
}
