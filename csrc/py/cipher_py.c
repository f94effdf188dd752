/*
 * py/cipher_py.c — the cipher entry points: ciphers(), tea_impls(), the
 * one-shot encrypt()/decrypt(), the Kernel type (a prepared, timed kernel),
 * check_kernel() and the canary.
 *
 * Owns: their argument parsing (transformation names, keys, IVs, associated
 * data, rounds, measure's op/scope/sizes/backend/threads), the buffers measure
 * prepares with the GIL held before the clock starts (one set per thread),
 * and their results. threads > 1 runs the kernels through common/parallel. The rules about
 * lengths are crypto/transform's; the cipher runs in crypto/cipher and the
 * clock in common/timing, both without the GIL.
 */
#include "py/pyutil.h"

#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "common/parallel.h"
#include "common/timing.h"
#include "crypto/tea.h"

#define MAX_PAYLOAD ((Py_ssize_t)1 << 30) /* 1 GiB: two buffers of it must fit */
#define GIL_RELEASE_MIN 4096               /* one-shot inputs worth dropping the GIL for */

/* ------------------------------------------------------ argument helpers */

static const pcb_transform *lookup(module_state *ms, const char *name, int backend)
{
    const pcb_transform *t = pcb_find_transform(name);
    pcb_status st = {0};
    if (t == NULL) {
        PyErr_Format(ms->UnsupportedCipherError,
                     "unknown transformation '%s'; expected a name like 'AES/GCM/NoPadding' "
                     "(see pycipherbench.ciphers())", name);
        return NULL;
    }
    if (backend != PCB_BK_OPENSSL || t->family == PCB_FAM_XCHACHA) {
        if (pcb_backend_supports((pcb_backend)backend, &ms->cache, t, 0))
            return t;
        pcb_backend_lacks((pcb_backend)backend, &ms->cache, t, 0, &st);
        pcb_raise_status(ms, &st);
        return NULL;
    }
    if (!pcb_transform_available(&ms->cache, t)) {
        if ((t->family == PCB_FAM_DES) && ms->cache.legacy_error[0])
            PyErr_Format(ms->UnsupportedCipherError, "%s is unavailable: %s", t->name,
                         ms->cache.legacy_error);
        else
            PyErr_Format(ms->UnsupportedCipherError,
                         "%s is unavailable in this OpenSSL build", t->name);
        return NULL;
    }
    return t;
}

/* rounds: None or an int in range, for TEA/XTEA only. */
static int get_rounds(const pcb_transform *t, PyObject *obj, uint32_t *rounds)
{
    long long v;
    int overflow, r;
    *rounds = 32;
    if (obj == Py_None)
        return 1;
    if ((r = pcb_exact_int(obj, &v, &overflow)) == 0) {
        PyErr_Format(PyExc_TypeError, "rounds must be an int or None, not %.100s",
                     Py_TYPE(obj)->tp_name);
        return 0;
    }
    if (r < 0)
        return 0;
    if (!pcb_has_rounds(t)) {
        PyErr_Format(PyExc_ValueError,
                     "%s has no rounds parameter (only TEA and XTEA do); pass rounds=None", t->name);
        return 0;
    }
    if (overflow || v < PCB_TEA_MIN_ROUNDS || v > PCB_TEA_MAX_ROUNDS) {
        PyErr_Format(PyExc_ValueError, "rounds must be between %d and %d cycles, got %S",
                     PCB_TEA_MIN_ROUNDS, PCB_TEA_MAX_ROUNDS, obj);
        return 0;
    }
    *rounds = (uint32_t)v;
    return 1;
}

typedef struct {
    Py_buffer *views;
    pcb_bytes *parts;
    Py_ssize_t n;
} aad_list;

static void aad_release(aad_list *a)
{
    for (Py_ssize_t i = 0; i < a->n; i++)
        PyBuffer_Release(&a->views[i]);
    PyMem_Free(a->views);
    PyMem_Free(a->parts);
    memset(a, 0, sizeof *a);
}

/* aad: None (no component), a bytes-like (one), or for SIV a list/tuple. */
static int get_aad(const pcb_transform *t, PyObject *obj, aad_list *a)
{
    memset(a, 0, sizeof *a);
    if (obj == Py_None)
        return 1;
    if (!pcb_is_aead(t)) {
        PyErr_Format(PyExc_ValueError,
                     "%s takes no associated data; only GCM, ChaCha20-Poly1305 and SIV do "
                     "(pass aad=None)", t->name);
        return 0;
    }
    int is_seq = PyList_Check(obj) || PyTuple_Check(obj);
    if (is_seq && t->mode != PCB_MODE_SIV) {
        PyErr_Format(PyExc_TypeError,
                     "%s takes one bytes-like aad; only AES/SIV takes a list of components",
                     t->name);
        return 0;
    }
    PyObject *seq = is_seq ? PySequence_Fast(obj, "aad") : NULL;
    Py_ssize_t n = is_seq ? PySequence_Fast_GET_SIZE(seq) : 1;
    int ok = 1;
    a->views = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Py_buffer));
    a->parts = PyMem_Calloc((size_t)(n ? n : 1), sizeof(pcb_bytes));
    if (a->views == NULL || a->parts == NULL) {
        PyErr_NoMemory();
        ok = 0;
    }
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        PyObject *item = is_seq ? PySequence_Fast_GET_ITEM(seq, i) : obj;
        if (!PyObject_CheckBuffer(item)) {
            PyErr_Format(PyExc_TypeError, "aad%s must be bytes-like, not %.100s",
                         is_seq ? " components" : "", Py_TYPE(item)->tp_name);
            ok = 0;
        } else if (PyObject_GetBuffer(item, &a->views[i], PyBUF_SIMPLE) != 0) {
            ok = 0;
        } else {
            a->n = i + 1;
            a->parts[i].data = a->views[i].buf;
            a->parts[i].len = (size_t)a->views[i].len;
        }
    }
    Py_XDECREF(seq);
    if (!ok)
        aad_release(a);
    return ok;
}

/* ------------------------------------------------------- encrypt/decrypt */

typedef struct {
    const pcb_transform *t;
    int encrypt;
    Py_buffer key, data, iv; /* iv.obj NULL: none given */
    aad_list aad;
    uint32_t rounds;
    int backend;
} oneshot_args;

static void oneshot_release(oneshot_args *a)
{
    PyBuffer_Release(&a->key);
    PyBuffer_Release(&a->data);
    PyBuffer_Release(&a->iv);
    aad_release(&a->aad);
}

/* Parses and validates; 1, or 0 with an exception set (release a either
 * way). A "py:" backend is refused here: pycipherbench.encrypt/decrypt send
 * those to pycipherbench._pybackends before calling _core. */
static int oneshot_parse(module_state *ms, PyObject *args, PyObject *kwargs, oneshot_args *a)
{
    static char *kwlist[] = {"transformation", "key", "data", "iv", "aad", "rounds", "backend",
                             NULL};
    const char *name, *backend = "openssl";
    PyObject *key_obj, *data_obj, *iv_obj = Py_None, *aad_obj = Py_None, *rounds_obj = Py_None;
    pcb_status st = {0};

    if (!PyArg_ParseTupleAndKeywords(args, kwargs,
                                     a->encrypt ? "sOO|$OOOs:encrypt" : "sOO|$OOOs:decrypt", kwlist,
                                     &name, &key_obj, &data_obj, &iv_obj, &aad_obj, &rounds_obj,
                                     &backend))
        return 0;
    if (!pcb_backend_arg(backend, &a->backend))
        return 0;
    if ((a->t = lookup(ms, name, a->backend)) == NULL)
        return 0;
    if (!pcb_buffer_arg(key_obj, "key", 0, &a->key) || !pcb_buffer_arg(data_obj, "data", 0, &a->data)
        || !pcb_buffer_arg(iv_obj, "iv", 1, &a->iv))
        return 0;
    if (!pcb_check_key_len(a->t, (size_t)a->key.len, &st)
        || !pcb_check_iv_len(a->t, a->iv.obj ? (size_t)a->iv.len : SIZE_MAX, &st)) {
        pcb_raise_status(ms, &st);
        return 0;
    }
    if (!get_aad(a->t, aad_obj, &a->aad) || !get_rounds(a->t, rounds_obj, &a->rounds))
        return 0;
    if (!pcb_check_length(a->t, a->encrypt, (size_t)a->data.len, &st)) {
        pcb_raise_status(ms, &st);
        return 0;
    }
    return 1;
}

/* Keys a cipher and runs the message; no Python (called with or without the GIL). */
static int oneshot_run(const module_state *ms, const oneshot_args *a, uint8_t *out,
                       size_t *out_len, pcb_status *st)
{
    pcb_cipher c;
    int ok = pcb_cipher_open_backend(&c, (pcb_backend)a->backend, &ms->cache, a->t, a->encrypt,
                                     a->key.buf, (size_t)a->key.len, a->iv.obj ? a->iv.buf : NULL,
                                     (size_t)a->iv.len, a->rounds, ms->tea_impl, st);
    ok = ok && pcb_cipher_message(&c, 0, a->aad.parts, (size_t)a->aad.n, a->data.buf,
                                  (size_t)a->data.len, out, out_len, st);
    pcb_cipher_close(&c);
    return ok;
}

static PyObject *oneshot(PyObject *module, PyObject *args, PyObject *kwargs, int encrypt)
{
    module_state *ms = pcb_module_state(module);
    oneshot_args a;
    PyObject *result = NULL;
    pcb_status st = {0};
    int ok;

    memset(&a, 0, sizeof a);
    a.encrypt = encrypt;
    if (!oneshot_parse(ms, args, kwargs, &a))
        goto done;
    size_t cap = pcb_max_output(a.t, encrypt, (size_t)a.data.len);
    if (cap > (size_t)PY_SSIZE_T_MAX) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)cap);
    if (result == NULL)
        goto done;
    size_t out_len = 0;
    uint8_t *out = (uint8_t *)PyBytes_AS_STRING(result);
    if (a.data.len >= GIL_RELEASE_MIN) {
        Py_BEGIN_ALLOW_THREADS
        ok = oneshot_run(ms, &a, out, &out_len, &st);
        Py_END_ALLOW_THREADS
    } else {
        ok = oneshot_run(ms, &a, out, &out_len, &st);
    }
    if (!ok) {
        OPENSSL_cleanse(out, cap);
        Py_CLEAR(result);
        pcb_raise_status(ms, &st);
        goto done;
    }
    if (out_len != cap) { /* shorter (padding removed): a copy of the right size (public API) */
        PyObject *exact = PyBytes_FromStringAndSize((const char *)out, (Py_ssize_t)out_len);
        OPENSSL_cleanse(out, cap);
        Py_SETREF(result, exact);
    }
done:
    oneshot_release(&a);
    return result;
}

static PyObject *core_encrypt(PyObject *module, PyObject *args, PyObject *kwargs)
{
    return oneshot(module, args, kwargs, 1);
}

static PyObject *core_decrypt(PyObject *module, PyObject *args, PyObject *kwargs)
{
    return oneshot(module, args, kwargs, 0);
}

/* --------------------------------------------------------------- measure */

enum { SCOPE_STREAM, SCOPE_MESSAGE, SCOPE_REKEY };

/* A kernel's validated arguments. */
typedef struct {
    const pcb_transform *t;
    int encrypt, scope;
    const char *scope_name;
    long long payload; /* bytes */
    size_t key_len, iv_len; /* bytes; iv_len 0: the mode has none */
    uint32_t rounds;
    int backend;
    unsigned threads;       /* independent contexts, one per thread */
} measure_args;

/* What a kernel prepares before any clock starts, and frees when closed. */
typedef struct {
    uint8_t key[64], iv[128];
    uint8_t *in, *out;
    size_t ct_cap, in_len;
    pcb_cipher c;
    int opened;
} measure_bufs;

/* The backend's own limits, checked before anything is prepared. */
static int measure_backend_args(module_state *ms, const measure_args *a)
{
    pcb_status st = {0};
    pcb_backend b = (pcb_backend)a->backend;
    if (b == PCB_BK_OPENSSL)
        return 1;
    const pcb_backend_ops *ops = pcb_backend_get(b);
    if (!pcb_backend_supports(b, &ms->cache, a->t, a->key_len))
        pcb_backend_lacks(b, &ms->cache, a->t, a->key_len, &st);
    else if (!ops->check(a->t, a->iv_len, a->t->mode == PCB_MODE_SIV ? 0 : SIZE_MAX,
                         a->iv_len > 0, &st))
        ; /* the kernel's SIV messages have no associated data */
    else if (a->scope == SCOPE_STREAM && pcb_is_aead(a->t) && !ops->stream_aead)
        pcb_fail(&st, PCB_E_VALUE, "%s on %s has no stream scope (the library has no "
                 "incremental AEAD call); use scope='message' or 'rekey'", a->t->name,
                 pcb_backend_name(b));
    else
        return 1;
    pcb_raise_status(ms, &st);
    return 0;
}

/* The arguments that depend on the transformation: key_bits, rounds, iv_len
 * and the payload's whole blocks. 1, or 0 with an exception set. */
static int measure_cipher_args(module_state *ms, measure_args *a, PyObject *key_bits_obj,
                               PyObject *rounds_obj, PyObject *iv_len_obj)
{
    const pcb_transform *t = a->t;
    pcb_status st = {0};
    long long v;
    a->key_len = pcb_default_key_len(t);
    if (key_bits_obj != Py_None) {
        if (!pcb_int_arg(key_bits_obj, "key_bits", 8, 512, &v))
            return 0;
        if (v % 8 != 0) {
            PyErr_Format(PyExc_ValueError, "key_bits must be a multiple of 8, got %lld", v);
            return 0;
        }
        a->key_len = (size_t)v / 8;
    }
    if (!pcb_check_key_len(t, a->key_len, &st)) {
        pcb_raise_status(ms, &st);
        return 0;
    }
    if (!get_rounds(t, rounds_obj, &a->rounds))
        return 0;
    a->iv_len = 0;
    if (iv_len_obj != Py_None) {
        if (t->mode != PCB_MODE_GCM) {
            PyErr_Format(PyExc_ValueError,
                         "iv_len applies to AES/GCM only; %s has a fixed IV size", t->name);
            return 0;
        }
        if (!pcb_int_arg(iv_len_obj, "iv_len (GCM IV bytes)", 1, 128, &v))
            return 0;
        a->iv_len = (size_t)v;
    } else if (t->mode == PCB_MODE_GCM) {
        a->iv_len = 12;
    } else if (t->mode != PCB_MODE_ECB && t->mode != PCB_MODE_SIV) {
        a->iv_len = t->mode == PCB_MODE_POLY1305 ? (t->family == PCB_FAM_XCHACHA ? 24 : 12) : (t->family == PCB_FAM_AES ? 16 : 8);
    }
    if (!measure_backend_args(ms, a))
        return 0;
    size_t block = pcb_block_size(t);
    if ((a->scope == SCOPE_STREAM || !t->padding) && (size_t)a->payload % block != 0) {
        PyErr_Format(PyExc_ValueError,
                     "%s in %s scope needs a payload that is a whole number of %zu-byte "
                     "blocks, got %lld bytes", t->name, a->scope_name, block, a->payload);
        return 0;
    }
    return 1;
}

/* 1, or 0 with an exception set. */
static int measure_parse(module_state *ms, PyObject *args, PyObject *kwargs, measure_args *a)
{
    static char *kwlist[] = {"transformation", "op", "payload", "key_bits", "rounds", "scope",
                             "iv_len", "backend", "threads", NULL};
    const char *name, *op = "enc", *backend = "openssl";
    PyObject *payload_obj = NULL, *key_bits_obj = Py_None, *rounds_obj = Py_None;
    PyObject *iv_len_obj = Py_None, *threads_obj = NULL;
    long long threads = 1;

    a->scope_name = "message";
    a->payload = 10LL << 20;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|$sOOOsOsO:Kernel", kwlist, &name, &op,
                                     &payload_obj, &key_bits_obj, &rounds_obj, &a->scope_name,
                                     &iv_len_obj, &backend, &threads_obj))
        return 0;
    if (!pcb_backend_arg(backend, &a->backend))
        return 0;
    if (threads_obj && !pcb_int_arg(threads_obj, "threads", 1, PCB_MAX_THREADS, &threads))
        return 0;
    a->threads = (unsigned)threads;
    if ((a->t = lookup(ms, name, a->backend)) == NULL)
        return 0;
    if (strcmp(op, "enc") == 0 || strcmp(op, "dec") == 0) {
        a->encrypt = op[0] == 'e';
    } else {
        PyErr_Format(PyExc_ValueError, "op must be 'enc' or 'dec', got '%s'", op);
        return 0;
    }
    static const char *const scopes[] = {"stream", "message", "rekey", NULL}; /* SCOPE_* order */
    int i;
    for (i = 0; scopes[i] && strcmp(a->scope_name, scopes[i]) != 0; i++)
        ;
    if (scopes[i] == NULL) {
        PyErr_Format(PyExc_ValueError, "scope must be 'stream', 'message' or 'rekey', got '%s'",
                     a->scope_name);
        return 0;
    }
    a->scope = i;
    a->scope_name = scopes[i]; /* static: the argument's own text dies with the call */
    if (a->scope == SCOPE_STREAM && a->t->mode == PCB_MODE_SIV) {
        PyErr_Format(PyExc_ValueError,
                     "%s has no stream scope: SIV must see the whole message first; "
                     "use scope='message' or 'rekey'", a->t->name);
        return 0;
    }
    if (payload_obj && !pcb_int_arg(payload_obj, "payload (bytes)", 1, MAX_PAYLOAD, &a->payload))
        return 0;
    return measure_cipher_args(ms, a, key_bits_obj, rounds_obj, iv_len_obj);
}

/* Decryption's input: a valid ciphertext (padding, tag) of b->in's
 * plaintext, made once, replacing it; b->in_len gets its length. */
static int measure_make_ciphertext(module_state *ms, const measure_args *a, measure_bufs *b,
                                   pcb_status *st)
{
    uint8_t *ct = malloc(b->ct_cap + 64);
    int ok;
    if (ct == NULL)
        return pcb_fail(st, PCB_E_MEMORY, "out of memory");
    ok = pcb_cipher_open_backend(&b->c, (pcb_backend)a->backend, &ms->cache, a->t, 1, b->key,
                                 a->key_len, a->iv_len ? b->iv : NULL, a->iv_len, a->rounds,
                                 ms->tea_impl, st)
         && pcb_cipher_message(&b->c, 0, NULL, 0, b->in, (size_t)a->payload, ct, &b->in_len, st);
    pcb_cipher_close(&b->c);
    if (ok)
        memcpy(b->in, ct, b->in_len);
    free(ct);
    return ok;
}

/* Everything is allocated, filled and touched before the clock starts, and
 * the cipher keyed. 1, or 0 with an exception set (free b either way). */
static int measure_prepare(module_state *ms, const measure_args *a, measure_bufs *b)
{
    const int stream = a->scope == SCOPE_STREAM;
    size_t plain_len = (size_t)a->payload;
    pcb_status st = {0};

    b->ct_cap = pcb_max_output(a->t, 1, plain_len);
    size_t out_cap = b->ct_cap + 64;
    b->in = stream ? NULL : malloc(b->ct_cap + 64);
    b->out = malloc(out_cap);
    if (b->out == NULL || (!stream && b->in == NULL)) {
        PyErr_Format(PyExc_MemoryError, "cannot allocate buffers for a %lld-byte payload",
                     a->payload);
        return 0;
    }
    memset(b->out, 0, out_cap);
    if (RAND_bytes_ex(ms->cache.libctx, b->key, sizeof b->key, 0) != 1
        || RAND_bytes_ex(ms->cache.libctx, b->iv, sizeof b->iv, 0) != 1
        || RAND_bytes_ex(ms->cache.libctx, stream ? b->out : b->in, plain_len, 0) != 1) {
        pcb_fail_openssl(&st, "drawing random test data");
        pcb_raise_status(ms, &st);
        return 0;
    }
    b->in_len = plain_len;
    if (!a->encrypt && !stream && !measure_make_ciphertext(ms, a, b, &st)) {
        pcb_raise_status(ms, &st);
        return 0;
    }
    if (!pcb_cipher_open_backend(&b->c, (pcb_backend)a->backend, &ms->cache, a->t, a->encrypt,
                                 b->key, a->key_len, a->iv_len ? b->iv : NULL, a->iv_len,
                                 a->rounds, ms->tea_impl, &st)) {
        pcb_cipher_close(&b->c);
        pcb_raise_status(ms, &st);
        return 0;
    }
    b->opened = 1;
    return 1;
}

static void measure_free(measure_bufs *b)
{
    if (b->opened)
        pcb_cipher_close(&b->c);
    OPENSSL_cleanse(b->key, sizeof b->key);
    if (b->in)
        OPENSSL_cleanse(b->in, b->ct_cap);
    free(b->in);
    free(b->out);
    memset(b, 0, sizeof *b);
}

typedef struct {
    pcb_cipher *c;
    int scope;
    int vary_iv;
    const uint8_t *in;
    size_t in_len;
    uint8_t *out;
    pcb_status st;
} bench_arg;

/* Each encrypted message gets a fresh IV, as real code must: a counter in
 * the IV's first bytes (outside CTR's low counter bits). */
static inline void next_iv(pcb_cipher *c)
{
    size_t n = c->iv_len < 8 ? c->iv_len : 8;
    for (size_t i = n; i-- > 0;)
        if (++c->iv[i] != 0)
            break;
}

/* The timed kernel (pcb_run_fn), run without the GIL. */
static int bench_run(void *p, uint64_t n, uint64_t *self_ns)
{
    (void)self_ns; /* the engine's clock reads are tight around the kernel */
    bench_arg *a = p;
    size_t out_len;
    if (a->scope == SCOPE_STREAM) {
        if (!pcb_cipher_stream_reset(a->c, &a->st))
            return -1;
        for (uint64_t i = 0; i < n; i++)
            if (!pcb_cipher_stream(a->c, a->in, a->out, a->in_len, &a->st))
                return -1;
        return 0;
    }
    const int rekey = a->scope == SCOPE_REKEY;
    for (uint64_t i = 0; i < n; i++) {
        if (a->vary_iv)
            next_iv(a->c);
        if (!pcb_cipher_message(a->c, rekey, NULL, 0, a->in, a->in_len, a->out, &out_len, &a->st))
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ Kernel */

typedef struct {
    PyObject_HEAD
    measure_args a;
    measure_bufs *b;  /* a.threads of each: independent contexts */
    bench_arg *arg;
    void **argp;
    pcb_parallel par; /* threads > 1: what the timed function runs */
    /* threads > 1, summed over the slices of the last call (see common/timing.h):
     * each thread's time, and how long after the first thread the last one started */
    uint64_t thread_sum[PCB_MAX_THREADS];
    uint64_t stagger_sum;
    pcb_timed timed;
} KernelObject;

/* threads > 1: before a call, the sums start again. */
static void threads_begin(void *p)
{
    KernelObject *k = p;
    memset(k->thread_sum, 0, sizeof k->thread_sum);
    k->stagger_sum = 0;
}

/* threads > 1: the timed function (its argument the KernelObject, touched
 * only in plain C fields); a failing thread's status becomes the first's. */
static int bench_threads(void *p, uint64_t n, uint64_t *self_ns)
{
    KernelObject *k = p;
    pcb_parallel *par = &k->par;
    int rc = pcb_parallel_run(par, n, self_ns);
    for (unsigned i = 0; rc == 0 && i < par->n_threads; i++)
        k->thread_sum[i] += par->thread_ns[i];
    if (rc == 0)
        k->stagger_sum += par->stagger_ns;
    bench_arg *first = par->args[0];
    if (rc != 0 && par->failed > 0)
        first->st = ((bench_arg *)par->args[par->failed])->st;
    else if (rc != 0 && par->failed < 0)
        pcb_fail(&first->st, PCB_E_OS, "could not start %u threads", par->n_threads);
    return rc;
}

static module_state *kernel_state(PyObject *self)
{
    return (module_state *)PyType_GetModuleState(Py_TYPE(self));
}

/* Everything filled and keyed before any clock runs; the timed function and
 * its argument wired up. NULL with an exception set. */
static PyObject *Kernel_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    module_state *ms = (module_state *)PyType_GetModuleState(type);
    KernelObject *k = (KernelObject *)type->tp_alloc(type, 0);
    if (k == NULL)
        return NULL;
    k->timed.closed = 1; /* until prepared */
    if (!measure_parse(ms, args, kwargs, &k->a)) {
        Py_DECREF(k);
        return NULL;
    }
    unsigned n = k->a.threads;
    k->b = PyMem_Calloc(n, sizeof *k->b);
    k->arg = PyMem_Calloc(n, sizeof *k->arg);
    k->argp = PyMem_Calloc(n, sizeof *k->argp);
    if (k->b == NULL || k->arg == NULL || k->argp == NULL) {
        Py_DECREF(k);
        return PyErr_NoMemory();
    }
    for (unsigned i = 0; i < n; i++) {
        measure_bufs *b = &k->b[i];
        if (!measure_prepare(ms, &k->a, b)) {
            Py_DECREF(k);
            return NULL;
        }
        bench_arg *arg = &k->arg[i];
        arg->c = &b->c;
        arg->scope = k->a.scope;
        arg->vary_iv = k->a.encrypt && k->a.iv_len > 0 && k->a.scope != SCOPE_STREAM;
        arg->in = k->a.scope == SCOPE_STREAM ? b->out : b->in; /* stream: in place, as openssl speed */
        arg->in_len = b->in_len;
        arg->out = b->out;
        k->argp[i] = arg;
    }
    if (n == 1) {
        k->timed = (pcb_timed){bench_run, k->arg, &k->arg->st, 0, 0};
    } else {
        k->par.fn = bench_run;
        k->par.args = k->argp;
        k->par.n_threads = n;
        k->timed = (pcb_timed){bench_threads, k, &k->arg->st, 0, 0, .begin = threads_begin};
    }
    return (PyObject *)k;
}

static void Kernel_close_bufs(KernelObject *k)
{
    for (unsigned i = 0; k->b && i < k->a.threads; i++)
        measure_free(&k->b[i]);
    k->timed.closed = 1;
}

static void Kernel_dealloc(KernelObject *k)
{
    PyTypeObject *tp = Py_TYPE(k);
    Kernel_close_bufs(k);
    PyMem_Free(k->b);
    PyMem_Free(k->arg);
    PyMem_Free(k->argp);
    tp->tp_free(k);
    Py_DECREF(tp);
}

static PyObject *Kernel_calibrate(KernelObject *k, PyObject *args, PyObject *kwargs)
{
    return pcb_timed_calibrate(kernel_state((PyObject *)k), &k->timed, args, kwargs);
}

static PyObject *Kernel_sample(KernelObject *k, PyObject *n)
{
    return pcb_timed_sample(kernel_state((PyObject *)k), &k->timed, n);
}

static PyObject *Kernel_close(KernelObject *k, PyObject *Py_UNUSED(ignored))
{
    if (k->timed.busy) {
        PyErr_SetString(PyExc_RuntimeError, "the kernel is in use by another thread");
        return NULL;
    }
    Kernel_close_bufs(k);
    Py_RETURN_NONE;
}

/* The arguments used: what a Measurement records of the kernel. */
static PyObject *Kernel_info(KernelObject *k, void *Py_UNUSED(closure))
{
    const measure_args *a = &k->a;
    const pcb_transform *t = a->t;
    const char *impl = pcb_has_rounds(t) && !k->timed.closed ? pcb_tea_impl_name(k->b[0].c.tea.impl)
                       : pcb_has_rounds(t) ? pcb_tea_impl_name(kernel_state((PyObject *)k)->tea_impl)
                                           : NULL;
    return Py_BuildValue(
        "{s:s,s:s,s:s,s:L,s:n,s:N,s:N,s:z,s:s,s:I}",
        "transformation", t->name, "op", a->encrypt ? "enc" : "dec", "scope", a->scope_name,
        "payload", a->payload, "key_bits", (Py_ssize_t)a->key_len * 8,
        "rounds", pcb_has_rounds(t) ? PyLong_FromUnsignedLong(a->rounds) : Py_NewRef(Py_None),
        "iv_len", a->iv_len ? PyLong_FromSize_t(a->iv_len) : Py_NewRef(Py_None), "impl", impl,
        "backend", pcb_backend_name((pcb_backend)a->backend), "threads", a->threads);
}

/* The last sample's per-thread times (ns for its iterations), one per thread. */
static PyObject *Kernel_thread_ns(KernelObject *k, void *Py_UNUSED(closure))
{
    if (k->a.threads <= 1)
        return Py_BuildValue("()");
    PyObject *t = PyTuple_New(k->a.threads);
    for (unsigned i = 0; t != NULL && i < k->a.threads; i++) {
        PyObject *v = PyLong_FromUnsignedLongLong(k->thread_sum[i]);
        if (v == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

static PyMethodDef Kernel_methods[] = {
    {"calibrate", (PyCFunction)(void (*)(void))Kernel_calibrate, METH_VARARGS | METH_KEYWORDS,
     "calibrate(min_time, warmup=-1.0) -> int\n\nWarm up (default: as long as min_time), then "
     "return the operation count that makes one sample last at least min_time seconds."},
    {"sample", (PyCFunction)Kernel_sample, METH_O,
     "sample(iterations) -> (elapsed_ns, tsc_ticks, cpu_ns, nivcsw, call_ns)\n\n"
     "Time `iterations` operations with the GIL released."},
    {"close", (PyCFunction)Kernel_close, METH_NOARGS, "close()\n\nFree the buffers and keys."},
    {NULL, NULL, 0, NULL},
};

static PyObject *Kernel_closed(KernelObject *k, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(k->timed.closed);
}

static PyObject *Kernel_thread_stagger_ns(KernelObject *k, void *Py_UNUSED(closure))
{
    return PyLong_FromUnsignedLongLong(k->a.threads > 1 ? k->stagger_sum : 0);
}

static PyObject *Kernel_last_call(KernelObject *k, void *Py_UNUSED(closure))
{
    return pcb_timed_last(&k->timed);
}

static PyObject *Kernel_last_sample(KernelObject *k, void *Py_UNUSED(closure))
{
    return pcb_timed_last_sample(&k->timed);
}

static PyGetSetDef Kernel_getset[] = {
    {"last_sample", (getter)Kernel_last_sample, NULL,
     "(operations, sample tuple) of the last call that ran to the end (after calibrate():\n"
     "its final call, which lasted at least min_time), or None.", NULL},
    {"last_call", (getter)Kernel_last_call, NULL,
     "(operations, slices) of the last calibrate()/sample() call: fewer operations than\n"
     "asked when Ctrl-C cut it between two slices (slices of about 0.1 s; the clocks\n"
     "run inside the slices only).", NULL},
    {"thread_stagger_ns", (getter)Kernel_thread_stagger_ns, NULL,
     "threads > 1: in the last sample, how long after the first thread the last one\n"
     "started (ns, summed over its slices); else 0.", NULL},
    {"closed", (getter)Kernel_closed, NULL, "True once close() has run.", NULL},
    {"info", (getter)Kernel_info, NULL, "The kernel's parameters, as used (a dict).", NULL},
    {"thread_ns", (getter)Kernel_thread_ns, NULL,
     "threads > 1: the last sample's time of each thread (ns for its iterations); else ().", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyDoc_STRVAR(Kernel_doc,
             "Kernel(transformation, *, op='enc', payload=10485760, key_bits=None, rounds=None,\n"
             "       scope='message', iv_len=None, backend='openssl', threads=1)\n\n"
             "One cipher kernel, prepared: buffers filled with random data, a valid\n"
             "ciphertext made for decryption, the cipher keyed. calibrate() and sample()\n"
             "time it in C with the GIL released; pycipherbench.measure() runs the rounds.\n"
             "backend: the C library that runs it (pycipherbench.backends()); threads: N\n"
             "independent contexts run on N threads at once, each sample timing N x\n"
             "iterations operations from a common start to the last thread's end.");

static PyType_Slot Kernel_slots[] = {
    {Py_tp_doc, (void *)Kernel_doc},
    {Py_tp_new, Kernel_new},
    {Py_tp_dealloc, Kernel_dealloc},
    {Py_tp_methods, Kernel_methods},
    {Py_tp_getset, Kernel_getset},
    {0, NULL},
};

static PyType_Spec Kernel_spec = {
    .name = "pycipherbench._core.Kernel",
    .basicsize = sizeof(KernelObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = Kernel_slots,
};

int pcb_kernel_type_exec(PyObject *module, module_state *ms)
{
    ms->KernelType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &Kernel_spec, NULL);
    if (ms->KernelType == NULL || PyModule_AddType(module, ms->KernelType) < 0)
        return -1;
    return 0;
}

/* check_kernel(...): Kernel's argument checks without preparing anything. */
static PyObject *core_check_kernel(PyObject *module, PyObject *args, PyObject *kwargs)
{
    measure_args a;
    memset(&a, 0, sizeof a);
    if (!measure_parse(pcb_module_state(module), args, kwargs, &a))
        return NULL;
    Py_RETURN_NONE;
}

/* check_timing(min_time, repeats, warmup=-1.0): the timing arguments'
 * rules, in one place for every Python entry point. */
static PyObject *core_check_timing(PyObject *Py_UNUSED(module), PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"min_time", "repeats", "warmup", NULL};
    double min_time, warmup = -1.0;
    PyObject *repeats_obj;
    long long repeats;
    uint64_t min_ns, warmup_ns;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "dO|d:check_timing", kwlist, &min_time,
                                     &repeats_obj, &warmup)
        || !pcb_int_arg(repeats_obj, "repeats", 1, 100000, &repeats)
        || !pcb_time_args(min_time, &warmup, &min_ns, &warmup_ns))
        return NULL;
    Py_RETURN_NONE;
}

/* canary(n) -> sample tuple: n dependent additions (see common/timing.h). */
static PyObject *core_canary(PyObject *Py_UNUSED(module), PyObject *n_obj)
{
    long long n;
    pcb_sample s;
    if (!pcb_int_arg(n_obj, "n", 1, (long long)1 << 40, &n))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    pcb_timing_canary((uint64_t)n, &s);
    Py_END_ALLOW_THREADS
    return pcb_sample_tuple(&s);
}

/* ----------------------------------------------------------- the rest */

/* Appends a str of name to list: 0, or -1 with an exception set. */
static int append_name(PyObject *list, const char *name)
{
    PyObject *s = PyUnicode_FromString(name);
    int rc = s == NULL ? -1 : PyList_Append(list, s);
    Py_XDECREF(s);
    return rc;
}

static PyObject *core_ciphers(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    module_state *ms = pcb_module_state(module);
    size_t n;
    const pcb_transform *t = pcb_transforms(&n);
    PyObject *list = PyList_New(0);
    for (size_t i = 0; list != NULL && i < n; i++)
        if (pcb_transform_available(&ms->cache, &t[i]) && append_name(list, t[i].name) < 0)
            Py_CLEAR(list);
    return list;
}

static PyObject *core_tea_impls(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    PyObject *list = PyList_New(0);
    for (int i = PCB_TEA_IMPL_SCALAR; list != NULL && i <= PCB_TEA_IMPL_LAST; i++)
        if (pcb_tea_impl_available((pcb_tea_impl)i)
            && append_name(list, pcb_tea_impl_name((pcb_tea_impl)i)) < 0)
            Py_CLEAR(list);
    return list;
}

PyDoc_STRVAR(ciphers_doc, "ciphers() -> list[str]\n\n"
             "Canonical names of every transformation this build supports.");
PyDoc_STRVAR(encrypt_doc,
             "encrypt(transformation, key, data, *, iv=None, aad=None, rounds=None,\n"
             "        backend='openssl') -> bytes\n\n"
             "Encrypt one whole message. AEAD output is ciphertext || 16-byte tag;\n"
             "AES-SIV output is the 16-byte synthetic IV || ciphertext.");
PyDoc_STRVAR(decrypt_doc,
             "decrypt(transformation, key, data, *, iv=None, aad=None, rounds=None,\n"
             "        backend='openssl') -> bytes\n\n"
             "Decrypt one whole message; raises DecryptionError when a tag, synthetic IV\n"
             "or padding does not check out.");
PyDoc_STRVAR(check_kernel_doc,
             "check_kernel(transformation, *, op='enc', payload=10485760, key_bits=None,\n"
             "             rounds=None, scope='message', iv_len=None, backend='openssl',\n"
             "             threads=1) -> None\n\n"
             "Kernel()'s argument checks, preparing nothing (fast validation of a sweep).");
PyDoc_STRVAR(canary_doc, "canary(n, /) -> (elapsed_ns, tsc_ticks, cpu_ns, nivcsw, call_ns)\n\n"
             "n dependent additions, timed with the GIL released: the machine's speed now.");
PyDoc_STRVAR(tea_impls_doc, "tea_impls() -> list[str]\n\n"
             "The optimized TEA/XTEA implementations this CPU can run, slowest first.");

PyMethodDef pcb_cipher_functions[] = {
    {"ciphers", core_ciphers, METH_NOARGS, ciphers_doc},
    {"encrypt", (PyCFunction)(void (*)(void))core_encrypt, METH_VARARGS | METH_KEYWORDS, encrypt_doc},
    {"decrypt", (PyCFunction)(void (*)(void))core_decrypt, METH_VARARGS | METH_KEYWORDS, decrypt_doc},
    {"check_kernel", (PyCFunction)(void (*)(void))core_check_kernel, METH_VARARGS | METH_KEYWORDS,
     check_kernel_doc},
    {"canary", core_canary, METH_O, canary_doc},
    {"check_timing", (PyCFunction)(void (*)(void))core_check_timing, METH_VARARGS | METH_KEYWORDS,
     "check_timing(min_time, repeats, warmup=-1.0) -> None\n\n"
     "The timing arguments' checks: repeats (rounds) in [1, 100000], min_time in (0, 60] s,\n"
     "warmup in [0, 60] s or -1 (as long as min_time)."},
    {"tea_impls", core_tea_impls, METH_NOARGS, tea_impls_doc},
    {NULL, NULL, 0, NULL},
};
