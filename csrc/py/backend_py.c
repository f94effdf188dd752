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

#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>

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
        PyErr_Format(PyExc_ValueError,
                     "unknown backend '%s'; expected openssl, sodium, nettle, gcrypt, mbedtls, floor, "
                     "py:cryptography, py:pycryptodome or py:pynacl (see pycipherbench.backends())",
                     name);
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
    return Py_BuildValue("{s:s,s:z,s:O,s:N,s:N,s:z,s:s,s:s}", "name", pcb_backend_name(b),
                         "version", version, "available", absent ? Py_False : Py_True,
                         "transformations", names, "hw_aes", hw_value(hw), "missing", absent,
                         "apt", pcb_backend_apt(b), "kind", "c");
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

PyMethodDef pcb_backend_functions[] = {
    {"backends", core_backends, METH_NOARGS,
     "backends() -> list[dict]\n\nThe C crypto libraries this build knows: name, version,\n"
     "available, transformations, hw_aes (True/False/None = unknown), missing (why not\n"
     "available), apt (the Debian package that adds it), kind ('c')."},
    {NULL, NULL, 0, NULL},
};
