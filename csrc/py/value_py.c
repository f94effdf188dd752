/*
 * py/value_py.c — store values between Python objects and ESP's plaintext
 * serialization (see value_py.h); format/value does the encoding and the
 * strict parsing, this file the Python types and ranges.
 */
#include "py/value_py.h"

#include <math.h>
#include <string.h>

#include "format/value.h"
#include "py/pyutil.h"

/* ---------------------------------------------- Python values -> plaintext */

static int put_integer(pcb_pref_type type, PyObject *v, pcb_buf *b)
{
    long long x;
    int overflow, r = pcb_exact_int(v, &x, &overflow);
    if (r == 0)
        PyErr_Format(PyExc_TypeError, "put_%s takes an int, not %.100s",
                     type == PCB_PREF_INT ? "int" : "long", Py_TYPE(v)->tp_name);
    if (r <= 0)
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
    return 1;
}

static int put_float(PyObject *v, pcb_buf *b)
{
    if (!(PyFloat_Check(v) || PyLong_Check(v)) || PyBool_Check(v)) {
        PyErr_Format(PyExc_TypeError, "put_float takes a float, not %.100s", Py_TYPE(v)->tp_name);
        return 0;
    }
    double d = PyFloat_AsDouble(v);
    if (d == -1.0 && PyErr_Occurred())
        return 0;
    /* Rounded to the nearest float32 as Java's (float) and Float.parseFloat
     * do: everything below FLT_MAX + half its ulp (0x1.ffffffp127, which
     * itself rounds to infinity) is a float, 3.4028235e38 (Float.MAX_VALUE
     * as Java prints it) included; infinities stay; any NaN is stored as
     * Java's Float.NaN (0x7fc00000). */
    if (isfinite(d) && fabs(d) >= 0x1.ffffffp127) {
        PyErr_Format(PyExc_ValueError, "%S is outside the range of a 32-bit float", v);
        return 0;
    }
    pcb_value_put_float(b, isnan(d) ? NAN : (float)d);
    return 1;
}

/* A Java Set: members once each, in first-seen order. */
static int put_string_set(PyObject *v, pcb_buf *b)
{
    if (PyUnicode_Check(v) || PyBytes_Check(v)) {
        PyErr_SetString(PyExc_TypeError,
                        "put_string_set takes an iterable of str (a set), not a single string");
        return 0;
    }
    /* A mapping iterates as its keys: storing those silently is not what was
     * meant, so say which of its parts to pass. */
    if (PyDict_Check(v) || PyObject_HasAttrString(v, "keys")) {
        PyErr_Format(PyExc_TypeError, "put_string_set takes an iterable of str (a set), not a "
                     "mapping (%.100s): pass set(d) or set(d.values())", Py_TYPE(v)->tp_name);
        return 0;
    }
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
        ok = pcb_str_arg(item, "each string set member", &s, &n);
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
    return ok && !PyErr_Occurred();
}

int pcb_py_value_serialize(pcb_pref_type type, PyObject *v, pcb_buf *b)
{
    int ok = 0;
    pcb_value_begin(b, type);
    switch (type) {
    case PCB_PREF_STRING: {
        const char *s;
        Py_ssize_t n;
        if ((ok = pcb_str_arg(v, "a string value", &s, &n)))
            pcb_value_put_run(b, s, (size_t)n);
        break;
    }
    case PCB_PREF_INT: case PCB_PREF_LONG: ok = put_integer(type, v, b); break;
    case PCB_PREF_FLOAT: ok = put_float(v, b); break;
    case PCB_PREF_BOOLEAN:
        if (!PyBool_Check(v)) {
            PyErr_Format(PyExc_TypeError, "put_bool takes a bool, not %.100s", Py_TYPE(v)->tp_name);
            return 0;
        }
        pcb_value_put_bool(b, v == Py_True);
        ok = 1;
        break;
    case PCB_PREF_STRING_SET: ok = put_string_set(v, b); break;
    }
    if (ok && b->failed) {
        PyErr_NoMemory();
        return 0;
    }
    return ok;
}

/* ---------------------------------------------- plaintext -> Python values */

static PyObject *decode_str(const uint8_t *p, size_t n)
{
    return PyUnicode_DecodeUTF8((const char *)p, (Py_ssize_t)n, "strict");
}

PyObject *pcb_py_value_decode(module_state *ms, const uint8_t *v, size_t vl, uint32_t *type_out)
{
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

PyObject *pcb_py_value_typed(module_state *ms, const uint8_t *v, size_t vl)
{
    uint32_t type;
    PyObject *value = pcb_py_value_decode(ms, v, vl, &type);
    return value ? Py_BuildValue("(IN)", type, value) : NULL;
}
