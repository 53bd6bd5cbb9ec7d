/*
 * The entry points of code-exec.python's CPython, linked in place of Programs/python.c
 * (crates/locara-upstream/cpython/build.sh, src/cpython.rs).
 *
 * The module is a WASI reactor: nothing runs on instantiation. The build calls
 * `locara.preinit` once, with the arguments `python -c <driver> --locara-preinit`, and
 * snapshots the instance it leaves; every call of the snapshot then runs `_start`.
 *
 * - `locara.preinit` runs the C constructors, initializes the interpreter as `python -c`
 *   would (no environment variables, no user site, the standard library from the zip at
 *   STDLIB_ZIP, staged into the init's temp dir) and runs the driver's top level in
 *   `__main__`, with `sys.argv` = `['-c', '--locara-preinit']` and `''` first on `sys.path`.
 *   It traps when the interpreter cannot start or the driver raises, so that a broken driver
 *   fails the build instead of producing a snapshot that fails every call.
 * - `_start` runs `__locara_main()` in `__main__` and exits with 0, or 1 if it raised (the
 *   driver normally ends the process itself with `os._exit`).
 */

#include "Python.h"

#include <stdlib.h>
#include <wasi/api.h>

/* The standard library during the init: the driver copies it into memory before the
 * snapshot (a call's /tmp is a new, empty directory). */
#define STDLIB_ZIP L"/tmp/python311.zip"

extern void __wasm_call_ctors(void);

static void fail(const char *what) {
    fprintf(stderr, "locara.preinit: %s\n", what);
    fflush(stderr);
    __builtin_trap();
}

__attribute__((export_name("locara.preinit"))) void locara_preinit(void) {
    __wasm_call_ctors();

    __wasi_size_t argc = 0, size = 0;
    if (__wasi_args_sizes_get(&argc, &size) != 0) fail("args_sizes_get failed");
    char **argv = calloc(argc + 1, sizeof(char *));
    char *buf = malloc(size);
    if (argv == NULL || buf == NULL) fail("out of memory");
    if (__wasi_args_get((uint8_t **)argv, (uint8_t *)buf) != 0) fail("args_get failed");
    if (argc != 4 || strcmp(argv[1], "-c") != 0) fail("expected: python -c <driver> <flag>");

    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.use_environment = 0;
    config.user_site_directory = 0;
    config.install_signal_handlers = 0;
    config.write_bytecode = 0;
    config.parse_argv = 1;
    PyStatus status = PyConfig_SetBytesArgv(&config, (Py_ssize_t)argc, argv);
    if (!PyStatus_Exception(status)) {
        config.module_search_paths_set = 1;
        status = PyWideStringList_Append(&config.module_search_paths, STDLIB_ZIP);
    }
    if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
        fail(status.err_msg != NULL ? status.err_msg : "Py_InitializeFromConfig failed");
    }
    /* What `python -c` adds before running the command (Modules/main.c), so that the code
     * can import modules from its working directory. */
    if (PyRun_SimpleString("import sys; sys.path.insert(0, '')") != 0) fail("sys.path");
    if (PyRun_SimpleString(argv[2]) != 0) fail("the driver raised (its traceback is above)");
    free(buf);
    free(argv);
}

__attribute__((export_name("_start"))) void locara_start(void) {
    int failed = PyRun_SimpleString("__locara_main()");
    __wasi_proc_exit(failed ? 1 : 0);
}
