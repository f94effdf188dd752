/*
 * py/module.c — pycipherbench._core: the module itself.
 *
 * Owns: the module definition and its state's life: multi-phase init in
 * single-purpose exec slots (the exception types; the fetched-cipher cache
 * and the TEA implementation chosen at import; the constants; the store
 * options' table read from pycipherbench._options; the store's types; the
 * functions of cipher_py.c and store_bench_py.c), what the interpreter is
 * told about the module (its slots), traverse/clear/free, and PyInit__core,
 * the one exported symbol.
 */
#include "py/pyutil.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/opensslv.h>

#include "common/timing.h"
#include "crypto/tea.h"
#include "format/b64.h"

#if defined(__clang__)
#define PCB_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define PCB_COMPILER "gcc " __VERSION__
#else
#define PCB_COMPILER "unknown"
#endif

/* ------------------------------------------------------------ exceptions */

PyDoc_STRVAR(CipherBenchError_doc, "Base class of every error pycipherbench raises itself.");
PyDoc_STRVAR(DecryptionError_doc,
             "A ciphertext failed to decrypt: wrong tag or synthetic IV, bad padding, or a\n"
             "length the mode cannot produce. Also a ValueError.");
PyDoc_STRVAR(UnsupportedCipherError_doc,
             "An unknown transformation name, or one this OpenSSL cannot provide.\n"
             "Also a ValueError.");
PyDoc_STRVAR(OpenSSLError_doc, "OpenSSL failed unexpectedly; the message carries its reason.");
PyDoc_STRVAR(StoreFormatError_doc,
             "A store file that is not a valid SharedPreferences XML file for these options\n"
             "(truncated, not XML, wrong element types). The file is left untouched.");
PyDoc_STRVAR(ReservedNameError_doc,
             "A read or write of one of ESP's reserved keyset names.");

enum {
    BASE_EXCEPTION, /* Exception: the root, CipherBenchError */
    BASE_ROOT,      /* CipherBenchError */
    BASE_VALUE      /* (CipherBenchError, ValueError) */
};

typedef struct {
    size_t offset; /* of its PyObject * in module_state */
    const char *name, *qualname, *doc;
    int base;
} exception_def;

/* Created in this order (the root first); every one is a module attribute. */
static const exception_def exception_defs[] = {
    {offsetof(module_state, CipherBenchError), "CipherBenchError",
     "pycipherbench.CipherBenchError", CipherBenchError_doc, BASE_EXCEPTION},
    {offsetof(module_state, DecryptionError), "DecryptionError",
     "pycipherbench.DecryptionError", DecryptionError_doc, BASE_VALUE},
    {offsetof(module_state, UnsupportedCipherError), "UnsupportedCipherError",
     "pycipherbench.UnsupportedCipherError", UnsupportedCipherError_doc, BASE_VALUE},
    {offsetof(module_state, OpenSSLError), "OpenSSLError",
     "pycipherbench.OpenSSLError", OpenSSLError_doc, BASE_ROOT},
    {offsetof(module_state, StoreFormatError), "StoreFormatError",
     "pycipherbench.store.StoreFormatError", StoreFormatError_doc, BASE_VALUE},
    {offsetof(module_state, ReservedNameError), "ReservedNameError",
     "pycipherbench.store.ReservedNameError", ReservedNameError_doc, BASE_VALUE},
};
#define N_EXCEPTIONS (sizeof exception_defs / sizeof exception_defs[0])

static PyObject **exception_slot(module_state *ms, size_t i)
{
    return (PyObject **)((char *)ms + exception_defs[i].offset);
}

static int exec_exceptions(PyObject *module)
{
    module_state *ms = pcb_module_state(module);
    PyObject *value_bases = NULL;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < N_EXCEPTIONS; i++) {
        const exception_def *d = &exception_defs[i];
        PyObject **slot = exception_slot(ms, i), *bases = NULL;
        if (d->base == BASE_ROOT)
            bases = ms->CipherBenchError;
        else if (d->base == BASE_VALUE) {
            if (value_bases == NULL)
                value_bases = PyTuple_Pack(2, ms->CipherBenchError, PyExc_ValueError);
            if ((bases = value_bases) == NULL) {
                rc = -1;
                break;
            }
        }
        *slot = PyErr_NewExceptionWithDoc(d->qualname, d->doc, bases, NULL);
        if (*slot == NULL || PyModule_AddObjectRef(module, d->name, *slot) < 0)
            rc = -1;
    }
    Py_XDECREF(value_bases);
    return rc;
}

/* ------------------------------------------------- cipher cache, TEA code */

static pcb_tea_impl tea_impl_from_env(void)
{
    const char *v = getenv("PCB_TEA_IMPL");
    if (v == NULL || *v == '\0' || strcmp(v, "auto") == 0)
        return PCB_TEA_IMPL_AUTO;
    for (int i = PCB_TEA_IMPL_SCALAR; i <= PCB_TEA_IMPL_LAST; i++)
        if (strcmp(v, pcb_tea_impl_name((pcb_tea_impl)i)) == 0)
            return (pcb_tea_impl)i;
    return PCB_TEA_IMPL_REF; /* marker for "unknown", reported by the caller */
}

static pthread_once_t backends_once = PTHREAD_ONCE_INIT;

/* The TEA implementation (PCB_TEA_IMPL, else the best this CPU runs) and
 * every cipher fetched once; ImportError if either is impossible. */
static int exec_engine(PyObject *module)
{
    module_state *ms = pcb_module_state(module);
    pcb_status st = {0};

    ms->tea_impl = tea_impl_from_env();
    if (ms->tea_impl == PCB_TEA_IMPL_REF) {
        PyErr_Format(PyExc_ImportError,
                     "PCB_TEA_IMPL=%s is not one of auto, scalar, avx2, avx512, neon", getenv("PCB_TEA_IMPL"));
        return -1;
    }
    if (ms->tea_impl != PCB_TEA_IMPL_AUTO && !pcb_tea_impl_available(ms->tea_impl)) {
        PyErr_Format(PyExc_ImportError, "PCB_TEA_IMPL=%s: this CPU cannot run it",
                     getenv("PCB_TEA_IMPL"));
        return -1;
    }
    if (ms->tea_impl == PCB_TEA_IMPL_AUTO)
        ms->tea_impl = pcb_tea_best_impl();

    if (!pcb_evp_cache_init(&ms->cache, &st)) {
        pcb_evp_cache_free(&ms->cache);
        PyErr_Format(PyExc_ImportError, "pycipherbench cannot start OpenSSL: %s", st.msg);
        return -1;
    }
    ms->cache_ready = 1;
    pthread_once(&backends_once, pcb_backends_init); /* process-wide tables: once */
    return 0;
}

/* ------------------------------------------------------------- the rest */

static int exec_constants(PyObject *module)
{
    module_state *ms = pcb_module_state(module);
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


static int exec_store_types(PyObject *module)
{
    return pcb_store_types_exec(module, pcb_module_state(module));
}

static int exec_kernel_types(PyObject *module)
{
    module_state *ms = pcb_module_state(module);
    return pcb_kernel_type_exec(module, ms) < 0 || pcb_store_kernel_type_exec(module, ms) < 0
           ? -1 : 0;
}

static int exec_functions(PyObject *module)
{
    if (PyModule_AddFunctions(module, pcb_cipher_functions) < 0
        || PyModule_AddFunctions(module, pcb_backend_functions) < 0
        || PyModule_AddFunctions(module, pcb_store_bench_functions) < 0
        || PyModule_AddFunctions(module, pcb_store_options_functions) < 0
        || PyModule_AddFunctions(module, pcb_inspect_functions) < 0
        || PyModule_AddFunctions(module, pcb_mmkv_functions) < 0
        || PyModule_AddFunctions(module, pcb_fault_functions) < 0)
        return -1;
    return 0;
}

static int core_traverse(PyObject *module, visitproc visit, void *arg)
{
    module_state *ms = pcb_module_state(module);
    for (size_t i = 0; i < N_EXCEPTIONS; i++)
        Py_VISIT(*exception_slot(ms, i));
    Py_VISIT(ms->StoreType);
    Py_VISIT(ms->EditorType);
    Py_VISIT(ms->KernelType);
    Py_VISIT(ms->StoreKernelType);
    return pcb_store_options_traverse(ms, visit, arg);
}

static int core_clear(PyObject *module)
{
    module_state *ms = pcb_module_state(module);
    for (size_t i = 0; i < N_EXCEPTIONS; i++)
        Py_CLEAR(*exception_slot(ms, i));
    Py_CLEAR(ms->StoreType);
    Py_CLEAR(ms->EditorType);
    Py_CLEAR(ms->KernelType);
    Py_CLEAR(ms->StoreKernelType);
    pcb_store_options_clear(ms);
    return 0;
}

static void core_free(void *module)
{
    module_state *ms = pcb_module_state((PyObject *)module);
    core_clear((PyObject *)module);
    if (ms->cache_ready) {
        pcb_evp_cache_free(&ms->cache);
        ms->cache_ready = 0;
    }
}

static PyModuleDef_Slot core_slots[] = {
    {Py_mod_exec, exec_exceptions},
    {Py_mod_exec, exec_engine},
    {Py_mod_exec, exec_constants},
    {Py_mod_exec, exec_store_types},
    {Py_mod_exec, exec_kernel_types},
    {Py_mod_exec, exec_functions},
#if PY_VERSION_HEX >= 0x030C0000
    /* Every Python object lives in module state or in heap types made per
     * module (so each interpreter gets a module of its own), and the
     * process-wide C state (the CPU probe, the Base64 decoder choice, the
     * backends' table and the store's wait hooks, each set once under
     * pthread_once; the store's fork hook; OpenSSL) holds no Python object.
     * Not yet a per-interpreter GIL: pcb_crypto_backend_arg (store_py.c)
     * still fills a function-static name table on every call, which two
     * interpreters running at once would race on; with that table local,
     * this can be Py_MOD_PER_INTERPRETER_GIL_SUPPORTED. */
    {Py_mod_multiple_interpreters, Py_MOD_MULTIPLE_INTERPRETERS_SUPPORTED},
#endif
#if PY_VERSION_HEX >= 0x030D0000
    /* Not verified without a GIL: a Store's claims have their own mutex
     * (py/store_py.h), but the argument converters and the Kernel types
     * still assume the GIL serializes a call's Python objects. */
    {Py_mod_gil, Py_MOD_GIL_USED},
#endif
    {0, NULL},
};

PyDoc_STRVAR(core_doc, "pycipherbench's C core: cipher kernels over OpenSSL 3 and our TEA/XTEA,\n"
             "and a timing engine that runs them with the GIL released.");

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "pycipherbench._core",
    .m_doc = core_doc,
    .m_size = sizeof(module_state),
    .m_slots = core_slots,
    .m_traverse = core_traverse,
    .m_clear = core_clear,
    .m_free = core_free,
};

PyMODINIT_FUNC PyInit__core(void)
{
    return PyModuleDef_Init(&core_module);
}
