/*
 * lost_writes.so: an LD_PRELOAD shim that simulates a power cut which loses
 * every write not yet made durable. For tests/e2e/reliability/crash_points.rs.
 *
 * It counts the calls that write to a regular file or make one durable
 * (write, pwrite, writev, fsync, fdatasync, ftruncate, rename*, unlink*;
 * writes to sockets, pipes and terminals are not counted). At the N-th
 * (LOST_WRITES_AT=N) it undoes every write to a regular file that no fsync
 * or fdatasync of that file has covered since (restoring the old bytes and
 * the old size, through a duplicate of the descriptor, so closed and
 * renamed files are undone too), then kills the process with SIGKILL.
 * Renames, unlinks and directory entries are kept: on a journalling file
 * system such as ext4 metadata survives as a unit, data does not.
 *
 * LOST_WRITES_COUNT=PATH keeps the number of counted calls in PATH, updated
 * at each one (to enumerate the points, also of a process killed later).
 * LOST_WRITES_ARM=PATH counts nothing until the file PATH exists (e.g. a
 * server that is up before the operation under test); writes made before
 * are still undone at the cut unless synced.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

struct undo {
    int fd;          /* a dup of the written descriptor */
    dev_t dev;
    ino_t ino;
    off_t off;
    size_t len;      /* bytes of `old` */
    char *old;       /* the bytes overwritten (those inside the old size) */
    off_t old_size;  /* the file's size before the write */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct undo *undos;
static size_t n_undos, cap_undos;
static long counted, lose_at = -1;
static int ready, armed = 1, count_fd = -1;
static const char *arm_path;

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pread)(int, void *, size_t, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_rename)(const char *, const char *);
static int (*real_renameat)(int, const char *, int, const char *);
static int (*real_renameat2)(int, const char *, int, const char *, unsigned);
static int (*real_unlink)(const char *);
static int (*real_unlinkat)(int, const char *, int);
static int (*real_ftruncate)(int, off_t);

static void init(void) {
    if (ready) return;
    real_write = dlsym(RTLD_NEXT, "write");
    real_pwrite = dlsym(RTLD_NEXT, "pwrite");
    real_pwrite64 = dlsym(RTLD_NEXT, "pwrite64");
    real_writev = dlsym(RTLD_NEXT, "writev");
    real_pread = dlsym(RTLD_NEXT, "pread");
    real_fsync = dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    real_rename = dlsym(RTLD_NEXT, "rename");
    real_renameat = dlsym(RTLD_NEXT, "renameat");
    real_renameat2 = dlsym(RTLD_NEXT, "renameat2");
    real_unlink = dlsym(RTLD_NEXT, "unlink");
    real_unlinkat = dlsym(RTLD_NEXT, "unlinkat");
    real_ftruncate = dlsym(RTLD_NEXT, "ftruncate");
    const char *at = getenv("LOST_WRITES_AT");
    if (at) lose_at = atol(at);
    arm_path = getenv("LOST_WRITES_ARM");
    if (arm_path) armed = 0;
    const char *count = getenv("LOST_WRITES_COUNT");
    if (count) count_fd = open(count, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ready = 1;
}

/* The power cut: every undo, newest first, then SIGKILL. Called locked. */
static void lose(void) {
    for (size_t i = n_undos; i-- > 0;) {
        struct undo *u = &undos[i];
        if (u->len) real_pwrite(u->fd, u->old, u->len, u->off);
        struct stat st;
        if (fstat(u->fd, &st) == 0 && st.st_size > u->old_size) real_ftruncate(u->fd, u->old_size);
    }
    kill(getpid(), SIGKILL);
    for (;;) pause();
}

static void tick(void) {
    pthread_mutex_lock(&mu);
    if (!armed && access(arm_path, F_OK) == 0) armed = 1;
    if (armed) {
        counted++;
        if (counted == lose_at) lose();
        if (count_fd >= 0) {
            char buf[32];
            int n = snprintf(buf, sizeof buf, "%20ld\n", counted);
            if (n > 0) real_pwrite(count_fd, buf, (size_t)n, 0);
        }
    }
    pthread_mutex_unlock(&mu);
}

/* Whether `fd` is a regular file (the writes that are counted). */
static int regular(int fd) {
    struct stat st;
    return fd != count_fd && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

/* Records what a write of `len` bytes at `off` (-1: the current offset)
 * to `fd` will overwrite, when `fd` is a regular file. */
static void record(int fd, size_t len, off_t off) {
    struct stat st;
    if (fd == count_fd || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
    int flags = fcntl(fd, F_GETFL);
    /* A descriptor opened O_DSYNC or O_SYNC (LMDB's meta page) writes durably. */
    if (flags >= 0 && (flags & (O_DSYNC | O_SYNC))) return;
    if (off < 0) {
        off = (flags >= 0 && (flags & O_APPEND)) ? st.st_size : lseek(fd, 0, SEEK_CUR);
        if (off < 0) return;
    }
    struct undo u = {.fd = -1, .dev = st.st_dev, .ino = st.st_ino, .off = off,
                     .len = 0, .old = NULL, .old_size = st.st_size};
    if (off < st.st_size) {
        size_t inside = (size_t)(st.st_size - off) < len ? (size_t)(st.st_size - off) : len;
        u.old = malloc(inside);
        if (u.old) {
            ssize_t got = real_pread(fd, u.old, inside, off);
            u.len = got > 0 ? (size_t)got : 0;
        }
    }
    pthread_mutex_lock(&mu);
    /* One duplicate descriptor per file. */
    for (size_t i = 0; i < n_undos; i++) {
        if (undos[i].dev == u.dev && undos[i].ino == u.ino) { u.fd = undos[i].fd; break; }
    }
    if (u.fd < 0) u.fd = fcntl(fd, F_DUPFD_CLOEXEC, 1000);
    if (n_undos == cap_undos) {
        cap_undos = cap_undos ? cap_undos * 2 : 256;
        undos = realloc(undos, cap_undos * sizeof *undos);
    }
    if (undos && u.fd >= 0) undos[n_undos++] = u; else free(u.old);
    pthread_mutex_unlock(&mu);
}

/* The file behind `fd` is durable: drop its undos. */
static void synced(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0) return;
    pthread_mutex_lock(&mu);
    size_t k = 0;
    for (size_t i = 0; i < n_undos; i++) {
        if (undos[i].dev == st.st_dev && undos[i].ino == st.st_ino) free(undos[i].old);
        else undos[k++] = undos[i];
    }
    n_undos = k;
    pthread_mutex_unlock(&mu);
}

ssize_t write(int fd, const void *buf, size_t len) {
    init(); if (regular(fd)) { tick(); record(fd, len, -1); }
    return real_write(fd, buf, len);
}
ssize_t pwrite(int fd, const void *buf, size_t len, off_t off) {
    init(); if (regular(fd)) { tick(); record(fd, len, off); }
    return real_pwrite(fd, buf, len, off);
}
ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off) {
    init(); if (regular(fd)) { tick(); record(fd, len, off); }
    return real_pwrite64(fd, buf, len, off);
}
ssize_t writev(int fd, const struct iovec *iov, int n) {
    init();
    if (regular(fd)) {
        tick();
        size_t len = 0;
        for (int i = 0; i < n; i++) len += iov[i].iov_len;
        record(fd, len, -1);
    }
    return real_writev(fd, iov, n);
}
int fsync(int fd) {
    init(); if (regular(fd)) tick();
    int r = real_fsync(fd); if (r == 0) synced(fd); return r;
}
int fdatasync(int fd) {
    init(); if (regular(fd)) tick();
    int r = real_fdatasync(fd); if (r == 0) synced(fd); return r;
}
int rename(const char *a, const char *b) { init(); tick(); return real_rename(a, b); }
int renameat(int da, const char *a, int db, const char *b) { init(); tick(); return real_renameat(da, a, db, b); }
int renameat2(int da, const char *a, int db, const char *b, unsigned f) { init(); tick(); return real_renameat2(da, a, db, b, f); }
int unlink(const char *p) { init(); tick(); return real_unlink(p); }
int unlinkat(int d, const char *p, int f) { init(); tick(); return real_unlinkat(d, p, f); }
int ftruncate(int fd, off_t len) {
    init(); tick();
    struct stat st;
    /* Shrinking: keep the bytes cut off; growing: the old size. */
    if (fstat(fd, &st) == 0 && len < st.st_size) record(fd, (size_t)(st.st_size - len), len);
    else record(fd, 0, len);
    return real_ftruncate(fd, len);
}
