/*
 * pcb_store_py.c — the store's Python types: _core.Store and _core.Editor.
 *
 * Owns: converting Python values to and from ESP's plaintext serialization,
 * the Store and Editor heap types (their lifetimes, closing, and keeping a
 * store alive while another thread works on it without the GIL), and the
 * store exceptions. pycipherbench/store.py wraps these with Android's
 * getX(name, default) semantics.
 */
#include "py/module.h"

#include <structmember.h> /* PyMemberDef before 3.12 */

#include <math.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"
#include "store/bench.h"
#include "common/timing.h"
#include "format/value.h"

typedef struct {
    PyObject_HEAD
    pcb_store *store; /* NULL once closed */
    PyObject *path;
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

/* ------------------------------------------------- values <-> plaintext */

static int utf8_of(PyObject *obj, const char *what, const char **s, Py_ssize_t *n)
{
    if (!PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be a str, not %.100s", what, Py_TYPE(obj)->tp_name);
        return 0;
    }
    *s = PyUnicode_AsUTF8AndSize(obj, n);
    return *s != NULL;
}

/* Python value -> plaintext serialization of the given type. */
static int serialize_value(pcb_pref_type type, PyObject *v, pcb_buf *b)
{
    pcb_value_begin(b, type);
    switch (type) {
    case PCB_PREF_STRING: {
        const char *s;
        Py_ssize_t n;
        if (!utf8_of(v, "a string value", &s, &n))
            return 0;
        pcb_value_put_run(b, s, (size_t)n);
        break;
    }
    case PCB_PREF_INT: case PCB_PREF_LONG: {
        if (!PyLong_Check(v) || PyBool_Check(v)) {
            PyErr_Format(PyExc_TypeError, "put_%s takes an int, not %.100s",
                         type == PCB_PREF_INT ? "int" : "long", Py_TYPE(v)->tp_name);
            return 0;
        }
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred())
            return 0;
        if (overflow || (type == PCB_PREF_INT && (x < INT32_MIN || x > INT32_MAX))) {
            PyErr_Format(PyExc_ValueError, "%S does not fit a %s", v,
                         type == PCB_PREF_INT ? "32-bit int (use put_long)" : "64-bit long");
            return 0;
        }
        if (type == PCB_PREF_LONG)
            pcb_value_put_long(b, x);
        else
            pcb_value_put_int(b, (int32_t)x);
        break;
    }
    case PCB_PREF_FLOAT: {
        if (!(PyFloat_Check(v) || PyLong_Check(v)) || PyBool_Check(v)) {
            PyErr_Format(PyExc_TypeError, "put_float takes a float, not %.100s", Py_TYPE(v)->tp_name);
            return 0;
        }
        double d = PyFloat_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred())
            return 0;
        if (isfinite(d) && fabs(d) > 3.4028234663852886e38) {
            PyErr_Format(PyExc_ValueError, "%S is outside the range of a 32-bit float", v);
            return 0;
        }
        pcb_value_put_float(b, (float)d);
        break;
    }
    case PCB_PREF_BOOLEAN: {
        if (!PyBool_Check(v)) {
            PyErr_Format(PyExc_TypeError, "put_bool takes a bool, not %.100s", Py_TYPE(v)->tp_name);
            return 0;
        }
        pcb_value_put_bool(b, v == Py_True);
        break;
    }
    case PCB_PREF_STRING_SET: {
        if (PyUnicode_Check(v) || PyBytes_Check(v)) {
            PyErr_SetString(PyExc_TypeError,
                            "put_string_set takes an iterable of str (a set), not a single string");
            return 0;
        }
        /* A Java Set: members once each, in first-seen order. */
        PyObject *seen = PySet_New(NULL), *it = seen ? PyObject_GetIter(v) : NULL, *item;
        if (it == NULL) {
            Py_XDECREF(seen);
            if (PyErr_ExceptionMatches(PyExc_TypeError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, "put_string_set takes an iterable of str, not %.100s",
                             Py_TYPE(v)->tp_name);
            }
            return 0;
        }
        int ok = 1;
        while (ok && (item = PyIter_Next(it)) != NULL) {
            const char *s;
            Py_ssize_t n;
            int dup = 0;
            ok = utf8_of(item, "each string set member", &s, &n);
            if (ok) {
                dup = PySet_Contains(seen, item);
                ok = dup >= 0 && (dup || PySet_Add(seen, item) == 0);
            }
            if (ok && !dup)
                pcb_value_put_run(b, s, (size_t)n);
            Py_DECREF(item);
        }
        Py_DECREF(it);
        Py_DECREF(seen);
        if (!ok || PyErr_Occurred())
            return 0;
        break;
    }
    }
    if (b->failed) {
        PyErr_NoMemory();
        return 0;
    }
    return 1;
}

static PyObject *decode_str(const uint8_t *p, size_t n)
{
    return PyUnicode_DecodeUTF8((const char *)p, (Py_ssize_t)n, "strict");
}

/* Plaintext serialization -> (type id, Python value). */
/* The Python value of a serialized entry, *type_out its type id; NULL with
 * StoreFormatError if it is malformed. */
static PyObject *decode_value(PyObject *self, const uint8_t *v, size_t vl, uint32_t *type_out)
{
    module_state *ms = type_state(self);
    PyObject *value = NULL;
    pcb_value x;
    if (!pcb_value_parse(v, vl, &x))
        goto bad;
    switch (x.type) {
    case PCB_PREF_STRING:
        value = decode_str(x.text, x.text_len);
        break;
    case PCB_PREF_STRING_SET: {
        const uint8_t *run;
        size_t off = 4, len;
        value = PySet_New(NULL);
        while (value != NULL && pcb_value_next_run(v, vl, &off, &run, &len) == 1) {
            PyObject *m = decode_str(run, len);
            if (m == NULL || PySet_Add(value, m) < 0)
                Py_CLEAR(value);
            Py_XDECREF(m);
        }
        break;
    }
    case PCB_PREF_INT:
    case PCB_PREF_LONG:
        value = PyLong_FromLongLong(x.i);
        break;
    case PCB_PREF_FLOAT:
        value = PyFloat_FromDouble((double)x.f);
        break;
    case PCB_PREF_BOOLEAN:
        value = PyBool_FromLong(x.b);
        break;
    }
    if (value == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear();
            goto bad;
        }
        return NULL;
    }
    *type_out = (uint32_t)x.type;
    return value;
bad:
    PyErr_SetString(ms->StoreFormatError,
                    "an entry decrypted to a malformed value (unknown type id or bad lengths)");
    return NULL;
}

/* (type id, value) of a serialized entry. */
static PyObject *deserialize_value(PyObject *self, const uint8_t *v, size_t vl)
{
    uint32_t type;
    PyObject *value = decode_value(self, v, vl, &type);
    return value ? Py_BuildValue("(IN)", type, value) : NULL;
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

static const char *const keyenc_names[] = {"none", "siv", NULL};
static const char *const valenc_names[] = {"none", "gcm", "chacha20-poly1305", NULL};
static const char *const layout_names[] = {"entries", "file", NULL};

static int choose(const char *what, const char *value, const char *const *names, int *out)
{
    for (int i = 0; names[i]; i++)
        if (strcmp(value, names[i]) == 0) {
            *out = i;
            return 1;
        }
    PyErr_Format(PyExc_ValueError, "%s must be one of %s%s%s%s%s, got '%s'", what, names[0],
                 names[1] ? ", " : "", names[1] ? names[1] : "", names[1] && names[2] ? ", " : "",
                 names[1] && names[2] ? names[2] : "", value);
    return 0;
}

/* scrypt_n: 0 for the default, else a power of two in [2, 2**24]. */
static int scrypt_arg(PyObject *obj, uint64_t *out)
{
    *out = 0;
    if (obj == NULL)
        return 1;
    if (!PyLong_Check(obj) || PyBool_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "scrypt_n must be an int (0 for the default), not %.100s",
                     Py_TYPE(obj)->tp_name);
        return 0;
    }
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (v == -1 && PyErr_Occurred())
        return 0;
    if (!overflow && v == 0)
        return 1;
    if (overflow || v < 2 || v > (1LL << 24) || (v & (v - 1))) {
        PyErr_Format(PyExc_ValueError, "scrypt_n must be a power of two from 2 to 2**24, got %S", obj);
        return 0;
    }
    *out = (uint64_t)v;
    return 1;
}

/* path-like -> bytes (filesystem encoding); NULL object allowed if may_be_none. */
static int fspath(PyObject *obj, PyObject **out)
{
    *out = NULL;
    if (obj == Py_None)
        return 1;
    return PyUnicode_FSConverter(obj, out) != 0;
}

static PyObject *Store_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"path", "master_key_file", "passphrase", "encrypted", "key_encryption",
                             "value_encryption", "cache", "layout", "faithful", "scrypt_n", NULL};
    module_state *ms = PyType_GetModuleState(type);
    PyObject *path_obj, *mk_obj = Py_None, *pw_obj = Py_None, *path = NULL, *mk = NULL;
    const char *keyenc = "siv", *valenc = "gcm", *layout = "entries";
    int encrypted = 1, cache = 0, faithful = 0, ke, ve, lo;
    PyObject *scrypt_obj = NULL;
    uint64_t scrypt_n = 0;
    pcb_store_options opt;
    pcb_status st = {0};
    const char *pw = NULL;
    Py_ssize_t pw_len = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OOpsspspO:Store", kwlist, &path_obj,
                                     &mk_obj, &pw_obj, &encrypted, &keyenc, &valenc, &cache,
                                     &layout, &faithful, &scrypt_obj))
        return NULL;
    if (path_obj == Py_None)
        return PyErr_Format(PyExc_TypeError, "path: expected str, bytes or os.PathLike object, not NoneType");
    if (!scrypt_arg(scrypt_obj, &scrypt_n))
        return NULL;
    if (!choose("key_encryption", keyenc, keyenc_names, &ke)
        || !choose("value_encryption", valenc, valenc_names, &ve)
        || !choose("layout", layout, layout_names, &lo))
        return NULL;
    if (pw_obj != Py_None) {
        if (PyUnicode_Check(pw_obj)) {
            pw = PyUnicode_AsUTF8AndSize(pw_obj, &pw_len);
        } else if (PyBytes_Check(pw_obj)) {
            pw = PyBytes_AS_STRING(pw_obj);
            pw_len = PyBytes_GET_SIZE(pw_obj);
        } else {
            return PyErr_Format(PyExc_TypeError, "passphrase must be str or bytes, not %.100s",
                                Py_TYPE(pw_obj)->tp_name);
        }
        if (pw == NULL)
            return NULL;
        if (pw_len == 0)
            return PyErr_Format(PyExc_ValueError, "passphrase must not be empty");
    }
    if (!encrypted && (mk_obj != Py_None || pw_obj != Py_None))
        return PyErr_Format(PyExc_ValueError, "a plain store (encrypted=False) takes no master key "
                            "or passphrase");
    if (encrypted && (mk_obj == Py_None) == (pw_obj == Py_None))
        return PyErr_Format(PyExc_ValueError,
                            "an encrypted store needs exactly one of master_key_file= or passphrase=");
    if (!fspath(path_obj, &path) || !fspath(mk_obj, &mk))
        goto fail;
    if (mk != NULL && PyBytes_GET_SIZE(mk) == 0) {
        PyErr_SetString(PyExc_ValueError, "master_key_file must name a file, not be empty");
        goto fail;
    }
    memset(&opt, 0, sizeof opt);
    opt.encrypted = encrypted;
    opt.key_enc = (pcb_key_encryption)ke;
    opt.value_enc = (pcb_value_encryption)ve;
    opt.layout = (pcb_layout)lo;
    opt.cache = cache;
    opt.faithful = faithful;
    opt.master_key_file = mk ? PyBytes_AS_STRING(mk) : NULL;
    opt.passphrase = pw;
    opt.passphrase_len = (size_t)pw_len;
    opt.scrypt_n = scrypt_n;
    pcb_store *store;
    Py_BEGIN_ALLOW_THREADS
    store = pcb_store_open(PyBytes_AS_STRING(path), &opt, &ms->cache, NULL, &st);
    Py_END_ALLOW_THREADS
    if (store == NULL) {
        pcb_raise_status(ms, &st);
        goto fail;
    }
    StoreObject *so = (StoreObject *)type->tp_alloc(type, 0);
    if (so == NULL) {
        pcb_store_close(store, &st);
        goto fail;
    }
    so->store = store;
    so->path = PyUnicode_DecodeFSDefault(PyBytes_AS_STRING(path));
    Py_XDECREF(path);
    Py_XDECREF(mk);
    if (so->path == NULL) {
        Py_DECREF(so);
        return NULL;
    }
    return (PyObject *)so;
fail:
    Py_XDECREF(path);
    Py_XDECREF(mk);
    return NULL;
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
    tp->tp_free(so);
    Py_DECREF(tp);
}

static int Store_traverse(StoreObject *so, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(so));
    return 0;
}

static int name_arg(PyObject *obj, const char **s, Py_ssize_t *n)
{
    return utf8_of(obj, "a store entry name", s, n);
}

/* Looks name up, its serialized value into out (initialised by the caller):
 * 1 with *found set, or 0 with an exception set. */
static int store_get_serialized(StoreObject *so, PyObject *name_obj, pcb_buf *out, int *found)
{
    const char *name;
    Py_ssize_t nl;
    pcb_status st = {0};
    if (!name_arg(name_obj, &name, &nl))
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
        r = found ? deserialize_value((PyObject *)so, (const uint8_t *)out.data, out.len)
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
        else if ((r = decode_value((PyObject *)so, (const uint8_t *)out.data, out.len, &type)) != NULL
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
    if (!name_arg(name_obj, &name, &nl))
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

typedef struct {
    StoreObject *so;
    PyObject *dict;
} all_ctx;

static int all_entry(void *arg, const char *name, size_t nl, const uint8_t *v, size_t vl)
{
    all_ctx *c = arg;
    PyObject *key = PyUnicode_DecodeUTF8(name, (Py_ssize_t)nl, "strict");
    PyObject *tv = key ? deserialize_value((PyObject *)c->so, v, vl) : NULL;
    int rc = tv == NULL || PyDict_SetItem(c->dict, key, PyTuple_GET_ITEM(tv, 1)) < 0;
    Py_XDECREF(key);
    Py_XDECREF(tv);
    return rc;
}

static PyObject *Store_all(StoreObject *so, PyObject *Py_UNUSED(ignored))
{
    pcb_status st = {0};
    all_ctx c = {so, PyDict_New()};
    if (c.dict == NULL)
        return NULL;
    pcb_store *s = acquire(so);
    if (s == NULL) {
        Py_DECREF(c.dict);
        return NULL;
    }
    /* Holds the GIL: the callback builds Python objects per entry. */
    int ok = pcb_store_all(s, all_entry, &c, &st);
    release(so);
    if (!ok) {
        Py_DECREF(c.dict);
        if (!PyErr_Occurred())
            raise_st((PyObject *)so, &st);
        return NULL;
    }
    return c.dict;
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
    static char *kwlist[] = {"master_key_file", "passphrase", "scrypt_n", NULL};
    PyObject *mk_obj = Py_None, *pw_obj = Py_None, *mk = NULL, *scrypt_obj = NULL;
    uint64_t scrypt_n = 0;
    pcb_store_options opt;
    pcb_status st = {0};
    int ok;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOO:rotate", kwlist, &mk_obj, &pw_obj, &scrypt_obj)
        || !scrypt_arg(scrypt_obj, &scrypt_n))
        return NULL;
    if (mk_obj != Py_None && pw_obj != Py_None)
        return PyErr_Format(PyExc_ValueError, "rotate takes at most one of master_key_file= and passphrase=");
    memset(&opt, 0, sizeof opt);
    if (pw_obj != Py_None) {
        Py_ssize_t n;
        const char *pw = PyUnicode_Check(pw_obj) ? PyUnicode_AsUTF8AndSize(pw_obj, &n) : NULL;
        if (pw == NULL && PyBytes_Check(pw_obj)) {
            pw = PyBytes_AS_STRING(pw_obj);
            n = PyBytes_GET_SIZE(pw_obj);
        }
        if (pw == NULL) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "passphrase must be str or bytes, not %.100s",
                             Py_TYPE(pw_obj)->tp_name);
            return NULL;
        }
        if (n == 0)
            return PyErr_Format(PyExc_ValueError, "passphrase must not be empty");
        opt.passphrase = pw;
        opt.passphrase_len = (size_t)n;
    }
    if (!fspath(mk_obj, &mk))
        return NULL;
    if (mk != NULL && PyBytes_GET_SIZE(mk) == 0) {
        Py_DECREF(mk);
        return PyErr_Format(PyExc_ValueError, "master_key_file must name a file, not be empty");
    }
    opt.master_key_file = mk ? PyBytes_AS_STRING(mk) : NULL;
    opt.scrypt_n = scrypt_n;
    pcb_store *s = acquire(so);
    if (s == NULL) {
        Py_XDECREF(mk);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    ok = pcb_store_rotate(s, &opt, &st);
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
     "rotate(*, master_key_file=None, passphrase=None, scrypt_n=0) -> None\n\n"
     "Re-encrypt every entry under new keysets (and a new master key if given), atomically."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Store_getset[] = {
    {"heap_bytes", (getter)Store_heap_bytes, NULL, "Bytes of heap the store holds.", NULL},
    {"disk_bytes", (getter)Store_disk_bytes, NULL, "Size of the store's file.", NULL},
    {"closed", (getter)Store_closed, NULL, "True once closed.", NULL},
    {"path", (getter)Store_path, NULL, "The store file's path.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef Store_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(StoreObject, weakrefs), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

PyDoc_STRVAR(Store_doc,
             "Store(path, *, master_key_file=None, passphrase=None, encrypted=True,\n"
             "      key_encryption='siv', value_encryption='gcm', cache=False, layout='entries',\n"
             "      faithful=False, scrypt_n=0)\n\n"
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
    if (!name_arg(args[0], &name, &nl))
        return NULL;
    pcb_edit *e = editor_edit(eo);
    if (e == NULL)
        return NULL;
    pcb_buf_init(&b);
    int ok = serialize_value(type, value, &b);
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
    if (!name_arg(name_obj, &name, &nl))
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

/* --------------------------------------------------------- store_bench */

static const char *const value_type_names[] = {"string", "string_set", "int", "long", "float",
                                               "bool", NULL};

static int choose_n(const char *what, const char *value, const char *const *names, int *out)
{
    for (int i = 0; names[i]; i++)
        if (strcmp(value, names[i]) == 0) {
            *out = i;
            return 1;
        }
    PyObject *list = PyList_New(0);
    for (int i = 0; list && names[i]; i++) {
        PyObject *x = PyUnicode_FromString(names[i]);
        if (x == NULL || PyList_Append(list, x) < 0)
            Py_CLEAR(list);
        Py_XDECREF(x);
    }
    if (list) {
        PyErr_Format(PyExc_ValueError, "%s must be one of %R, got '%s'", what, list, value);
        Py_DECREF(list);
    }
    return 0;
}

static int size_arg(PyObject *obj, const char *what, long long lo, long long hi, size_t *out)
{
    long long v;
    if (!pcb_int_arg(obj, what, lo, hi, &v))
        return 0;
    *out = (size_t)v;
    return 1;
}

static PyObject *u64_list(const uint64_t *v, uint32_t n)
{
    PyObject *list = PyList_New(n);
    for (uint32_t i = 0; list && i < n; i++) {
        PyObject *x = PyLong_FromUnsignedLongLong(v[i]);
        if (x == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, x);
    }
    return list;
}

static PyObject *core_store_bench(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"workload", "directory", "n_keys", "key_len", "value_len", "value_type",
                             "batch", "encrypted", "key_encryption", "value_encryption", "cache",
                             "layout", "faithful", "passphrase", "stages", "min_time", "repeats",
                             "warmup", "check_only", NULL};
    module_state *ms = PyModule_GetState(module);
    const char *workload, *value_type = "string", *keyenc = "siv", *valenc = "gcm",
               *layout = "entries";
    PyObject *dir_obj = Py_None, *n_keys_obj = NULL, *key_len_obj = NULL, *value_len_obj = NULL,
             *batch_obj = NULL, *repeats_obj = NULL, *dir = NULL;
    int encrypted = 1, cache = 0, faithful = 0, passphrase = 0, stages = 1, check_only = 0;
    int wl, vt, ke, ve, lo;
    double min_time = 0.05, warmup = -1.0;
    pcb_store_bench_params p;
    pcb_status st = {0};

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|$OOOOsOpsspspppdOdp:store_bench", kwlist,
                                     &workload, &dir_obj, &n_keys_obj, &key_len_obj,
                                     &value_len_obj, &value_type, &batch_obj, &encrypted, &keyenc,
                                     &valenc, &cache, &layout, &faithful, &passphrase, &stages,
                                     &min_time, &repeats_obj, &warmup, &check_only))
        return NULL;
    memset(&p, 0, sizeof p);
    p.n_keys = 1000;
    p.key_len = 32;
    p.value_len = 32;
    p.batch = 1;
    size_t repeats = 7;
    if (!choose_n("workload", workload, pcb_workload_names, &wl)
        || !choose_n("value_type", value_type, value_type_names, &vt)
        || !choose_n("key_encryption", keyenc, keyenc_names, &ke)
        || !choose_n("value_encryption", valenc, valenc_names, &ve)
        || !choose_n("layout", layout, layout_names, &lo)
        || (n_keys_obj && !size_arg(n_keys_obj, "n_keys", 1, 10000000, &p.n_keys))
        || (key_len_obj && !size_arg(key_len_obj, "key_len", 1, 1 << 20, &p.key_len))
        || (value_len_obj && !size_arg(value_len_obj, "value_len", 0, 1 << 24, &p.value_len))
        || (batch_obj && !size_arg(batch_obj, "batch", 1, 1000000, &p.batch))
        || (repeats_obj && !size_arg(repeats_obj, "repeats", 1, 100000, &repeats)))
        return NULL;
    if (!(min_time > 0.0 && min_time <= 60.0))
        return PyErr_Format(PyExc_ValueError, "min_time must be in (0, 60] seconds");
    if (warmup == -1.0)
        warmup = min_time;
    if (!(warmup >= 0.0 && warmup <= 60.0))
        return PyErr_Format(PyExc_ValueError, "warmup must be in [0, 60] seconds");
    if ((double)p.n_keys * (double)(p.key_len + p.value_len) > 4e9)
        return PyErr_Format(PyExc_ValueError,
                            "n_keys x (key_len + value_len) must stay under 4 GB of entries");
    if (!encrypted && (wl == PCB_WL_ROTATE))
        return PyErr_Format(PyExc_ValueError, "rotate needs an encrypted store");
    if (!encrypted && passphrase)
        return PyErr_Format(PyExc_ValueError, "a plain store has no passphrase");
    if (check_only)
        Py_RETURN_NONE;
    if (dir_obj == Py_None)
        return PyErr_Format(PyExc_TypeError, "store_bench needs directory= (an empty directory)");
    if (!PyUnicode_FSConverter(dir_obj, &dir))
        return NULL;
    p.workload = (pcb_workload)wl;
    p.value_type = (pcb_pref_type)vt;
    p.dir = PyBytes_AS_STRING(dir);
    p.opt.encrypted = encrypted;
    p.opt.key_enc = (pcb_key_encryption)ke;
    p.opt.value_enc = (pcb_value_encryption)ve;
    p.opt.layout = (pcb_layout)lo;
    p.opt.cache = cache;
    p.opt.faithful = faithful;
    p.opt.scrypt_n = 1u << 14;
    p.use_passphrase = passphrase;
    p.stages = stages;

    uint64_t *elapsed = PyMem_Calloc(repeats, sizeof(uint64_t));
    uint64_t *ticks = PyMem_Calloc(repeats, sizeof(uint64_t));
    uint64_t *durable = PyMem_Calloc(repeats, sizeof(uint64_t));
    PyObject *result = NULL;
    if (elapsed == NULL || ticks == NULL || durable == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    pcb_timing_params tp = {(uint64_t)(min_time * 1e9), (uint64_t)(warmup * 1e9), (uint32_t)repeats};
    pcb_timing_result tr = {0, 0, elapsed, ticks};
    pcb_store_bench_extra extra;
    memset(&extra, 0, sizeof extra);
    extra.durable_ns = wl == PCB_WL_APPLY ? durable : NULL;
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = pcb_store_bench(&p, &ms->cache, &tp, &tr, &extra, &st);
    Py_END_ALLOW_THREADS
    if (!ok) {
        pcb_raise_status(ms, &st);
        goto done;
    }
    PyObject *stages_dict = Py_NewRef(Py_None);
    if (extra.have_stages) {
        Py_DECREF(stages_dict);
        stages_dict = Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K}",
                                    "siv", extra.stage_ns[PCB_STAGE_SIV],
                                    "nonce", extra.stage_ns[PCB_STAGE_NONCE],
                                    "aead", extra.stage_ns[PCB_STAGE_AEAD],
                                    "base64", extra.stage_ns[PCB_STAGE_BASE64],
                                    "lookup", extra.stage_ns[PCB_STAGE_LOOKUP],
                                    "io", extra.stage_ns[PCB_STAGE_IO],
                                    "total", extra.stage_total_ns);
    }
    result = Py_BuildValue(
        "{s:s,s:n,s:n,s:n,s:s,s:n,s:d,s:d,s:I,s:K,s:N,s:N,s:N,s:N,s:K,s:K,s:K,s:n}",
        "workload", workload, "n_keys", (Py_ssize_t)p.n_keys, "key_len", (Py_ssize_t)p.key_len,
        "value_len", (Py_ssize_t)p.value_len, "value_type", value_type,
        "batch", (Py_ssize_t)p.batch, "min_time", min_time, "warmup", warmup,
        "repeats", (unsigned)tr.repeats, "iterations", (unsigned long long)tr.iterations,
        "elapsed_ns", u64_list(elapsed, tr.repeats), "tsc_ticks", u64_list(ticks, tr.repeats),
        "durable_ns", wl == PCB_WL_APPLY ? u64_list(durable, tr.repeats) : Py_NewRef(Py_None),
        "stages", stages_dict, "heap_bytes", (unsigned long long)extra.heap_bytes,
        "disk_bytes", (unsigned long long)extra.disk_bytes, "entries",
        (unsigned long long)extra.entries, "payload", (Py_ssize_t)extra.payload);
done:
    Py_XDECREF(dir);
    PyMem_Free(elapsed);
    PyMem_Free(ticks);
    PyMem_Free(durable);
    return result;
}

static PyMethodDef store_functions[] = {
    {"store_bench", (PyCFunction)(void (*)(void))core_store_bench, METH_VARARGS | METH_KEYWORDS,
     "store_bench(workload, *, directory=None, n_keys=1000, key_len=32, value_len=32,\n"
     "            value_type='string', batch=1, encrypted=True, key_encryption='siv',\n"
     "            value_encryption='gcm', cache=False, layout='entries', faithful=False,\n"
     "            passphrase=False, stages=True, min_time=0.05, repeats=7, warmup=-1.0,\n"
     "            check_only=False) -> dict | None\n\n"
     "Time a store workload in C (GIL released) in an empty directory; raw samples.\n"
     "Use pycipherbench.store.bench() for a Measurement."},
    {NULL, NULL, 0, NULL},
};

/* ------------------------------------------------------------- module */

PyDoc_STRVAR(StoreFormatError_doc,
             "A store file that is not a valid SharedPreferences XML file for these options\n"
             "(truncated, not XML, wrong element types). The file is left untouched.");
PyDoc_STRVAR(ReservedNameError_doc,
             "A read or write of one of ESP's reserved keyset names.");

int pcb_store_py_exec(PyObject *module, module_state *ms)
{
    PyObject *bases = PyTuple_Pack(2, ms->CipherBenchError, PyExc_ValueError);
    if (bases == NULL)
        return -1;
    ms->StoreFormatError = PyErr_NewExceptionWithDoc("pycipherbench.store.StoreFormatError",
                                                     StoreFormatError_doc, bases, NULL);
    ms->ReservedNameError = PyErr_NewExceptionWithDoc("pycipherbench.store.ReservedNameError",
                                                      ReservedNameError_doc, bases, NULL);
    Py_DECREF(bases);
    if (ms->StoreFormatError == NULL || ms->ReservedNameError == NULL
        || PyModule_AddObjectRef(module, "StoreFormatError", ms->StoreFormatError) < 0
        || PyModule_AddObjectRef(module, "ReservedNameError", ms->ReservedNameError) < 0)
        return -1;
    ms->StoreType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &Store_spec, NULL);
    ms->EditorType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &Editor_spec, NULL);
    if (ms->StoreType == NULL || ms->EditorType == NULL
        || PyModule_AddType(module, ms->StoreType) < 0 || PyModule_AddType(module, ms->EditorType) < 0
        || PyModule_AddFunctions(module, store_functions) < 0)
        return -1;
    return 0;
}

int pcb_store_py_traverse(module_state *ms, visitproc visit, void *arg)
{
    Py_VISIT(ms->StoreFormatError);
    Py_VISIT(ms->ReservedNameError);
    Py_VISIT(ms->StoreType);
    Py_VISIT(ms->EditorType);
    return 0;
}

void pcb_store_py_clear(module_state *ms)
{
    Py_CLEAR(ms->StoreFormatError);
    Py_CLEAR(ms->ReservedNameError);
    Py_CLEAR(ms->StoreType);
    Py_CLEAR(ms->EditorType);
}
