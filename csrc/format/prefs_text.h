/*
 * format/prefs_text.h — internal to format/prefs_*: the number text Android
 * writes and reads in SharedPreferences files, and the byte-class table
 * macros the writer and parser build their 256-entry tables with.
 *
 * Owns: Java's Integer/Long.toString and parseInt/parseLong, and
 * Float.toString / Float.parseFloat for the decimal syntax Java writes,
 * converted with correct rounding independently of the C locale. Pure
 * functions: thread-safe.
 */
#ifndef PCB_FORMAT_PREFS_TEXT_H
#define PCB_FORMAT_PREFS_TEXT_H

#include <stddef.h>
#include <stdint.h>

#define E4(F, c) F(c), F((c) + 1), F((c) + 2), F((c) + 3)
#define E16(F, c) E4(F, c), E4(F, (c) + 4), E4(F, (c) + 8), E4(F, (c) + 12)
#define E64(F, c) E16(F, c), E16(F, (c) + 16), E16(F, (c) + 32), E16(F, (c) + 48)
#define E256(F) { E64(F, 0), E64(F, 64), E64(F, 128), E64(F, 192) }

/* Writes v in decimal to out (at least 21 bytes); returns the length. */
size_t pcb_i64_to_str(int64_t v, char *out);
/* Java's Integer/Long.parseLong syntax: [+-]?[0-9]+, magnitude at most
 * neg_max for negatives and pos_max for the others. 0 ok, -1 invalid. */
int pcb_parse_java_int(const char *s, size_t n, uint64_t pos_max, uint64_t neg_max, int64_t *out);
/* Float.parseFloat (see prefs_text.c); 0 ok, -1 invalid. */
int pcb_parse_java_float(const char *s, size_t n, float *out);
/* Float.toString into out (at least 32 bytes); returns the length. */
size_t pcb_format_java_float(float v, char *out);

#endif /* PCB_FORMAT_PREFS_TEXT_H */
