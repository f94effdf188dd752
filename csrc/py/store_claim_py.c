/*
 * py/store_claim_py.c — the claim protocol of a Store object's calls (see
 * py/store_py.h): a call counts itself as a user of the store before any
 * Python code runs on its arguments; close() refuses while this thread is
 * inside a call on the store, and waits on the object's condition variable,
 * GIL released, until the other threads' calls are over.
 *
 * Owns: the per-thread list of calls in progress, the object's users and
 * closing fields (under its mutex, a leaf lock: no Python object is built
 * and no other lock taken while it is held), and the thread-local that
 * marks a thread holding the GIL while it calls into the store (for the
 * store's wait hooks, py/store_py.c).
 */
#include "py/store_py.h"

#include <errno.h>
#include <time.h>

#include "common/wait.h"


_Thread_local PyThreadState *pcb_gil_holder;
_Thread_local PyThreadState *pcb_interruptible;
static _Thread_local pcb_claim *claims; /* this thread's calls in progress, innermost first */

/* mu, GIL held: try first, else release the GIL before blocking
 * (Modules/_hashopenssl.c's ENTER_HASHLIB). */
static void so_lock(StoreObject *so)
{
    if (pthread_mutex_trylock(&so->mu) != 0) {
        Py_BEGIN_ALLOW_THREADS
        pthread_mutex_lock(&so->mu);
        Py_END_ALLOW_THREADS
    }
}

static void so_unlock(StoreObject *so)
{
    pthread_mutex_unlock(&so->mu);
}

pcb_store *pcb_store_claim(StoreObject *so, pcb_claim *c, const char *closed_msg)
{
    so_lock(so);
    pcb_store *s = so->closing ? NULL : so->store;
    if (s != NULL)
        so->users++;
    so_unlock(so);
    if (s == NULL) {
        PyErr_SetString(PyExc_ValueError, closed_msg);
        return NULL;
    }
    c->so = (StoreObject *)Py_NewRef(so);
    c->prev = claims;
    claims = c;
    return s;
}

void pcb_store_release(pcb_claim *c)
{
    StoreObject *so = c->so;
    pcb_claim **link = &claims; /* c is the innermost, unless a stack switch (greenlet) interleaved */
    while (*link != NULL && *link != c)
        link = &(*link)->prev;
    if (*link == c)
        *link = c->prev;
    so_lock(so);
    if (--so->users == 0 && so->closing)
        pthread_cond_broadcast(&so->cv);
    so_unlock(so);
    Py_DECREF(so);
}

static int claimed_here(StoreObject *so)
{
    for (const pcb_claim *c = claims; c != NULL; c = c->prev)
        if (c->so == so)
            return 1;
    return 0;
}

/* ------------------------------------------------------------- close */

/* Waits (GIL held on entry and return, released while waiting) until
 * done(so) holds under mu, looking at the signals every slice: 1, or 0 with
 * the signal handler's exception set. */
static int close_wait(StoreObject *so, int (*done)(const StoreObject *))
{
    for (;;) {
        int ok;
        Py_BEGIN_ALLOW_THREADS
        struct timespec until;
        pcb_wait_deadline(&until, 1, PCB_WAIT_SLICE_NS);
        pthread_mutex_lock(&so->mu);
        while (!(ok = done(so)) && pthread_cond_timedwait(&so->cv, &so->mu, &until) != ETIMEDOUT)
            ;
        pthread_mutex_unlock(&so->mu);
        Py_END_ALLOW_THREADS
        if (ok)
            return 1;
        if (PyErr_CheckSignals() < 0)
            return 0;
    }
}

static int no_users(const StoreObject *so)
{
    return so->users == 0;
}

static int no_closer(const StoreObject *so)
{
    return !so->closing;
}

/* See store_py.h. */
int pcb_store_claim_close(StoreObject *so, pcb_store **out)
{
    *out = NULL;
    if (claimed_here(so)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "close() called while a call on this store is in progress in this thread "
                        "(from a generator, __hash__/__eq__/__fspath__ or other code the call "
                        "runs); close the store after that call returns");
        return 0;
    }
    for (;;) {
        so_lock(so);
        if (so->store == NULL) {
            so_unlock(so);
            return 1; /* closed already: *out NULL */
        }
        if (!so->closing)
            break; /* mu still held: this thread closes */
        so_unlock(so);
        if (!close_wait(so, no_closer)) /* another thread is closing: its outcome, then look again */
            return 0;
    }
    so->closing = 1; /* from here, new calls see a closed store */
    so_unlock(so);
    int waited = close_wait(so, no_users);
    so_lock(so);
    pcb_store *store = waited ? so->store : NULL;
    so->store = waited ? NULL : so->store;
    so->closing = 0;
    pthread_cond_broadcast(&so->cv); /* other closers */
    so_unlock(so);
    if (!waited)
        return 0; /* interrupted (KeyboardInterrupt): still open */
    *out = store;
    return 1;
}

int pcb_store_object_closed(StoreObject *so)
{
    so_lock(so);
    int closed = so->store == NULL;
    so_unlock(so);
    return closed;
}
