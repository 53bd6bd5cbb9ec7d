#!/usr/bin/env bash
# Builds code-exec.python's CPython for WASI from source: `build.sh OUT`, with the sources'
# paths (each already checked against its pinned SHA-256 by locara-upstream's `cpython::build`)
# in CPYTHON_SOURCE (Debian's python3.11 orig tarball), ZLIB_SOURCE (Debian's zlib orig
# tarball) and SQLITE_SOURCE (the crates.io package libsqlite3-sys, whose sqlite3.c is SQLite's
# amalgamation). Writes OUT/python.wasm (a reactor: `locara.preinit` and `_start`, see
# locara_main.c) and OUT/python311.zip (the standard library, see stdlib_zip.py).
#
# Needs Debian's clang, lld, llvm-14 (llvm-ar), wasi-libc, libclang-rt-14-dev-wasm32 and make
# (.ci/test-deps), and a Python 3.11 (bookworm's python3) to drive the build and compile the
# standard library.
# CPython is compiled as its own build compiles it (-O3); its configure checks are fed from
# Tools/wasm/config.site-wasm32-wasi, plus the modules it must not look for on the host.
set -euo pipefail
out=$1
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON_FOR_BUILD:-$(command -v python3.11 || command -v python3)}
"$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || {
    echo "build.sh: needs Python 3.11 to build CPython 3.11 ($python is $("$python" --version))" >&2
    exit 1
}
python=$(command -v "$python")
cc="clang --target=wasm32-wasi"
# The archiver of the same LLVM (in llvm-14, which clang-14 only recommends; the unversioned
# names are in Debian's `llvm`).
ar=$(clang -print-prog-name=llvm-ar)
ranlib=$(clang -print-prog-name=llvm-ranlib)
command -v "$ar" > /dev/null || {
    echo "build.sh: no llvm-ar beside clang (Debian's llvm-14 package)" >&2
    exit 1
}
jobs=$(nproc)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
deps=$work/deps
mkdir -p "$deps/include" "$deps/lib" "$deps/obj"

# zlib, as its own Makefile builds libz.a (extracted by Python: bzip2 is not always installed).
"$python" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
    "$ZLIB_SOURCE" "$work"
zlib=$(echo "$work"/zlib-*)
for f in adler32 compress crc32 deflate gzclose gzlib gzread gzwrite infback inffast inflate \
    inftrees trees uncompr zutil; do
    $cc -O2 -DHAVE_UNISTD_H -c "$zlib/$f.c" -o "$deps/obj/z_$f.o"
done
"$ar" rcs "$deps/lib/libz.a" "$deps"/obj/z_*.o
cp "$zlib/zlib.h" "$zlib/zconf.h" "$deps/include/"

# SQLite, with the flags libsqlite3-sys's build.rs uses for wasm32-wasi, and no extensions.
tar -xzf "$SQLITE_SOURCE" -C "$work" --wildcards '*/sqlite3/sqlite3.c' '*/sqlite3/sqlite3.h'
sqlite=$(echo "$work"/libsqlite3-sys-*/sqlite3)
$cc -O2 -DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION -DHAVE_LOCALTIME_R \
    -DLONGDOUBLE_TYPE=double -D_WASI_EMULATED_MMAN -D_WASI_EMULATED_GETPID \
    -D_WASI_EMULATED_SIGNAL -D_WASI_EMULATED_PROCESS_CLOCKS \
    -c "$sqlite/sqlite3.c" -o "$deps/obj/sqlite3.o"
"$ar" rcs "$deps/lib/libsqlite3.a" "$deps/obj/sqlite3.o"
cp "$sqlite/sqlite3.h" "$deps/include/"

# CPython.
tar -xzf "$CPYTHON_SOURCE" -C "$work"
src=$(echo "$work"/Python-3.11.*)
mkdir "$src/build"
cd "$src/build"
{
    cat ../Tools/wasm/config.site-wasm32-wasi
    # Found among the host's headers or libraries, absent for wasm32-wasi.
    for m in _bz2 _lzma _uuid _crypt _ssl _hashlib _ctypes readline _curses _curses_panel _dbm \
        _gdbm _tkinter nis; do
        echo "py_cv_module_$m=n/a"
    done
} > config.site
CONFIG_SITE=$PWD/config.site PKG_CONFIG_LIBDIR=/nonexistent PKG_CONFIG_PATH= \
    CC="$cc" CPP="$cc -E" AR="$ar" RANLIB="$ranlib" \
    ZLIB_CFLAGS="-I$deps/include" ZLIB_LIBS="-L$deps/lib -lz" \
    LIBSQLITE3_CFLAGS="-I$deps/include" \
    LIBSQLITE3_LIBS="-L$deps/lib -lsqlite3 -lwasi-emulated-mman" \
    ../configure -q -C --host=wasm32-unknown-wasi --build="$(uname -m)-pc-linux-gnu" \
    --with-build-python="$python" --disable-test-modules
for m in zlib _sqlite3; do
    grep -q "^MODULE_${m^^}_STATE=yes" Makefile || {
        echo "build.sh: configure did not enable $m" >&2
        exit 1
    }
done
make -s -j"$jobs" python.wasm platform
# The interpreter with locara_main.c's entry points instead of Programs/python.c's main: a
# reactor (nothing runs on instantiation), its debug info dropped, and an 8 MiB C stack
# first in memory (CPython's 512 KiB ends in an out-of-bounds trap after ~58 levels of C
# recursion, long before its own recursion guard).
cat > locara.mk <<'MK'
include Makefile
Programs/locara_main.o: $(LOCARA_MAIN)
	$(CC) -c $(PY_CORE_CFLAGS) -o $@ $(LOCARA_MAIN)
locara.wasm: Programs/locara_main.o $(LINK_PYTHON_DEPS)
	$(LINKCC) $(PY_CORE_LDFLAGS) -z stack-size=8388608 -Wl,--initial-memory=16777216 \
		-mexec-model=reactor -Wl,--strip-debug -o $@ Programs/locara_main.o \
		$(LINK_PYTHON_OBJS) $(LIBS) $(MODLIBS) $(SYSLIBS)
MK
make -s -f locara.mk LOCARA_MAIN="$here/locara_main.c" locara.wasm
sysconfigdata=$(echo build/lib.wasi-wasm32-3.11/_sysconfigdata_*.py)
mkdir -p "$out"
"$python" "$here/stdlib_zip.py" ../Lib "$sysconfigdata" "$out/python311.zip"
cp locara.wasm "$out/python.wasm"
