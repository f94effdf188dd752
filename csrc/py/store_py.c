/*
 * py/store_py.c — the store's Python types: _core.Store and _core.Editor.
 *
 * Owns: the Store and Editor heap types (their arguments, lifetimes,
 * closing, and keeping a store alive while another thread works on it
 * without the GIL); their options are py/store_options_py's. Values
 * cross as ESP's plaintext serialization, converted to and from Python by
 * py/value_py. pycipherbench/store.py wraps these types with
 * Android's getX(name, default) semantics.
 */
#include "py/pyutil.h"
#include "py/value_py.h"

#include <structmember.h> /* PyMemberDef before 3.12 */

#include <math.h>
#include <string.h>
#include <unistd.h>

#include "store/lock.h"
#include "common/bytes.h"
#include "crypto/backend.h"
#include "store/store.h"

typedef struct {
    PyObject_HEAD
    pcb_store *store; /* NULL once closed */
    PyObject *path;   /* as given to open (str) */
    PyObject *name, *file; /* the store name and absolute file fixed at open */
    int users;        /* calls in flight without the GIL */
    int closing;
    PyObject *weakrefs;
} StoreObject;

typedef struct {
    PyObject_HEAD
    StoreObject *owner;
    pcb_edit *edit;
} EditorObject;

static module_state *type_state(PyObject *self)
{
    return (module_state *)PyType_GetModuleState(Py_TYPE(self));
}

static PyObject *raise_st(PyObject *self, const pcb_status *st)
{
    return pcb_raise_status(type_state(self), st);
}

/* ------------------------------------------------------------- Store */

/* Marks the store busy (GIL held); NULL with ValueError if closed. */
static pcb_store *acquire(StoreObject *so)
{
    if (so->store == NULL || so->closing) {
        PyErr_SetString(PyExc_ValueError, "I/O operation on a closed store");
        return NULL;
    }
    so->users++;
    return so->store;
}

static void release(StoreObject *so)
{
    so->users--;
}

/* A Store object owning the opened store (closed on failure). */
static PyObject *store_wrap(PyTypeObject *type, pcb_store *store, PyObject *path)
{
    pcb_status st = {0};
    StoreObject *so = (StoreObject *)type->tp_alloc(type, 0);
    if (so == NULL) {
        pcb_store_close(store, &st);
        return NULL;
    }
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
        Py_BEGIN_ALLOW_THREADS
        store = pcb_store_open(PyBytes_AS_STRING(a.path), &a.opt, &ms->cache, NULL, &st);
        Py_END_ALLOW_THREADS
        if (store == NULL)
            pcb_raise_status(ms, &st);
        else
            result = store_wrap(type, store, a.path);
    }
    Py_XDECREF(a.path);
    Py_XDECREF(a.mk);
    return result;
}


/* Closes (waiting for other threads' calls to finish); 1 ok, 0 error set. */
static int store_close(StoreObject *so)
{
    if (so->store == NULL || so->closing)
        return 1;
    so->closing = 1;
    while (so->users > 0) {
        Py_BEGIN_ALLOW_THREADS
        usleep(1000);
        Py_END_ALLOW_THREADS
    }
    pcb_store *store = so->store;
    pcb_status st = {0};
    int ok;
    so->store = NULL;
    Py_BEGIN_ALLOW_THREADS
    ok = pcb_store_close(store, &st);
    Py_END_ALLOW_THREADS
    if (!ok) {
        raise_st((PyObject *)so, &st);
        return 0;
    }
    return 1;
}

static void Store_dealloc(StoreObject *so)
{
    PyTypeObject *tp = Py_TYPE(so);
    PyObject_GC_UnTrack(so);
    if (so->weakrefs)
        PyObject_ClearWeakRefs((PyObject *)so);
    if (so->store != NULL) {
        /* Never lose applied changes: an unclosed store is flushed here. */
        PyObject *exc_type, *exc, *tb;
        PyErr_Fetch(&exc_type, &exc, &tb);
        so->users = 0;
        if (!store_close(so))
            PyErr_WriteUnraisable((PyObject *)so);
        PyErr_Restore(exc_type, exc, tb);
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

static int entry_name_arg(PyObject *obj, const char **s, Py_ssize_t *n)
{
    return pcb_str_arg(obj, "a store entry name", s, n);
}

/* Looks name up, its serialized value into out (initialised by the caller):
 * 1 with *found set, or 0 with an exception set. */
static int store_get_serialized(StoreObject *so, PyObject *name_obj, pcb_buf *out, int *found)
{
    const char *name;
    Py_ssize_t nl;
    pcb_status st = {0};
    if (!entry_name_arg(name_obj, &name, &nl))
        return 0;
    pcb_store *s = acquire(so);
    if (s == NULL)
        return 0;
    int ok = pcb_store_get(s, name, (size_t)nl, out, found, &st);
    release(so);
    if (!ok)
        raise_st((PyObject *)so, &st);
    return ok;
}

static PyObject *Store_get_typed(StoreObject *so, PyObject *name_obj)
{
    pcb_buf out;
    int found;
    PyObject *r = NULL;
    pcb_buf_init(&out);
    if (store_get_serialized(so, name_obj, &out, &found))
        r = found ? pcb_py_value_typed(type_state((PyObject *)so), (const uint8_t *)out.data, out.len)
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
        else if ((r = pcb_py_value_decode(type_state((PyObject *)so), (const uint8_t *)out.data, out.len, &type)) != NULL
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
    int found, ok;
    if (!entry_name_arg(name_obj, &name, &nl))
        return -1;
    pcb_store *s = acquire(so);
    if (s == NULL)
        return -1;
    ok = pcb_store_contains(s, name, (size_t)nl, &found, &st);
    release(so);
    if (!ok) {
        raise_st((PyObject *)so, &st);
        return -1;
    }
    return found;
}

static Py_ssize_t Store_len(StoreObject *so)
{
    pcb_store *s = acquire(so);
    if (s == NULL)
        return -1;
    Py_ssize_t n = (Py_ssize_t)pcb_store_count(s);
    release(so);
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
        PyObject *tv = key ? pcb_py_value_typed(type_state((PyObject *)so), v, vl) : NULL;
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
    int ok;
    pcb_store *s = acquire(so);
    if (s == NULL)
        return NULL;
    pcb_buf_init(&b);
    Py_BEGIN_ALLOW_THREADS
    ok = pcb_store_all(s, all_dump, &b, &st);
    Py_END_ALLOW_THREADS
    release(so);
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
    int ok;
    pcb_store *s = acquire(so);
    if (s == NULL)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    ok = pcb_store_flush(s, &st);
    Py_END_ALLOW_THREADS
    release(so);
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
    int ok, lazy = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOp:rotate", kwlist, &mk_obj, &pw_obj,
                                     &scrypt_obj, &lazy)
        || !pcb_scrypt_arg(scrypt_obj, &scrypt_n))
        return NULL;
    if (mk_obj != Py_None && pw_obj != Py_None)
        return PyErr_Format(PyExc_ValueError, "rotate takes at most one of master_key_file= and passphrase=");
    if (lazy && (mk_obj != Py_None || pw_obj != Py_None))
        return PyErr_Format(PyExc_ValueError, "rotate(lazy=True) adds a value key under the same "
                            "master key; a new master key needs rotate(lazy=False)");
    memset(&opt, 0, sizeof opt);
    if (!pcb_passphrase_arg(pw_obj, &opt.passphrase, &opt.passphrase_len)
        || !pcb_key_file_arg(mk_obj, &mk))
        return NULL;
    opt.master_key_file = mk ? PyBytes_AS_STRING(mk) : NULL;
    opt.scrypt_n = scrypt_n;
    pcb_store *s = acquire(so);
    if (s == NULL) {
        Py_XDECREF(mk);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    ok = lazy ? pcb_store_rotate_lazy(s, &st) : pcb_store_rotate(s, &opt, &st);
    Py_END_ALLOW_THREADS
    release(so);
    Py_XDECREF(mk);
    if (!ok)
        return raise_st((PyObject *)so, &st);
    Py_RETURN_NONE;
}

static PyObject *Store_edit(StoreObject *so, PyObject *Py_UNUSED(ignored))
{
    module_state *ms = type_state((PyObject *)so);
    pcb_status st = {0};
    pcb_store *s = acquire(so);
    if (s == NULL)
        return NULL;
    pcb_edit *e = pcb_edit_new(s, &st);
    release(so);
    if (e == NULL)
        return raise_st((PyObject *)so, &st);
    EditorObject *eo = PyObject_GC_New(EditorObject, ms->EditorType);
    if (eo == NULL) {
        pcb_edit_free(e);
        return NULL;
    }
    eo->owner = (StoreObject *)Py_NewRef(so);
    eo->edit = e;
    PyObject_GC_Track(eo);
    return (PyObject *)eo;
}

static PyObject *Store_heap_bytes(StoreObject *so, void *Py_UNUSED(closure))
{
    pcb_store *s = acquire(so);
    if (s == NULL)
        return NULL;
    size_t n = pcb_store_heap_bytes(s);
    release(so);
    return PyLong_FromSize_t(n);
}

static PyObject *Store_disk_bytes(StoreObject *so, void *Py_UNUSED(closure))
{
    pcb_store *s = acquire(so);
    if (s == NULL)
        return NULL;
    uint64_t n = pcb_store_disk_bytes(s);
    release(so);
    return PyLong_FromUnsignedLongLong(n);
}

static PyObject *Store_closed(StoreObject *so, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(so->store == NULL);
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
             "      crypto_backend='openssl')\n\n"
             "The C store; use pycipherbench.store.open() for the documented API.");

static PyType_Slot Store_slots[] = {
    {Py_tp_doc, (void *)Store_doc},
    {Py_tp_new, Store_new},
    {Py_tp_dealloc, Store_dealloc},
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

/* ------------------------------------------------------------ Editor */

static pcb_edit *editor_edit(EditorObject *eo)
{
    if (eo->edit == NULL || eo->owner->store == NULL || eo->owner->closing) {
        PyErr_SetString(PyExc_ValueError, "the editor's store is closed");
        return NULL;
    }
    return eo->edit;
}

static PyObject *editor_put(EditorObject *eo, PyObject *const *args, Py_ssize_t nargs,
                            pcb_pref_type type, const char *fn)
{
    const char *name;
    Py_ssize_t nl;
    pcb_status st = {0};
    pcb_buf b;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s() takes exactly 2 arguments (name, value) (%zd given)",
                     fn, nargs);
        return NULL;
    }
    PyObject *value = args[1];
    if (!entry_name_arg(args[0], &name, &nl))
        return NULL;
    pcb_edit *e = editor_edit(eo);
    if (e == NULL)
        return NULL;
    pcb_buf_init(&b);
    int ok = pcb_py_value_serialize(type, value, &b);
    if (ok) {
        eo->owner->users++;
        ok = pcb_edit_put(e, name, (size_t)nl, (const uint8_t *)b.data, b.len, &st);
        eo->owner->users--;
        if (!ok)
            raise_st((PyObject *)eo, &st);
    }
    pcb_buf_free(&b);
    return ok ? Py_NewRef((PyObject *)eo) : NULL;
}

#define PUT_METHOD(fn, type)                                                              \
    static PyObject *Editor_##fn(EditorObject *eo, PyObject *const *args, Py_ssize_t nargs) \
    {                                                                                      \
        return editor_put(eo, args, nargs, type, #fn);                                     \
    }
PUT_METHOD(put_string, PCB_PREF_STRING)
PUT_METHOD(put_int, PCB_PREF_INT)
PUT_METHOD(put_long, PCB_PREF_LONG)
PUT_METHOD(put_float, PCB_PREF_FLOAT)
PUT_METHOD(put_bool, PCB_PREF_BOOLEAN)
PUT_METHOD(put_string_set, PCB_PREF_STRING_SET)
#undef PUT_METHOD

static PyObject *Editor_remove(EditorObject *eo, PyObject *name_obj)
{
    const char *name;
    Py_ssize_t nl;
    pcb_status st = {0};
    if (!entry_name_arg(name_obj, &name, &nl))
        return NULL;
    pcb_edit *e = editor_edit(eo);
    if (e == NULL)
        return NULL;
    eo->owner->users++;
    int ok = pcb_edit_remove(e, name, (size_t)nl, &st);
    eo->owner->users--;
    if (!ok)
        return raise_st((PyObject *)eo, &st);
    return Py_NewRef((PyObject *)eo);
}

static PyObject *Editor_clear(EditorObject *eo, PyObject *Py_UNUSED(ignored))
{
    pcb_edit *e = editor_edit(eo);
    if (e == NULL)
        return NULL;
    pcb_edit_clear(e);
    return Py_NewRef((PyObject *)eo);
}

static PyObject *Editor_remove_unreadable(EditorObject *eo, PyObject *Py_UNUSED(ignored))
{
    pcb_edit *e = editor_edit(eo);
    if (e == NULL)
        return NULL;
    pcb_edit_remove_unreadable(e);
    return Py_NewRef((PyObject *)eo);
}

static PyObject *editor_commit(EditorObject *eo, int sync)
{
    pcb_status st = {0};
    int ok;
    pcb_edit *e = editor_edit(eo);
    if (e == NULL)
        return NULL;
    eo->owner->users++;
    Py_BEGIN_ALLOW_THREADS
    ok = pcb_edit_commit(e, sync, &st);
    Py_END_ALLOW_THREADS
    eo->owner->users--;
    if (!ok)
        return raise_st((PyObject *)eo, &st);
    if (sync)
        Py_RETURN_TRUE;
    Py_RETURN_NONE;
}

static PyObject *Editor_commit(EditorObject *eo, PyObject *Py_UNUSED(ignored))
{
    return editor_commit(eo, 1);
}

static PyObject *Editor_apply(EditorObject *eo, PyObject *Py_UNUSED(ignored))
{
    return editor_commit(eo, 0);
}

static void Editor_dealloc(EditorObject *eo)
{
    PyTypeObject *tp = Py_TYPE(eo);
    PyObject_GC_UnTrack(eo);
    pcb_edit_free(eo->edit);
    Py_XDECREF(eo->owner);
    tp->tp_free(eo);
    Py_DECREF(tp);
}

static int Editor_traverse(EditorObject *eo, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(eo));
    Py_VISIT(eo->owner);
    return 0;
}

static PyMethodDef Editor_methods[] = {
    {"put_string", (PyCFunction)(void (*)(void))Editor_put_string, METH_FASTCALL, "put_string(name, value) -> Editor"},
    {"put_int", (PyCFunction)(void (*)(void))Editor_put_int, METH_FASTCALL, "put_int(name, value) -> Editor"},
    {"put_long", (PyCFunction)(void (*)(void))Editor_put_long, METH_FASTCALL, "put_long(name, value) -> Editor"},
    {"put_float", (PyCFunction)(void (*)(void))Editor_put_float, METH_FASTCALL, "put_float(name, value) -> Editor"},
    {"put_bool", (PyCFunction)(void (*)(void))Editor_put_bool, METH_FASTCALL, "put_bool(name, value) -> Editor"},
    {"put_string_set", (PyCFunction)(void (*)(void))Editor_put_string_set, METH_FASTCALL,
     "put_string_set(name, values) -> Editor"},
    {"remove", (PyCFunction)Editor_remove, METH_O, "remove(name) -> Editor"},
    {"clear", (PyCFunction)Editor_clear, METH_NOARGS, "clear() -> Editor"},
    {"remove_unreadable", (PyCFunction)Editor_remove_unreadable, METH_NOARGS,
     "remove_unreadable() -> Editor\n\nAt commit, remove every entry whose name does not decrypt."},
    {"commit", (PyCFunction)Editor_commit, METH_NOARGS,
     "commit() -> bool\n\nApply the changes and write them durably before returning."},
    {"apply", (PyCFunction)Editor_apply, METH_NOARGS,
     "apply() -> None\n\nApply the changes in memory now; a background thread writes them."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot Editor_slots[] = {
    {Py_tp_doc, (void *)"A batch of changes to a Store; puts are encrypted at once, as ESP does."},
    {Py_tp_dealloc, Editor_dealloc},
    {Py_tp_traverse, Editor_traverse},
    {Py_tp_methods, Editor_methods},
    {0, NULL},
};

static PyType_Spec Editor_spec = {
    .name = "pycipherbench._core.Editor",
    .basicsize = sizeof(EditorObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE
             | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = Editor_slots,
};

/* ------------------------------------------------------------- module */

/* The store's wait hooks: a thread that must wait for a store or editor
 * lock releases the GIL first if it holds it (the writer thread, or a
 * caller that already released it, holds none). */
static void *gil_wait_begin(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    int holds = PyThreadState_GetUnchecked() != NULL;
#elif PY_VERSION_HEX >= 0x030C0000
    int holds = _PyThreadState_UncheckedGet() != NULL; /* thread-local since 3.12 */
#else
    PyThreadState *ts = _PyThreadState_UncheckedGet(); /* the holder, process-wide */
    int holds = ts != NULL && ts == PyGILState_GetThisThreadState();
#endif
    return holds ? (void *)PyEval_SaveThread() : NULL;
}

static void gil_wait_end(void *token)
{
    PyEval_RestoreThread((PyThreadState *)token);
}

int pcb_store_types_exec(PyObject *module, module_state *ms)
{
    pcb_store_set_wait_hooks(gil_wait_begin, gil_wait_end);
    ms->StoreType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &Store_spec, NULL);
    ms->EditorType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &Editor_spec, NULL);
    if (ms->StoreType == NULL || ms->EditorType == NULL
        || PyModule_AddType(module, ms->StoreType) < 0 || PyModule_AddType(module, ms->EditorType) < 0)
        return -1;
    return 0;
}
