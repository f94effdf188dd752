/*
 * store/fileio.c — reading whole files and atomic writes (see fileio.h).
 */
#define _GNU_SOURCE
#include "store/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "common/mem.h"

/* Frees what read_whole_file read, wiping it first if it may hold secrets. */
void pcb_file_bytes_free(pcb_file_bytes *f, int wipe)
{
    pcb_big_free(f->data, f->cap, wipe);
    memset(f, 0, sizeof *f);
}

/* Reads a regular file of at most max_len bytes (larger ones are refused
 * from their size, before any reading). A large file lands in big_alloc
 * memory (huge pages where the kernel gives them): a store file is read
 * once per open and is the largest buffer an open touches. */
int pcb_read_whole_file(const char *path, size_t max_len, const char *what, pcb_file_bytes *f,
                           int *missing, pcb_status *st)
{
    memset(f, 0, sizeof *f);
    *missing = 0;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; it is then
     * refused as not a regular file (the flag means nothing for those). */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT) {
            *missing = 1;
            return 1;
        }
        return pcb_fail_os(st, "cannot open %s", path);
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return pcb_fail_os(st, "cannot stat %s", path);
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        errno = S_ISDIR(sb.st_mode) ? EISDIR : EINVAL;
        return pcb_fail_os(st, "%s is not a regular file", path);
    }
    if ((uint64_t)sb.st_size > max_len) {
        close(fd);
        return pcb_fail(st, PCB_E_FORMAT, "%s is %lld bytes, larger than %s may be (%zu bytes)",
                        path, (long long)sb.st_size, what, max_len);
    }
    size_t cap = (size_t)sb.st_size + 1, n = 0;
    char *buf = pcb_big_alloc(cap);
    if (buf == NULL) {
        close(fd);
        return pcb_oom(st);
    }
    for (;;) {
        if (n == cap) { /* the file grew under us */
            if (n > max_len) {
                pcb_big_free(buf, cap, 1);
                close(fd);
                return pcb_fail(st, PCB_E_FORMAT, "%s grew past the %zu bytes it may hold", path, max_len);
            }
            char *bigger = pcb_big_alloc(cap * 2);
            if (bigger == NULL) {
                pcb_big_free(buf, cap, 1);
                close(fd);
                return pcb_oom(st);
            }
            memcpy(bigger, buf, n);
            pcb_big_free(buf, cap, 1);
            buf = bigger;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            pcb_big_free(buf, cap, 1);
            close(fd);
            return pcb_fail_os(st, "cannot read %s", path);
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0'; /* the loop leaves n < cap: text readers may use string functions */
    f->data = buf;
    f->len = n;
    f->cap = cap;
    return 1;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return 0;
        }
        p += w;
        n -= (size_t)w;
    }
    return 1;
}

int pcb_fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int ok = fsync(fd) == 0 || errno == EINVAL; /* some filesystems refuse directory fsync */
    close(fd);
    return ok;
}

/* The temporary files of path: "<dir>/.<base>.<pid><random>.tmp", the
 * writer's pid and 32 random bits, 8 hex digits each. */
static void tmp_name_of(const char *path, char *out, size_t cap, unsigned pid, unsigned nonce)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    int dir_len = slash ? (int)(slash - path + 1) : 0;
    snprintf(out, cap, "%.*s.%s.%08x%08x.tmp", dir_len, path, base, pid, nonce);
}

/* Writes data to a new temporary file beside path (its name into tmp) and
 * fsyncs it; on failure nothing is left behind. */
static int write_tmp(const char *path, const char *data, size_t len, mode_t mode, char *tmp,
                     size_t tmp_cap, pcb_status *st)
{
    unsigned r;
    if (RAND_bytes((unsigned char *)&r, sizeof r) != 1)
        return pcb_fail_openssl(st, "cannot draw a temporary file name");
    tmp_name_of(path, tmp, tmp_cap, (unsigned)getpid(), r);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0)
        return pcb_fail_os(st, "cannot create %s", tmp);
    int ok = write_all(fd, data, len) && fsync(fd) == 0;
    int err = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    if (!ok) {
        unlink(tmp);
        errno = err;
        return pcb_fail_os(st, "cannot write %s", tmp);
    }
    return 1;
}

/* Writes data to path atomically: a new temporary file, fsync, rename over
 * path, fsync the directory. A crash leaves the old file or the new one. */
int pcb_atomic_write(const char *path, const char *dir, const char *data, size_t len,
                        mode_t mode, pcb_status *st)
{
    char tmp[PATH_MAX + 64];
    if (!write_tmp(path, data, len, mode, tmp, sizeof tmp, st))
        return 0;
    if (rename(tmp, path) != 0) {
        int err = errno;
        unlink(tmp);
        errno = err;
        return pcb_fail_os(st, "cannot replace %s", path);
    }
    if (!pcb_fsync_dir(dir))
        return pcb_fail_os(st, "cannot sync directory %s", dir);
    return 1;
}

/* Like atomic_write, but never replaces an existing file: the new file is
 * linked into place, which fails if another process created it first
 * (then *exists = 1 and nothing is written). */
int pcb_atomic_create(const char *path, const char *dir, const char *data, size_t len,
                         mode_t mode, int *exists, pcb_status *st)
{
    char tmp[PATH_MAX + 64];
    *exists = 0;
    if (!write_tmp(path, data, len, mode, tmp, sizeof tmp, st))
        return 0;
    int ok = link(tmp, path) == 0, err = errno;
    unlink(tmp);
    if (!ok && err == EEXIST) {
        *exists = 1;
        return 1;
    }
    if (!ok) {
        errno = err;
        return pcb_fail_os(st, "cannot create %s", path);
    }
    if (!pcb_fsync_dir(dir))
        return pcb_fail_os(st, "cannot sync directory %s", dir);
    return 1;
}

/* 1 if the temp file name's pid (its first 8 hex digits) is provably
 * dead: no such process here. A live pid, one we may not signal, or a name
 * we cannot read counts as alive. */
static int owner_dead(const char *hex)
{
    char pid_text[9];
    memcpy(pid_text, hex, 8);
    pid_text[8] = '\0';
    char *end;
    unsigned long pid = strtoul(pid_text, &end, 16);
    if (*end != '\0' || pid == 0)
        return 0;
    if (pid > INT_MAX)
        return 1; /* no process has such a pid (older names were all random) */
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Removes temporary files that writers which died left behind for this
 * store. Called only under the store's file lock: every live writer that
 * takes it writes its temp files only while holding it, so these are
 * leftovers; the pid check spares a writer that does not take the lock. */
void pcb_remove_stale_tmp(const char *path, const char *dir)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char prefix[NAME_MAX + 4];
    snprintf(prefix, sizeof prefix, ".%s.", base);
    size_t pl = strlen(prefix);
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n == pl + 16 + 4 && strncmp(e->d_name, prefix, pl) == 0
            && strcmp(e->d_name + n - 4, ".tmp") == 0 && owner_dead(e->d_name + pl))
            unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
}


char *pcb_dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

