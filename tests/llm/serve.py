"""Serves a GGUF model on loopback with llama.cpp's OpenAI-compatible server (PyPI `xllamacpp`).

Usage: serve.py MODEL.gguf [--ctx N] [--chat-template FILE]
--ctx sets the context size (default 2048); --chat-template replaces the model's own Jinja chat
template (llama.cpp derives from it how tool calls look).
Prints `listening http://127.0.0.1:PORT` once the model is loaded and the server answers, then
serves until SIGTERM or SIGINT (or until its stdin closes, so it never outlives the test that
started it). One thread: on a small shared machine, llama.cpp's spinning worker threads make
two threads slower and erratic.
"""

import argparse
import os
import signal
import sys
import threading

import xllamacpp as xlc


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--ctx", type=int, default=2048)
    parser.add_argument("--chat-template")
    args = parser.parse_args()
    params = xlc.CommonParams()
    params.model.path = args.model
    params.n_ctx = args.ctx
    if args.chat_template:
        with open(args.chat_template, encoding="utf-8") as template:
            params.chat_template = template.read()
        params.use_jinja = True
    params.n_parallel = 1
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    server = xlc.Server(params)
    print(f"listening {server.listening_address}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    stop.wait()
    # The server's own threads would keep the process alive.
    os._exit(0)


if __name__ == "__main__":
    main()
