#!/usr/bin/env bash
# Builds the python.wasm the engine embeds: CPython 3.11.2 compiled to
# wasm32-wasi at -O3 with pymalloc, Debian 12's clang-16 and wasi-libc, with zlib,
# bzip2, xz's liblzma and SQLite (3.46.1, Debian 13's: the first of Debian's
# that builds for WASI) linked in, plus its standard library as a stored zip
# (sources and unchecked-hash .pyc, so nothing is compiled at import).
#
#   deps/cpython/build.sh OUT_DIR
#
# Every input is pinned: the Debian source tarballs by sha256 (below), the
# toolchain by Debian package version (checked, installed with apt-get when
# missing). A finished build is cached under $CODE_RUNNER_CACHE (default
# ${XDG_CACHE_HOME:-~/.cache}/code-runner), keyed by this script's digest,
# so a warm `make deps` copies two files and compiles nothing.
set -euo pipefail

OUT=${1:?usage: build.sh OUT_DIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd) # the build changes directory
HERE=$(cd "$(dirname "$0")" && pwd)
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

# name|pool path|sha256
SOURCES=(
	"python|pool/main/p/python3.11/python3.11_3.11.2.orig.tar.gz|2411c74bda5bbcfcddaf4531f66d1adc73f247f529aee981b029513aefdbf849"
	"zlib|pool/main/z/zlib/zlib_1.2.13.dfsg.orig.tar.bz2|71feb7947e3c00ef125f83b79a4e529bde31171e5babe48b391f06758d1ab0a1"
	"bzip2|pool/main/b/bzip2/bzip2_1.0.8.orig.tar.gz|ab5a03176ee106d3f0fa90e381da478ddae405918153cca248e682cd0c4a2269"
	"xz|pool/main/x/xz-utils/xz-utils_5.4.1.orig.tar.xz|5d9827aa1875b21c288f78864bb26d2650b436ea8d2cad364e4921eb6266a5a5"
	"sqlite|pool/main/s/sqlite3/sqlite3_3.46.1.orig.tar.xz|d0cdd2ece271b29e7ce18095745d892517ee26d0f270065b3a25c2e9eb11639c"
)
# Debian packages the build runs (clang-16's wasm32 runtime and wasi-libc
# are the cross toolchain; python3.11 is the build interpreter, which must
# be the same minor version; tcl generates SQLite's amalgamation).
PACKAGES=(clang-16 lld-16 llvm-16 wasi-libc libclang-rt-16-dev-wasm32 python3.11 tcl make gcc curl xz-utils bzip2 zip)

CACHE_ROOT=${CODE_RUNNER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/code-runner}
KEY=$(sha256sum "$HERE/build.sh" | cut -c1-16)
CACHE=$CACHE_ROOT/cpython-wasi/$KEY

install_outputs() {
	mkdir -p "$OUT"
	cp "$CACHE/python.wasm" "$OUT/python.wasm.tmp" && mv "$OUT/python.wasm.tmp" "$OUT/python.wasm"
	cp "$CACHE/stdlib.zip" "$OUT/stdlib.zip.tmp" && mv "$OUT/stdlib.zip.tmp" "$OUT/stdlib.zip"
	(cd "$OUT" && sha256sum python.wasm stdlib.zip > SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS)
	[[ -s $OUT/python.wasm && -s $OUT/stdlib.zip ]] || { echo "error: $OUT lacks python.wasm or stdlib.zip after the copy" >&2; exit 1; }
	echo "python.wasm and stdlib.zip (CPython 3.11.2, build $KEY) -> $OUT"
}

if [[ -f $CACHE/done ]]; then
	install_outputs
	exit 0
fi

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "installing Debian packages for the CPython WASI build: ${missing[*]}"
	if [[ $(id -u) != 0 ]]; then
		echo "error: the CPython WASI build needs ${missing[*]}; run as root or install them with apt-get" >&2
		exit 1
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/cpython-wasi-build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
JOBS=$(nproc)

for s in "${SOURCES[@]}"; do
	IFS='|' read -r name path sum <<<"$s"
	file=$CACHE_ROOT/sources/$(basename "$path")
	if [[ ! -f $file ]] || [[ $(sha256sum "$file" | cut -d' ' -f1) != "$sum" ]]; then
		mkdir -p "$CACHE_ROOT/sources"
		echo "fetching $MIRROR/$path"
		curl -fsSL --retry 3 -o "$file.tmp" "$MIRROR/$path"
		mv "$file.tmp" "$file"
	fi
	got=$(sha256sum "$file" | cut -d' ' -f1)
	if [[ $got != "$sum" ]]; then
		echo "error: $(basename "$path") has sha256 $got, want $sum; refusing to build from it" >&2
		exit 1
	fi
	mkdir -p "$WORK/$name"
	tar xf "$file" -C "$WORK/$name" --strip-components=1
done

CC="clang-16 --target=wasm32-wasi"
AR=llvm-ar-16
RANLIB=llvm-ranlib-16
CFLAGS_LIB="-O2 -DNDEBUG -fvisibility=hidden -w"
PREFIX=$WORK/sysroot
mkdir -p "$PREFIX/include" "$PREFIX/lib"

echo "building zlib, bzip2, liblzma and SQLite for wasm32-wasi"
(
	cd "$WORK/zlib"
	srcs=(adler32 compress crc32 deflate gzclose gzlib gzread gzwrite infback inffast inflate inftrees trees uncompr zutil)
	for f in "${srcs[@]}"; do $CC $CFLAGS_LIB -D_LARGEFILE64_SOURCE=1 -DHAVE_UNISTD_H -c "$f.c" -o "$f.o"; done
	$AR rcs "$PREFIX/lib/libz.a" ./*.o
	cp zlib.h zconf.h "$PREFIX/include/"
)
(
	cd "$WORK/bzip2"
	for f in blocksort huffman crctable randtable compress decompress bzlib; do $CC $CFLAGS_LIB -D_FILE_OFFSET_BITS=64 -c "$f.c" -o "$f.o"; done
	$AR rcs "$PREFIX/lib/libbz2.a" ./*.o
	cp bzlib.h "$PREFIX/include/"
)
(
	cd "$WORK/xz"
	# liblzma alone, static, without threads (WASI has none); the xz tools
	# are not built. Their signal-mask helper (the one user of <signal.h>
	# in a build without threads, which wasi-libc refuses) is left out.
	sed -i 's|^#if !(defined(_WIN32) \&\& !defined(__CYGWIN__))$|#if !(defined(_WIN32) \&\& !defined(__CYGWIN__)) \&\& !defined(__wasi__)|' src/common/mythread.h
	grep -q '!defined(__wasi__)' src/common/mythread.h || { echo "error: xz's mythread.h changed; the WASI patch no longer applies" >&2; exit 1; }
	./configure --quiet --host=wasm32-unknown-wasi --build="$(build-aux/config.guess)" \
		CC="$CC" AR=$AR RANLIB=$RANLIB CFLAGS="$CFLAGS_LIB" \
		--enable-static --disable-shared --disable-threads --disable-nls --disable-xz --disable-xzdec \
		--disable-lzmadec --disable-lzmainfo --disable-lzma-links --disable-scripts --disable-doc >"$WORK/xz-configure.log" 2>&1 ||
		{ tail -30 "$WORK/xz-configure.log" >&2; exit 1; }
	make -s -C src/liblzma >"$WORK/xz-make.log" 2>&1 || { tail -30 "$WORK/xz-make.log" >&2; exit 1; }
	cp src/liblzma/.libs/liblzma.a "$PREFIX/lib/"
	cp -r src/liblzma/api/lzma.h src/liblzma/api/lzma "$PREFIX/include/"
)
(
	cd "$WORK/sqlite"
	# The amalgamation is generated by host tools (gcc, tclsh).
	./configure --quiet --disable-tcl >/dev/null
	make -s sqlite3.c >/dev/null
	# 3.46 builds for WASI as is (no locks, no WAL: one process); no
	# threads and no loadable extensions here.
	$CC $CFLAGS_LIB -DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION -DSQLITE_ENABLE_MATH_FUNCTIONS \
		-D_WASI_EMULATED_GETPID -D_WASI_EMULATED_MMAN -c sqlite3.c -o sqlite3.o
	$AR rcs "$PREFIX/lib/libsqlite3.a" sqlite3.o
	cp sqlite3.h "$PREFIX/include/"
)

# The one change to CPython: every 1024th eval-breaker check (backward
# jumps and calls) calls the host's code_runner.tick. wasm code never
# reaches a Go preemption point, so without it a spinning guest holds its
# worker thread — and any stop-the-world pause of the worker — until it
# stops. Emscripten builds keep their own periodic hook; WASI builds had none.
cat >"$WORK/python/Include/internal/pycore_emscripten_signal.h" <<'HEADER'
#ifndef Py_EMSCRIPTEN_SIGNAL_H
#define Py_EMSCRIPTEN_SIGNAL_H

#if defined(__EMSCRIPTEN__)

void
_Py_CheckEmscriptenSignals(void);

void
_Py_CheckEmscriptenSignalsPeriodically(void);

#define _Py_CHECK_EMSCRIPTEN_SIGNALS() _Py_CheckEmscriptenSignals()

#define _Py_CHECK_EMSCRIPTEN_SIGNALS_PERIODICALLY() _Py_CheckEmscriptenSignalsPeriodically()

extern int Py_EMSCRIPTEN_SIGNAL_HANDLING;

#elif defined(__wasi__)

__attribute__((import_module("code_runner"), import_name("tick")))
void _Py_CodeRunnerTick(void);

static unsigned int _Py_code_runner_clock __attribute__((unused));

#define _Py_CHECK_EMSCRIPTEN_SIGNALS()
#define _Py_CHECK_EMSCRIPTEN_SIGNALS_PERIODICALLY() \
    do { \
        if (++_Py_code_runner_clock >= 1024) { \
            _Py_code_runner_clock = 0; \
            _Py_CodeRunnerTick(); \
        } \
    } while (0)

#else

#define _Py_CHECK_EMSCRIPTEN_SIGNALS()
#define _Py_CHECK_EMSCRIPTEN_SIGNALS_PERIODICALLY()

#endif

#endif // ndef Py_EMSCRIPTEN_SIGNAL_H
HEADER

# The shadow stack's pointer is exported (LDFLAGS below): a reset rewinds
# the interpreter to its snapshot — memory, the wasm call stack and this
# one mutable global — and wasm offers no other way to read or set it.
# configure leaves pymalloc off for WASI, and every small object (an int
# past 2**30, a tuple, a str) then goes through wasi-libc's dlmalloc and
# free: on the bench's compute figures pymalloc took sum 290 -> 230 ms and
# dict, str and json 5-15 % (a one-off A/B of two builds, docs/architecture.md).
echo "configuring CPython for wasm32-wasi (a few minutes)"
mkdir -p "$WORK/python/builddir/wasi"
cd "$WORK/python/builddir/wasi"
CONFIG_SITE=../../Tools/wasm/config.site-wasm32-wasi \
	CC="$CC" CPP="clang-cpp-16 --target=wasm32-wasi" AR=$AR RANLIB=$RANLIB \
	PKG_CONFIG_PATH= PKG_CONFIG_LIBDIR=/nonexistent \
	ZLIB_CFLAGS="-I$PREFIX/include" ZLIB_LIBS="-L$PREFIX/lib -lz" \
	BZIP2_CFLAGS="-I$PREFIX/include" BZIP2_LIBS="-L$PREFIX/lib -lbz2" \
	LIBLZMA_CFLAGS="-I$PREFIX/include" LIBLZMA_LIBS="-L$PREFIX/lib -llzma" \
	LIBSQLITE3_CFLAGS="-I$PREFIX/include" LIBSQLITE3_LIBS="-L$PREFIX/lib -lsqlite3 -lwasi-emulated-mman -lwasi-emulated-getpid" \
	LDFLAGS="-Wl,--export=__stack_pointer" \
	../../configure -C --quiet --host=wasm32-unknown-wasi --build="$(../../config.guess)" \
	--with-build-python=/usr/bin/python3.11 --disable-test-modules --with-pymalloc >"$WORK/configure.log" 2>&1 ||
	{ tail -30 "$WORK/configure.log" >&2; exit 1; }
for m in ZLIB BZ2 LZMA SQLITE3; do
	grep -q "^MODULE__\?${m}_STATE=yes" Makefile || { echo "error: CPython would build without ${m,,}" >&2; exit 1; }
done
echo "compiling CPython"
# -O3 without -g (the npm build's DWARF and -O0 made it ~2x slower; -O3
# against -O2, both with pymalloc: sum 230 -> 200 ms, str -10 %, the module
# 1.5 % larger); clang 16 rejects 3.11.2's clockid_t constants without
# -Wno-int-conversion.
make -s -j"$JOBS" OPT="-DNDEBUG -fwrapv -O3 -Wall -Wno-int-conversion" python.wasm pybuilddir.txt >"$WORK/make.log" 2>&1 ||
	{ grep -B2 -A3 "error" "$WORK/make.log" | tail -40 >&2; exit 1; }

/usr/bin/python3.11 - python.wasm <<'PY' || { echo "error: python.wasm does not export __stack_pointer" >&2; exit 1; }
import sys
d = open(sys.argv[1], "rb").read()
def leb(p):
    r = s = 0
    while True:
        b = d[p]; p += 1; r |= (b & 0x7F) << s; s += 7
        if b < 0x80:
            return r, p
p = 8
while p < len(d):
    sid = d[p]; size, q = leb(p + 1); end = q + size
    if sid == 7:
        n, q = leb(q)
        for _ in range(n):
            ln, q = leb(q); name = d[q:q + ln]; q += ln; kind = d[q]; _, q = leb(q + 1)
            if name == b"__stack_pointer" and kind == 3:
                sys.exit(0)
    p = end
sys.exit(1)
PY

echo "packing the standard library"
STAGE=$WORK/stdlib
mkdir -p "$STAGE"
cp -r ../../Lib/. "$STAGE/"
cp build/lib.wasi-wasm32-3.11/_sysconfigdata_*.py "$STAGE/"
# What a sandbox without processes, sockets, threads or a display cannot use,
# and the test suites.
rm -rf "$STAGE"/{test,idlelib,tkinter,turtledemo,ensurepip,lib2to3,distutils,pydoc_data,venv,turtle.py}
find "$STAGE" -depth -type d \( -name test -o -name tests -o -name __pycache__ \) -exec rm -rf {} +
mkdir -p "$STAGE/lib-dynload"
touch "$STAGE/lib-dynload/.keep"
/usr/bin/python3.11 -m compileall -q -j"$JOBS" --invalidation-mode unchecked-hash "$STAGE" >/dev/null
find "$STAGE" -exec touch -h -d '2023-02-08 00:00:00' {} +
(cd "$STAGE" && find . -type f | LC_ALL=C sort | sed 's|^\./||' | zip -q -X -0 -@ "$WORK/stdlib.zip")

mkdir -p "$CACHE"
cp python.wasm "$CACHE/python.wasm"
cp "$WORK/stdlib.zip" "$CACHE/stdlib.zip"
touch "$CACHE/done"
install_outputs
