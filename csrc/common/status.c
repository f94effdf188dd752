/*
 * common/status.c — filling a pcb_status (see status.h).
 */
#include "common/status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>

int pcb_fail(pcb_status *st, pcb_err code, const char *fmt, ...)
{
    va_list ap;
    st->code = code;
    va_start(ap, fmt);
    vsnprintf(st->msg, sizeof st->msg, fmt, ap);
    va_end(ap);
    return 0;
}

int pcb_fail_os(pcb_status *st, const char *fmt, ...)
{
    int err = errno;
    char what[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    st->code = PCB_E_OS;
    st->os_errno = err;
    snprintf(st->msg, sizeof st->msg, "%s: %s", what, strerror(err));
    return 0;
}

const char *pcb_openssl_reason(char *buf, unsigned long cap)
{
    unsigned long e = ERR_peek_last_error();
    const char *reason = e ? ERR_reason_error_string(e) : NULL;
    if (reason == NULL && e != 0) {
        ERR_error_string_n(e, buf, cap);
        reason = buf;
    }
    return reason ? reason : "no reason given by OpenSSL";
}

int pcb_fail_openssl(pcb_status *st, const char *what)
{
    char buf[256];
    pcb_fail(st, PCB_E_OPENSSL, "%s failed: %s", what, pcb_openssl_reason(buf, sizeof buf));
    ERR_clear_error();
    return 0;
}

int pcb_oom(pcb_status *st)
{
    return pcb_fail(st, PCB_E_MEMORY, "out of memory");
}
