/*
 * py/value_py.h — a store value between Python and ESP's plaintext
 * serialization.
 *
 * Owns: which Python objects each typed put takes (str; int in the int32 or
 * int64 range; float within float32's range; bool; an iterable of str, kept
 * once each in first-seen order) and the Python object each serialized type
 * gives back (str, set of str, int, float, bool). The serialization itself
 * (type ids, lengths, byte order) is format/value.h's. Lengths are bytes.
 *
 * Thread safety: call with the GIL held (they build Python objects).
 */
#ifndef PCB_PY_VALUE_PY_H
#define PCB_PY_VALUE_PY_H

#include "py/module.h"

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "format/prefs_xml.h"

/* v as a value of `type` into b (reset): 1, or 0 with TypeError/ValueError
 * (naming the put_* method) or MemoryError. */
int pcb_py_value_serialize(pcb_pref_type type, PyObject *v, pcb_buf *b);

/* The Python value of a serialized entry, *type_out its type id; NULL with
 * StoreFormatError if it is malformed (invalid UTF-8 included). */
PyObject *pcb_py_value_decode(module_state *ms, const uint8_t *v, size_t vl, uint32_t *type_out);

/* (type id, value) of a serialized entry; NULL as pcb_py_value_decode. */
PyObject *pcb_py_value_typed(module_state *ms, const uint8_t *v, size_t vl);

#endif /* PCB_PY_VALUE_PY_H */
