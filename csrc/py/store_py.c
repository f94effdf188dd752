/*
 * py/store_py.c — the store's Python type: _core.Store.
 *
 * Owns: the Store heap type (its arguments, lifetime and closing; every
 * call follows the claim protocol of py/store_claim_py.c: a call counts
 * itself as a user before any Python code runs on its arguments, and
 * close() waits on a condition variable, GIL released, for other threads'
 * calls, refusing while this thread is inside one; an unclosed store is
 * closed by its PEP 442 finalizer, which reports a failure while the object
 * is alive), the store's wait hooks (common/wait.h: release the GIL of a
 * thread that waits for a store lock holding it; run the signal handlers
 * of a PCB_INTERRUPTIBLE call waiting for another writer's file lock), and
 * the Store's own arguments (its options are py/store_options_py's). The Editor
 * type is py/editor_py.c. Values cross as ESP's plaintext serialization,
 * converted to and from Python by py/value_py. pycipherbench/store.py wraps
 * these types with Android's getX(name, default) semantics.
 *
 * Thread safety: see py/store_py.h (the object's mutex is a leaf lock; no
 * Python object is built while it is held).
 */
#include "py/store_py.h"
#include "py/value_py.h"

#include <structmember.h> /* PyMemberDef before 3.12 */

#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "common/wait.h"
#include "store/lock.h"
#include "common/bytes.h"
#include "crypto/backend.h"

static PyObject *raise_st(PyObject *self, const pcb_status *st)
{
    return pcb_raise_status(pcb_type_state(self), st);
}

/* A Store object owning the opened store (closed on failure). */

/* ------------------------------------------------------------- Store() */

/* A Store object owning the opened store (closed on failure). */
static PyObject *store_wrap(PyTypeObject *type, pcb_store *store, PyObject *path)
{
    pcb_status st = {0};
    pthread_condattr_t ca;
    StoreObject *so = (StoreObject *)type->tp_alloc(type, 0);
    int rc = -1;
    if (so != NULL && (rc = pthread_condattr_init(&ca)) == 0) {
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        if ((rc = pthread_mutex_init(&so->mu, NULL)) == 0
            && (rc = pthread_cond_init(&so->cv, &ca)) != 0)
            pthread_mutex_destroy(&so->mu);
        pthread_condattr_destroy(&ca);
    }
    if (so == NULL || rc != 0) {
        Py_BEGIN_ALLOW_THREADS
        pcb_store_close(store, &st);
        Py_END_ALLOW_THREADS
        if (so == NULL)
            return NULL;
        Py_DECREF(so);
        errno = rc;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    so->sync_ready = 1;
    so->store = store;
    so->path = PyUnicode_DecodeFSDefault(PyBytes_AS_STRING(path));
    so->name = PyUnicode_DecodeFSDefault(pcb_store_name(store));
    so->file = PyUnicode_DecodeFSDefault(pcb_store_file(store));
    if (so->path == NULL || so->name == NULL || so->file == NULL) {
        Py_DECREF(so);
        return NULL;
    }
    return (PyObject *)so;
}

static PyObject *Store_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    module_state *ms = PyType_GetModuleState(type);
    pcb_store_open_args a;
    pcb_status st = {0};
    pcb_store *store;
    PyObject *result = NULL;

    memset(&a, 0, sizeof a);
    if (pcb_store_open_parse(ms, args, kwargs, &a)) {
        PCB_INTERRUPTIBLE(store = pcb_store_open(PyBytes_AS_STRING(a.path), &a.opt, &ms->cache,
                                                 NULL, &st));
        if (store == NULL)
            pcb_raise_status(ms, &st);
        else
            result = store_wrap(type, store, a.path);
    }
    Py_XDECREF(a.path);
    Py_XDECREF(a.mk);
    return result;
}

/* ------------------------------------------------------------- close */

/* Closes (the claims' side is py/store_claim_py.c): 1 ok, 0 with an
 * exception set (the store stays open unless the close itself failed). */
static int store_close(StoreObject *so)
{
    pcb_store *store;
    if (!pcb_store_claim_close(so, &store))
        return 0;
    if (store == NULL)
        return 1; /* already closed */
    pcb_status st = {0};
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = pcb_store_close(store, &st);
    Py_END_ALLOW_THREADS
    if (!ok) {
        raise_st((PyObject *)so, &st);
        return 0;
    }
    return 1;
}

/* PEP 442's finalizer, as CPython's io objects close in theirs: an unclosed
 * store is closed here, while the object is still alive, so that a failure
 * (applied changes that cannot be written) is reported with the object
 * itself (PyErr_WriteUnraisable on a live object). Run once, by the garbage
 * collector or from Store_dealloc; no call is in progress (each holds a
 * reference). */
static void Store_finalize(StoreObject *so)
{
    if (!so->sync_ready || pcb_store_object_closed(so))
        return;
    PyObject *exc_type, *exc, *tb;
    PyErr_Fetch(&exc_type, &exc, &tb);
    /* Never lose applied changes silently: they are flushed, or reported. */
    if (!store_close(so))
        PyErr_WriteUnraisable((PyObject *)so);
    PyErr_Restore(exc_type, exc, tb);
}

static void Store_dealloc(StoreObject *so)
{
    /* The finalizer first (the object alive again while it runs); never
     * PyErr_WriteUnraisable(so) from here, where the reference count is 0:
     * the report's reference would free the object a second time. */
    if (PyObject_CallFinalizerFromDealloc((PyObject *)so) < 0)
        return; /* resurrected by the finalizer's report */
    PyTypeObject *tp = Py_TYPE(so);
    PyObject_GC_UnTrack(so);
    if (so->weakrefs)
        PyObject_ClearWeakRefs((PyObject *)so);
    if (so->store != NULL) {
        /* Only if the finalizer's close was interrupted (KeyboardInterrupt in
         * its wait for another thread's call): closed now, a failure reported
         * with no object (this one is being freed). */
        pcb_status st = {0};
        int ok;
        PyObject *exc_type, *exc, *tb;
        PyErr_Fetch(&exc_type, &exc, &tb);
        Py_BEGIN_ALLOW_THREADS
        ok = pcb_store_close(so->store, &st);
        Py_END_ALLOW_THREADS
        so->store = NULL;
        if (!ok) {
            pcb_raise_status(PyType_GetModuleState(tp), &st);
            PyErr_WriteUnraisable(NULL);
        }
        PyErr_Restore(exc_type, exc, tb);
    }
    if (so->sync_ready) {
        pthread_cond_destroy(&so->cv);
        pthread_mutex_destroy(&so->mu);
    }
    Py_XDECREF(so->path);
    Py_XDECREF(so->name);
    Py_XDECREF(so->file);
    tp->tp_free(so);
    Py_DECREF(tp);
}

static int Store_traverse(StoreObject *so, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(so));
    return 0;
}

/* ------------------------------------------------------------- reads */

/* Looks name up, its serialized value into out (initialised by the caller):
 * 1 with *found set, or 0 with an exception set. */
static int store_get_serialized(StoreObject *so, PyObject *name_obj, pcb_buf *out, int *found)
{
    const char *name;
    Py_ssize_t nl;
    pcb_status st = {0};
    pcb_claim c;
    int ok;
    pcb_store *s = pcb_store_claim(so, &c, PCB_CLOSED_STORE_MSG);
    if (s == NULL)
        return 0;
    if ((ok = pcb_entry_name_arg(name_obj, &name, &nl))) {
        PCB_WITH_GIL(ok = pcb_store_get(s, name, (size_t)nl, out, found, &st));
        if (!ok)
            raise_st((PyObject *)so, &st);
    }
    pcb_store_release(&c);
    return ok;
}

static PyObject *Store_get_typed(StoreObject *so, PyObject *name_obj)
{
    pcb_buf out;
    int found;
    PyObject *r = NULL;
    pcb_buf_init(&out);
    if (store_get_serialized(so, name_obj, &out, &found))
        r = found ? pcb_py_value_typed(pcb_type_state((PyObject *)so), (const uint8_t *)out.data, out.len)
                  : Py_NewRef(Py_None);
    pcb_buf_free(&out);
    return r;
}

/* get_as(name, type_id, default): the typed getters in one C call (no tuple,
 * no second Python frame); type_id -1 takes any type. */
static PyObject *Store_get_as(StoreObject *so, PyObject *const *args, Py_ssize_t nargs)
{
    pcb_buf out;
    int found;
    PyObject *r = NULL;
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "get_as() takes 3 arguments (name, type_id, default), "
                     "%zd given", nargs);
        return NULL;
    }
    if (!PyLong_Check(args[1])) {
        PyErr_Format(PyExc_TypeError, "type_id must be an int, not %.80s", Py_TYPE(args[1])->tp_name);
        return NULL;
    }
    long want = PyLong_AsLong(args[1]);
    if (want == -1 && PyErr_Occurred())
        return NULL;
    if (want < -1 || want > PCB_PREF_BOOLEAN) {
        PyErr_Format(PyExc_ValueError, "type_id must be -1 (any) or an ESP type id 0..%d, not %ld",
                     PCB_PREF_BOOLEAN, want);
        return NULL;
    }
    pcb_buf_init(&out);
    if (store_get_serialized(so, args[0], &out, &found)) {
        uint32_t type;
        if (!found)
            r = Py_NewRef(args[2]);
        else if ((r = pcb_py_value_decode(pcb_type_state((PyObject *)so), (const uint8_t *)out.data, out.len, &type)) != NULL
                 && want >= 0 && type != (uint32_t)want)
            Py_SETREF(r, Py_NewRef(args[2])); /* a type mismatch gives the default, as Android */
    }
    pcb_buf_free(&out);
    return r;
}

static int Store_contains(StoreObject *so, PyObject *name_obj)
{
    const char *name;
    Py_ssize_t nl;
    pcb_status st = {0};
    pcb_claim c;
    int found = 0, ok;
    pcb_store *s = pcb_store_claim(so, &c, PCB_CLOSED_STORE_MSG);
    if (s == NULL)
        return -1;
    if ((ok = pcb_entry_name_arg(name_obj, &name, &nl))) {
        PCB_WITH_GIL(ok = pcb_store_contains(s, name, (size_t)nl, &found, &st));
        if (!ok)
            raise_st((PyObject *)so, &st);
    }
    pcb_store_release(&c);
    return ok ? found : -1;
}

static Py_ssize_t Store_len(StoreObject *so)
{
    pcb_claim c;
    Py_ssize_t n;
    pcb_store *s = pcb_store_claim(so, &c, PCB_CLOSED_STORE_MSG);
    if (s == NULL)
        return -1;
    PCB_WITH_GIL(n = (Py_ssize_t)pcb_store_count(s));
    pcb_store_release(&c);
    return n;
}

/* all(): the entries are copied out under the store's lock into one C
 * buffer (le32 length, bytes: name, then value), with the GIL released;
 * the dict is built after the lock is gone. */
static int all_dump(void *arg, const char *name, size_t nl, const uint8_t *v, size_t vl)
{
    pcb_buf *b = arg;
    pcb_buf_put_le32(b, (uint32_t)nl);
    pcb_buf_append(b, name, nl);
    pcb_buf_put_le32(b, (uint32_t)vl);
    pcb_buf_append(b, (const char *)v, vl);
    return b->failed;
}

#define ALL_YIELD_EVERY 4096 /* entries built between two GIL releases */

static PyObject *all_build(StoreObject *so, const pcb_buf *b)
{
    PyObject *dict = PyDict_New();
    size_t n = 0;
    for (size_t off = 0; dict != NULL && off < b->len; n++) {
        size_t nl = pcb_load_le32((const uint8_t *)b->data + off);
        const char *name = b->data + off + 4;
        size_t vl = pcb_load_le32((const uint8_t *)name + nl);
        const uint8_t *v = (const uint8_t *)name + nl + 4;
        off += 8 + nl + vl;
        PyObject *key = PyUnicode_DecodeUTF8(name, (Py_ssize_t)nl, "strict");
        PyObject *tv = key ? pcb_py_value_typed(pcb_type_state((PyObject *)so), v, vl) : NULL;
        if (tv == NULL || PyDict_SetItem(dict, key, PyTuple_GET_ITEM(tv, 1)) < 0)
            Py_CLEAR(dict);
        Py_XDECREF(key);
        Py_XDECREF(tv);
        if (dict != NULL && n % ALL_YIELD_EVERY == ALL_YIELD_EVERY - 1) {
            Py_BEGIN_ALLOW_THREADS /* let other threads run during a big all() */
            Py_END_ALLOW_THREADS
        }
    }
    return dict;
}

static PyObject *Store_all(StoreObject *so, PyObject *Py_UNUSED(ignored))
{
    pcb_status st = {0};
    pcb_buf b;
    pcb_claim c;
    int ok;
    pcb_store *s = pcb_store_claim(so, &c, PCB_CLOSED_STORE_MSG);
    if (s == NULL)
        return NULL;
    pcb_buf_init(&b);
    Py_BEGIN_ALLOW_THREADS
    ok = pcb_store_all(s, all_dump, &b, &st);
    Py_END_ALLOW_THREADS
    pcb_store_release(&c); /* the dict is built from the copy */
    PyObject *dict = NULL;
    if (!ok && st.code == 0)
        PyErr_NoMemory();
    else if (!ok)
        raise_st((PyObject *)so, &st);
    else
        dict = all_build(so, &b);
    pcb_buf_free(&b); /* wipes the plaintext */
    return dict;
}

static PyObject *Store_flush(StoreObject *so, PyObject *Py_UNUSED(ignored))
{
    pcb_status st = {0};
    pcb_claim c;
    int ok;
    pcb_store *s = pcb_store_claim(so, &c, PCB_CLOSED_STORE_MSG);
    if (s == NULL)
        return NULL;
    PCB_INTERRUPTIBLE(ok = pcb_store_flush(s, &st));
    pcb_store_release(&c);
    if (!ok)
        return raise_st((PyObject *)so, &st);
    Py_RETURN_NONE;
}

static PyObject *Store_close(StoreObject *so, PyObject *Py_UNUSED(ignored))
{
    if (!store_close(so))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *Store_rotate(StoreObject *so, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"master_key_file", "passphrase", "scrypt_n", "lazy", NULL};
    PyObject *mk_obj = Py_None, *pw_obj = Py_None, *mk = NULL, *scrypt_obj = NULL;
    uint64_t scrypt_n = 0;
    pcb_store_options opt;
    pcb_status st = {0};
    pcb_claim c;
    int ok, lazy = 0;
    /* Claimed first: the arguments' conversion may run Python (__fspath__, __index__). */
    pcb_store *s = pcb_store_claim(so, &c, PCB_CLOSED_STORE_MSG);
    if (s == NULL)
        return NULL;
    memset(&opt, 0, sizeof opt);
    ok = PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOp:rotate", kwlist, &mk_obj, &pw_obj,
                                     &scrypt_obj, &lazy)
         && pcb_scrypt_arg(scrypt_obj, &scrypt_n);
    if (ok && mk_obj != Py_None && pw_obj != Py_None) {
        PyErr_SetString(PyExc_ValueError, "rotate takes at most one of master_key_file= and passphrase=");
        ok = 0;
    }
    if (ok && lazy && (mk_obj != Py_None || pw_obj != Py_None)) {
        PyErr_SetString(PyExc_ValueError, "rotate(lazy=True) adds a value key under the same "
                        "master key; a new master key needs rotate(lazy=False)");
        ok = 0;
    }
    ok = ok && pcb_passphrase_arg(pw_obj, &opt.passphrase, &opt.passphrase_len)
         && pcb_key_file_arg(mk_obj, &mk);
    if (ok) {
        opt.master_key_file = mk ? PyBytes_AS_STRING(mk) : NULL;
        opt.scrypt_n = scrypt_n;
        PCB_INTERRUPTIBLE(ok = lazy ? pcb_store_rotate_lazy(s, &st) : pcb_store_rotate(s, &opt, &st));
        if (!ok)
            raise_st((PyObject *)so, &st);
    }
    pcb_store_release(&c);
    Py_XDECREF(mk);
    if (!ok)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *Store_edit(StoreObject *so, PyObject *Py_UNUSED(ignored))
{
    pcb_status st = {0};
    pcb_claim c;
    pcb_edit *e;
    pcb_store *s = pcb_store_claim(so, &c, PCB_CLOSED_STORE_MSG);
    if (s == NULL)
        return NULL;
    PCB_WITH_GIL(e = pcb_edit_new(s, &st));
    pcb_store_release(&c);
    if (e == NULL)
        return raise_st((PyObject *)so, &st);
    return pcb_editor_new(pcb_type_state((PyObject *)so), so, e);
}

static PyObject *Store_heap_bytes(StoreObject *so, void *Py_UNUSED(closure))
{
    pcb_claim c;
    size_t n;
    pcb_store *s = pcb_store_claim(so, &c, PCB_CLOSED_STORE_MSG);
    if (s == NULL)
        return NULL;
    PCB_WITH_GIL(n = pcb_store_heap_bytes(s));
    pcb_store_release(&c);
    return PyLong_FromSize_t(n);
}

static PyObject *Store_disk_bytes(StoreObject *so, void *Py_UNUSED(closure))
{
    pcb_claim c;
    uint64_t n;
    pcb_store *s = pcb_store_claim(so, &c, PCB_CLOSED_STORE_MSG);
    if (s == NULL)
        return NULL;
    PCB_WITH_GIL(n = pcb_store_disk_bytes(s));
    pcb_store_release(&c);
    return PyLong_FromUnsignedLongLong(n);
}

static PyObject *Store_closed(StoreObject *so, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(pcb_store_object_closed(so));
}

static PyObject *Store_path(StoreObject *so, void *Py_UNUSED(closure))
{
    return Py_NewRef(so->path);
}

static PyObject *Store_name(StoreObject *so, void *Py_UNUSED(closure))
{
    return Py_NewRef(so->name);
}

static PyObject *Store_file(StoreObject *so, void *Py_UNUSED(closure))
{
    return Py_NewRef(so->file);
}

static PyMethodDef Store_methods[] = {
    {"get_typed", (PyCFunction)Store_get_typed, METH_O,
     "get_typed(name) -> tuple[int, object] | None\n\nThe entry's (type id, value), or None."},
    {"get_as", (PyCFunction)(void (*)(void))Store_get_as, METH_FASTCALL,
     "get_as(name, type_id, default, /) -> object\n\nThe entry's value if it exists and has "
     "type_id (-1: any type), else default."},
    {"all", (PyCFunction)Store_all, METH_NOARGS, "all() -> dict\n\nEvery entry, decrypted."},
    {"edit", (PyCFunction)Store_edit, METH_NOARGS, "edit() -> Editor"},
    {"flush", (PyCFunction)Store_flush, METH_NOARGS,
     "flush() -> None\n\nWait until every applied change is durable on disk."},
    {"close", (PyCFunction)Store_close, METH_NOARGS,
     "close() -> None\n\nFlush, wipe the keys and release the store."},
    {"rotate", (PyCFunction)(void (*)(void))Store_rotate, METH_VARARGS | METH_KEYWORDS,
     "rotate(*, master_key_file=None, passphrase=None, scrypt_n=0, lazy=False) -> None\n\n"
     "Re-encrypt every entry under new keysets (and a new master key if given), atomically; "
     "lazy=True: add a new primary value key, re-encrypt nothing."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Store_getset[] = {
    {"heap_bytes", (getter)Store_heap_bytes, NULL, "Bytes of heap the store holds.", NULL},
    {"disk_bytes", (getter)Store_disk_bytes, NULL, "Size of the store's file.", NULL},
    {"closed", (getter)Store_closed, NULL, "True once closed.", NULL},
    {"path", (getter)Store_path, NULL, "The store file's path, as given to open.", NULL},
    {"name", (getter)Store_name, NULL, "The store name (the names' associated data).", NULL},
    {"file", (getter)Store_file, NULL, "The absolute path of the file, fixed at open.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef Store_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(StoreObject, weakrefs), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

PyDoc_STRVAR(Store_doc,
             "Store(path, *, master_key_file=None, passphrase=None, encrypted=True,\n"
             "      key_encryption='siv', value_encryption='gcm', cache=False, layout='entries',\n"
             "      faithful=False, scrypt_n=0, lock_timeout=10.0,\n"
             "      crypto_backend='auto')\n\n"
             "The C store; use pycipherbench.store.open() for the documented API.");

static PyType_Slot Store_slots[] = {
    {Py_tp_doc, (void *)Store_doc},
    {Py_tp_new, Store_new},
    {Py_tp_dealloc, Store_dealloc},
    {Py_tp_finalize, Store_finalize},
    {Py_tp_traverse, Store_traverse},
    {Py_tp_methods, Store_methods},
    {Py_tp_getset, Store_getset},
    {Py_tp_members, Store_members},
    {Py_sq_contains, Store_contains},
    {Py_sq_length, Store_len},
    {0, NULL},
};

static PyType_Spec Store_spec = {
    .name = "pycipherbench._core.Store",
    .basicsize = sizeof(StoreObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = Store_slots,
};

/* ------------------------------------------------------------- module */

/* The store's wait hooks (common/wait.h): a thread that must wait for a
 * store or editor lock releases the GIL first if it marked itself as
 * holding it (PCB_WITH_GIL); the writer thread, and a caller that already
 * released it, hold none. Public API only: the marks are ours. */
static void *gil_wait_begin(void)
{
    PyThreadState *ts = pcb_gil_holder;
    if (ts == NULL)
        return NULL;
    pcb_gil_holder = NULL;
    return (void *)PyEval_SaveThread();
}

static void gil_wait_end(void *token)
{
    PyEval_RestoreThread((PyThreadState *)token);
    pcb_gil_holder = (PyThreadState *)token;
}

/* Between two slices of a long wait (another writer's file lock): for a
 * call marked PCB_INTERRUPTIBLE, the GIL taken back briefly and Python's
 * signal handlers run (the main thread's; elsewhere PyErr_CheckSignals does
 * nothing); nonzero when one raised, its exception left set for the caller.
 * Every other thread (the writer, a close) waits on. */
static int py_wait_interrupted(void)
{
    PyThreadState *ts = pcb_interruptible;
    if (ts == NULL)
        return 0;
    PyEval_RestoreThread(ts);
    int raised = PyErr_CheckSignals() < 0;
    (void)PyEval_SaveThread();
    return raised;
}

static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

static void set_hooks(void)
{
    const pcb_wait_hooks h = {gil_wait_begin, gil_wait_end, py_wait_interrupted};
    pcb_wait_set_hooks(&h);
}

int pcb_store_types_exec(PyObject *module, module_state *ms)
{
    pthread_once(&hooks_once, set_hooks); /* process-wide: once, whichever interpreter imports first */
    ms->StoreType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &Store_spec, NULL);
    ms->EditorType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &pcb_editor_spec, NULL);
    if (ms->StoreType == NULL || ms->EditorType == NULL
        || PyModule_AddType(module, ms->StoreType) < 0 || PyModule_AddType(module, ms->EditorType) < 0)
        return -1;
    return 0;
}
