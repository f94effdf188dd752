/*
 * py/inspect_py.c — store_inspect(path): what a store file holds, without a
 * key (store/inspect.h), as a dict for pycipherbench.store.inspect.
 *
 * Reads the file with the GIL released; builds the dict afterwards. Counts
 * are entries, sizes bytes. Also prefs_parse(data): a SharedPreferences
 * XML's entries through the store's own parser (format/prefs_xml.h), typed,
 * for pycipherbench.replay; run with the GIL held (a callback per entry
 * builds Python objects; preference files are small).
 */
#include "py/module.h"
#include "py/pyutil.h"
#include "format/prefs_xml.h"
#include "store/inspect.h"

static const char *const status_names[] = {"UNKNOWN", "ENABLED", "DISABLED", "DESTROYED"};
static const char *const prefix_names[] = {"UNKNOWN", "TINK", "LEGACY", "RAW", "CRUNCHY"};
static const char *const format_names[] = {"absent", "tink", "tink-no-info", "pre-tink"};
static const char *const layout_names[] = {"plain", "entries", "file"};

/* {key id: count}, plus the unprefixed and overflow counts. */
static PyObject *counts_dict(const pcb_kid_counts *c)
{
    PyObject *d = PyDict_New();
    for (size_t i = 0; d != NULL && i < c->n; i++) {
        PyObject *k = PyLong_FromUnsignedLong(c->kid[i].key_id);
        PyObject *v = PyLong_FromUnsignedLongLong(c->kid[i].n);
        if (k == NULL || v == NULL || PyDict_SetItem(d, k, v) < 0)
            Py_CLEAR(d);
        Py_XDECREF(k);
        Py_XDECREF(v);
    }
    return d;
}

static PyObject *keyset_dict(const pcb_inspect *r, int which)
{
    const pcb_tink_keyset *k = &r->info[which];
    int with_info = r->format[which] == PCB_KSFMT_TINK;
    PyObject *keys = PyList_New(0);
    for (size_t i = 0; keys != NULL && with_info && i < k->n; i++) {
        const pcb_tink_key *e = &k->key[i];
        PyObject *item = Py_BuildValue(
            "{s:k,s:s,s:s,s:s,s:O}", "key_id", (unsigned long)e->key_id, "type_url", e->type_url,
            "status", e->status <= 3 ? status_names[e->status] : "UNKNOWN",
            "output_prefix_type", e->output_prefix <= 4 ? prefix_names[e->output_prefix] : "UNKNOWN",
            "primary", e->key_id == k->primary_key_id ? Py_True : Py_False);
        if (item == NULL || PyList_Append(keys, item) < 0)
            Py_CLEAR(keys);
        Py_XDECREF(item);
    }
    if (keys == NULL)
        return NULL;
    PyObject *primary = with_info ? PyLong_FromUnsignedLong(k->primary_key_id) : Py_NewRef(Py_None);
    PyObject *d = primary == NULL ? NULL
                  : Py_BuildValue("{s:s,s:n,s:O,s:O}", "format", format_names[r->format[which]],
                                  "chars", (Py_ssize_t)r->keyset_chars[which], "primary_key_id",
                                  primary, "keys", keys);
    Py_XDECREF(primary);
    Py_DECREF(keys);
    return d;
}

static PyObject *store_inspect(PyObject *module, PyObject *path_obj)
{
    module_state *ms = pcb_module_state(module);
    PyObject *bytes = NULL;
    if (!PyUnicode_FSConverter(path_obj, &bytes))
        return NULL;
    pcb_inspect *r = PyMem_RawMalloc(sizeof *r);
    if (r == NULL) {
        Py_DECREF(bytes);
        return PyErr_NoMemory();
    }
    pcb_status st = {0};
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = pcb_store_inspect(PyBytes_AS_STRING(bytes), r, &st);
    Py_END_ALLOW_THREADS
    Py_DECREF(bytes);
    PyObject *res = NULL;
    if (!ok) {
        pcb_raise_status(ms, &st);
    } else {
        PyObject *ks[2] = {NULL, NULL}, *names = counts_dict(&r->names), *values = counts_dict(&r->values);
        for (int i = 0; i < 2; i++)
            ks[i] = r->format[i] == PCB_KSFMT_ABSENT ? Py_NewRef(Py_None) : keyset_dict(r, i);
        if (ks[0] && ks[1] && names && values)
            res = Py_BuildValue(
                "{s:s,s:K,s:K,s:K,s:O,s:O,s:O,s:O,s:K,s:K,s:K,s:K}", "layout",
                layout_names[r->layout], "file_bytes", (unsigned long long)r->file_bytes, "entries",
                (unsigned long long)r->entries, "native_entries",
                (unsigned long long)r->native_entries, "key_keyset", ks[0], "value_keyset", ks[1],
                "names_by_key_id", names, "values_by_key_id", values, "unprefixed_names",
                (unsigned long long)r->names.unprefixed, "unprefixed_values",
                (unsigned long long)r->values.unprefixed, "names_overflow",
                (unsigned long long)r->names.overflow, "values_overflow",
                (unsigned long long)r->values.overflow);
        Py_XDECREF(ks[0]);
        Py_XDECREF(ks[1]);
        Py_XDECREF(names);
        Py_XDECREF(values);
    }
    PyMem_RawFree(r);
    return res;
}

static const char *const pref_type_names[] = {"string", "string_set", "int", "long", "float",
                                              "bool"}; /* pcb_pref_type order */

/* One parsed entry appended to the list as (name, type name, value). */
static int on_pref(void *arg, const pcb_pref_entry *e)
{
    PyObject *value = NULL;
    switch (e->type) {
    case PCB_PREF_STRING: value = PyUnicode_DecodeUTF8(e->text, (Py_ssize_t)e->text_len, "strict"); break;
    case PCB_PREF_INT: case PCB_PREF_LONG: value = PyLong_FromLongLong(e->i); break;
    case PCB_PREF_FLOAT: value = PyFloat_FromDouble((double)e->f); break;
    case PCB_PREF_BOOLEAN: value = PyBool_FromLong(e->b); break;
    case PCB_PREF_STRING_SET:
        value = PyList_New((Py_ssize_t)e->n_members);
        for (size_t i = 0; value != NULL && i < e->n_members; i++) {
            PyObject *m = PyUnicode_DecodeUTF8(e->members[i], (Py_ssize_t)e->member_lens[i], "strict");
            if (m == NULL)
                Py_CLEAR(value);
            else
                PyList_SET_ITEM(value, (Py_ssize_t)i, m);
        }
        break;
    }
    PyObject *name = value == NULL ? NULL : PyUnicode_DecodeUTF8(e->name, (Py_ssize_t)e->name_len, "strict");
    PyObject *item = name == NULL ? NULL
                     : Py_BuildValue("(OsO)", name, pref_type_names[e->type], value);
    int rc = item == NULL || PyList_Append((PyObject *)arg, item) < 0 ? 1 : 0;
    Py_XDECREF(item);
    Py_XDECREF(name);
    Py_XDECREF(value);
    return rc;
}

static PyObject *prefs_parse(PyObject *module, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *out = PyList_New(0);
    char err[256] = "";
    int rc = out == NULL ? 1 : pcb_prefs_parse(view.buf, (size_t)view.len, on_pref, out, err, sizeof err);
    PyBuffer_Release(&view);
    if (rc == 0)
        return out;
    Py_XDECREF(out);
    if (rc < 0) { /* the parser's own error: its line and byte */
        pcb_status st = {0};
        pcb_fail(&st, PCB_E_FORMAT, "not an Android SharedPreferences file: %s", err);
        pcb_raise_status(pcb_module_state(module), &st);
    }
    return NULL; /* rc > 0: the callback's exception */
}

PyMethodDef pcb_inspect_functions[] = {
    {"prefs_parse", prefs_parse, METH_O,
     "prefs_parse(data, /) -> list[tuple[str, str, object]]\n\nThe entries of an Android "
     "SharedPreferences XML (bytes) as (name, type, value), in file order, parsed by the "
     "store's parser; type is string, string_set (value: list), int, long, float or bool. "
     "StoreFormatError naming the line and byte of the first error."},
    {"store_inspect", store_inspect, METH_O,
     "store_inspect(path, /) -> dict\n\nWhat a store file holds, read without any key: its layout, "
     "the keysets' plaintext keyset_info, entries per key id."},
    {NULL, NULL, 0, NULL},
};
