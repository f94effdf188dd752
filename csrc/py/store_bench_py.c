/*
 * py/store_bench_py.c — the StoreKernel type: one timed instance of a store
 * workload, and check_store_bench().
 *
 * Owns: the workload's arguments (into pcb_store_bench_params: workload and
 * value type by name, sizes, the store options shared with Store(); their
 * names and defaults are pycipherbench._options', parsed by
 * py/store_options_py), the
 * GIL-released building and closing of the instance (store/bench), its
 * stage breakdown and footprint. Sizes are bytes (key_len/value_len:
 * characters), times ns. One call at a time per object.
 */
#include "py/pyutil.h"

#include <string.h>

#include "common/timing.h"
#include "store/bench.h"

static const char *const value_type_names[] = {"string", "string_set", "int", "long", "float",
                                               "bool", NULL}; /* pcb_pref_type order */

/* StoreKernel()'s validated arguments. */
typedef struct {
    pcb_store_bench_params p;
    const char *workload, *value_type;
    int check_only;
    PyObject *dir; /* new reference: the directory, fs-encoded */
} bench_args;

/* The argument checks before the directory: 1, or 0 with an exception set.
 * The names and defaults are pycipherbench._options' (py/store_options_py). */
static int bench_parse(module_state *ms, const char *func, PyObject *args, PyObject *kwargs,
                       bench_args *a)
{
    pcb_store_kwargs k;
    int wl, vt;
    pcb_store_bench_params *p = &a->p;

    if (!pcb_store_kwargs_parse(ms, PCB_STORE_CALL_KERNEL, func, args, kwargs, &k))
        return 0;
    a->workload = k.workload;
    a->value_type = k.value_type;
    if (!pcb_name_arg("workload", a->workload, pcb_workload_names, &wl)
        || !pcb_name_arg("value_type", a->value_type, value_type_names, &vt)
        || !pcb_store_options_arg(k.encrypted, k.key_encryption, k.value_encryption, k.layout,
                                  k.cache, k.faithful, &p->opt)
        || !pcb_crypto_backend_arg(k.crypto_backend, &p->opt)
        || !pcb_size_arg(k.n_keys, "n_keys", 1, 10000000, &p->n_keys)
        || !pcb_size_arg(k.key_len, "key_len", 1, 1 << 20, &p->key_len)
        || !pcb_size_arg(k.value_len, "value_len", 0, 1 << 24, &p->value_len)
        || !pcb_size_arg(k.batch, "batch", 1, 1000000, &p->batch))
        return 0;
    if (p->key_len < pcb_store_bench_min_key_len(p->n_keys)) {
        PyErr_Format(PyExc_ValueError, "key_len=%zu makes too few distinct names ([A-Za-z0-9]) for "
                     "n_keys=%zu and the names get_missing looks up: key_len must be >= %zu",
                     p->key_len, p->n_keys, pcb_store_bench_min_key_len(p->n_keys));
        return 0;
    }
    if ((double)p->n_keys * (double)(p->key_len + p->value_len) > 4e9) {
        PyErr_SetString(PyExc_ValueError,
                        "n_keys x (key_len + value_len) must stay under 4 GB of entries");
        return 0;
    }
    if (!k.encrypted && (wl == PCB_WL_ROTATE || wl == PCB_WL_ROTATE_LAZY
                         || wl == PCB_WL_MIGRATE || wl == PCB_WL_MIGRATE_KEYS)) {
        PyErr_Format(PyExc_ValueError, "%s needs an encrypted store (encrypted=True)",
                     pcb_workload_names[wl]);
        return 0;
    }
    if (wl == PCB_WL_MIGRATE_KEYS && k.use_passphrase) {
        PyErr_SetString(PyExc_ValueError, "migrate_keys moves the store to a new master key "
                        "file: passphrase=True is not one of its cases");
        return 0;
    }
    if (wl == PCB_WL_ROTATE_LAZY && p->opt.value_enc == PCB_VALENC_NONE
        && p->opt.layout == PCB_LAYOUT_ENTRIES) {
        PyErr_SetString(PyExc_ValueError, "rotate_lazy adds a value key: it needs "
                        "value_encryption other than 'none' (or layout='file')");
        return 0;
    }
    if (!k.encrypted && k.use_passphrase) {
        PyErr_SetString(PyExc_ValueError, "a plain store has no passphrase");
        return 0;
    }
    if (a->check_only)
        return 1;
    if (k.directory == Py_None) {
        PyErr_SetString(PyExc_TypeError, "StoreKernel needs directory= (an empty directory)");
        return 0;
    }
    if (!PyUnicode_FSConverter(k.directory, &a->dir))
        return 0;
    p->workload = (pcb_workload)wl;
    p->value_type = (pcb_pref_type)vt;
    /* static names: the arguments' own text dies with the call */
    a->workload = pcb_workload_names[wl];
    a->value_type = value_type_names[vt];
    p->dir = PyBytes_AS_STRING(a->dir);
    p->opt.scrypt_n = 1u << 14;
    p->use_passphrase = k.use_passphrase;
    return 1;
}

/* ------------------------------------------------------- StoreKernel */

typedef struct {
    PyObject_HEAD
    bench_args a;
    pcb_store_bench *bench;
    pcb_timed timed;
} StoreKernelObject;

static module_state *sk_state(PyObject *self)
{
    return (module_state *)PyType_GetModuleState(Py_TYPE(self));
}

/* The poll the populate loop calls without the GIL (from this thread):
 * runs Python's signal handlers, so Ctrl-C acts within a fraction of a
 * second instead of after the whole population. */
typedef struct {
    PyThreadState *ts;
    int raised;
} signal_poll;

static int poll_signals(void *arg)
{
    signal_poll *p = arg;
    PyEval_RestoreThread(p->ts);
    p->raised = PyErr_CheckSignals() < 0; /* the exception stays set for the caller */
    p->ts = PyEval_SaveThread();
    return p->raised;
}

/* Parses, then builds and populates the instance with the GIL released. */
static PyObject *StoreKernel_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    module_state *ms = (module_state *)PyType_GetModuleState(type);
    StoreKernelObject *k = (StoreKernelObject *)type->tp_alloc(type, 0);
    pcb_status st = {0};
    if (k == NULL)
        return NULL;
    k->timed.closed = 1; /* until populated */
    if (!bench_parse(ms, "StoreKernel", args, kwargs, &k->a)) {
        Py_DECREF(k);
        return NULL;
    }
    signal_poll poll = {NULL, 0};
    k->a.p.interrupted = poll_signals;
    k->a.p.interrupt_arg = &poll;
    poll.ts = PyEval_SaveThread();
    k->bench = pcb_store_bench_open(&k->a.p, &ms->cache, &st);
    PyEval_RestoreThread(poll.ts);
    k->a.p.interrupted = NULL;
    if (k->bench == NULL) {
        if (!poll.raised)
            pcb_raise_status(ms, &st);
        Py_DECREF(k);
        return NULL;
    }
    k->timed = (pcb_timed){pcb_store_bench_run, k->bench, pcb_store_bench_error(k->bench), 0, 0,
                           .begin = pcb_store_bench_begin};
    return (PyObject *)k;
}

/* Closes the instance (its store flushed and removed): 1, or 0 with an
 * exception set. */
static int sk_close(StoreKernelObject *k)
{
    pcb_status st = {0};
    pcb_store_bench *b = k->bench;
    int ok;
    if (b == NULL)
        return 1;
    k->bench = NULL;
    k->timed.closed = 1;
    Py_BEGIN_ALLOW_THREADS
    ok = pcb_store_bench_close(b, &st);
    Py_END_ALLOW_THREADS
    if (!ok)
        pcb_raise_status(sk_state((PyObject *)k), &st);
    return ok;
}

/* PEP 442's finalizer: an unclosed instance is closed while the object is
 * still alive, so a failure is reported with it (never from the dealloc,
 * where the report's reference would free it a second time). */
static void StoreKernel_finalize(StoreKernelObject *k)
{
    if (k->bench == NULL)
        return;
    PyObject *exc_type, *exc, *tb;
    PyErr_Fetch(&exc_type, &exc, &tb);
    if (!sk_close(k))
        PyErr_WriteUnraisable((PyObject *)k);
    PyErr_Restore(exc_type, exc, tb);
}

static void StoreKernel_dealloc(StoreKernelObject *k)
{
    if (PyObject_CallFinalizerFromDealloc((PyObject *)k) < 0)
        return; /* resurrected by the finalizer's report */
    PyTypeObject *tp = Py_TYPE(k);
    Py_XDECREF(k->a.dir);
    tp->tp_free(k);
    Py_DECREF(tp);
}

static PyObject *StoreKernel_close(StoreKernelObject *k, PyObject *Py_UNUSED(ignored))
{
    if (k->timed.busy) {
        PyErr_SetString(PyExc_RuntimeError, "the kernel is in use by another thread");
        return NULL;
    }
    if (!sk_close(k))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *StoreKernel_calibrate(StoreKernelObject *k, PyObject *args, PyObject *kwargs)
{
    return pcb_timed_calibrate(sk_state((PyObject *)k), &k->timed, args, kwargs);
}

static PyObject *StoreKernel_sample(StoreKernelObject *k, PyObject *n)
{
    return pcb_timed_sample(sk_state((PyObject *)k), &k->timed, n);
}

/* stages(iterations) -> dict: put/get once more with the stage clocks on,
 * ns per operation per stage, and siv_floor / aead_floor: those stages'
 * crypto alone on the floor kernels (where they have one). */
static PyObject *StoreKernel_stages(StoreKernelObject *k, PyObject *n_obj)
{
    long long n;
    pcb_store_bench_stages s;
    pcb_status st = {0};
    int ok;
    if (!pcb_int_arg(n_obj, "iterations", 1, (long long)1 << 40, &n) || !pcb_timed_claim(&k->timed))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    ok = pcb_store_bench_stages_run(k->bench, (uint64_t)n, &s, &st);
    Py_END_ALLOW_THREADS
    k->timed.busy = 0;
    if (!ok)
        return pcb_raise_status(sk_state((PyObject *)k), &st);
    PyObject *d = Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K}",
                                "siv", s.stage_ns[PCB_STAGE_SIV], "nonce", s.stage_ns[PCB_STAGE_NONCE],
                                "aead", s.stage_ns[PCB_STAGE_AEAD], "base64", s.stage_ns[PCB_STAGE_BASE64],
                                "lookup", s.stage_ns[PCB_STAGE_LOOKUP], "io", s.stage_ns[PCB_STAGE_IO],
                                "total", s.stage_total_ns);
    /* The crypto stages' floor, where they have one. */
    const struct { const char *key; uint64_t ns; } floors[] = {
        {"siv_floor", s.siv_floor_ns}, {"aead_floor", s.aead_floor_ns}};
    for (size_t i = 0; d != NULL && i < sizeof floors / sizeof floors[0]; i++) {
        PyObject *v = floors[i].ns ? PyLong_FromUnsignedLongLong(floors[i].ns) : NULL;
        if (floors[i].ns && (v == NULL || PyDict_SetItemString(d, floors[i].key, v) < 0))
            Py_CLEAR(d);
        Py_XDECREF(v);
    }
    return d;
}

/* The parameters used, the footprint right after populating, and (apply)
 * the last call's durable time. */
static PyObject *StoreKernel_info(StoreKernelObject *k, void *Py_UNUSED(closure))
{
    const pcb_store_bench_params *p = &k->a.p;
    pcb_store_bench_footprint f = {0};
    uint64_t durable = 0;
    if (k->bench != NULL) {
        pcb_store_bench_get_footprint(k->bench, &f);
        durable = pcb_store_bench_last_durable_ns(k->bench);
    }
    return Py_BuildValue(
        "{s:s,s:n,s:n,s:n,s:s,s:n,s:K,s:K,s:K,s:n,s:K,s:s,s:s}",
        "workload", k->a.workload, "n_keys", (Py_ssize_t)p->n_keys,
        "key_len", (Py_ssize_t)p->key_len, "value_len", (Py_ssize_t)p->value_len,
        "value_type", k->a.value_type, "batch", (Py_ssize_t)p->batch,
        "heap_bytes", (unsigned long long)f.heap_bytes, "disk_bytes", (unsigned long long)f.disk_bytes,
        "entries", (unsigned long long)f.entries, "payload", (Py_ssize_t)f.payload,
        "last_durable_ns", (unsigned long long)durable,
        "names_crypto", f.names_crypto ? f.names_crypto : "none",
        "values_crypto", f.values_crypto ? f.values_crypto : "none");
}

static PyObject *StoreKernel_closed(StoreKernelObject *k, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(k->bench == NULL);
}

static PyMethodDef StoreKernel_methods[] = {
    {"calibrate", (PyCFunction)(void (*)(void))StoreKernel_calibrate, METH_VARARGS | METH_KEYWORDS,
     "calibrate(min_time, warmup=-1.0) -> int\n\nWarm up, then return the operation count "
     "that makes one sample last at least min_time seconds."},
    {"sample", (PyCFunction)StoreKernel_sample, METH_O,
     "sample(iterations) -> (elapsed_ns, tsc_ticks, cpu_ns, nivcsw, call_ns)\n\n"
     "Time `iterations` operations with the GIL released."},
    {"stages", (PyCFunction)StoreKernel_stages, METH_O,
     "stages(iterations) -> dict\n\nput/get with the stage clocks on: ns per operation per stage;\n"
     "siv_floor / aead_floor: those stages' crypto alone on the floor kernels, same sizes\n"
     "(present where the store seals that part with AES-SIV / AES-GCM and the CPU has the floor)."},
    {"close", (PyCFunction)StoreKernel_close, METH_NOARGS,
     "close()\n\nClose the store and remove its files."},
    {NULL, NULL, 0, NULL},
};

static PyObject *StoreKernel_last_call(StoreKernelObject *k, void *Py_UNUSED(closure))
{
    return pcb_timed_last(&k->timed);
}

static PyObject *StoreKernel_last_sample(StoreKernelObject *k, void *Py_UNUSED(closure))
{
    return pcb_timed_last_sample(&k->timed);
}

static PyGetSetDef StoreKernel_getset[] = {
    {"last_sample", (getter)StoreKernel_last_sample, NULL,
     "(operations, sample tuple) of the last call that ran to the end (after calibrate():\n"
     "its final call, which lasted at least min_time), or None.", NULL},
    {"last_call", (getter)StoreKernel_last_call, NULL,
     "(operations, slices) of the last calibrate()/sample() call: fewer operations than\n"
     "asked when Ctrl-C cut it between two slices.", NULL},
    {"info", (getter)StoreKernel_info, NULL, "Parameters, footprint, last durable time (a dict).",
     NULL},
    {"closed", (getter)StoreKernel_closed, NULL, "True once close() has run.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyDoc_STRVAR(StoreKernel_doc,
             "StoreKernel(workload, *, directory, n_keys=1000, key_len=32, value_len=32,\n"
             "            value_type='string', batch=1, encrypted=True, key_encryption='siv',\n"
             "            value_encryption='gcm', cache=False, layout='entries', faithful=False,\n"
             "            passphrase=False, crypto_backend='auto')\n\n"
             "One instance of a store workload in an empty directory: names, values and a\n"
             "shuffled access order made, the store populated (GIL released). calibrate()\n"
             "and sample() time it; pycipherbench.store.bench() runs the rounds.");

static PyType_Slot StoreKernel_slots[] = {
    {Py_tp_doc, (void *)StoreKernel_doc},
    {Py_tp_new, StoreKernel_new},
    {Py_tp_dealloc, StoreKernel_dealloc},
    {Py_tp_finalize, StoreKernel_finalize},
    {Py_tp_methods, StoreKernel_methods},
    {Py_tp_getset, StoreKernel_getset},
    {0, NULL},
};

static PyType_Spec StoreKernel_spec = {
    .name = "pycipherbench._core.StoreKernel",
    .basicsize = sizeof(StoreKernelObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = StoreKernel_slots,
};

int pcb_store_kernel_type_exec(PyObject *module, module_state *ms)
{
    ms->StoreKernelType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &StoreKernel_spec, NULL);
    if (ms->StoreKernelType == NULL || PyModule_AddType(module, ms->StoreKernelType) < 0)
        return -1;
    return 0;
}

/* check_store_bench(...): StoreKernel's argument checks, building nothing. */
static PyObject *core_check_store_bench(PyObject *module, PyObject *args, PyObject *kwargs)
{
    module_state *ms = (module_state *)PyModule_GetState(module);
    pcb_status st = {0};
    bench_args a;
    memset(&a, 0, sizeof a);
    a.check_only = 1;
    if (!bench_parse(ms, "check_store_bench", args, kwargs, &a))
        return NULL;
    if (!pcb_store_check_backend(&a.p.opt, &ms->cache, &st)) { /* crypto_backend has it */
        pcb_raise_status(ms, &st);
        return NULL;
    }
    Py_RETURN_NONE;
}

PyMethodDef pcb_store_bench_functions[] = {
    {"check_store_bench", (PyCFunction)(void (*)(void))core_check_store_bench,
     METH_VARARGS | METH_KEYWORDS,
     "check_store_bench(workload, **StoreKernel arguments) -> None\n\n"
     "StoreKernel()'s argument checks, building nothing (fast validation of a sweep)."},
    {NULL, NULL, 0, NULL},
};
