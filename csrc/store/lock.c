/*
 * store/lock.c — the writers' file lock, its change counter and file
 * identities (see lock.h).
 */
#define _GNU_SOURCE
#include "store/lock.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/bytes.h"
#include "common/timing.h"

void pcb_file_id_of(const char *path, pcb_file_id *id)
{
    struct stat sb;
    memset(id, 0, sizeof *id);
    if (stat(path, &sb) != 0)
        return;
    id->exists = 1;
    id->dev = (uint64_t)sb.st_dev;
    id->ino = (uint64_t)sb.st_ino;
    id->size = (uint64_t)sb.st_size;
    id->mtime_ns = (uint64_t)sb.st_mtim.tv_sec * 1000000000u + (uint64_t)sb.st_mtim.tv_nsec;
}

int pcb_file_id_same(const pcb_file_id *a, const pcb_file_id *b)
{
    return a->exists == b->exists
           && (!a->exists
               || (a->dev == b->dev && a->ino == b->ino && a->size == b->size
                   && a->mtime_ns == b->mtime_ns));
}

/* One attempt: 1 taken, 0 held by another, -1 error (errno set). */
static int try_lock(int fd)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET; /* l_start = l_len = 0: the whole file */
    if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
        return 1;
    if (errno == EAGAIN || errno == EACCES || errno == EINTR)
        return 0;
    if (errno == EINVAL) { /* no OFD locks (before Linux 3.15): flock is per description too */
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return 1;
        if (errno == EWOULDBLOCK)
            return 0;
    }
    return -1;
}

int pcb_lock_acquire(const char *lock_path, double timeout_s, int *fd, pcb_status *st)
{
    *fd = -1;
    int f = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (f < 0)
        return pcb_fail_os(st, "cannot open the store's lock file %s", lock_path);
    const uint64_t start = pcb_clock_ns();
    const double limit_ns = isfinite(timeout_s) && timeout_s > 0 ? timeout_s * 1e9 : 0;
    long sleep_ns = 100000; /* 0.1 ms, doubling up to 10 ms */
    for (;;) {
        int r = try_lock(f);
        if (r == 1) {
            *fd = f;
            return 1;
        }
        if (r < 0) {
            int err = errno;
            close(f);
            errno = err;
            return pcb_fail_os(st, "cannot lock the store's lock file %s", lock_path);
        }
        double waited = (double)(pcb_clock_ns() - start);
        if (waited >= limit_ns) {
            close(f);
            errno = ETIMEDOUT;
            return pcb_fail_os(st, "another writer held the store's lock file %s for %.3g s "
                               "(lock_timeout); nothing was written", lock_path, waited / 1e9);
        }
        double left = limit_ns - waited;
        struct timespec ts = {0, (double)sleep_ns < left ? sleep_ns : (long)left + 1};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        if (sleep_ns < 10000000)
            sleep_ns *= 2;
    }
}

void pcb_lock_release(int fd)
{
    if (fd >= 0)
        close(fd); /* drops the OFD (or flock) lock with the description */
}

uint64_t pcb_lock_counter(int fd)
{
    uint8_t b[8];
    ssize_t n;
    do
        n = pread(fd, b, sizeof b, 0);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof b ? pcb_load_le64(b) : 0;
}

uint64_t pcb_lock_peek_counter(const char *lock_path)
{
    int fd = open(lock_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return 0;
    uint64_t c = pcb_lock_counter(fd);
    close(fd);
    return c;
}

int pcb_lock_bump(int fd, const char *lock_path, uint64_t *now, pcb_status *st)
{
    uint8_t b[8];
    *now = pcb_lock_counter(fd) + 1;
    pcb_store_le32(b, (uint32_t)*now);
    pcb_store_le32(b + 4, (uint32_t)(*now >> 32));
    ssize_t n;
    do
        n = pwrite(fd, b, sizeof b, 0);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof b) {
        if (n >= 0)
            errno = EIO;
        return pcb_fail_os(st, "cannot update the store's lock file %s", lock_path);
    }
    return 1;
}
