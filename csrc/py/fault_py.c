/*
 * py/fault_py.c — _core._fault: the tests' switch for common/sys.h's fault
 * plan. Tests only: it makes the store's own system calls fail on purpose.
 *
 * Thread safety: GIL held; arm it while no store operation runs (common/sys.h).
 */
#include "py/module.h"

#include <errno.h>
#include <string.h>

#include "common/sys.h"

static const char *const modes[] = {"once", "persist", "short"};

/* The accepted names, for messages and _fault_calls(). */
static PyObject *call_names(void)
{
    PyObject *t = PyTuple_New(PCB_SYS_COUNT);
    for (int i = 0; t != NULL && i < PCB_SYS_COUNT; i++) {
        PyObject *n = PyUnicode_FromString(pcb_sys_name(i));
        if (n == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, n);
    }
    return t;
}

/* calls: None (every call) or an iterable of names -> a mask; -1 on error. */
static int mask_of(PyObject *calls, uint64_t *mask)
{
    *mask = 0;
    if (calls == Py_None)
        return 0;
    if (PyUnicode_Check(calls)) {
        PyErr_SetString(PyExc_TypeError, "_fault: calls must be a sequence of call names "
                        "(('write', 'fsync'), not one string) or None");
        return -1;
    }
    PyObject *it = PyObject_GetIter(calls), *item;
    if (it == NULL)
        return -1;
    while ((item = PyIter_Next(it)) != NULL) {
        const char *name = PyUnicode_Check(item) ? PyUnicode_AsUTF8(item) : NULL;
        int id = name != NULL ? pcb_sys_find(name) : -1;
        if (id < 0) {
            if (!PyErr_Occurred()) {
                PyObject *all = call_names();
                if (all != NULL)
                    PyErr_Format(PyExc_ValueError, "_fault: unknown call %R; expected one of %R",
                                 item, all);
                Py_XDECREF(all);
            }
            Py_DECREF(item);
            Py_DECREF(it);
            return -1;
        }
        *mask |= (uint64_t)1 << id;
        Py_DECREF(item);
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

static PyObject *core_fault(PyObject *Py_UNUSED(module), PyObject *args, PyObject *kwargs)
{
    static char *kw[] = {"nth", "errno", "calls", "mode", NULL};
    unsigned long long nth = 0;
    int err = EIO;
    PyObject *calls = Py_None;
    const char *mode = "once";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$KiOs:_fault", kw, &nth, &err, &calls, &mode))
        return NULL;
    uint64_t mask, counted, fired;
    int m = -1;
    for (int i = 0; i < (int)(sizeof modes / sizeof modes[0]); i++)
        if (strcmp(mode, modes[i]) == 0)
            m = i;
    if (m < 0)
        return PyErr_Format(PyExc_ValueError, "_fault: mode must be 'once', 'persist' or "
                            "'short', not '%s'", mode);
    if (err <= 0 || err > 4095)
        return PyErr_Format(PyExc_ValueError, "_fault: errno must be a positive errno value "
                            "(errno.EIO, errno.ENOSPC, errno.EINTR ...), not %d", err);
    if (mask_of(calls, &mask) < 0)
        return NULL;
    pcb_sys_fault_disarm(&counted, &fired);
    if (nth > 0)
        pcb_sys_fault_arm(mask, (uint64_t)nth, err, (pcb_fault_mode)m);
    return Py_BuildValue("(KK)", (unsigned long long)counted, (unsigned long long)fired);
}

static PyObject *core_fault_calls(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    return call_names();
}

PyMethodDef pcb_fault_functions[] = {
    {"_fault", (PyCFunction)(void (*)(void))core_fault, METH_VARARGS | METH_KEYWORDS,
     "_fault(*, nth=0, errno=errno.EIO, calls=None, mode='once') -> (calls, fired)\n\n"
     "TESTS ONLY. Disarms the fault plan and returns what it counted since it was\n"
     "armed: the matching system calls made, and how many it failed. With nth >= 1,\n"
     "arms a new one: the nth call whose name is in calls (None: every call of the\n"
     "table, see _fault_calls()) fails with errno; mode 'persist' fails every later\n"
     "matching call too, 'short' makes the nth write/pwrite write half. errno=EINTR\n"
     "interrupts the call once (the store retries it). Process-wide; arm it while no\n"
     "store operation runs, and call _fault() to disarm."},
    {"_fault_calls", core_fault_calls, METH_NOARGS,
     "_fault_calls() -> tuple[str, ...]\n\nTESTS ONLY. The names of the system calls the store "
     "and the MMKV model\nmake through the fault table (common/sys.h), in table order."},
    {NULL, NULL, 0, NULL},
};
