/*
 * py/backend_py.c — the crypto libraries as Python sees them: backends()
 * and the `backend=` argument of encrypt, decrypt, Kernel and check_kernel.
 *
 * Owns: the backend argument's rules (a C library by name; a "py:<lib>" name
 * is refused, pointing to the package's API: pycipherbench/__init__.py and
 * _measure.py send those to pycipherbench._pybackends before _core is
 * called, so the C core imports no Python) and the list backends() returns.
 * What each library supports is crypto/backend's.
 */
#include "py/pyutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>

#include "common/cpu.h"
#include "common/timing.h"
#include "crypto/backend.h"

int pcb_backend_arg(const char *name, int *backend)
{
    if (strncmp(name, "py:", 3) == 0) {
        /* The Python libraries are the package's (pycipherbench/_pybackends.py, dispatched
         * before _core is called): the C core knows none of them. */
        PyErr_Format(PyExc_ValueError,
                     "backend '%s' is a Python library, timed in Python: _core runs the C "
                     "libraries only; use pycipherbench.encrypt(), pycipherbench.decrypt() or "
                     "pycipherbench.measure() with backend='%s'", name, name);
        return 0;
    }
    int b = pcb_backend_find(name);
    if (b < 0) {
        char names[256] = "";
        size_t n = 0;
        for (int i = 0; i < PCB_BK_COUNT && n < sizeof names; i++)
            n += (size_t)snprintf(names + n, sizeof names - n, "%s, ", pcb_backend_name((pcb_backend)i));
        PyErr_Format(PyExc_ValueError,
                     "unknown backend '%s'; expected %sor a Python library's py:<name> (see "
                     "pycipherbench.backends())", name, names);
        return 0;
    }
    *backend = b;
    return 1;
}

static int hw_aes_openssl(void)
{
#if defined(__x86_64__) || defined(__i386__)
    const char *mask = getenv("OPENSSL_ia32cap");
    return __builtin_cpu_supports("aes") && !(mask && mask[0]);
#elif defined(__aarch64__)
    const char *mask = getenv("OPENSSL_armcap"); /* replaces OpenSSL's detection */
    return (pcb_cpu_features() & PCB_CPU_ARM_AES) && !(mask && mask[0]);
#else
    const char *mask = getenv("OPENSSL_armcap");
    return mask && mask[0] ? 0 : -1;
#endif
}

static PyObject *hw_value(int v)
{
    return v < 0 ? Py_NewRef(Py_None) : PyBool_FromLong(v);
}

/* One backend's dict. */
static PyObject *backend_dict(module_state *ms, pcb_backend b)
{
    const pcb_backend_ops *ops = pcb_backend_get(b);
    const char *absent = pcb_backend_absent_reason(b);
    const char *version = b == PCB_BK_OPENSSL ? OpenSSL_version(OPENSSL_VERSION_STRING)
                          : ops ? ops->version() : NULL;
    int hw = b == PCB_BK_OPENSSL ? hw_aes_openssl() : ops ? ops->hw_aes() : -1;
    size_t n;
    const pcb_transform *t = pcb_transforms(&n);
    PyObject *names = PyList_New(0);
    for (size_t i = 0; names != NULL && i < n; i++) {
        if (!pcb_backend_supports(b, &ms->cache, &t[i], 0))
            continue;
        PyObject *s = PyUnicode_FromString(t[i].name);
        if (s == NULL || PyList_Append(names, s) < 0)
            Py_CLEAR(names);
        Py_XDECREF(s);
    }
    if (names == NULL)
        return NULL;
    return Py_BuildValue("{s:s,s:s,s:z,s:O,s:N,s:N,s:z,s:s,s:s}", "name", pcb_backend_name(b),
                         "label", pcb_backend_label(b), "version", version,
                         "available", absent ? Py_False : Py_True, "transformations", names,
                         "hw_aes", hw_value(hw), "missing", absent, "apt", pcb_backend_apt(b),
                         "kind", "c");
}

static PyObject *core_backends(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    module_state *ms = pcb_module_state(module);
    PyObject *list = PyList_New(0);
    for (int b = 0; list != NULL && b < PCB_BK_COUNT; b++) {
        PyObject *d = backend_dict(ms, (pcb_backend)b);
        if (d == NULL || PyList_Append(list, d) < 0)
            Py_CLEAR(list);
        Py_XDECREF(d);
    }
    return list;
}

/* cpu_info(): what this process's CPU probe and OpenSSL saw. */
static PyObject *core_cpu_info(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    char names[256];
    pcb_cpu_feature_names(names, sizeof names);
    const char *ossl = OPENSSL_info(OPENSSL_INFO_CPU_SETTINGS);
    return Py_BuildValue("{s:s,s:K,s:s,s:s,s:K,s:O}", "features", names,
                         "midr", (unsigned long long)pcb_cpu_midr(),
                         "openssl_cpu_settings", ossl ? ossl : "",
                         "counter", pcb_tsc_name(), "counter_hz", (unsigned long long)pcb_tsc_hz(),
                         "thread_switches", pcb_timing_has_nivcsw() ? Py_True : Py_False);
}

PyMethodDef pcb_backend_functions[] = {
    {"cpu_info", core_cpu_info, METH_NOARGS,
     "cpu_info() -> dict\n\nfeatures: the CPU features this process's probe found\n"
     "(space-separated, /proc/cpuinfo spelling; aarch64: from HWCAP); midr: aarch64's\n"
     "MIDR_EL1 (implementer, part; 0 elsewhere or unreadable); openssl_cpu_settings:\n"
     "OpenSSL's own report of the capability word it uses (OPENSSL_info\n"
     "CPU_SETTINGS), with ' env:...' when OPENSSL_ia32cap/OPENSSL_armcap set it;\n"
     "counter: the fixed-rate cycle counter read around kernels ('tsc', 'cntvct_el0'\n"
     "or ''), counter_hz its ticks per second where the CPU says (aarch64), else 0;\n"
     "thread_switches: whether samples count involuntary context switches (Linux\n"
     "RUSAGE_THREAD; without it the warnings that read them cannot fire)."},
    {"backends", core_backends, METH_NOARGS,
     "backends() -> list[dict]\n\nThe C crypto libraries this build knows (csrc/crypto/backends.def's\n"
     "rows, in order): name, label (the library's own name), version, available,\n"
     "transformations, hw_aes (True/False/None = unknown), missing (why not available),\n"
     "apt (the Debian package that adds it), kind ('c')."},
    {NULL, NULL, 0, NULL},
};
