/*
 * pcb_module.c — pycipherbench._core: the Python glue.
 *
 * Owns: module state (the fetched-cipher cache, the exception types, the
 * chosen TEA implementation), multi-phase init, argument parsing and
 * validation, turning pcb_status into Python exceptions, the one-shot
 * encrypt/decrypt functions and the timed `measure` entry point, which
 * prepares buffers with the GIL held and releases it while timing.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/opensslv.h>
#include <openssl/rand.h>

#include "format/b64.h"
#include "py/module.h"
#include "crypto/tea.h"
#include "common/timing.h"

#define MAX_PAYLOAD ((Py_ssize_t)1 << 30) /* 1 GiB: two buffers of it must fit */
#define GIL_RELEASE_MIN 4096               /* one-shot inputs worth dropping the GIL for */

#if defined(__clang__)
#define PCB_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define PCB_COMPILER "gcc " __VERSION__
#else
#define PCB_COMPILER "unknown"
#endif

static inline module_state *get_state(PyObject *module)
{
    return (module_state *)PyModule_GetState(module);
}

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

#define raise_status pcb_raise_status

/* ------------------------------------------------------ argument helpers */

static const pcb_transform *lookup(module_state *ms, const char *name)
{
    const pcb_transform *t = pcb_find_transform(name);
    if (t == NULL) {
        PyErr_Format(ms->UnsupportedCipherError,
                     "unknown transformation '%s'; expected a name like 'AES/GCM/NoPadding' "
                     "(see pycipherbench.ciphers())", name);
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

/* A bytes-like argument; None is accepted (view->obj stays NULL) if may_be_none. */
static int get_buffer(PyObject *obj, const char *what, int may_be_none, Py_buffer *view)
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

/* rounds: None or an int in range, for TEA/XTEA only. */
static int get_rounds(const pcb_transform *t, PyObject *obj, uint32_t *rounds)
{
    *rounds = 32;
    if (obj == Py_None)
        return 1;
    if (!PyLong_Check(obj) || PyBool_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "rounds must be an int or None, not %.100s",
                     Py_TYPE(obj)->tp_name);
        return 0;
    }
    if (!pcb_has_rounds(t)) {
        PyErr_Format(PyExc_ValueError,
                     "%s has no rounds parameter (only TEA and XTEA do); pass rounds=None", t->name);
        return 0;
    }
    int overflow;
    long v = PyLong_AsLongAndOverflow(obj, &overflow);
    if (v == -1 && PyErr_Occurred())
        return 0;
    if (overflow || v < PCB_TEA_MIN_ROUNDS || v > PCB_TEA_MAX_ROUNDS) {
        PyErr_Format(PyExc_ValueError, "rounds must be between %d and %d cycles, got %S",
                     PCB_TEA_MIN_ROUNDS, PCB_TEA_MAX_ROUNDS, obj);
        return 0;
    }
    *rounds = (uint32_t)v;
    return 1;
}

int pcb_int_arg(PyObject *obj, const char *what, long long lo, long long hi, long long *out)
{
    if (!PyLong_Check(obj) || PyBool_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", what, Py_TYPE(obj)->tp_name);
        return 0;
    }
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (v == -1 && PyErr_Occurred())
        return 0;
    if (overflow || v < lo || v > hi) {
        PyErr_Format(PyExc_ValueError, "%s must be between %lld and %lld, got %S", what, lo, hi, obj);
        return 0;
    }
    *out = v;
    return 1;
}

/* ------------------------------------------------------- encrypt/decrypt */

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
    a->views = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Py_buffer));
    a->parts = PyMem_Calloc((size_t)(n ? n : 1), sizeof(pcb_bytes));
    if (a->views == NULL || a->parts == NULL) {
        Py_XDECREF(seq);
        aad_release(a);
        PyErr_NoMemory();
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = is_seq ? PySequence_Fast_GET_ITEM(seq, i) : obj;
        if (!PyObject_CheckBuffer(item)) {
            PyErr_Format(PyExc_TypeError, "aad%s must be bytes-like, not %.100s",
                         is_seq ? " components" : "", Py_TYPE(item)->tp_name);
            Py_XDECREF(seq);
            aad_release(a);
            return 0;
        }
        if (PyObject_GetBuffer(item, &a->views[i], PyBUF_SIMPLE) != 0) {
            Py_XDECREF(seq);
            aad_release(a);
            return 0;
        }
        a->n = i + 1;
        a->parts[i].data = a->views[i].buf;
        a->parts[i].len = (size_t)a->views[i].len;
    }
    Py_XDECREF(seq);
    return 1;
}

static PyObject *oneshot(PyObject *module, PyObject *args, PyObject *kwargs, int encrypt)
{
    static char *kwlist[] = {"transformation", "key", "data", "iv", "aad", "rounds", NULL};
    module_state *ms = get_state(module);
    const char *name;
    PyObject *key_obj, *data_obj, *iv_obj = Py_None, *aad_obj = Py_None, *rounds_obj = Py_None;
    Py_buffer key = {0}, data = {0}, iv = {0};
    aad_list aad = {0};
    PyObject *result = NULL;
    pcb_status st = {0};
    pcb_cipher c;
    uint32_t rounds;
    int ok, opened = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs,
                                     encrypt ? "sOO|$OOO:encrypt" : "sOO|$OOO:decrypt", kwlist,
                                     &name, &key_obj, &data_obj, &iv_obj, &aad_obj, &rounds_obj))
        return NULL;
    const pcb_transform *t = lookup(ms, name);
    if (t == NULL)
        return NULL;
    if (!get_buffer(key_obj, "key", 0, &key) || !get_buffer(data_obj, "data", 0, &data)
        || !get_buffer(iv_obj, "iv", 1, &iv))
        goto done;
    if (!pcb_check_key_len(t, (size_t)key.len, &st)
        || !pcb_check_iv_len(t, iv.obj ? (size_t)iv.len : SIZE_MAX, &st)) {
        raise_status(ms, &st);
        goto done;
    }
    if (!get_aad(t, aad_obj, &aad) || !get_rounds(t, rounds_obj, &rounds))
        goto done;
    if (!pcb_check_length(t, encrypt, (size_t)data.len, &st)) {
        raise_status(ms, &st);
        goto done;
    }
    size_t cap = pcb_max_output(t, encrypt, (size_t)data.len);
    if (cap > (size_t)PY_SSIZE_T_MAX) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)cap);
    if (result == NULL)
        goto done;
    size_t out_len = 0;
    uint8_t *out = (uint8_t *)PyBytes_AS_STRING(result);
    if (data.len >= GIL_RELEASE_MIN) {
        Py_BEGIN_ALLOW_THREADS
        ok = pcb_cipher_open(&c, &ms->cache, t, encrypt, key.buf, (size_t)key.len,
                             iv.obj ? iv.buf : NULL, (size_t)iv.len, rounds, ms->tea_impl, &st);
        opened = 1;
        ok = ok && pcb_cipher_message(&c, 0, aad.parts, (size_t)aad.n, data.buf,
                                      (size_t)data.len, out, &out_len, &st);
        Py_END_ALLOW_THREADS
    } else {
        ok = pcb_cipher_open(&c, &ms->cache, t, encrypt, key.buf, (size_t)key.len,
                             iv.obj ? iv.buf : NULL, (size_t)iv.len, rounds, ms->tea_impl, &st);
        opened = 1;
        ok = ok && pcb_cipher_message(&c, 0, aad.parts, (size_t)aad.n, data.buf,
                                      (size_t)data.len, out, &out_len, &st);
    }
    if (opened)
        pcb_cipher_close(&c);
    if (!ok) {
        OPENSSL_cleanse(out, cap);
        Py_CLEAR(result);
        raise_status(ms, &st);
        goto done;
    }
    if (out_len != cap)
        _PyBytes_Resize(&result, (Py_ssize_t)out_len);
done:
    PyBuffer_Release(&key);
    PyBuffer_Release(&data);
    PyBuffer_Release(&iv);
    aad_release(&aad);
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

static PyObject *build_list_u64(const uint64_t *v, uint32_t n)
{
    PyObject *list = PyList_New(n);
    if (list == NULL)
        return NULL;
    for (uint32_t i = 0; i < n; i++) {
        PyObject *x = PyLong_FromUnsignedLongLong(v[i]);
        if (x == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, x);
    }
    return list;
}

static PyObject *core_measure(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"transformation", "op", "payload", "key_bits", "rounds", "scope",
                             "iv_len", "min_time", "repeats", "warmup", "check_only", NULL};
    module_state *ms = get_state(module);
    const char *name, *op = "enc", *scope_name = "message";
    PyObject *payload_obj = NULL, *key_bits_obj = Py_None, *rounds_obj = Py_None;
    PyObject *iv_len_obj = Py_None, *repeats_obj = NULL;
    double min_time = 0.05, warmup = -1.0;
    long long payload = 10LL << 20, repeats = 7, v;
    pcb_status st = {0};
    uint32_t rounds;
    size_t key_len, iv_len = 0;
    int scope, encrypt, check_only = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|$sOOOsOdOdp:measure", kwlist, &name, &op,
                                     &payload_obj, &key_bits_obj, &rounds_obj, &scope_name,
                                     &iv_len_obj, &min_time, &repeats_obj, &warmup, &check_only))
        return NULL;
    const pcb_transform *t = lookup(ms, name);
    if (t == NULL)
        return NULL;
    if (strcmp(op, "enc") == 0)
        encrypt = 1;
    else if (strcmp(op, "dec") == 0)
        encrypt = 0;
    else
        return PyErr_Format(PyExc_ValueError, "op must be 'enc' or 'dec', got '%s'", op);
    if (strcmp(scope_name, "stream") == 0)
        scope = SCOPE_STREAM;
    else if (strcmp(scope_name, "message") == 0)
        scope = SCOPE_MESSAGE;
    else if (strcmp(scope_name, "rekey") == 0)
        scope = SCOPE_REKEY;
    else
        return PyErr_Format(PyExc_ValueError,
                            "scope must be 'stream', 'message' or 'rekey', got '%s'", scope_name);
    if (scope == SCOPE_STREAM && t->mode == PCB_MODE_SIV)
        return PyErr_Format(PyExc_ValueError,
                            "%s has no stream scope: SIV must see the whole message first; "
                            "use scope='message' or 'rekey'", t->name);
    if (payload_obj && !pcb_int_arg(payload_obj, "payload (bytes)", 1, MAX_PAYLOAD, &payload))
        return NULL;
    if (repeats_obj && !pcb_int_arg(repeats_obj, "repeats", 1, 100000, &repeats))
        return NULL;
    if (!(min_time > 0.0 && min_time <= 60.0)) {
        char buf[64];
        snprintf(buf, sizeof buf, "%g", min_time);
        return PyErr_Format(PyExc_ValueError, "min_time must be in (0, 60] seconds, got %s", buf);
    }
    if (warmup == -1.0) /* the default: warm up as long as one sample */
        warmup = min_time;
    if (!(warmup >= 0.0 && warmup <= 60.0)) {
        char buf[64];
        snprintf(buf, sizeof buf, "%g", warmup);
        return PyErr_Format(PyExc_ValueError, "warmup must be in [0, 60] seconds, got %s", buf);
    }
    key_len = pcb_default_key_len(t);
    if (key_bits_obj != Py_None) {
        if (!pcb_int_arg(key_bits_obj, "key_bits", 8, 512, &v))
            return NULL;
        if (v % 8 != 0)
            return PyErr_Format(PyExc_ValueError, "key_bits must be a multiple of 8, got %lld", v);
        key_len = (size_t)v / 8;
    }
    if (!pcb_check_key_len(t, key_len, &st))
        return raise_status(ms, &st);
    if (!get_rounds(t, rounds_obj, &rounds))
        return NULL;
    if (iv_len_obj != Py_None) {
        if (t->mode != PCB_MODE_GCM)
            return PyErr_Format(PyExc_ValueError,
                                "iv_len applies to AES/GCM only; %s has a fixed IV size", t->name);
        if (!pcb_int_arg(iv_len_obj, "iv_len (GCM IV bytes)", 1, 128, &v))
            return NULL;
        iv_len = (size_t)v;
    } else if (t->mode == PCB_MODE_GCM) {
        iv_len = 12;
    } else if (t->mode != PCB_MODE_ECB && t->mode != PCB_MODE_SIV) {
        iv_len = t->mode == PCB_MODE_POLY1305 ? 12 : (t->family == PCB_FAM_AES ? 16 : 8);
    }
    size_t block = pcb_block_size(t);
    if ((scope == SCOPE_STREAM || !t->padding) && (size_t)payload % block != 0)
        return PyErr_Format(PyExc_ValueError,
                            "%s in %s scope needs a payload that is a whole number of %zu-byte "
                            "blocks, got %lld bytes", t->name, scope_name, block, payload);
    if (check_only) /* the arguments are valid; the caller measures elsewhere */
        Py_RETURN_NONE;

    /* Everything is allocated, filled and touched before the clock starts. */
    size_t plain_len = (size_t)payload;
    size_t ct_cap = pcb_max_output(t, 1, plain_len);
    size_t out_cap = ct_cap + 64;
    uint8_t key[64], iv[128];
    uint8_t *in = NULL, *out = NULL;
    pcb_cipher c;
    int opened = 0, rc = -1;
    bench_arg arg;
    uint64_t *elapsed = PyMem_Calloc((size_t)repeats, sizeof(uint64_t));
    uint64_t *ticks = PyMem_Calloc((size_t)repeats, sizeof(uint64_t));
    PyObject *result = NULL;
    pcb_timing_result tr = {0, 0, elapsed, ticks};
    pcb_timing_params tp = {(uint64_t)(min_time * 1e9), (uint64_t)(warmup * 1e9), (uint32_t)repeats};

    if (elapsed == NULL || ticks == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    in = scope == SCOPE_STREAM ? NULL : malloc(ct_cap + 64);
    out = malloc(out_cap);
    if (out == NULL || (scope != SCOPE_STREAM && in == NULL)) {
        PyErr_Format(PyExc_MemoryError, "cannot allocate buffers for a %lld-byte payload", payload);
        goto done;
    }
    memset(out, 0, out_cap);
    if (RAND_bytes_ex(ms->cache.libctx, key, sizeof key, 0) != 1
        || RAND_bytes_ex(ms->cache.libctx, iv, sizeof iv, 0) != 1
        || RAND_bytes_ex(ms->cache.libctx, scope == SCOPE_STREAM ? out : in, plain_len, 0) != 1) {
        pcb_fail_openssl(&st, "drawing random test data");
        raise_status(ms, &st);
        goto done;
    }
    size_t in_len = plain_len;
    if (!encrypt && scope != SCOPE_STREAM) {
        /* A valid ciphertext (padding, tag) of the plaintext, made once. */
        uint8_t *ct = malloc(ct_cap + 64);
        int ok = ct != NULL;
        if (ok) {
            ok = pcb_cipher_open(&c, &ms->cache, t, 1, key, key_len, iv_len ? iv : NULL,
                                 iv_len, rounds, ms->tea_impl, &st)
                 && pcb_cipher_message(&c, 0, NULL, 0, in, plain_len, ct, &in_len, &st);
            pcb_cipher_close(&c);
            if (ok)
                memcpy(in, ct, in_len);
            free(ct);
        } else {
            pcb_fail(&st, PCB_E_MEMORY, "out of memory");
        }
        if (!ok) {
            raise_status(ms, &st);
            goto done;
        }
    }
    if (!pcb_cipher_open(&c, &ms->cache, t, encrypt, key, key_len, iv_len ? iv : NULL, iv_len,
                         rounds, ms->tea_impl, &st)) {
        pcb_cipher_close(&c);
        raise_status(ms, &st);
        goto done;
    }
    opened = 1;
    arg.c = &c;
    arg.scope = scope;
    arg.vary_iv = encrypt && iv_len > 0 && scope != SCOPE_STREAM;
    arg.in = scope == SCOPE_STREAM ? out : in; /* stream: in place, as openssl speed */
    arg.in_len = in_len;
    arg.out = out;
    memset(&arg.st, 0, sizeof arg.st);

    Py_BEGIN_ALLOW_THREADS
    rc = pcb_time_kernel(bench_run, &arg, &tp, &tr);
    Py_END_ALLOW_THREADS

    if (rc != 0) {
        raise_status(ms, &arg.st);
        goto done;
    }
    PyObject *elapsed_list = build_list_u64(elapsed, tr.repeats);
    PyObject *ticks_list = pcb_tsc_available() ? build_list_u64(ticks, tr.repeats) : Py_NewRef(Py_None);
    const char *impl = pcb_has_rounds(t) ? pcb_tea_impl_name(c.tea.impl) : NULL;
    if (elapsed_list && ticks_list)
        result = Py_BuildValue(
            "{s:s,s:s,s:s,s:L,s:n,s:N,s:N,s:d,s:d,s:I,s:K,s:O,s:O,s:z}",
            "transformation", t->name, "op", encrypt ? "enc" : "dec", "scope", scope_name,
            "payload", payload, "key_bits", (Py_ssize_t)key_len * 8,
            "rounds", pcb_has_rounds(t) ? PyLong_FromUnsignedLong(rounds) : Py_NewRef(Py_None),
            "iv_len", iv_len ? PyLong_FromSize_t(iv_len) : Py_NewRef(Py_None),
            "min_time", min_time, "warmup", warmup, "repeats", (unsigned)tr.repeats,
            "iterations", (unsigned long long)tr.iterations, "elapsed_ns", elapsed_list,
            "tsc_ticks", ticks_list, "impl", impl);
    Py_XDECREF(elapsed_list);
    Py_XDECREF(ticks_list);
done:
    if (opened)
        pcb_cipher_close(&c);
    OPENSSL_cleanse(key, sizeof key);
    if (in)
        OPENSSL_cleanse(in, ct_cap);
    free(in);
    free(out);
    PyMem_Free(elapsed);
    PyMem_Free(ticks);
    return result;
}

/* ----------------------------------------------------------- the rest */

static PyObject *core_ciphers(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    module_state *ms = get_state(module);
    size_t n;
    const pcb_transform *t = pcb_transforms(&n);
    PyObject *list = PyList_New(0);
    if (list == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (!pcb_transform_available(&ms->cache, &t[i]))
            continue;
        PyObject *s = PyUnicode_FromString(t[i].name);
        if (s == NULL || PyList_Append(list, s) < 0) {
            Py_XDECREF(s);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(s);
    }
    return list;
}

static PyObject *core_tea_impls(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    PyObject *list = PyList_New(0);
    if (list == NULL)
        return NULL;
    for (int i = PCB_TEA_IMPL_SCALAR; i <= PCB_TEA_IMPL_AVX512; i++) {
        if (!pcb_tea_impl_available((pcb_tea_impl)i))
            continue;
        PyObject *s = PyUnicode_FromString(pcb_tea_impl_name((pcb_tea_impl)i));
        if (s == NULL || PyList_Append(list, s) < 0) {
            Py_XDECREF(s);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(s);
    }
    return list;
}

PyDoc_STRVAR(ciphers_doc, "ciphers() -> list[str]\n\n"
             "Canonical names of every transformation this build supports.");
PyDoc_STRVAR(encrypt_doc,
             "encrypt(transformation, key, data, *, iv=None, aad=None, rounds=None) -> bytes\n\n"
             "Encrypt one whole message. AEAD output is ciphertext || 16-byte tag;\n"
             "AES-SIV output is the 16-byte synthetic IV || ciphertext.");
PyDoc_STRVAR(decrypt_doc,
             "decrypt(transformation, key, data, *, iv=None, aad=None, rounds=None) -> bytes\n\n"
             "Decrypt one whole message; raises DecryptionError when a tag, synthetic IV\n"
             "or padding does not check out.");
PyDoc_STRVAR(measure_doc,
             "measure(transformation, *, op='enc', payload=10485760, key_bits=None, rounds=None,\n"
             "        scope='message', iv_len=None, min_time=0.05, repeats=7, warmup=-1.0,\n"
             "        check_only=False) -> dict | None\n\n"
             "Time a kernel in C with the GIL released; returns the raw samples.\n"
             "check_only=True validates the arguments and returns None.\n"
             "Use pycipherbench.measure() for a Measurement.");
PyDoc_STRVAR(tea_impls_doc, "tea_impls() -> list[str]\n\n"
             "The optimized TEA/XTEA implementations this CPU can run, slowest first.");

static PyMethodDef core_methods[] = {
    {"ciphers", core_ciphers, METH_NOARGS, ciphers_doc},
    {"encrypt", (PyCFunction)(void (*)(void))core_encrypt, METH_VARARGS | METH_KEYWORDS, encrypt_doc},
    {"decrypt", (PyCFunction)(void (*)(void))core_decrypt, METH_VARARGS | METH_KEYWORDS, decrypt_doc},
    {"measure", (PyCFunction)(void (*)(void))core_measure, METH_VARARGS | METH_KEYWORDS, measure_doc},
    {"tea_impls", core_tea_impls, METH_NOARGS, tea_impls_doc},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(CipherBenchError_doc, "Base class of every error pycipherbench raises itself.");
PyDoc_STRVAR(DecryptionError_doc,
             "A ciphertext failed to decrypt: wrong tag or synthetic IV, bad padding, or a\n"
             "length the mode cannot produce. Also a ValueError.");
PyDoc_STRVAR(UnsupportedCipherError_doc,
             "An unknown transformation name, or one this OpenSSL cannot provide.\n"
             "Also a ValueError.");
PyDoc_STRVAR(OpenSSLError_doc, "OpenSSL failed unexpectedly; the message carries its reason.");

static int add_exception(PyObject *module, PyObject **slot, const char *name, const char *doc,
                         PyObject *bases)
{
    char qualname[96];
    snprintf(qualname, sizeof qualname, "pycipherbench.%s", name);
    *slot = PyErr_NewExceptionWithDoc(qualname, doc, bases, NULL);
    if (*slot == NULL)
        return -1;
    return PyModule_AddObjectRef(module, name, *slot);
}

static pcb_tea_impl tea_impl_from_env(void)
{
    const char *v = getenv("PCB_TEA_IMPL");
    if (v == NULL || *v == '\0' || strcmp(v, "auto") == 0)
        return PCB_TEA_IMPL_AUTO;
    for (int i = PCB_TEA_IMPL_SCALAR; i <= PCB_TEA_IMPL_AVX512; i++)
        if (strcmp(v, pcb_tea_impl_name((pcb_tea_impl)i)) == 0)
            return (pcb_tea_impl)i;
    return PCB_TEA_IMPL_REF; /* marker for "unknown", reported by the caller */
}

static int core_exec(PyObject *module)
{
    module_state *ms = get_state(module);
    pcb_status st = {0};
    PyObject *bases = NULL;

    ms->tea_impl = tea_impl_from_env();
    if (ms->tea_impl == PCB_TEA_IMPL_REF) {
        PyErr_Format(PyExc_ImportError,
                     "PCB_TEA_IMPL=%s is not one of auto, scalar, avx2, avx512", getenv("PCB_TEA_IMPL"));
        return -1;
    }
    if (ms->tea_impl != PCB_TEA_IMPL_AUTO && !pcb_tea_impl_available(ms->tea_impl)) {
        PyErr_Format(PyExc_ImportError, "PCB_TEA_IMPL=%s: this CPU cannot run it",
                     getenv("PCB_TEA_IMPL"));
        return -1;
    }
    if (ms->tea_impl == PCB_TEA_IMPL_AUTO)
        ms->tea_impl = pcb_tea_best_impl();

    if (add_exception(module, &ms->CipherBenchError, "CipherBenchError", CipherBenchError_doc, NULL) < 0)
        return -1;
    bases = PyTuple_Pack(2, ms->CipherBenchError, PyExc_ValueError);
    if (bases == NULL)
        return -1;
    int err = add_exception(module, &ms->DecryptionError, "DecryptionError", DecryptionError_doc, bases) < 0
              || add_exception(module, &ms->UnsupportedCipherError, "UnsupportedCipherError",
                               UnsupportedCipherError_doc, bases) < 0
              || add_exception(module, &ms->OpenSSLError, "OpenSSLError", OpenSSLError_doc,
                               ms->CipherBenchError) < 0;
    Py_DECREF(bases);
    if (err)
        return -1;

    if (!pcb_evp_cache_init(&ms->cache, &st)) {
        pcb_evp_cache_free(&ms->cache);
        PyErr_Format(PyExc_ImportError, "pycipherbench cannot start OpenSSL: %s", st.msg);
        return -1;
    }
    ms->cache_ready = 1;
    if (pcb_store_py_exec(module, ms) < 0)
        return -1;

    if (PyModule_AddStringConstant(module, "OPENSSL_VERSION", OpenSSL_version(OPENSSL_VERSION)) < 0
        || PyModule_AddStringConstant(module, "OPENSSL_BUILD_VERSION", OPENSSL_VERSION_TEXT) < 0
        || PyModule_AddStringConstant(module, "COMPILER", PCB_COMPILER) < 0
        || PyModule_AddStringConstant(module, "TEA_IMPL", pcb_tea_impl_name(ms->tea_impl)) < 0
        || PyModule_AddStringConstant(module, "B64_IMPL", pcb_b64_impl_name(pcb_b64_active_impl())) < 0
        || PyModule_AddIntConstant(module, "TSC_AVAILABLE", pcb_tsc_available()) < 0
        || PyModule_AddObjectRef(module, "LEGACY_PROVIDER",
                                 ms->cache.legacy_provider ? Py_True : Py_False) < 0)
        return -1;
    return 0;
}

static int core_traverse(PyObject *module, visitproc visit, void *arg)
{
    module_state *ms = get_state(module);
    Py_VISIT(ms->CipherBenchError);
    Py_VISIT(ms->DecryptionError);
    Py_VISIT(ms->UnsupportedCipherError);
    Py_VISIT(ms->OpenSSLError);
    return pcb_store_py_traverse(ms, visit, arg);
}

static int core_clear(PyObject *module)
{
    module_state *ms = get_state(module);
    Py_CLEAR(ms->CipherBenchError);
    Py_CLEAR(ms->DecryptionError);
    Py_CLEAR(ms->UnsupportedCipherError);
    Py_CLEAR(ms->OpenSSLError);
    pcb_store_py_clear(ms);
    return 0;
}

static void core_free(void *module)
{
    module_state *ms = get_state((PyObject *)module);
    core_clear((PyObject *)module);
    if (ms->cache_ready) {
        pcb_evp_cache_free(&ms->cache);
        ms->cache_ready = 0;
    }
}

static PyModuleDef_Slot core_slots[] = {
    {Py_mod_exec, core_exec},
    {0, NULL},
};

PyDoc_STRVAR(core_doc, "pycipherbench's C core: cipher kernels over OpenSSL 3 and our TEA/XTEA,\n"
             "and a timing engine that runs them with the GIL released.");

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "pycipherbench._core",
    .m_doc = core_doc,
    .m_size = sizeof(module_state),
    .m_methods = core_methods,
    .m_slots = core_slots,
    .m_traverse = core_traverse,
    .m_clear = core_clear,
    .m_free = core_free,
};

PyMODINIT_FUNC PyInit__core(void)
{
    return PyModuleDef_Init(&core_module);
}
