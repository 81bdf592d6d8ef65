// Weak forwarders for the C23 entry points glibc 2.38 introduced.
//
// The prebuilt V8 that github.com/tommie/v8go links was compiled against a
// glibc >= 2.38, whose headers redirect strtol/sscanf & co. to __isoc23_*
// symbols. Debian 12 ships glibc 2.36, which lacks them, so the link fails.
// Each definition here is weak: on a newer glibc the real symbol wins and
// these are never used. The C23 variants differ from the classic ones only
// in accepting "0b" binary prefixes, which V8 and ICU never parse.

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((weak)) long __isoc23_strtol(const char *s, char **end, int base) {
	return strtol(s, end, base);
}

__attribute__((weak)) long long __isoc23_strtoll(const char *s, char **end, int base) {
	return strtoll(s, end, base);
}

__attribute__((weak)) unsigned long __isoc23_strtoul(const char *s, char **end, int base) {
	return strtoul(s, end, base);
}

__attribute__((weak)) unsigned long long __isoc23_strtoull(const char *s, char **end, int base) {
	return strtoull(s, end, base);
}

__attribute__((weak)) int __isoc23_sscanf(const char *s, const char *format, ...) {
	va_list ap;
	va_start(ap, format);
	int n = vsscanf(s, format, ap);
	va_end(ap);
	return n;
}

__attribute__((weak)) int __isoc23_fscanf(FILE *stream, const char *format, ...) {
	va_list ap;
	va_start(ap, format);
	int n = vfscanf(stream, format, ap);
	va_end(ap);
	return n;
}
