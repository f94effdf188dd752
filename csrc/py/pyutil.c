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
    case PCB_E_INTERRUPTED:
        /* A wait given up by the signal handler's exception (KeyboardInterrupt),
         * set on this thread by the wait hook: it is the one raised. */
        if (PyErr_Occurred())
            return NULL;
        type = PyExc_InterruptedError;
        break;
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

int pcb_time_args(double min_time, double *warmup, uint64_t *min_ns, uint64_t *warmup_ns)
{
    if (!(min_time > 0.0 && min_time <= 60.0))
        return seconds_error("min_time", "(0, 60]", min_time);
    if (*warmup == -1.0) /* the default: warm up as long as one sample */
        *warmup = min_time;
    if (!(*warmup >= 0.0 && *warmup <= 60.0))
        return seconds_error("warmup", "[0, 60]", *warmup);
    *min_ns = (uint64_t)(min_time * 1e9);
    *warmup_ns = (uint64_t)(*warmup * 1e9);
    return 1;
}

PyObject *pcb_sample_tuple(const pcb_sample *s)
{
    return Py_BuildValue("(KKKKK)", (unsigned long long)s->elapsed_ns,
                         (unsigned long long)s->tsc_ticks, (unsigned long long)s->cpu_ns,
                         (unsigned long long)s->nivcsw, (unsigned long long)s->call_ns);
}

int pcb_timed_claim(pcb_timed *t)
{
    if (t->closed) {
        PyErr_SetString(PyExc_ValueError, "the kernel is closed");
        return 0;
    }
    if (t->busy) {
        PyErr_SetString(PyExc_RuntimeError,
                        "the kernel is in use by another thread (one call at a time)");
        return 0;
    }
    t->busy = 1;
    return 1;
}

/* Between two slices (GIL released): Python's signal handlers; nonzero when
 * one raised (the exception stays set for the caller). */
static int timed_stop(void *arg)
{
    pcb_timed *t = arg;
    PyEval_RestoreThread(t->ts);
    int raised = PyErr_CheckSignals() < 0;
    t->ts = PyEval_SaveThread();
    return raised;
}

static void timed_release(pcb_timed *t)
{
    if (t->begin != NULL)
        t->begin(t->arg);
    t->sl.slice_ns = PCB_SLICE_NS;
    t->sl.stop = timed_stop;
    t->sl.stop_arg = t;
    t->ts = PyEval_SaveThread();
}

/* Back with the GIL: NULL with an exception for a failure or a signal, else "ok". */
static int timed_acquire(module_state *ms, pcb_timed *t, int rc)
{
    PyEval_RestoreThread(t->ts);
    t->ts = NULL;
    t->busy = 0;
    if (rc == PCB_TIMING_STOPPED)
        return 0; /* the handler's exception (KeyboardInterrupt) is set */
    if (rc != 0) {
        pcb_raise_status(ms, t->st);
        return 0;
    }
    return 1;
}

PyObject *pcb_timed_calibrate(module_state *ms, pcb_timed *t, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"min_time", "warmup", NULL};
    double min_time, warmup = -1.0;
    uint64_t min_ns, warmup_ns, n = 0;
    int rc;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "d|d:calibrate", kwlist, &min_time, &warmup)
        || !pcb_time_args(min_time, &warmup, &min_ns, &warmup_ns) || !pcb_timed_claim(t))
        return NULL;
    timed_release(t);
    rc = pcb_timing_warmup(t->fn, t->arg, warmup_ns, &t->sl);
    if (rc == 0)
        rc = pcb_timing_calibrate(t->fn, t->arg, min_ns, &n, &t->sl);
    if (!timed_acquire(ms, t, rc))
        return NULL;
    return PyLong_FromUnsignedLongLong(n);
}

PyObject *pcb_timed_sample(module_state *ms, pcb_timed *t, PyObject *n_obj)
{
    long long n;
    pcb_sample s;
    int rc;
    if (!pcb_int_arg(n_obj, "iterations", 1, (long long)1 << 50, &n) || !pcb_timed_claim(t))
        return NULL;
    timed_release(t);
    rc = pcb_timing_sample(t->fn, t->arg, (uint64_t)n, &s, &t->sl);
    if (!timed_acquire(ms, t, rc))
        return NULL;
    return pcb_sample_tuple(&s);
}

PyObject *pcb_timed_last(const pcb_timed *t)
{
    return Py_BuildValue("(KK)", (unsigned long long)t->sl.done, (unsigned long long)t->sl.slices);
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

PyObject *pcb_timed_last_sample(const pcb_timed *t)
{
    if (t->sl.last_n == 0)
        Py_RETURN_NONE;
    return Py_BuildValue("(KN)", (unsigned long long)t->sl.last_n, pcb_sample_tuple(&t->sl.last));
}
