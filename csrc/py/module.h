/*
 * pcb_module.h — what the module glue files share: the module state and the
 * mapping of pcb_status to Python exceptions. pcb_module.c owns the module;
 * pcb_store_py.c adds the store's types to it.
 */
#ifndef PCB_MODULE_H
#define PCB_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "crypto/cipher.h"

typedef struct {
    pcb_evp_cache cache;
    int cache_ready;
    pcb_tea_impl tea_impl;
    PyObject *CipherBenchError;
    PyObject *DecryptionError;
    PyObject *UnsupportedCipherError;
    PyObject *OpenSSLError;
    PyObject *StoreFormatError;
    PyObject *ReservedNameError;
    PyTypeObject *StoreType;
    PyTypeObject *EditorType;
} module_state;

/* An int argument in [lo, hi]: 1, or 0 with TypeError for non-ints (bool
 * included) or ValueError outside the range, naming `what`. */
int pcb_int_arg(PyObject *obj, const char *what, long long lo, long long hi, long long *out);

/* Sets the Python exception for st; returns NULL. */
PyObject *pcb_raise_status(module_state *ms, const pcb_status *st);

/* Adds Store, Editor, store_bench and the store's exceptions to the module. */
int pcb_store_py_exec(PyObject *module, module_state *ms);
int pcb_store_py_traverse(module_state *ms, visitproc visit, void *arg);
void pcb_store_py_clear(module_state *ms);


#endif /* PCB_MODULE_H */
