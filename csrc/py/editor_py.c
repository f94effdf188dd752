/*
 * py/editor_py.c — _core.Editor: a batch of changes to a Store.
 *
 * Owns: the Editor heap type (its puts, removes, clear, commit and apply,
 * its lifetime). Values cross as ESP's plaintext serialization (py/value_py).
 *
 * Thread safety: GIL held, except around commit's write. Every method claims
 * the owning store (py/store_py.h) before it runs any Python code on its
 * arguments (a put_string_set iterable, a str subclass's __hash__ / __eq__),
 * so a close() from that code or another thread cannot free the store under
 * it; the pcb_edit itself has its own lock (store/store.h).
 */
#include "py/store_py.h"
#include "py/value_py.h"

typedef struct {
    PyObject_HEAD
    StoreObject *owner;
    pcb_edit *edit;
} EditorObject;

#define EDITOR_CLOSED_MSG "the editor's store is closed"

static PyObject *raise_st(PyObject *self, const pcb_status *st)
{
    return pcb_raise_status(pcb_type_state(self), st);
}

/* Claims the owning store: the edit, or NULL with ValueError if closed. */
static pcb_edit *editor_claim(EditorObject *eo, pcb_claim *c)
{
    if (eo->edit == NULL) {
        PyErr_SetString(PyExc_ValueError, EDITOR_CLOSED_MSG);
        return NULL;
    }
    return pcb_store_claim(eo->owner, c, EDITOR_CLOSED_MSG) != NULL ? eo->edit : NULL;
}

PyObject *pcb_editor_new(module_state *ms, StoreObject *so, pcb_edit *e)
{
    EditorObject *eo = PyObject_GC_New(EditorObject, ms->EditorType);
    if (eo == NULL) {
        PCB_WITH_GIL(pcb_edit_free(e));
        return NULL;
    }
    eo->owner = (StoreObject *)Py_NewRef(so);
    eo->edit = e;
    PyObject_GC_Track(eo);
    return (PyObject *)eo;
}

static PyObject *editor_put(EditorObject *eo, PyObject *const *args, Py_ssize_t nargs,
                            pcb_pref_type type, const char *fn)
{
    const char *name;
    Py_ssize_t nl;
    pcb_status st = {0};
    pcb_claim c;
    pcb_buf b;
    int ok;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s() takes exactly 2 arguments (name, value) (%zd given)",
                     fn, nargs);
        return NULL;
    }
    pcb_edit *e = editor_claim(eo, &c); /* before the value's Python code runs */
    if (e == NULL)
        return NULL;
    pcb_buf_init(&b);
    ok = pcb_entry_name_arg(args[0], &name, &nl) && pcb_py_value_serialize(type, args[1], &b);
    if (ok) {
        PCB_WITH_GIL(ok = pcb_edit_put(e, name, (size_t)nl, (const uint8_t *)b.data, b.len, &st));
        if (!ok)
            raise_st((PyObject *)eo, &st);
    }
    pcb_buf_free(&b);
    pcb_store_release(&c);
    return ok ? Py_NewRef((PyObject *)eo) : NULL;
}

#define PUT_METHOD(fn, type)                                                              \
    static PyObject *Editor_##fn(EditorObject *eo, PyObject *const *args, Py_ssize_t nargs) \
    {                                                                                      \
        return editor_put(eo, args, nargs, type, #fn);                                     \
    }
PUT_METHOD(put_string, PCB_PREF_STRING)
PUT_METHOD(put_int, PCB_PREF_INT)
PUT_METHOD(put_long, PCB_PREF_LONG)
PUT_METHOD(put_float, PCB_PREF_FLOAT)
PUT_METHOD(put_bool, PCB_PREF_BOOLEAN)
PUT_METHOD(put_string_set, PCB_PREF_STRING_SET)
#undef PUT_METHOD

static PyObject *Editor_remove(EditorObject *eo, PyObject *name_obj)
{
    const char *name;
    Py_ssize_t nl;
    pcb_status st = {0};
    pcb_claim c;
    int ok;
    pcb_edit *e = editor_claim(eo, &c);
    if (e == NULL)
        return NULL;
    if ((ok = pcb_entry_name_arg(name_obj, &name, &nl))) {
        PCB_WITH_GIL(ok = pcb_edit_remove(e, name, (size_t)nl, &st));
        if (!ok)
            raise_st((PyObject *)eo, &st);
    }
    pcb_store_release(&c);
    return ok ? Py_NewRef((PyObject *)eo) : NULL;
}

static PyObject *Editor_clear(EditorObject *eo, PyObject *Py_UNUSED(ignored))
{
    pcb_claim c;
    pcb_edit *e = editor_claim(eo, &c);
    if (e == NULL)
        return NULL;
    PCB_WITH_GIL(pcb_edit_clear(e));
    pcb_store_release(&c);
    return Py_NewRef((PyObject *)eo);
}

static PyObject *Editor_remove_unreadable(EditorObject *eo, PyObject *Py_UNUSED(ignored))
{
    pcb_claim c;
    pcb_edit *e = editor_claim(eo, &c);
    if (e == NULL)
        return NULL;
    PCB_WITH_GIL(pcb_edit_remove_unreadable(e));
    pcb_store_release(&c);
    return Py_NewRef((PyObject *)eo);
}

static PyObject *editor_commit(EditorObject *eo, int sync)
{
    pcb_status st = {0};
    pcb_claim c;
    int ok;
    pcb_edit *e = editor_claim(eo, &c);
    if (e == NULL)
        return NULL;
    PCB_INTERRUPTIBLE(ok = pcb_edit_commit(e, sync, &st));
    pcb_store_release(&c);
    if (!ok)
        return raise_st((PyObject *)eo, &st);
    if (sync)
        Py_RETURN_TRUE;
    Py_RETURN_NONE;
}

static PyObject *Editor_commit(EditorObject *eo, PyObject *Py_UNUSED(ignored))
{
    return editor_commit(eo, 1);
}

static PyObject *Editor_apply(EditorObject *eo, PyObject *Py_UNUSED(ignored))
{
    return editor_commit(eo, 0);
}

static void Editor_dealloc(EditorObject *eo)
{
    PyTypeObject *tp = Py_TYPE(eo);
    PyObject_GC_UnTrack(eo);
    if (eo->edit != NULL)
        PCB_WITH_GIL(pcb_edit_free(eo->edit)); /* touches no store: the registry only */
    Py_XDECREF(eo->owner);
    tp->tp_free(eo);
    Py_DECREF(tp);
}

static int Editor_traverse(EditorObject *eo, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(eo));
    Py_VISIT(eo->owner);
    return 0;
}

static PyMethodDef Editor_methods[] = {
    {"put_string", (PyCFunction)(void (*)(void))Editor_put_string, METH_FASTCALL, "put_string(name, value) -> Editor"},
    {"put_int", (PyCFunction)(void (*)(void))Editor_put_int, METH_FASTCALL, "put_int(name, value) -> Editor"},
    {"put_long", (PyCFunction)(void (*)(void))Editor_put_long, METH_FASTCALL, "put_long(name, value) -> Editor"},
    {"put_float", (PyCFunction)(void (*)(void))Editor_put_float, METH_FASTCALL, "put_float(name, value) -> Editor"},
    {"put_bool", (PyCFunction)(void (*)(void))Editor_put_bool, METH_FASTCALL, "put_bool(name, value) -> Editor"},
    {"put_string_set", (PyCFunction)(void (*)(void))Editor_put_string_set, METH_FASTCALL,
     "put_string_set(name, values) -> Editor"},
    {"remove", (PyCFunction)Editor_remove, METH_O, "remove(name) -> Editor"},
    {"clear", (PyCFunction)Editor_clear, METH_NOARGS, "clear() -> Editor"},
    {"remove_unreadable", (PyCFunction)Editor_remove_unreadable, METH_NOARGS,
     "remove_unreadable() -> Editor\n\nAt commit, remove every entry whose name does not decrypt."},
    {"commit", (PyCFunction)Editor_commit, METH_NOARGS,
     "commit() -> bool\n\nApply the changes and write them durably before returning."},
    {"apply", (PyCFunction)Editor_apply, METH_NOARGS,
     "apply() -> None\n\nApply the changes in memory now; a background thread writes them."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot Editor_slots[] = {
    {Py_tp_doc, (void *)"A batch of changes to a Store; puts are encrypted at once, as ESP does."},
    {Py_tp_dealloc, Editor_dealloc},
    {Py_tp_traverse, Editor_traverse},
    {Py_tp_methods, Editor_methods},
    {0, NULL},
};

PyType_Spec pcb_editor_spec = {
    .name = "pycipherbench._core.Editor",
    .basicsize = sizeof(EditorObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE
             | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = Editor_slots,
};
