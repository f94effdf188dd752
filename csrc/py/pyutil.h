/*
 * py/pyutil.h — helpers every Python entry point of the glue shares.
 *
 * Owns: the one mapping of pcb_status classes to Python exceptions; the
 * argument checks more than one entry point makes (exact ints and sizes in a
 * range, a name chosen from a list, str as UTF-8, bytes-like buffers, the
 * timing arguments min_time/warmup); the calibrate() and sample() methods
 * the timed objects share; uint64 arrays as lists. Messages name the argument (`what`) so that
 * callers' errors read alike.
 *
 * Thread safety: call with the GIL held (they set Python exceptions or use
 * PyMem). Units: min_time and warmup are seconds (double) and
 * become ns; sizes are bytes.
 */
#ifndef PCB_PY_PYUTIL_H
#define PCB_PY_PYUTIL_H

#include "py/module.h"

#include <stdint.h>

#include "common/status.h"
#include "common/timing.h"

/* Sets the Python exception for st (its class's type, its message; OSError
 * with errno picks its subclass); returns NULL. */
PyObject *pcb_raise_status(module_state *ms, const pcb_status *st);

/* An exact int (bool excluded): 1 with *v and *overflow set (overflow: it
 * does not fit a long long), 0 if obj is not an int (no exception set), -1
 * with an exception set. The base of every int argument below and beside. */
int pcb_exact_int(PyObject *obj, long long *v, int *overflow);

/* An int argument in [lo, hi]: 1, or 0 with TypeError for non-ints (bool
 * included) or ValueError outside the range, naming `what`. */
int pcb_int_arg(PyObject *obj, const char *what, long long lo, long long hi, long long *out);
/* pcb_int_arg into a size_t (lo >= 0). */
int pcb_size_arg(PyObject *obj, const char *what, long long lo, long long hi, size_t *out);

/* The index of value in the NULL-terminated names: 1, or 0 with ValueError
 * "<what> must be one of [...], got '<value>'". */
int pcb_name_arg(const char *what, const char *value, const char *const *names, int *out);

/* A str as UTF-8 (*s lives as long as obj): 1, or 0 with TypeError
 * "<what> must be a str, not T" or the encoder's error (lone surrogates). */
int pcb_str_arg(PyObject *obj, const char *what, const char **s, Py_ssize_t *n);

/* A bytes-like argument; None is accepted (view->obj stays NULL) if
 * may_be_none. 1, or 0 with TypeError. Release the view in either case. */
int pcb_buffer_arg(PyObject *obj, const char *what, int may_be_none, Py_buffer *view);

/* The timing arguments: min_time in (0, 60] s, warmup in [0, 60] s (-1: as
 * long as min_time; *warmup gets the value used), into ns. Checked in that
 * order; 1, or 0 with ValueError. */
int pcb_time_args(double min_time, double *warmup, uint64_t *min_ns, uint64_t *warmup_ns);

/* (elapsed_ns, tsc_ticks, cpu_ns, nivcsw, call_ns) of one sample. */
PyObject *pcb_sample_tuple(const pcb_sample *s);

/* Slices of a GIL-released calibrate/sample (see common/timing.h): between
 * two, the GIL is taken back and Python's signal handlers run
 * (PyErr_CheckSignals), so Ctrl-C acts within about this long plus one
 * operation, whatever min_time is. Outside every clock of the sample. */
#define PCB_SLICE_NS 100000000u

/* What a timed object (Kernel, StoreKernel) hands the engine: the function
 * that runs n operations, its argument and where it records a failure, and
 * the flags that keep one call at a time (busy is set while the GIL is
 * released) and refuse a closed object. begin (may be NULL) runs before
 * each calibrate/sample with the GIL held (resets what fn sums over slices).
 * The rest is the slicing state. */
typedef struct {
    pcb_run_fn fn;
    void *arg;
    const pcb_status *st;
    int busy, closed;
    void (*begin)(void *arg);
    pcb_slicer sl;
    PyThreadState *ts; /* while the GIL is released */
} pcb_timed;

/* Claims a timed object for one GIL-released call (set t->busy = 0 after it): 1, or 0
 * with ValueError if it is closed or RuntimeError if another thread is using it. */
int pcb_timed_claim(pcb_timed *t);
/* calibrate(min_time, warmup=-1.0) -> int: warm-up, then the operation
 * count one sample needs; GIL released. */
PyObject *pcb_timed_calibrate(module_state *ms, pcb_timed *t, PyObject *args, PyObject *kwargs);
/* sample(iterations) -> (elapsed_ns, tsc_ticks, cpu_ns, nivcsw, call_ns); GIL released.
 * Ctrl-C between two slices: NULL with KeyboardInterrupt (the sample is dropped). */
PyObject *pcb_timed_sample(module_state *ms, pcb_timed *t, PyObject *n_obj);
/* (operations, slices) of the last calibrate/sample call: fewer operations
 * than asked when a signal cut it. */
PyObject *pcb_timed_last(const pcb_timed *t);
/* (operations, sample tuple) of the last call that ran to the end -- after
 * calibrate(), its final call, a sample of at least min_time -- or None. */
PyObject *pcb_timed_last_sample(const pcb_timed *t);

/* A list of n Python ints; NULL with an exception set. */
PyObject *pcb_u64_list(const uint64_t *v, uint32_t n);

#endif /* PCB_PY_PYUTIL_H */
