/*
 * py/store_py.h — what store_py.c (the Store type) and editor_py.c (the
 * Editor type) share: the Store object, its claims, and the GIL marker the
 * store's wait hooks read.
 *
 * Owns: StoreObject and the claim protocol. Every Store and Editor call
 * claims the store (pcb_store_claim) before any Python code can run on its
 * arguments (a generator, a str subclass's __hash__/__eq__, a path-like's
 * __fspath__) and releases it when it no longer touches the C store; close()
 * waits for the claims of other threads to end, and refuses (RuntimeError)
 * while this thread holds one, so the C store is never freed under a call.
 *
 * Thread safety: the counters (store, users, closing) are guarded by the
 * object's own mutex `mu`, a leaf lock: it is held only for a few
 * instructions, never while calling the C store, running Python or building
 * Python objects; a thread holding the GIL only try-locks it, and releases
 * the GIL before blocking on it (Modules/_hashopenssl.c's ENTER_HASHLIB
 * pattern). close() waits on `cv` with the GIL released. PyMutex (3.13+) is
 * not used: the C API has no public condition variable to go with it.
 * A claim lives on the caller's C stack and is linked into a thread-local
 * list (the calls this thread has in progress), which is how close() tells
 * a same-thread close from another thread's.
 */
#ifndef PCB_PY_STORE_PY_H
#define PCB_PY_STORE_PY_H

#include "py/pyutil.h"

#include <pthread.h>

#include "store/store.h"

typedef struct {
    PyObject_HEAD
    pcb_store *store; /* NULL once closed (written under mu) */
    PyObject *path;       /* as given to open (str) */
    PyObject *name, *file; /* the store name and absolute file fixed at open */
    PyObject *weakrefs;
    pthread_mutex_t mu;   /* guards store, users, closing */
    pthread_cond_t cv;    /* broadcast when users drops to 0 or a close ends */
    int sync_ready;       /* mu and cv initialised */
    int users;            /* claims in progress, any thread */
    int closing;          /* a close() is waiting for the users / closing */
} StoreObject;

/* One call's claim of a store: on the caller's stack, from pcb_store_claim
 * to pcb_store_release, on one thread. */
typedef struct pcb_claim {
    StoreObject *so;
    struct pcb_claim *prev;
} pcb_claim;

/* Claims so's store for this call (GIL held): the C store, or NULL with
 * ValueError(closed_msg) if it is closed or closing. Holds a reference to so
 * until the release. */
pcb_store *pcb_store_claim(StoreObject *so, pcb_claim *c, const char *closed_msg);
/* Ends the claim (GIL held); the last claim wakes a waiting close(). */
void pcb_store_release(pcb_claim *c);
/* close()'s claim side: refuses (RuntimeError) while this thread is inside
 * a call on so; waits for another thread's close, then for the other
 * threads' calls, signals checked every 0.1 s. 1 with *out the store to
 * close (taken from so; NULL if it was closed already), or 0 with an
 * exception set and the store still open. */
int pcb_store_claim_close(StoreObject *so, pcb_store **out);
/* 1 if so's store is closed (GIL held). */
int pcb_store_object_closed(StoreObject *so);

#define PCB_CLOSED_STORE_MSG "I/O operation on a closed store"

/* The store's wait hooks release the GIL only for a thread that marked
 * itself as calling the C store with the GIL held: wrap every such call in
 * PCB_WITH_GIL (calls made inside Py_BEGIN_ALLOW_THREADS need nothing, and
 * neither does the writer thread). Thread-local; nests. */
extern _Thread_local PyThreadState *pcb_gil_holder;
#define PCB_WITH_GIL(stmt)                                   \
    do {                                                     \
        PyThreadState *pcb_prev_holder_ = pcb_gil_holder;    \
        pcb_gil_holder = PyThreadState_Get();                \
        stmt;                                                \
        pcb_gil_holder = pcb_prev_holder_;                   \
    } while (0)

/* A store call that may wait for another writer's file lock (commit, flush,
 * rotate, open) runs stmt with the GIL released and marks this thread as
 * interruptible: while it waits, the wait's interrupted() hook
 * (common/wait.h, installed by store_py.c) takes the GIL back briefly every
 * 0.05 s and runs Python's signal handlers; one that raises (Ctrl-C:
 * KeyboardInterrupt) ends the wait, the call fails with PCB_E_INTERRUPTED
 * and pcb_raise_status leaves the handler's exception set. Calls wrapped in
 * Py_BEGIN_ALLOW_THREADS, or PCB_WITH_GIL, and the writer thread, are never
 * interrupted. Thread-local. */
extern _Thread_local PyThreadState *pcb_interruptible;
#define PCB_INTERRUPTIBLE(stmt)                              \
    do {                                                     \
        PyThreadState *pcb_prev_ts_ = pcb_interruptible;     \
        PyThreadState *pcb_ts_ = PyEval_SaveThread();        \
        pcb_interruptible = pcb_ts_;                         \
        stmt;                                                \
        pcb_interruptible = pcb_prev_ts_;                    \
        PyEval_RestoreThread(pcb_ts_);                       \
    } while (0)

static inline module_state *pcb_type_state(PyObject *self)
{
    return (module_state *)PyType_GetModuleState(Py_TYPE(self));
}

static inline int pcb_entry_name_arg(PyObject *obj, const char **s, Py_ssize_t *n)
{
    return pcb_str_arg(obj, "a store entry name", s, n);
}

/* editor_py.c: the Editor type's spec, and a new Editor of so over e (GIL
 * held; frees e on failure). */
extern PyType_Spec pcb_editor_spec;
PyObject *pcb_editor_new(module_state *ms, StoreObject *so, pcb_edit *e);

#endif /* PCB_PY_STORE_PY_H */
