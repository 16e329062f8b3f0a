/*
 * glibc's fortified entry points that Debian's static libjansson.a (built
 * with _FORTIFY_SOURCE) calls, for gantry-shim linked against musl, which
 * has none: each checks the destination size as glibc's does (aborting
 * where glibc would report a buffer overflow) and calls the plain function.
 * Only the musl build of the shim compiles this file (see CMakeLists.txt).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int __snprintf_chk(char *s, size_t maxlen, int flag, size_t slen, const char *fmt, ...);
int __vsnprintf_chk(char *s, size_t maxlen, int flag, size_t slen, const char *fmt, va_list ap);
int __sprintf_chk(char *s, int flag, size_t slen, const char *fmt, ...);
char *__strncpy_chk(char *dest, const char *src, size_t n, size_t destlen);

int __vsnprintf_chk(char *s, size_t maxlen, int flag, size_t slen, const char *fmt, va_list ap)
{
    (void)flag;
    if (maxlen > slen) {
        abort();
    }
    return vsnprintf(s, maxlen, fmt, ap);
}

int __snprintf_chk(char *s, size_t maxlen, int flag, size_t slen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = __vsnprintf_chk(s, maxlen, flag, slen, fmt, ap);
    va_end(ap);
    return n;
}

int __sprintf_chk(char *s, int flag, size_t slen, const char *fmt, ...)
{
    (void)flag;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(s, slen, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= slen) {
        abort();
    }
    return n;
}

char *__strncpy_chk(char *dest, const char *src, size_t n, size_t destlen)
{
    if (n > destlen) {
        abort();
    }
    return strncpy(dest, src, n);
}
