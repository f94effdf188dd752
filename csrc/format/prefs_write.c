/*
 * format/prefs_write.c — the SharedPreferences XML writer, in Android's layout
 * (see prefs_xml.h).
 */
#include "format/prefs_xml.h"

#include <string.h>

#include "format/prefs_text.h"

#define APPEND_LIT(b, lit) pcb_buf_append((b), (lit), sizeof(lit) - 1)

/* ======================================================================== */
/* Writer                                                                   */
/* ======================================================================== */

/* 1 for the bytes the writer escapes: & < > " ' and all C0 controls (as
 * Android's FastXmlSerializer does; a literal TAB/LF/CR would not survive an
 * XML parser's whitespace normalisation inside attribute values). */
#define NEEDS_ESC(c) ((c) < 0x20 || (c) == '&' || (c) == '<' || (c) == '>' || (c) == '"' || (c) == '\'')
static const unsigned char esc_need[256] = E256(NEEDS_ESC);

static void put_escaped(pcb_buf *b, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = u[i];
        if (!esc_need[c])
            continue;
        pcb_buf_append(b, s + run, i - run);
        run = i + 1;
        switch (c) {
        case '&': APPEND_LIT(b, "&amp;"); break;
        case '<': APPEND_LIT(b, "&lt;"); break;
        case '>': APPEND_LIT(b, "&gt;"); break;
        case '"': APPEND_LIT(b, "&quot;"); break;
        case '\'': APPEND_LIT(b, "&apos;"); break;
        default: {
            /* NUL comes out as "&#0;" like Android writes it; it is not
             * XML and the parser rejects it (see the header). */
            char ref[8] = "&#";
            size_t k = 2;
            if (c >= 10)
                ref[k++] = (char)('0' + c / 10);
            ref[k++] = (char)('0' + c % 10);
            ref[k++] = ';';
            pcb_buf_append(b, ref, k);
        }
        }
    }
    pcb_buf_append(b, s + run, n - run);
}

void pcb_prefs_begin(pcb_buf *b)
{
    APPEND_LIT(b, "<?xml version='1.0' encoding='utf-8' standalone='yes' ?>\n<map>\n");
}

void pcb_prefs_end(pcb_buf *b) { APPEND_LIT(b, "</map>\n"); }

/* `    <TAG name="NAME"` */
static void open_named(pcb_buf *b, const char *tag, size_t tag_len, const char *name, size_t name_len)
{
    APPEND_LIT(b, "    <");
    pcb_buf_append(b, tag, tag_len);
    APPEND_LIT(b, " name=\"");
    put_escaped(b, name, name_len);
    APPEND_LIT(b, "\"");
}

void pcb_prefs_string(pcb_buf *b, const char *name, size_t name_len, const char *text, size_t text_len)
{
    open_named(b, "string", 6, name, name_len);
    APPEND_LIT(b, ">");
    put_escaped(b, text, text_len);
    APPEND_LIT(b, "</string>\n");
}

static void put_value(pcb_buf *b, const char *tag, size_t tag_len, const char *name, size_t name_len,
                      const char *val, size_t val_len)
{
    open_named(b, tag, tag_len, name, name_len);
    APPEND_LIT(b, " value=\"");
    pcb_buf_append(b, val, val_len);
    APPEND_LIT(b, "\" />\n");
}

void pcb_prefs_int(pcb_buf *b, const char *name, size_t name_len, int32_t v)
{
    char num[24];
    put_value(b, "int", 3, name, name_len, num, pcb_i64_to_str(v, num));
}

void pcb_prefs_long(pcb_buf *b, const char *name, size_t name_len, int64_t v)
{
    char num[24];
    put_value(b, "long", 4, name, name_len, num, pcb_i64_to_str(v, num));
}

void pcb_prefs_float(pcb_buf *b, const char *name, size_t name_len, float v)
{
    char num[32];
    put_value(b, "float", 5, name, name_len, num, pcb_format_java_float(v, num));
}

void pcb_prefs_boolean(pcb_buf *b, const char *name, size_t name_len, int v)
{
    if (v)
        put_value(b, "boolean", 7, name, name_len, "true", 4);
    else
        put_value(b, "boolean", 7, name, name_len, "false", 5);
}

void pcb_prefs_set(pcb_buf *b, const char *name, size_t name_len, size_t n,
                   const char *const *members, const size_t *member_lens)
{
    open_named(b, "set", 3, name, name_len);
    if (n == 0) {
        APPEND_LIT(b, " />\n");
        return;
    }
    APPEND_LIT(b, ">\n");
    for (size_t i = 0; i < n; i++) {
        APPEND_LIT(b, "        <string>");
        put_escaped(b, members[i], member_lens[i]);
        APPEND_LIT(b, "</string>\n");
    }
    APPEND_LIT(b, "    </set>\n");
}

