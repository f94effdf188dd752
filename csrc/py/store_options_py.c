/*
 * py/store_options_py.c — the store calls' keyword arguments.
 *
 * Owns: the arguments of _core.Store() (call "open") and of
 * _core.StoreKernel() / check_store_bench() (call "kernel"). Their names and
 * defaults are pycipherbench._options.OPTIONS, handed over once by the
 * package at import (_load_store_options; _core imports no Python module):
 * this file only says what C type each one converts to and where it goes
 * (the conversion tables below), and the package's import fails if the
 * table declares an option these tables do not convert or they convert one
 * it does not declare. No format string or keyword list
 * restates the names. Also the option checks Store() and store_bench() share
 * (pcb_store_options_arg, pcb_crypto_backend_arg), the key arguments
 * Store.rotate() takes too (scrypt_arg, key_file_arg, passphrase_arg) and
 * Store()'s own cross-checks (pcb_store_open_parse). _core._store_options()
 * shows what was read, or checks another table (tests/test_options.py).
 */
#include "py/pyutil.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "crypto/backend.h"
#include "store/lock.h"
#include "store/store.h"

/* ------------------------------------------- the options' checks */

static const char *const keyenc_names[] = {"none", "siv", NULL};             /* pcb_key_encryption */
static const char *const valenc_names[] = {"none", "gcm", "chacha20-poly1305", NULL}; /* pcb_value_encryption */
static const char *const layout_names[] = {"entries", "file", NULL};         /* pcb_layout */

int pcb_store_options_arg(int encrypted, const char *key_encryption,
                          const char *value_encryption, const char *layout, int cache,
                          int faithful, pcb_store_options *opt)
{
    int ke, ve, lo;
    if (!pcb_name_arg("key_encryption", key_encryption, keyenc_names, &ke)
        || !pcb_name_arg("value_encryption", value_encryption, valenc_names, &ve)
        || !pcb_name_arg("layout", layout, layout_names, &lo))
        return 0;
    memset(opt, 0, sizeof *opt);
    opt->encrypted = encrypted;
    opt->key_enc = (pcb_key_encryption)ke;
    opt->value_enc = (pcb_value_encryption)ve;
    opt->layout = (pcb_layout)lo;
    opt->cache = cache;
    opt->faithful = faithful;
    return 1;
}

/* crypto_backend: a name of pcb_backends() (crypto/backend) or "auto"
 * (PCB_STORE_BK_AUTO); whether it has what the options need is the store's
 * check at open. */
int pcb_crypto_backend_arg(const char *name, pcb_store_options *opt)
{
    const char *names[PCB_BK_COUNT + 2]; /* per call: no state shared between interpreters */
    int b;
    names[0] = "auto";
    for (int i = 0; i < PCB_BK_COUNT; i++)
        names[i + 1] = pcb_backend_name((pcb_backend)i);
    names[PCB_BK_COUNT + 1] = NULL;
    if (!pcb_name_arg("crypto_backend", name, names, &b))
        return 0;
    opt->crypto_backend = b == 0 ? PCB_STORE_BK_AUTO : b - 1;
    return 1;
}

/* scrypt_n: 0 for the default, else a power of two in [2, PCB_SCRYPT_N_MAX]. */
int pcb_scrypt_arg(PyObject *obj, uint64_t *out)
{
    long long v;
    int overflow, r;
    *out = 0;
    if (obj == NULL)
        return 1;
    if ((r = pcb_exact_int(obj, &v, &overflow)) == 0)
        PyErr_Format(PyExc_TypeError, "scrypt_n must be an int (0 for the default), not %.100s",
                     Py_TYPE(obj)->tp_name);
    if (r <= 0)
        return 0;
    if (!overflow && v == 0)
        return 1;
    if (overflow || v < 2 || (uint64_t)v > PCB_SCRYPT_N_MAX || (v & (v - 1))) {
        PyErr_Format(PyExc_ValueError, "scrypt_n must be a power of two from 2 to 2**20 (1 GiB of "
                     "memory), got %S", obj);
        return 0;
    }
    *out = (uint64_t)v;
    return 1;
}

/* path-like -> bytes (filesystem encoding); None gives NULL. */
static int fspath(PyObject *obj, PyObject **out)
{
    *out = NULL;
    if (obj == Py_None)
        return 1;
    return PyUnicode_FSConverter(obj, out) != 0;
}

/* master_key_file=: None (*out NULL) or a non-empty path-like, as a new
 * reference to its filesystem-encoded bytes. */
int pcb_key_file_arg(PyObject *obj, PyObject **out)
{
    if (!fspath(obj, out))
        return 0;
    if (*out != NULL && PyBytes_GET_SIZE(*out) == 0) {
        Py_CLEAR(*out);
        PyErr_SetString(PyExc_ValueError, "master_key_file must name a file, not be empty");
        return 0;
    }
    return 1;
}

/* passphrase=: None (*pw NULL) or a non-empty str (as UTF-8) or bytes; *pw
 * lives as long as obj. */
int pcb_passphrase_arg(PyObject *obj, const char **pw, size_t *len)
{
    Py_ssize_t n = 0;
    *pw = NULL;
    *len = 0;
    if (obj == Py_None)
        return 1;
    if (PyUnicode_Check(obj)) {
        *pw = PyUnicode_AsUTF8AndSize(obj, &n);
    } else if (PyBytes_Check(obj)) {
        *pw = PyBytes_AS_STRING(obj);
        n = PyBytes_GET_SIZE(obj);
    } else {
        PyErr_Format(PyExc_TypeError, "passphrase must be str or bytes, not %.100s",
                     Py_TYPE(obj)->tp_name);
        return 0;
    }
    if (*pw == NULL)
        return 0;
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "passphrase must not be empty");
        return 0;
    }
    *len = (size_t)n;
    return 1;
}

/* ------------------------------------------------------------ Store() */

int pcb_store_open_parse(module_state *ms, PyObject *args, PyObject *kwargs, pcb_store_open_args *a)
{
    pcb_store_kwargs k;
    uint64_t scrypt_n = 0;

    if (!pcb_store_kwargs_parse(ms, PCB_STORE_CALL_OPEN, "Store", args, kwargs, &k))
        return 0;
    if (!(k.lock_timeout >= 0 && k.lock_timeout <= PCB_LOCK_MAX_TIMEOUT)) { /* NaN too */
        PyObject *v = PyFloat_FromDouble(k.lock_timeout);
        if (v != NULL) {
            PyErr_Format(PyExc_ValueError, "lock_timeout must be a finite number of seconds "
                         "from 0 to %d (how long a write waits for another writer), got %R",
                         (int)PCB_LOCK_MAX_TIMEOUT, v);
            Py_DECREF(v);
        }
        return 0;
    }
    if (k.path == Py_None) {
        PyErr_SetString(PyExc_TypeError,
                        "path: expected str, bytes or os.PathLike object, not NoneType");
        return 0;
    }
    if (!pcb_scrypt_arg(k.scrypt_n, &scrypt_n)
        || !pcb_store_options_arg(k.encrypted, k.key_encryption, k.value_encryption, k.layout,
                                  k.cache, k.faithful, &a->opt)
        || !pcb_crypto_backend_arg(k.crypto_backend, &a->opt)
        || !pcb_passphrase_arg(k.passphrase, &a->opt.passphrase, &a->opt.passphrase_len))
        return 0;
    if (!k.encrypted && (k.master_key_file != Py_None || k.passphrase != Py_None)) {
        PyErr_SetString(PyExc_ValueError, "a plain store (encrypted=False) takes no master key "
                        "or passphrase");
        return 0;
    }
    if (k.encrypted && (k.master_key_file == Py_None) == (k.passphrase == Py_None)) {
        PyErr_SetString(PyExc_ValueError,
                        "an encrypted store needs exactly one of master_key_file= or passphrase=");
        return 0;
    }
    if (!fspath(k.path, &a->path) || !pcb_key_file_arg(k.master_key_file, &a->mk))
        return 0;
    a->opt.master_key_file = a->mk ? PyBytes_AS_STRING(a->mk) : NULL;
    a->opt.scrypt_n = scrypt_n;
    a->opt.lock_timeout = k.lock_timeout > 0 ? k.lock_timeout : -1; /* C: 0 is the default, < 0 no wait */
    return 1;
}

/* ------------------------------------------------------ conversions */

typedef enum { CONV_OBJECT, CONV_BOOL, CONV_STR, CONV_FLOAT } conv_kind;
static const char *const conv_kind_names[] = {"object", "bool", "str", "float"};

typedef struct {
    const char *name;
    conv_kind kind;
    size_t offset; /* of its field in pcb_store_kwargs */
} conv;

#define AT(field) offsetof(pcb_store_kwargs, field)

static const conv open_convs[] = { /* Store() */
    {"path", CONV_OBJECT, AT(path)},
    {"master_key_file", CONV_OBJECT, AT(master_key_file)},
    {"passphrase", CONV_OBJECT, AT(passphrase)},
    {"scrypt_n", CONV_OBJECT, AT(scrypt_n)},
    {"lock_timeout", CONV_FLOAT, AT(lock_timeout)},
    {"encrypted", CONV_BOOL, AT(encrypted)},
    {"key_encryption", CONV_STR, AT(key_encryption)},
    {"value_encryption", CONV_STR, AT(value_encryption)},
    {"cache", CONV_BOOL, AT(cache)},
    {"layout", CONV_STR, AT(layout)},
    {"faithful", CONV_BOOL, AT(faithful)},
    {"crypto_backend", CONV_STR, AT(crypto_backend)},
    {NULL, 0, 0},
};

static const conv kernel_convs[] = { /* StoreKernel(), check_store_bench() */
    {"workload", CONV_STR, AT(workload)},
    {"directory", CONV_OBJECT, AT(directory)},
    {"n_keys", CONV_OBJECT, AT(n_keys)},
    {"key_len", CONV_OBJECT, AT(key_len)},
    {"value_len", CONV_OBJECT, AT(value_len)},
    {"value_type", CONV_STR, AT(value_type)},
    {"batch", CONV_OBJECT, AT(batch)},
    {"encrypted", CONV_BOOL, AT(encrypted)},
    {"key_encryption", CONV_STR, AT(key_encryption)},
    {"value_encryption", CONV_STR, AT(value_encryption)},
    {"cache", CONV_BOOL, AT(cache)},
    {"layout", CONV_STR, AT(layout)},
    {"faithful", CONV_BOOL, AT(faithful)},
    {"passphrase", CONV_BOOL, AT(use_passphrase)},
    {"crypto_backend", CONV_STR, AT(crypto_backend)},
    {NULL, 0, 0},
};

static const conv *const call_convs[PCB_STORE_N_CALLS] = {open_convs, kernel_convs};
static const char *const call_names[PCB_STORE_N_CALLS] = {"open", "kernel"};

/* One value into its field: 1, or 0 with an exception set. */
static int convert(const conv *c, const char *func, PyObject *name, PyObject *v,
                   pcb_store_kwargs *out)
{
    char *at = (char *)out + c->offset;
    switch (c->kind) {
    case CONV_OBJECT:
        *(PyObject **)at = v;
        return 1;
    case CONV_BOOL: { /* any truth value, as PyArg's "p" */
        int r = PyObject_IsTrue(v);
        if (r < 0)
            return 0;
        *(int *)at = r;
        return 1;
    }
    case CONV_STR: {
        Py_ssize_t n;
        const char *s;
        if (!PyUnicode_Check(v)) {
            PyErr_Format(PyExc_TypeError, "%s() argument '%U' must be str, not %.100s", func, name,
                         Py_TYPE(v)->tp_name);
            return 0;
        }
        if ((s = PyUnicode_AsUTF8AndSize(v, &n)) == NULL)
            return 0;
        if ((size_t)n != strlen(s)) {
            PyErr_Format(PyExc_ValueError, "%s() argument '%U': embedded null character", func,
                         name);
            return 0;
        }
        *(const char **)at = s; /* lives as long as the call's arguments */
        return 1;
    }
    case CONV_FLOAT: {
        double d = PyFloat_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred()) {
            if (PyErr_ExceptionMatches(PyExc_OverflowError)) { /* an int past any float */
                PyErr_Clear();
                PyErr_Format(PyExc_ValueError, "%s() argument '%U' must be a finite number, "
                             "got an int too large for a float", func, name);
            }
            return 0;
        }
        *(double *)at = d;
        return 1;
    }
    }
    PyErr_SetString(PyExc_SystemError, "store options: unknown conversion");
    return 0;
}

/* ---------------------------------------------- reading the table */

static void call_table_clear(pcb_store_call_table *t)
{
    Py_CLEAR(t->names);
    Py_CLEAR(t->defaults);
    t->n = 0;
}

/* Attribute `attr` of a table entry is true: 1, 0, or -1 with an exception. */
static int entry_flag(PyObject *entry, const char *attr)
{
    PyObject *v = PyObject_GetAttrString(entry, attr);
    int r;
    if (v == NULL)
        return -1;
    r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* The options of `call` in table order (the subject first) into *t, each
 * matched to its conversion: 1, or 0 with ValueError naming the mismatch. */
static int call_table_build(PyObject *table, int call, pcb_store_call_table *t)
{
    const conv *convs = call_convs[call];
    int used[PCB_STORE_MAX_OPTIONS] = {0};
    PyObject *seq = PySequence_Fast(table, "the store options must be a sequence of Option");
    PyObject *names = NULL, *defaults = NULL, *call_name = NULL;
    Py_ssize_t n_entries;
    int n = 0, subject = -1, ok = 0;

    memset(t, 0, sizeof *t);
    if (seq == NULL)
        return 0;
    n_entries = PySequence_Fast_GET_SIZE(seq);
    names = PyList_New(0);
    defaults = PyList_New(0);
    call_name = PyUnicode_FromString(call_names[call]);
    if (names == NULL || defaults == NULL || call_name == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n_entries; i++) {
        PyObject *e = PySequence_Fast_GET_ITEM(seq, i), *calls, *name, *dflt;
        int in_call, positional, k, r;
        if ((calls = PyObject_GetAttrString(e, "calls")) == NULL)
            goto done;
        in_call = PySequence_Contains(calls, call_name);
        Py_DECREF(calls);
        if (in_call < 0)
            goto done;
        if (!in_call)
            continue;
        if ((positional = entry_flag(e, "positional")) < 0)
            goto done;
        if ((name = PyObject_GetAttrString(e, "name")) == NULL)
            goto done;
        if (!PyUnicode_Check(name)) {
            PyErr_Format(PyExc_ValueError, "store option name %R is not a str", name);
            Py_DECREF(name);
            goto done;
        }
        for (k = 0; convs[k].name && PyUnicode_CompareWithASCIIString(name, convs[k].name) != 0; k++)
            ;
        if (convs[k].name == NULL || used[k]) {
            PyErr_Format(PyExc_ValueError, convs[k].name == NULL
                         ? "store option '%U' of call '%s' has no C conversion (csrc/py/store_options_py.c)"
                         : "store option '%U' is declared twice for call '%s'", name, call_names[call]);
            Py_DECREF(name);
            goto done;
        }
        if (positional && subject >= 0) {
            PyErr_Format(PyExc_ValueError, "call '%s' has two positional options ('%U')",
                         call_names[call], name);
            Py_DECREF(name);
            goto done;
        }
        if ((dflt = PyObject_GetAttrString(e, "default")) == NULL) {
            Py_DECREF(name);
            goto done;
        }
        used[k] = 1;
        /* the subject goes first: the one positional slot */
        r = positional ? PyList_Insert(names, 0, name) : PyList_Append(names, name);
        if (r == 0)
            r = positional ? PyList_Insert(defaults, 0, dflt) : PyList_Append(defaults, dflt);
        Py_DECREF(name);
        Py_DECREF(dflt);
        if (r < 0)
            goto done;
        if (positional) {
            memmove(t->conv + 1, t->conv, (size_t)n);
            t->conv[0] = (unsigned char)k;
            subject = 0;
        } else {
            t->conv[n] = (unsigned char)k;
        }
        n++;
    }
    if (subject < 0) {
        PyErr_Format(PyExc_ValueError, "call '%s' has no positional option (its subject)",
                     call_names[call]);
        goto done;
    }
    for (int k = 0; convs[k].name; k++)
        if (!used[k]) {
            PyErr_Format(PyExc_ValueError, "csrc/py/store_options_py.c converts '%s' for call '%s', "
                         "which the package's option table does not declare", convs[k].name,
                         call_names[call]);
            goto done;
        }
    if ((t->names = PyList_AsTuple(names)) == NULL || (t->defaults = PyList_AsTuple(defaults)) == NULL)
        goto done;
    t->n = n;
    ok = 1;
done:
    if (!ok)
        call_table_clear(t);
    Py_DECREF(seq);
    Py_XDECREF(names);
    Py_XDECREF(defaults);
    Py_XDECREF(call_name);
    return ok;
}

/* _load_store_options(table, unexpected): the package hands its table over
 * at import (pycipherbench/__init__.py), so that _core imports no Python
 * module; a mismatch is a ValueError saying they disagree. Loading again
 * replaces the tables (all or nothing). */
static PyObject *core_load_store_options(PyObject *module, PyObject *args)
{
    module_state *ms = pcb_module_state(module);
    PyObject *table, *unexpected;
    pcb_store_call_table tables[PCB_STORE_N_CALLS];
    int ok = 1;
    if (!PyArg_ParseTuple(args, "OO:_load_store_options", &table, &unexpected))
        return NULL;
    if (!PyCallable_Check(unexpected))
        return PyErr_Format(PyExc_TypeError, "_load_store_options: unexpected must be callable");
    memset(tables, 0, sizeof tables);
    for (int c = 0; ok && c < PCB_STORE_N_CALLS; c++)
        ok = call_table_build(table, c, &tables[c]);
    if (!ok) {
        for (int c = 0; c < PCB_STORE_N_CALLS; c++)
            call_table_clear(&tables[c]);
        PyObject *type, *exc, *tb;
        PyErr_Fetch(&type, &exc, &tb);
        PyErr_NormalizeException(&type, &exc, &tb);
        PyErr_Format(PyExc_ValueError, "pycipherbench._core: the store options of "
                     "the package's option table and the C parser disagree: %S", exc ? exc : Py_None);
        Py_XDECREF(type);
        Py_XDECREF(exc);
        Py_XDECREF(tb);
        return NULL;
    }
    for (int c = 0; c < PCB_STORE_N_CALLS; c++) {
        call_table_clear(&ms->store_calls[c]);
        ms->store_calls[c] = tables[c];
    }
    Py_XSETREF(ms->options_unexpected, Py_NewRef(unexpected));
    Py_RETURN_NONE;
}

int pcb_store_options_traverse(module_state *ms, visitproc visit, void *arg)
{
    for (int c = 0; c < PCB_STORE_N_CALLS; c++) {
        Py_VISIT(ms->store_calls[c].names);
        Py_VISIT(ms->store_calls[c].defaults);
    }
    Py_VISIT(ms->options_unexpected);
    return 0;
}

void pcb_store_options_clear(module_state *ms)
{
    for (int c = 0; c < PCB_STORE_N_CALLS; c++)
        call_table_clear(&ms->store_calls[c]);
    Py_CLEAR(ms->options_unexpected);
}

/* ---------------------------------------------------------- parsing */

int pcb_store_kwargs_parse(module_state *ms, pcb_store_call call, const char *func, PyObject *args,
                           PyObject *kwargs, pcb_store_kwargs *out)
{
    const pcb_store_call_table *t = &ms->store_calls[call];
    PyObject *vals[PCB_STORE_MAX_OPTIONS];
    Py_ssize_t nargs = PyTuple_GET_SIZE(args), pos = 0;
    PyObject *key, *value;

    memset(out, 0, sizeof *out);
    if (t->names == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "pycipherbench._core: the store options are not loaded");
        return 0;
    }
    if (nargs > 1) {
        PyErr_Format(PyExc_TypeError, "%s() takes 1 positional argument but %zd were given", func,
                     nargs);
        return 0;
    }
    vals[0] = nargs ? PyTuple_GET_ITEM(args, 0) : NULL;
    for (int i = 1; i < t->n; i++)
        vals[i] = PyTuple_GET_ITEM(t->defaults, i);
    while (kwargs != NULL && PyDict_Next(kwargs, &pos, &key, &value)) {
        int i;
        if (!PyUnicode_Check(key)) {
            PyErr_Format(PyExc_TypeError, "%s() keywords must be strings", func);
            return 0;
        }
        for (i = 0; i < t->n; i++) {
            int eq = PyUnicode_Compare(key, PyTuple_GET_ITEM(t->names, i));
            if (eq == 0)
                break;
            if (eq == -1 && PyErr_Occurred())
                return 0;
        }
        if (i == t->n) { /* _options.unexpected(func, name, names): the did-you-mean */
            PyObject *exc = PyObject_CallFunction(ms->options_unexpected, "sOO", func, key, t->names);
            if (exc != NULL) {
                PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
                Py_DECREF(exc);
            }
            return 0;
        }
        if (i == 0 && nargs) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%U'", func, key);
            return 0;
        }
        vals[i] = value;
    }
    if (vals[0] == NULL) {
        PyErr_Format(PyExc_TypeError, "%s() missing required argument '%U' (pos 1)", func,
                     PyTuple_GET_ITEM(t->names, 0));
        return 0;
    }
    for (int i = 0; i < t->n; i++)
        if (!convert(&call_convs[call][t->conv[i]], func, PyTuple_GET_ITEM(t->names, i), vals[i], out))
            return 0;
    return 1;
}

/* _store_options(table=None) -> {call: ((name, default, conversion), ...)} */
static PyObject *describe(const pcb_store_call_table *tables)
{
    PyObject *d = PyDict_New();
    for (int c = 0; d != NULL && c < PCB_STORE_N_CALLS; c++) {
        const pcb_store_call_table *t = &tables[c];
        PyObject *rows = PyTuple_New(t->n);
        for (int i = 0; rows != NULL && i < t->n; i++) {
            PyObject *row = Py_BuildValue("(OOs)", PyTuple_GET_ITEM(t->names, i),
                                          PyTuple_GET_ITEM(t->defaults, i),
                                          conv_kind_names[call_convs[c][t->conv[i]].kind]);
            if (row == NULL)
                Py_CLEAR(rows);
            else
                PyTuple_SET_ITEM(rows, i, row);
        }
        if (rows == NULL || PyDict_SetItemString(d, call_names[c], rows) < 0)
            Py_CLEAR(d);
        Py_XDECREF(rows);
    }
    return d;
}

static PyObject *core_store_options(PyObject *module, PyObject *args)
{
    module_state *ms = pcb_module_state(module);
    PyObject *table = Py_None, *result;
    pcb_store_call_table tables[PCB_STORE_N_CALLS];
    int ok = 1;
    if (!PyArg_ParseTuple(args, "|O:_store_options", &table))
        return NULL;
    if (table == Py_None)
        return describe(ms->store_calls);
    memset(tables, 0, sizeof tables);
    for (int c = 0; ok && c < PCB_STORE_N_CALLS; c++)
        ok = call_table_build(table, c, &tables[c]);
    result = ok ? describe(tables) : NULL;
    for (int c = 0; c < PCB_STORE_N_CALLS; c++)
        call_table_clear(&tables[c]);
    return result;
}

PyMethodDef pcb_store_options_functions[] = {
    {"_store_options", core_store_options, METH_VARARGS,
     "_store_options(table=None) -> dict\n\n"
     "The store calls' options as the C parser loaded them (_load_store_options):\n"
     "{call: ((name, default, conversion), ...)}, the subject first. Given a table,\n"
     "checks it the same way instead (ValueError naming a mismatch)."},
    {"_load_store_options", core_load_store_options, METH_VARARGS,
     "_load_store_options(table, unexpected) -> None\n\n"
     "Loads the package's option table into the C parser (the package does it at\n"
     "import; _core imports no Python module). ValueError if they disagree."},
    {NULL, NULL, 0, NULL},
};
