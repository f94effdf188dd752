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

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "common/mem.h"
#include "common/sys.h"

/* Portability: flags some systems lack. Without O_CLOEXEC the descriptor is
 * marked close-on-exec right after the open (a window a concurrent exec may
 * hit); without O_DIRECTORY the directory is checked with fstat. A build
 * with -DPCB_FORCE_FALLBACKS (setup.py's PCB_FORCE_FALLBACKS=1) takes both
 * fallbacks on Linux too, so CI runs them. */
#ifdef PCB_FORCE_FALLBACKS
#undef O_CLOEXEC
#undef O_DIRECTORY
#endif
#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#define PCB_SET_CLOEXEC(fd) ((fd) >= 0 ? (void)fcntl((fd), F_SETFD, FD_CLOEXEC) : (void)0)
#else
#define PCB_SET_CLOEXEC(fd) ((void)0)
#endif
#ifndef O_DIRECTORY
#define O_DIRECTORY 0
#endif
#ifndef O_NOFOLLOW
#define O_NOFOLLOW 0
#endif
#ifndef O_NOCTTY
#define O_NOCTTY 0
#endif

/* open(2) with close-on-exec (common/sys.h retries it on EINTR). */
static int open_cloexec(const char *path, int flags, mode_t mode)
{
    int fd = pcb_sys_open(path, flags | O_CLOEXEC, mode);
    PCB_SET_CLOEXEC(fd);
    return fd;
}

/* A directory opened for reading (fsync, readdir): -1 with errno set. */
static int open_dir(const char *dir)
{
    int fd = open_cloexec(dir, O_RDONLY | O_DIRECTORY, 0);
    struct stat sb;
    if (fd >= 0 && O_DIRECTORY == 0 && (pcb_sys_fstat(fd, &sb) != 0 || !S_ISDIR(sb.st_mode))) {
        pcb_sys_close(fd);
        errno = ENOTDIR;
        return -1;
    }
    return fd;
}

static char *resolve_links(const char *path, pcb_status *st);
static char *walk_path(const char *path, int *ruled, char **partial, pcb_status *st);

/* 1 unless a link among path's directories breaks the link rule (then 0
 * with st set): for files opened with O_NOFOLLOW or created with link(2),
 * whose final name is never followed but whose directories the kernel
 * would walk. A directory that does not resolve is left to the call. */
static int dir_links_ok(const char *path, pcb_status *st)
{
    char *dir = pcb_dir_of(path);
    if (dir == NULL)
        return pcb_oom(st);
    int ruled;
    char *canon = walk_path(dir, &ruled, NULL, st);
    free(dir);
    free(canon);
    return canon != NULL || !ruled;
}

/* A link (not a regular file) as O_NOFOLLOW reports it: ELOOP (POSIX,
 * Linux), EMLINK (FreeBSD), EFTYPE (NetBSD). */
static int is_link_errno(int e)
{
#ifdef EFTYPE
    if (e == EFTYPE)
        return 1;
#endif
    return e == ELOOP || e == EMLINK;
}

/* open(path, flags) for reading, a final symbolic link followed only by
 * hand (resolve_links: fs.protected_symlinks' rule), the file it names then
 * opened without following again. The descriptor; -1 with errno set
 * (the caller's message); -2 with st set (the rule refused a link). */
static int open_nofollow_checked(const char *path, int flags, pcb_status *st)
{
    int fd = open_cloexec(path, flags | O_NOFOLLOW, 0);
    if (fd >= 0 || O_NOFOLLOW == 0 || !is_link_errno(errno))
        return fd;
    char *target = resolve_links(path, st);
    if (target == NULL)
        return -2;
    fd = open_cloexec(target, flags | O_NOFOLLOW, 0); /* a link again: swapped meanwhile */
    int err = errno;
    free(target);
    errno = err;
    return fd;
}

/* Frees what read_whole_file read, wiping it first if it may hold secrets. */
void pcb_file_bytes_free(pcb_file_bytes *f, int wipe)
{
    pcb_big_free(f->data, f->cap, wipe);
    memset(f, 0, sizeof *f);
}

/* Reads a regular file of at most max_len bytes (larger ones are refused
 * from their size, before any reading; a text file whose first bytes hold
 * a NUL is refused from those bytes, before the rest is read). A large file
 * lands in big_alloc memory (huge pages where the kernel gives them): a
 * store file is read once per open and is the largest buffer an open
 * touches. (Small text files go whole to their parser, whose messages say
 * more.) */
static int read_whole(const char *path, size_t max_len, const char *what, int text,
                      pcb_file_bytes *f, int *missing, pcb_status *st)
{
    memset(f, 0, sizeof *f);
    *missing = 0;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; it is then
     * refused as not a regular file (the flag means nothing for those).
     * O_NOFOLLOW: a final link is followed by hand, under the link rule. */
    int fd = open_nofollow_checked(path, O_RDONLY | O_NONBLOCK, st);
    if (fd == -2)
        return 0;
    if (fd < 0) {
        if (errno == ENOENT) {
            *missing = 1;
            return 1;
        }
        return pcb_fail_os(st, "cannot open %s", path);
    }
    struct stat sb;
    if (pcb_sys_fstat(fd, &sb) != 0) {
        pcb_sys_close(fd);
        return pcb_fail_os(st, "cannot stat %s", path);
    }
    if (!S_ISREG(sb.st_mode)) {
        pcb_sys_close(fd);
        errno = S_ISDIR(sb.st_mode) ? EISDIR : EINVAL;
        return pcb_fail_os(st, "%s is not a regular file", path);
    }
    if ((uint64_t)sb.st_size > max_len) {
        pcb_sys_close(fd);
        return pcb_fail(st, PCB_E_FORMAT, "%s is %lld bytes, larger than %s may be (%zu bytes)",
                        path, (long long)sb.st_size, what, max_len);
    }
    if (text && sb.st_size > 65536) { /* sniff a big file: sparse or binary is refused from its first bytes */
        char head[4096];
        ssize_t h = pcb_sys_pread(fd, head, sizeof head, 0);
        const char *nul = h > 0 ? memchr(head, 0, (size_t)h) : NULL;
        if (nul != NULL) {
            pcb_sys_close(fd);
            return pcb_fail(st, PCB_E_FORMAT, "%s is not %s: it holds a NUL byte (a control "
                            "character) at offset %zu, where text was expected", path, what, (size_t)(nul - head));
        }
    }
    size_t cap = (size_t)sb.st_size + 1, n = 0;
    char *buf = pcb_big_alloc(cap);
    if (buf == NULL) {
        pcb_sys_close(fd);
        return pcb_oom(st);
    }
    for (;;) {
        if (n == cap) { /* the file grew under us */
            if (n > max_len) {
                pcb_big_free(buf, cap, 1);
                pcb_sys_close(fd);
                return pcb_fail(st, PCB_E_FORMAT, "%s grew past the %zu bytes it may hold", path, max_len);
            }
            char *bigger = pcb_big_alloc(cap * 2);
            if (bigger == NULL) {
                pcb_big_free(buf, cap, 1);
                pcb_sys_close(fd);
                return pcb_oom(st);
            }
            memcpy(bigger, buf, n);
            pcb_big_free(buf, cap, 1);
            buf = bigger;
            cap *= 2;
        }
        ssize_t r = pcb_sys_read(fd, buf + n, cap - n);
        if (r < 0) {
            pcb_big_free(buf, cap, 1);
            pcb_sys_close(fd);
            return pcb_fail_os(st, "cannot read %s", path);
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    pcb_sys_close(fd);
    buf[n] = '\0'; /* the loop leaves n < cap: text readers may use string functions */
    f->data = buf;
    f->len = n;
    f->cap = cap;
    return 1;
}

int pcb_read_whole_file(const char *path, size_t max_len, const char *what, pcb_file_bytes *f,
                        int *missing, pcb_status *st)
{
    return read_whole(path, max_len, what, 0, f, missing, st);
}

int pcb_read_whole_text(const char *path, size_t max_len, const char *what, pcb_file_bytes *f,
                        int *missing, pcb_status *st)
{
    return read_whole(path, max_len, what, 1, f, missing, st);
}

/* A private key file: opened without following a final symbolic link, and
 * checked on the opened descriptor (no race with a swap): a regular file
 * owned by the effective user, mode without group/other bits, exactly len
 * bytes. As OpenSSH does for its keys. */
int pcb_read_private_file(const char *path, size_t len, const char *what, uint8_t *out,
                          int *missing, pcb_status *st)
{
    *missing = 0;
    if (!dir_links_ok(path, st))
        return 0;
    int fd = open_cloexec(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY, 0);
    if (fd < 0) {
        if (errno == ENOENT) {
            *missing = 1;
            return 1;
        }
        if (errno == ELOOP)
            return pcb_fail(st, PCB_E_PERMISSION, "%s %s is a symbolic link, not a regular "
                            "file; a key file is refused through a link: give the file's own path", what, path);
        return pcb_fail_os(st, "cannot open %s %s", what, path);
    }
    struct stat sb;
    int ok = 0;
    if (pcb_sys_fstat(fd, &sb) != 0)
        pcb_fail_os(st, "cannot stat %s %s", what, path);
    else if (!S_ISREG(sb.st_mode)) {
        errno = S_ISDIR(sb.st_mode) ? EISDIR : EINVAL;
        pcb_fail_os(st, "%s %s is not a regular file", what, path);
    } else if (sb.st_uid != geteuid())
        pcb_fail(st, PCB_E_PERMISSION, "%s %s is owned by uid %lu, not by this user (uid %lu); "
                 "a key file must belong to the user who uses it", what, path,
                 (unsigned long)sb.st_uid, (unsigned long)geteuid());
    else if (sb.st_mode & 077)
        pcb_fail(st, PCB_E_PERMISSION, "%s %s is accessible by group or others (mode %04o); "
                 "it must be private to its owner: run chmod 600 %s", what, path,
                 (unsigned)(sb.st_mode & 07777), path);
    else if ((uint64_t)sb.st_size != len) /* refused from its size, unread */
        pcb_fail(st, PCB_E_FORMAT, "%s %s must hold exactly %zu bytes, holds %lld", what, path, len,
                 (long long)sb.st_size);
    else {
        size_t n = 0;
        ssize_t r = 0;
        while (n < len) {
            r = pcb_sys_read(fd, out + n, len - n);
            if (r <= 0)
                break;
            n += (size_t)r;
        }
        ok = n == len;
        if (!ok) {
            /* A read error is the disk's (OSError with its errno), not a file of the
             * wrong size: only a file that ended early is a format error. */
            int err = errno;
            OPENSSL_cleanse(out, len);
            if (r < 0) {
                errno = err;
                pcb_fail_os(st, "cannot read %s %s", what, path);
            } else
                pcb_fail(st, PCB_E_FORMAT, "%s %s must hold exactly %zu bytes, %zu could be read",
                         what, path, len, n);
        }
    }
    pcb_sys_close(fd);
    return ok;
}

/* ---- the kernel's link and ownership rules, applied where links are
 * followed by hand (issue 25; see fileio.h) */

/* A sticky directory others may write into (as /tmp). */
static int sticky_shared(const struct stat *d)
{
    return S_ISDIR(d->st_mode) && (d->st_mode & S_ISVTX) && (d->st_mode & S_IWOTH);
}

/* fs.protected_symlinks: the link `link` (lstat'ed: *lsb) is followed
 * unless it lies in a sticky world-writable directory and belongs neither
 * to the follower (the effective uid) nor to the directory's owner. 1, or 0
 * with st set (PermissionError naming the link, its owner and the rule). */
static int may_follow(const char *link, const struct stat *lsb, pcb_status *st)
{
    uid_t me = geteuid();
    if (lsb->st_uid == me)
        return 1;
    char *dir = pcb_dir_of(link);
    if (dir == NULL)
        return pcb_oom(st);
    struct stat d;
    int ok = 1;
    if (pcb_sys_stat(dir, &d) != 0)
        ok = pcb_fail_os(st, "cannot stat %s, the directory of the symbolic link %s", dir, link);
    else if (sticky_shared(&d) && lsb->st_uid != d.st_uid)
        ok = pcb_fail(st, PCB_E_PERMISSION, "the symbolic link %s is owned by uid %lu and lies in "
                      "the sticky world-writable directory %s (owned by uid %lu): it is not followed. "
                      "The kernel's fs.protected_symlinks rule, applied here too: a link in such a "
                      "directory is followed only when it belongs to the follower (uid %lu) or to "
                      "the directory's owner, since anyone may plant one there; give the file's own "
                      "path, or remove the link", link, (unsigned long)lsb->st_uid, dir,
                      (unsigned long)d.st_uid, (unsigned long)me);
    free(dir);
    return ok;
}

int pcb_foreign_in_shared_dir(const char *path, const struct stat *sb)
{
    if (sb->st_uid == geteuid())
        return 0;
    char *dir = pcb_dir_of(path);
    struct stat d;
    int foreign = dir == NULL || (pcb_sys_stat(dir, &d) == 0 && sticky_shared(&d) && sb->st_uid != d.st_uid);
    free(dir);
    return foreign;
}

/* The same rule for the file a write lands in (fs.protected_regular's):
 * an existing file path (lstat'ed: *sb) in a sticky world-writable
 * directory must belong to the effective user or to the directory's owner.
 * 1, or 0 with st set (PermissionError). */
static int may_replace(const char *path, const struct stat *sb, pcb_status *st)
{
    uid_t me = geteuid();
    if (sb->st_uid == me)
        return 1;
    char *dir = pcb_dir_of(path);
    if (dir == NULL)
        return pcb_oom(st);
    struct stat d;
    int ok = 1;
    if (pcb_sys_stat(dir, &d) != 0)
        ok = pcb_fail_os(st, "cannot stat %s, the directory of %s", dir, path);
    else if (sticky_shared(&d) && sb->st_uid != d.st_uid)
        ok = pcb_fail(st, PCB_E_PERMISSION, "%s is owned by uid %lu, not by this user (uid %lu) nor "
                      "by the owner of its sticky world-writable directory %s (uid %lu): the store "
                      "neither reads nor replaces a file another user put there (anyone may plant "
                      "one to receive what is written, or keep its mode); remove it, or use a "
                      "private directory", path, (unsigned long)sb->st_uid, (unsigned long)me, dir,
                      (unsigned long)d.st_uid);
    free(dir);
    return ok;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = pcb_sys_write(fd, p, n);
        if (w < 0)
            return 0;
        p += w;
        n -= (size_t)w;
    }
    return 1;
}

int pcb_fsync_dir(const char *dir)
{
    int fd = open_dir(dir);
    if (fd < 0)
        return 0;
    int ok = pcb_sys_fsync(fd) == 0 || errno == EINVAL; /* some filesystems refuse directory fsync */
    pcb_sys_close(fd);
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
 * fsyncs it; on failure nothing is left behind. keep (may be NULL): the
 * file being replaced, whose owner and group the new one takes where
 * permitted, and then its mode (never the mode alone). Messages name path,
 * the user's file, not the temporary one. */
static int write_tmp(const char *path, const char *data, size_t len, mode_t mode,
                     const struct stat *keep, char *tmp, size_t tmp_cap, pcb_status *st)
{
    unsigned r;
    if (RAND_bytes((unsigned char *)&r, sizeof r) != 1)
        return pcb_fail_openssl(st, "drawing a temporary file name");
    tmp_name_of(path, tmp, tmp_cap, (unsigned)getpid(), r);
    int fd = open_cloexec(tmp, O_WRONLY | O_CREAT | O_EXCL, mode);
    if (fd < 0)
        return pcb_fail_os(st, "cannot write %s (creating a temporary file beside it)", path);
    int ok = 1;
    if (keep != NULL) {
        /* chown first (it may clear set-id bits), then the old mode exactly.
         * The mode goes with the owner: a writer who may not give the file
         * to its owner and group (EPERM: not root) does not take its mode
         * either, and the new file is the writer's own, with `mode`. */
        if ((keep->st_uid != geteuid() || keep->st_gid != getegid())
            && pcb_sys_fchown(fd, keep->st_uid, keep->st_gid) != 0) {
            if (errno != EPERM)
                ok = 0;
            keep = NULL;
        }
        ok = ok && (keep == NULL || pcb_sys_fchmod(fd, keep->st_mode & 07777) == 0);
    }
    ok = ok && write_all(fd, data, len) && pcb_sys_fsync(fd) == 0;
    int err = errno;
    if (pcb_sys_close(fd) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    if (!ok) {
        pcb_sys_unlink(tmp);
        errno = err;
        return pcb_fail_os(st, "cannot write %s", path);
    }
    return 1;
}

/* path made absolute and canonical as realpath makes it (no ".", "..", or
 * symbolic link in its directories), its final chain of links followed too
 * (a dangling link gives the missing file it names), with each link on the
 * way (directory or final) followed by hand and only under may_follow's
 * rule: realpath's own walk (a readlink per component, in the C library)
 * would follow a planted link that the kernel's fs.protected_symlinks
 * never sees. The final component need not exist; every other must be a
 * directory. malloc'd; NULL with *ruled = 1 and st set (a link refused,
 * out of memory, a link that cannot be read), or *ruled = 0 and errno set
 * (a directory missing, not one, or not searchable; too many links), and
 * then *partial (unless NULL; malloc'd, or NULL) is the walked prefix with
 * the unwalked rest as written, the name a call on it would fail for. */
static char *walk_path(const char *path, int *ruled, char **partial, pcb_status *st)
{
    char res[PATH_MAX]; /* the canonical prefix, without a final slash ("" is the root) */
    size_t rl = 0;
    char *rest = NULL;
    *ruled = 0;
    if (partial != NULL)
        *partial = NULL;
    res[0] = '\0';
    if (path[0] != '/') {
        char cwd[PATH_MAX];
        if (getcwd(cwd, sizeof cwd) == NULL)
            return NULL;
        if (asprintf(&rest, "%s/%s", cwd, path) < 0)
            rest = NULL;
    } else {
        rest = strdup(path);
    }
    if (rest == NULL) {
        *ruled = 1;
        pcb_oom(st);
        return NULL;
    }
    int hops = 0, ok = 1;
    const char *p = rest;
    for (;;) {
        while (*p == '/')
            p++;
        if (*p == '\0')
            break;
        const char *e = p;
        while (*e != '\0' && *e != '/')
            e++;
        size_t cl = (size_t)(e - p);
        const char *after = e;
        while (*after == '/')
            after++;
        int last = *after == '\0';
        if (cl == 1 && p[0] == '.') {
            p = e;
            continue;
        }
        if (cl == 2 && p[0] == '.' && p[1] == '.') {
            char *sl = strrchr(res, '/');
            if (sl != NULL)
                *sl = '\0', rl = (size_t)(sl - res);
            p = e;
            continue;
        }
        if (rl + 1 + cl >= sizeof res) {
            errno = ENAMETOOLONG;
            ok = 0;
            break;
        }
        res[rl] = '/';
        memcpy(res + rl + 1, p, cl);
        res[rl + 1 + cl] = '\0';
        struct stat sb;
        if (pcb_sys_lstat(res, &sb) != 0) {
            if (last && errno == ENOENT) { /* a missing file: writes create it */
                rl += 1 + cl;
                break;
            }
            ok = 0;
            break;
        }
        if (S_ISLNK(sb.st_mode)) {
            char target[PATH_MAX];
            ssize_t n;
            if (++hops > 40) {
                errno = ELOOP;
                ok = 0;
                break;
            }
            if (!may_follow(res, &sb, st)) {
                *ruled = 1, ok = 0;
                break;
            }
            if ((n = pcb_sys_readlink(res, target, sizeof target - 1)) < 0) {
                pcb_fail_os(st, "cannot resolve the symbolic link %s", res);
                *ruled = 1, ok = 0;
                break;
            }
            target[n] = '\0';
            char *next = NULL;
            if (asprintf(&next, "%s%s", target, e) < 0) {
                pcb_oom(st);
                *ruled = 1, ok = 0;
                break;
            }
            free(rest);
            rest = next;
            p = rest;
            if (target[0] == '/')
                rl = 0;
            res[rl] = '\0'; /* the link's own name dropped: its target takes its place */
            continue;
        }
        if (!last && !S_ISDIR(sb.st_mode)) {
            errno = ENOTDIR;
            ok = 0;
            break;
        }
        rl += 1 + cl;
        p = e;
    }
    int err = errno;
    if (!ok && !*ruled && partial != NULL) { /* the walked prefix, then the rest as written */
        res[rl] = '\0';
        while (*p == '/')
            p++;
        if (asprintf(partial, "%s/%s", res, p) < 0)
            *partial = NULL;
    }
    free(rest);
    if (!ok) {
        errno = err;
        return NULL;
    }
    char *out = strdup(rl ? res : "/");
    if (out == NULL) {
        *ruled = 1;
        pcb_oom(st);
    }
    return out;
}

/* The file a write to path lands in: the end of its chain of symbolic
 * links, each followed under the link rule (walk_path; a dangling link
 * resolves to the missing file it names, which the write then creates).
 * Where the walk fails for want of a directory, the name it got to: the
 * write then fails with its own message on it. malloc'd; NULL with st set. */
static char *resolve_links(const char *path, pcb_status *st)
{
    int ruled;
    char *partial, *out = walk_path(path, &ruled, &partial, st);
    if (out == NULL && !ruled && (out = partial) == NULL)
        pcb_oom(st);
    return out;
}

/* Whether this thread's last pcb_atomic_write got past its rename (fileio.h). */
static __thread int in_place;

int pcb_atomic_write_in_place(void) { return in_place; }

/* Writes data to path atomically: a new temporary file, fsync, rename over
 * path, fsync the directory. A crash leaves the old file or the new one. A
 * symbolic link is kept (its target is replaced, in the target's
 * directory); an existing file keeps its owner where permitted and
 * its mode with it; another user's file in a sticky world-writable directory
 * is refused (may_replace). */
int pcb_atomic_write(const char *path, const char *dir, const char *data, size_t len,
                        mode_t mode, pcb_status *st)
{
    char tmp[PATH_MAX + 64];
    in_place = 0;
    char *target = resolve_links(path, st), *tdir = NULL;
    if (target == NULL)
        return 0;
    int linked = strcmp(target, path) != 0;
    if (linked && (tdir = pcb_dir_of(target)) == NULL) {
        free(target);
        return pcb_oom(st);
    }
    struct stat old;
    int have_old = pcb_sys_lstat(target, &old) == 0, ok = 1;
    if (!have_old && errno != ENOENT) /* not "no file": the mode and owner to keep are unknown */
        ok = pcb_fail_os(st, "cannot write %s (stat of the file it replaces)", target);
    have_old = have_old && S_ISREG(old.st_mode);
    ok = ok && (!have_old || may_replace(target, &old, st));
    ok = ok && write_tmp(target, data, len, mode, have_old ? &old : NULL, tmp, sizeof tmp, st);
    if (ok && pcb_sys_rename(tmp, target) != 0) {
        int err = errno;
        pcb_sys_unlink(tmp);
        errno = err;
        ok = pcb_fail_os(st, "cannot replace %s", target);
    }
    in_place = ok; /* from here on the file holds the new data */
    if (ok && !pcb_fsync_dir(linked ? tdir : dir))
        ok = pcb_fail_os(st, "cannot sync directory %s (%s holds the new data, its "
                         "durability is unknown)", linked ? tdir : dir, target);
    free(target);
    free(tdir);
    return ok;
}

/* Like atomic_write, but never replaces an existing file: the new file is
 * linked into place, which fails if another process created it first
 * (then *exists = 1 and nothing is written). */
int pcb_atomic_create(const char *path, const char *dir, const char *data, size_t len,
                         mode_t mode, int *exists, pcb_status *st)
{
    char tmp[PATH_MAX + 64];
    *exists = 0;
    if (!dir_links_ok(path, st))
        return 0;
    if (!write_tmp(path, data, len, mode, NULL, tmp, sizeof tmp, st))
        return 0;
    int ok = pcb_sys_link(tmp, path) == 0, err = errno;
    /* The temporary name must go: it holds the same bytes (a key). Tried
     * twice (a passing failure); if it stays, the caller hears of it. */
    if (pcb_sys_unlink(tmp) != 0 && errno != ENOENT && pcb_sys_unlink(tmp) != 0 && errno != ENOENT)
        return pcb_fail_os(st, "%s %s, but its temporary file %s could not be removed (it "
                           "holds the same bytes: remove it)", ok ? "created" : "could not create",
                           path, tmp);
    if (!ok && err == EEXIST) {
        *exists = 1;
        return 1;
    }
    if (!ok) {
        errno = err;
        return pcb_fail_os(st, "cannot create %s", path);
    }
    if (!pcb_fsync_dir(dir))
        return pcb_fail_os(st, "cannot sync directory %s (%s was created, its durability "
                           "is unknown)", dir, path);
    return 1;
}

/* Whether path's temporary file name fits the file system's name limit:
 * a longer name would open but never commit. */
int pcb_check_name_fits(const char *path, const char *what, pcb_status *st)
{
    char tmp[PATH_MAX + 64];
    const char *slash = strrchr(path, '/');
    size_t bl = strlen(slash ? slash + 1 : path);
    tmp_name_of(path, tmp, sizeof tmp, 0, 0);
    slash = strrchr(tmp, '/');
    size_t tl = strlen(slash ? slash + 1 : tmp);
    if (tl <= NAME_MAX)
        return 1;
    return pcb_fail(st, PCB_E_VALUE, "%s %s: its file name is %zu bytes, but writes go through a "
                    "temporary file whose name is %zu bytes longer, so the name may be at most %zu "
                    "bytes", what, path, bl, tl - bl, (size_t)NAME_MAX - (tl - bl));
}

/* path with its links followed and its directory made canonical (the file
 * itself need not exist); malloc'd or NULL. */
static char *canonical_path(const char *path)
{
    pcb_status ignored;
    int ruled;
    char *partial, *out = walk_path(path, &ruled, &partial, &ignored);
    return out != NULL ? out : partial; /* a missing directory: the name as far as it got */
}

char *pcb_fixed_path(const char *path, const char *what, pcb_status *st)
{
    int ruled;
    size_t pl = strlen(path);
    int no_name = pl == 0 || path[pl - 1] == '/'; /* kept so: the caller refuses it by name */
    char *partial, *target = walk_path(pl ? path : ".", &ruled, &partial, st), *out = NULL;
    if (target != NULL && no_name) {
        if (asprintf(&out, "%s%s", target, strcmp(target, "/") == 0 ? "" : "/") < 0)
            out = NULL, pcb_oom(st);
        free(target);
        return out;
    }
    if (target == NULL) {
        if (!ruled) { /* named as the directory the walk got to */
            int err = errno;
            char *dir = pcb_dir_of(partial != NULL ? partial : path);
            free(partial);
            if (dir == NULL)
                return pcb_oom(st), NULL;
            errno = err;
            pcb_fail_os(st, "the %s's directory %s is not usable", what, dir);
            free(dir);
        }
        return NULL;
    }
    struct stat sb;
    if (pcb_sys_lstat(target, &sb) == 0 && !S_ISLNK(sb.st_mode) && !may_replace(target, &sb, st)) {
        free(target); /* another user's file in a sticky shared directory */
        return NULL;
    }
    if (strcmp(target, "/") == 0) {
        errno = EISDIR;
        pcb_fail_os(st, "the %s's path %s names the root directory", what, path);
        free(target);
        return NULL;
    }
    out = target;
    return out;
}

int pcb_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (pcb_sys_stat(a, &sa) == 0 && pcb_sys_stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char *ca = canonical_path(a), *cb = canonical_path(b);
    int same = ca != NULL && cb != NULL ? strcmp(ca, cb) == 0 : strcmp(a, b) == 0;
    free(ca);
    free(cb);
    return same;
}

/* Removes temporary files a crash left behind for this store. */

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
    int dfd = open_dir(dir); /* not opendir: its descriptor need not be close-on-exec */
    DIR *d = dfd >= 0 ? pcb_sys_fdopendir(dfd) : NULL;
    if (d == NULL) {
        if (dfd >= 0)
            pcb_sys_close(dfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n == pl + 16 + 4 && strncmp(e->d_name, prefix, pl) == 0
            && strcmp(e->d_name + n - 4, ".tmp") == 0 && owner_dead(e->d_name + pl))
            pcb_sys_unlinkat(dirfd(d), e->d_name, 0);
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

