/*
 * py/pyutil.c — the glue's shared helpers (see pyutil.h).
 */
#include "py/pyutil.h"

#include <stdio.h>
#include <string.h>

PyObject *pcb_raise_status(module_state *ms, const pcb_status *st)
{
    PyObject *type;
    switch (st->code) {
    case PCB_E_TYPE: type = PyExc_TypeError; break;
    case PCB_E_UNSUPPORTED: type = ms->UnsupportedCipherError; break;
    case PCB_E_DECRYPT: type = ms->DecryptionError; break;
    case PCB_E_OPENSSL: type = ms->OpenSSLError; break;
    case PCB_E_FORMAT: type = ms->StoreFormatError; break;
    case PCB_E_RESERVED: type = ms->ReservedNameError; break;
    case PCB_E_PERMISSION: type = PyExc_PermissionError; break;
    case PCB_E_MEMORY: return PyErr_NoMemory();
    case PCB_E_OS: {
        /* OSError(errno, message) picks the right subclass (FileNotFoundError, ...). */
        PyObject *args = Py_BuildValue("(is)", st->os_errno, st->msg);
        if (args != NULL) {
            PyErr_SetObject(PyExc_OSError, args);
            Py_DECREF(args);
        }
        return NULL;
    }
    default: type = PyExc_ValueError; break;
    }
    PyErr_SetString(type, st->msg);
    return NULL;
}

/* ------------------------------------------------------------------ ints */

int pcb_exact_int(PyObject *obj, long long *v, int *overflow)
{
    if (!PyLong_Check(obj) || PyBool_Check(obj))
        return 0;
    *v = PyLong_AsLongLongAndOverflow(obj, overflow);
    if (*v == -1 && PyErr_Occurred())
        return -1;
    return 1;
}

int pcb_int_arg(PyObject *obj, const char *what, long long lo, long long hi, long long *out)
{
    long long v;
    int overflow;
    int r = pcb_exact_int(obj, &v, &overflow);
    if (r == 0)
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", what, Py_TYPE(obj)->tp_name);
    if (r <= 0)
        return 0;
    if (overflow || v < lo || v > hi) {
        PyErr_Format(PyExc_ValueError, "%s must be between %lld and %lld, got %S", what, lo, hi, obj);
        return 0;
    }
    *out = v;
    return 1;
}

int pcb_size_arg(PyObject *obj, const char *what, long long lo, long long hi, size_t *out)
{
    long long v;
    if (!pcb_int_arg(obj, what, lo, hi, &v))
        return 0;
    *out = (size_t)v;
    return 1;
}

/* ------------------------------------------------------- names, strings */

int pcb_name_arg(const char *what, const char *value, const char *const *names, int *out)
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

int pcb_str_arg(PyObject *obj, const char *what, const char **s, Py_ssize_t *n)
{
    if (!PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be a str, not %.100s", what, Py_TYPE(obj)->tp_name);
        return 0;
    }
    *s = PyUnicode_AsUTF8AndSize(obj, n);
    return *s != NULL;
}

int pcb_buffer_arg(PyObject *obj, const char *what, int may_be_none, Py_buffer *view)
{
    memset(view, 0, sizeof *view);
    if (obj == Py_None && may_be_none)
        return 1;
    if (!PyObject_CheckBuffer(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be a bytes-like object%s, not %.100s",
                     what, may_be_none ? " or None" : "", Py_TYPE(obj)->tp_name);
        return 0;
    }
    return PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) == 0;
}

/* ---------------------------------------------------------------- timing */

/* "<what> must be in <range> seconds, got <v>" (%g: PyErr_Format has no %g). */
static int seconds_error(const char *what, const char *range, double v)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%g", v);
    PyErr_Format(PyExc_ValueError, "%s must be in %s seconds, got %s", what, range, buf);
    return 0;
}

int pcb_timing_args(PyObject *repeats_obj, double min_time, double *warmup,
                    pcb_timing_params *tp)
{
    long long repeats = 7;
    if (repeats_obj && !pcb_int_arg(repeats_obj, "repeats", 1, 100000, &repeats))
        return 0;
    if (!(min_time > 0.0 && min_time <= 60.0))
        return seconds_error("min_time", "(0, 60]", min_time);
    if (*warmup == -1.0) /* the default: warm up as long as one sample */
        *warmup = min_time;
    if (!(*warmup >= 0.0 && *warmup <= 60.0))
        return seconds_error("warmup", "[0, 60]", *warmup);
    tp->min_time_ns = (uint64_t)(min_time * 1e9);
    tp->warmup_ns = (uint64_t)(*warmup * 1e9);
    tp->repeats = (uint32_t)repeats;
    return 1;
}

int pcb_samples_alloc(pcb_timing_result *tr, const pcb_timing_params *tp)
{
    memset(tr, 0, sizeof *tr);
    tr->elapsed_ns = PyMem_Calloc(tp->repeats, sizeof(uint64_t));
    tr->tsc_ticks = PyMem_Calloc(tp->repeats, sizeof(uint64_t));
    if (tr->elapsed_ns == NULL || tr->tsc_ticks == NULL) {
        PyErr_NoMemory();
        return 0;
    }
    return 1;
}

void pcb_samples_free(pcb_timing_result *tr)
{
    PyMem_Free(tr->elapsed_ns);
    PyMem_Free(tr->tsc_ticks);
    tr->elapsed_ns = tr->tsc_ticks = NULL;
}

PyObject *pcb_u64_list(const uint64_t *v, uint32_t n)
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
