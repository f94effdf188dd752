/*
 * py/mmkv_py.c — the MMKV design model (store/mmkv.h) as module functions over a
 * capsule: mmkv_open, mmkv_get, mmkv_contains, mmkv_put, mmkv_sync, mmkv_info,
 * mmkv_close. pycipherbench/engines.py wraps them (the "mmkv" engine, a MODEL).
 *
 * Thread safety: with the GIL; open, put and sync release it (the handle's mutex
 * guards the model, and a busy count keeps mmkv_close from freeing a handle another
 * thread is inside). Units: bytes.
 */
#include "py/module.h"
#include "py/pyutil.h"

#include "store/mmkv.h"

#define CAPSULE_NAME "pycipherbench._core.mmkv"

typedef struct {
    pcb_mmkv *m;
    int busy;
} mmkv_box;

static void box_free(PyObject *cap)
{
    mmkv_box *b = PyCapsule_GetPointer(cap, CAPSULE_NAME);
    if (b) {
        pcb_mmkv_close(b->m);
        PyMem_Free(b);
    }
}

static mmkv_box *box_arg(PyObject *cap)
{
    mmkv_box *b = PyCapsule_IsValid(cap, CAPSULE_NAME) ? PyCapsule_GetPointer(cap, CAPSULE_NAME) : NULL;
    if (!b) {
        PyErr_SetString(PyExc_TypeError, "expected a handle from _core.mmkv_open");
        return NULL;
    }
    if (!b->m) {
        PyErr_SetString(PyExc_ValueError, "the MMKV model handle is closed");
        return NULL;
    }
    return b;
}

static PyObject *py_open(PyObject *module, PyObject *args)
{
    PyObject *path_obj, *key_obj;
    if (!PyArg_ParseTuple(args, "O&O:mmkv_open", PyUnicode_FSConverter, &path_obj, &key_obj))
        return NULL;
    Py_buffer key = {0};
    if (!pcb_buffer_arg(key_obj, "crypt_key", 1, &key)) {
        if (key.obj)
            PyBuffer_Release(&key);
        Py_DECREF(path_obj);
        return NULL;
    }
    pcb_status st = {0};
    pcb_mmkv *m = NULL;
    int ok;
    const char *path = PyBytes_AS_STRING(path_obj);
    Py_BEGIN_ALLOW_THREADS
    ok = pcb_mmkv_open(path, key.buf, (size_t)key.len, &m, &st);
    Py_END_ALLOW_THREADS
    if (key.obj)
        PyBuffer_Release(&key);
    Py_DECREF(path_obj);
    if (!ok)
        return pcb_raise_status(pcb_module_state(module), &st);
    mmkv_box *b = PyMem_Calloc(1, sizeof *b);
    if (!b) {
        pcb_mmkv_close(m);
        return PyErr_NoMemory();
    }
    b->m = m;
    PyObject *cap = PyCapsule_New(b, CAPSULE_NAME, box_free);
    if (!cap) {
        pcb_mmkv_close(m);
        PyMem_Free(b);
    }
    return cap;
}

static PyObject *py_get(PyObject *module, PyObject *args)
{
    PyObject *cap;
    Py_buffer name;
    if (!PyArg_ParseTuple(args, "Oy*:mmkv_get", &cap, &name))
        return NULL;
    mmkv_box *b = box_arg(cap);
    PyObject *out = NULL;
    if (b) {
        pcb_status st = {0};
        uint8_t *v = NULL;
        size_t n = 0;
        int r = pcb_mmkv_get(b->m, name.buf, (size_t)name.len, &v, &n, &st);
        if (r < 0)
            pcb_raise_status(pcb_module_state(module), &st);
        else if (r == 0)
            out = Py_NewRef(Py_None);
        else
            out = PyBytes_FromStringAndSize((const char *)v, (Py_ssize_t)n);
        free(v);
    }
    PyBuffer_Release(&name);
    return out;
}

static PyObject *py_contains(PyObject *module, PyObject *args)
{
    PyObject *cap;
    Py_buffer name;
    if (!PyArg_ParseTuple(args, "Oy*:mmkv_contains", &cap, &name))
        return NULL;
    mmkv_box *b = box_arg(cap);
    PyObject *out = NULL;
    if (b) {
        pcb_status st = {0};
        int r = pcb_mmkv_contains(b->m, name.buf, (size_t)name.len, &st);
        out = r < 0 ? pcb_raise_status(pcb_module_state(module), &st) : PyBool_FromLong(r);
    }
    PyBuffer_Release(&name);
    return out;
}

static PyObject *py_put(PyObject *module, PyObject *args)
{
    PyObject *cap;
    Py_buffer name, value;
    if (!PyArg_ParseTuple(args, "Oy*y*:mmkv_put", &cap, &name, &value))
        return NULL;
    mmkv_box *b = box_arg(cap);
    int ok = 0;
    pcb_status st = {0};
    if (b) {
        b->busy++;
        Py_BEGIN_ALLOW_THREADS
        ok = pcb_mmkv_put(b->m, name.buf, (size_t)name.len, value.buf, (size_t)value.len, &st);
        Py_END_ALLOW_THREADS
        b->busy--;
    }
    PyBuffer_Release(&name);
    PyBuffer_Release(&value);
    if (!b)
        return NULL;
    return ok ? Py_NewRef(Py_None) : pcb_raise_status(pcb_module_state(module), &st);
}

static PyObject *py_sync(PyObject *module, PyObject *cap)
{
    mmkv_box *b = box_arg(cap);
    if (!b)
        return NULL;
    pcb_status st = {0};
    int ok;
    b->busy++;
    Py_BEGIN_ALLOW_THREADS
    ok = pcb_mmkv_sync(b->m, &st);
    Py_END_ALLOW_THREADS
    b->busy--;
    return ok ? Py_NewRef(Py_None) : pcb_raise_status(pcb_module_state(module), &st);
}

static PyObject *py_info(PyObject *module, PyObject *cap)
{
    (void)module;
    mmkv_box *b = box_arg(cap);
    if (!b)
        return NULL;
    return Py_BuildValue("{s:n,s:n,s:n}", "count", (Py_ssize_t)pcb_mmkv_count(b->m),
                         "file_bytes", (Py_ssize_t)pcb_mmkv_file_size(b->m),
                         "used_bytes", (Py_ssize_t)pcb_mmkv_used(b->m));
}

static PyObject *py_close(PyObject *module, PyObject *cap)
{
    (void)module;
    mmkv_box *b = PyCapsule_IsValid(cap, CAPSULE_NAME) ? PyCapsule_GetPointer(cap, CAPSULE_NAME) : NULL;
    if (!b) {
        PyErr_SetString(PyExc_TypeError, "expected a handle from _core.mmkv_open");
        return NULL;
    }
    if (b->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the MMKV model handle is in use by another thread");
        return NULL;
    }
    pcb_mmkv_close(b->m);
    b->m = NULL;
    return Py_NewRef(Py_None);
}

PyMethodDef pcb_mmkv_functions[] = {
    {"mmkv_open", py_open, METH_VARARGS,
     "mmkv_open(path, crypt_key, /) -> handle\n\nThe MMKV design MODEL (not MMKV's code); "
     "crypt_key None or 1..16 bytes (AES-128-CFB, unauthenticated)."},
    {"mmkv_get", py_get, METH_VARARGS, "mmkv_get(handle, name, /) -> bytes | None"},
    {"mmkv_contains", py_contains, METH_VARARGS, "mmkv_contains(handle, name, /) -> bool"},
    {"mmkv_put", py_put, METH_VARARGS,
     "mmkv_put(handle, name, value, /) -> None\n\nAppend a record (b'' removes)."},
    {"mmkv_sync", py_sync, METH_O, "mmkv_sync(handle, /) -> None\n\nmsync both files."},
    {"mmkv_info", py_info, METH_O, "mmkv_info(handle, /) -> dict\n\ncount, file_bytes, used_bytes."},
    {"mmkv_close", py_close, METH_O, "mmkv_close(handle, /) -> None\n\nUnmap, wipe the key. Idempotent."},
    {NULL, NULL, 0, NULL},
};
