/*
 * py/store_bench_py.c — store_bench(), the timed store workload.
 *
 * Owns: store_bench's arguments (into pcb_store_bench_params: workload and
 * value type by name, sizes, the store options shared with Store()), the
 * GIL-released run of store/bench, and its result dict. Sizes are bytes
 * (key_len/value_len: characters), times ns in the result.
 */
#include "py/pyutil.h"

#include <string.h>

#include "common/timing.h"
#include "store/bench.h"

static const char *const value_type_names[] = {"string", "string_set", "int", "long", "float",
                                               "bool", NULL}; /* pcb_pref_type order */

/* store_bench()'s validated arguments. */
typedef struct {
    pcb_store_bench_params p;
    const char *workload, *value_type;
    double min_time, warmup; /* seconds; warmup resolved */
    pcb_timing_params tp;
    int check_only;
    PyObject *dir; /* new reference: the directory, fs-encoded */
} bench_args;

/* The argument checks before the directory: 1, or 0 with an exception set. */
static int bench_parse(PyObject *args, PyObject *kwargs, bench_args *a)
{
    static char *kwlist[] = {"workload", "directory", "n_keys", "key_len", "value_len", "value_type",
                             "batch", "encrypted", "key_encryption", "value_encryption", "cache",
                             "layout", "faithful", "passphrase", "stages", "min_time", "repeats",
                             "warmup", "check_only", NULL};
    const char *keyenc = "siv", *valenc = "gcm", *layout = "entries";
    PyObject *dir_obj = Py_None, *n_keys_obj = NULL, *key_len_obj = NULL, *value_len_obj = NULL,
             *batch_obj = NULL, *repeats_obj = NULL;
    int encrypted = 1, cache = 0, faithful = 0, passphrase = 0, stages = 1;
    int wl, vt;
    pcb_store_bench_params *p = &a->p;

    a->value_type = "string";
    a->min_time = 0.05;
    a->warmup = -1.0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|$OOOOsOpsspspppdOdp:store_bench", kwlist,
                                     &a->workload, &dir_obj, &n_keys_obj, &key_len_obj,
                                     &value_len_obj, &a->value_type, &batch_obj, &encrypted,
                                     &keyenc, &valenc, &cache, &layout, &faithful, &passphrase,
                                     &stages, &a->min_time, &repeats_obj, &a->warmup,
                                     &a->check_only))
        return 0;
    p->n_keys = 1000;
    p->key_len = 32;
    p->value_len = 32;
    p->batch = 1;
    if (!pcb_name_arg("workload", a->workload, pcb_workload_names, &wl)
        || !pcb_name_arg("value_type", a->value_type, value_type_names, &vt)
        || !pcb_store_options_arg(encrypted, keyenc, valenc, layout, cache, faithful, &p->opt)
        || (n_keys_obj && !pcb_size_arg(n_keys_obj, "n_keys", 1, 10000000, &p->n_keys))
        || (key_len_obj && !pcb_size_arg(key_len_obj, "key_len", 1, 1 << 20, &p->key_len))
        || (value_len_obj && !pcb_size_arg(value_len_obj, "value_len", 0, 1 << 24, &p->value_len))
        || (batch_obj && !pcb_size_arg(batch_obj, "batch", 1, 1000000, &p->batch))
        || !pcb_timing_args(repeats_obj, a->min_time, &a->warmup, &a->tp))
        return 0;
    if ((double)p->n_keys * (double)(p->key_len + p->value_len) > 4e9) {
        PyErr_SetString(PyExc_ValueError,
                        "n_keys x (key_len + value_len) must stay under 4 GB of entries");
        return 0;
    }
    if (!encrypted && (wl == PCB_WL_ROTATE)) {
        PyErr_SetString(PyExc_ValueError, "rotate needs an encrypted store");
        return 0;
    }
    if (!encrypted && passphrase) {
        PyErr_SetString(PyExc_ValueError, "a plain store has no passphrase");
        return 0;
    }
    if (a->check_only)
        return 1;
    if (dir_obj == Py_None) {
        PyErr_SetString(PyExc_TypeError, "store_bench needs directory= (an empty directory)");
        return 0;
    }
    if (!PyUnicode_FSConverter(dir_obj, &a->dir))
        return 0;
    p->workload = (pcb_workload)wl;
    p->value_type = (pcb_pref_type)vt;
    p->dir = PyBytes_AS_STRING(a->dir);
    p->opt.scrypt_n = 1u << 14;
    p->use_passphrase = passphrase;
    p->stages = stages;
    return 1;
}

/* The stage breakdown (ns per operation), or None without one. */
static PyObject *stages_dict(const pcb_store_bench_extra *extra)
{
    if (!extra->have_stages)
        return Py_NewRef(Py_None);
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K}",
                         "siv", extra->stage_ns[PCB_STAGE_SIV],
                         "nonce", extra->stage_ns[PCB_STAGE_NONCE],
                         "aead", extra->stage_ns[PCB_STAGE_AEAD],
                         "base64", extra->stage_ns[PCB_STAGE_BASE64],
                         "lookup", extra->stage_ns[PCB_STAGE_LOOKUP],
                         "io", extra->stage_ns[PCB_STAGE_IO],
                         "total", extra->stage_total_ns);
}

/* store_bench()'s dict of the arguments used, the raw samples and the
 * footprint. (Py_BuildValue's N takes a NULL item as the error it is.) */
static PyObject *bench_result(const bench_args *a, const pcb_timing_result *tr,
                              const pcb_store_bench_extra *extra)
{
    const pcb_store_bench_params *p = &a->p;
    return Py_BuildValue(
        "{s:s,s:n,s:n,s:n,s:s,s:n,s:d,s:d,s:I,s:K,s:N,s:N,s:N,s:N,s:K,s:K,s:K,s:n}",
        "workload", a->workload, "n_keys", (Py_ssize_t)p->n_keys, "key_len", (Py_ssize_t)p->key_len,
        "value_len", (Py_ssize_t)p->value_len, "value_type", a->value_type,
        "batch", (Py_ssize_t)p->batch, "min_time", a->min_time, "warmup", a->warmup,
        "repeats", (unsigned)tr->repeats, "iterations", (unsigned long long)tr->iterations,
        "elapsed_ns", pcb_u64_list(tr->elapsed_ns, tr->repeats),
        "tsc_ticks", pcb_u64_list(tr->tsc_ticks, tr->repeats),
        "durable_ns", p->workload == PCB_WL_APPLY ? pcb_u64_list(extra->durable_ns, tr->repeats)
                                                  : Py_NewRef(Py_None),
        "stages", stages_dict(extra), "heap_bytes", (unsigned long long)extra->heap_bytes,
        "disk_bytes", (unsigned long long)extra->disk_bytes, "entries",
        (unsigned long long)extra->entries, "payload", (Py_ssize_t)extra->payload);
}

static PyObject *core_store_bench(PyObject *module, PyObject *args, PyObject *kwargs)
{
    module_state *ms = pcb_module_state(module);
    bench_args a;
    pcb_timing_result tr;
    pcb_store_bench_extra extra;
    pcb_status st = {0};
    uint64_t *durable = NULL;
    PyObject *result = NULL;
    int ok;

    memset(&a, 0, sizeof a);
    memset(&tr, 0, sizeof tr);
    memset(&extra, 0, sizeof extra);
    if (!bench_parse(args, kwargs, &a))
        goto done;
    if (a.check_only) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    durable = PyMem_Calloc(a.tp.repeats, sizeof(uint64_t));
    if (!pcb_samples_alloc(&tr, &a.tp))
        goto done;
    if (durable == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    extra.durable_ns = a.p.workload == PCB_WL_APPLY ? durable : NULL;
    Py_BEGIN_ALLOW_THREADS
    ok = pcb_store_bench(&a.p, &ms->cache, &a.tp, &tr, &extra, &st);
    Py_END_ALLOW_THREADS
    if (!ok)
        pcb_raise_status(ms, &st);
    else
        result = bench_result(&a, &tr, &extra);
done:
    Py_XDECREF(a.dir);
    pcb_samples_free(&tr);
    PyMem_Free(durable);
    return result;
}

PyMethodDef pcb_store_bench_functions[] = {
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
