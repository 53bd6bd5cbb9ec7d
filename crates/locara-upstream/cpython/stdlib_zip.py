"""Packs CPython's standard library for code-exec.python: `stdlib_zip.py LIB SYSCONFIGDATA OUT`.

Every module under LIB (the source tree's `Lib/`) and the build's `_sysconfigdata_*.py` is
compiled by this interpreter (which must be the same minor version as the one built, so that
the bytecode is the one it runs) into an unchecked hash-based `.pyc`, and stored uncompressed
(zlib is not there yet when the interpreter starts) in the zip OUT under the module's path.
Entries are sorted and dated 1980-01-01, so the same sources give the same bytes.

Left out: the test suites, and what cannot work in a WASI sandbox or is for developing CPython
itself (IDLE, Tk, curses, ctypes, ensurepip, venv, lib2to3, distutils, pydoc's topics).
"""

import importlib.util
import os
import sys
import zipfile

LEFT_OUT = {
    "__phello__",
    "ctypes",
    "curses",
    "dbm",
    "distutils",
    "ensurepip",
    "idlelib",
    "lib2to3",
    "msilib",
    "pydoc_data",
    "site-packages",
    "test",
    "tkinter",
    "turtledemo",
    "venv",
}
LEFT_OUT_FILES = {"turtle.py", "antigravity.py", "this.py"}
TEST_DIRS = {"test", "tests", "idle_test"}
# Where the code objects say they came from (tracebacks show it); nothing is there.
PREFIX = "/usr/local/lib/python%d.%d/" % sys.version_info[:2]


def compiled(source, path):
    code = compile(source, PREFIX + path, "exec", dont_inherit=True, optimize=0)
    source_hash = importlib.util.source_hash(source)
    return importlib._bootstrap_external._code_to_hash_pyc(code, source_hash, checked=False)


def modules(lib):
    for root, dirs, files in os.walk(lib):
        rel = os.path.relpath(root, lib)
        top = rel.split(os.sep)[0]
        if top in LEFT_OUT or TEST_DIRS.intersection(rel.split(os.sep)):
            dirs.clear()
            continue
        dirs.sort()
        for name in sorted(files):
            if not name.endswith(".py") or (rel == "." and name in LEFT_OUT_FILES):
                continue
            path = os.path.normpath(os.path.join(rel, name)).replace(os.sep, "/")
            yield path, os.path.join(root, name)


def main():
    lib, sysconfigdata, out = sys.argv[1:]
    entries = list(modules(lib))
    entries.append((os.path.basename(sysconfigdata), sysconfigdata))
    with zipfile.ZipFile(out + ".partial", "w", zipfile.ZIP_STORED) as archive:
        for path, source_path in sorted(entries):
            with open(source_path, "rb") as f:
                source = f.read()
            info = zipfile.ZipInfo(path[:-3] + ".pyc", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            archive.writestr(info, compiled(source, path))
    os.replace(out + ".partial", out)


if __name__ == "__main__":
    main()
