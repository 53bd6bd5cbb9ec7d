// @locara/sdk: call signed tools in WebAssembly sandboxes from Node.
//
//   import { Locara } from '@locara/sdk';
//   const loc = await Locara.open({ home: '/path/to/.locara' });
//   const { output } = await loc.tools.ocr({ source: await readFile('scan.png') });
//
// Every call runs through Locara's pipeline (signature and hash checks, the app's grants, schema
// checks, limits) on the native addon's threads: a running tool never blocks the event loop. A
// call that cannot run, or a tool that fails, rejects with a LocaraError carrying the report's
// code, hint, violations and limit.

import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { mkdir, open as openFile } from 'node:fs/promises';
import { basename, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const { Core, runCall } = createRequire(import.meta.url)('./locara.node');

/** A call that could not run, or a tool that ran and failed. */
export class LocaraError extends Error {
  constructor(report, result) {
    super(`${report.code}: ${report.message}${report.hint ? ` (hint: ${report.hint})` : ''}`);
    this.name = 'LocaraError';
    this.code = report.code;
    this.hint = report.hint ?? '';
    this.violations = report.violations ?? [];
    this.limit = report.limit;
    this.exitCode = report.exit_code;
    this.report = report;
    this.result = result;
  }
}

/** A file on disk passed to a tool by its bytes: `file('scan.png')` (a path or a file: URL). */
export class LocaraFileRef {
  constructor(path) {
    this.path = path instanceof URL ? fileURLToPath(path) : String(path);
  }
}

/** `file(path)`: the file at `path`, as a tool argument. */
export function file(path) {
  return new LocaraFileRef(path);
}

/** A file a tool produced. */
export class ProducedFile {
  constructor(name, data, sha256) {
    this.name = name;
    this.data = data;
    this.sha256 = sha256;
  }

  /** Writes the file into `dir` under its base name, never over an existing file
   * (`part.pdf` becomes `part-1.pdf`, ...); resolves to the path written. */
  async save(dir) {
    await mkdir(dir, { recursive: true });
    const name = basename(this.name);
    if (name === '' || name === '.' || name === '..') {
      throw new Error(`cannot save a file named ${JSON.stringify(this.name)}`);
    }
    const ext = extname(name);
    const stem = name.slice(0, name.length - ext.length);
    for (let n = 0; ; n += 1) {
      const path = join(dir, n === 0 ? name : `${stem}-${n}${ext}`);
      let handle;
      try {
        handle = await openFile(path, 'wx');
      } catch (error) {
        if (error.code === 'EEXIST') continue;
        throw error;
      }
      try {
        await handle.writeFile(this.data);
      } finally {
        await handle.close();
      }
      return path;
    }
  }
}

function fromBytes(bytes) {
  return { base64: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64') };
}

/** Whether `value` holds a file to encode (or nests too deep to send): most calls' arguments
 * are plain JSON and are sent as they are, without a copy. */
function holdsFiles(value, depth = 0) {
  if (value === null || typeof value !== 'object') return false;
  if (depth > 128 || ArrayBuffer.isView(value) || value instanceof ArrayBuffer
    || value instanceof LocaraFileRef || value instanceof URL) return true;
  for (const key in value) {
    if (holdsFiles(value[key], depth + 1)) return true;
  }
  return false;
}

/** The arguments as the facade's JSON: Buffers, typed arrays, ArrayBuffers, `file(path)` and
 * file: URLs become files sent by their bytes. */
function encode(value, depth = 0) {
  if (depth === 0 && !holdsFiles(value)) return value;
  if (depth > 128) throw new TypeError('the arguments nest deeper than 128 levels');
  if (value === null || typeof value !== 'object') return value;
  if (ArrayBuffer.isView(value)) return fromBytes(value);
  if (value instanceof ArrayBuffer) return fromBytes(new Uint8Array(value));
  if (value instanceof LocaraFileRef) return fromBytes(readFileSync(value.path));
  if (value instanceof URL) {
    if (value.protocol !== 'file:') throw new TypeError(`only file: URLs are files, not ${value.href}`);
    return fromBytes(readFileSync(fileURLToPath(value)));
  }
  if (Array.isArray(value)) return value.map((item) => encode(item, depth + 1));
  const out = {};
  for (const [key, item] of Object.entries(value)) {
    if (item !== undefined) out[key] = encode(item, depth + 1);
  }
  return out;
}

const snake = (key) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

function snakeKeys(object) {
  const out = {};
  for (const [key, value] of Object.entries(object ?? {})) {
    if (value !== undefined) out[snake(key)] = value;
  }
  return out;
}

function unwrap(outcome) {
  if (!outcome.ok) throw new LocaraError(outcome.error);
  return outcome.value;
}

/** A response (fresh from JSON.parse, so ours to change) with its files as ProducedFiles. */
function result(raw) {
  raw.files = (raw.files ?? []).map(
    (f) => new ProducedFile(f.name, f.base64 !== undefined ? Buffer.from(f.base64, 'base64') : readFileSync(f.path), f.sha256),
  );
  if (!raw.ok) {
    throw new LocaraError(raw.error ?? { code: 'tool_error', message: 'the tool failed', hint: '' }, raw);
  }
  return raw;
}

const finish = (answer) => result(JSON.parse(answer));

/** An error of the addon whose message is a report's JSON, as a LocaraError; any other error
 * as it is. */
function reported(error) {
  if (error instanceof LocaraError) return error;
  let report;
  try {
    report = JSON.parse(error.message);
  } catch {
    return error;
  }
  return new LocaraError(report);
}

const rethrow = (error) => {
  throw reported(error);
};

/** The call as the facade's `RunRequest`, in JSON text. */
function runRequest(tool, args, options) {
  if (typeof tool !== 'string') throw new TypeError(`a tool is named by a string, not ${typeof tool}`);
  const text = `{"tool":${JSON.stringify(tool)},"arguments":${JSON.stringify(encode(args ?? {}))}`;
  if (options === undefined) return `${text}}`;
  const more = {};
  if (options.workspace !== undefined) more.workspace = String(options.workspace);
  if (options.receipt) more.receipt = true;
  if (options.seed !== undefined) more.seed = options.seed;
  if (options.user !== undefined) more.user = options.user;
  const rest = JSON.stringify(more);
  return rest === '{}' ? `${text}}` : `${text},${rest.slice(1)}`;
}

const camel = (id) =>
  id
    .split(/[.\-_]/)
    .filter((p) => p !== '')
    .map((p, i) => (i === 0 ? p[0].toLowerCase() + p.slice(1) : p[0].toUpperCase() + p.slice(1)))
    .join('');

/** A chat in progress: `for await (const event of chat)` reads its events as they happen
 * (`{type: 'step' | 'text' | 'tool_call', ...}`); `await chat.result` is the transcript. */
export class Chat {
  #session;

  constructor(session) {
    this.#session = session;
    this.result = session.result().then(unwrap);
    // Reading the result is optional; a rejection nobody awaits must not crash the process.
    this.result.catch(() => {});
  }

  async *[Symbol.asyncIterator]() {
    for (;;) {
      const event = await this.#session.next();
      if (event === null || event === undefined) return;
      yield event;
    }
  }

  /** Stops the chat; a model request or tool call in flight is cancelled. */
  cancel() {
    this.#session.cancel();
  }
}

/** An open Locara home, as an app sees it. */
export class Locara {
  #core;
  #runner;
  #ids;

  constructor(core) {
    this.#core = core;
    this.#runner = core.runner();
    this.#ids = undefined;
    /** `loc.tools.pdfSplit({...})` or `loc.tools['pdf.split']({...})`. */
    this.tools = new Proxy(
      {},
      {
        get: (_, name) => {
          if (typeof name !== 'string' || name === 'then') return undefined;
          const tool = name.includes('.') ? name : this.#toolId(name);
          if (tool === undefined) {
            throw new TypeError(`no callable tool is named ${name} (tools: ${[...this.#names().keys()].join(', ')})`);
          }
          return (args, options) => this.run(tool, args, options);
        },
        has: (_, name) => typeof name === 'string' && (this.#names().has(name) || name.includes('.')),
        ownKeys: () => [...this.#names().keys()],
        getOwnPropertyDescriptor: (_, name) =>
          this.#names().has(name) ? { enumerable: true, configurable: true } : undefined,
      },
    );
  }

  /**
   * Opens Locara. Options: `home` (default `$LOCARA_HOME`), `app` (an app manifest whose tools
   * and grants bound every call), `engine` (`wasmtime` | `wasmi`), `workspace` and
   * `allowWrite`, `user`, `llm` / `llmModel` / `llmApiKey` (an OpenAI-compatible API base),
   * `allowHosts`, `approveAll` (privileged calls are refused without it).
   */
  static async open(options = {}) {
    const snaked = snakeKeys(options);
    for (const key of ['home', 'app', 'workspace']) {
      if (snaked[key] !== undefined) snaked[key] = String(snaked[key]);
    }
    try {
      return new Locara(Core.open(snaked));
    } catch (error) {
      throw reported(error);
    }
  }

  #names() {
    if (this.#ids === undefined) {
      this.#ids = new Map(this.#core.list().map((t) => [camel(t.id), t.id]));
    }
    return this.#ids;
  }

  #toolId(name) {
    return this.#names().get(name);
  }

  /** The callable tools, newest version of each. */
  list() {
    return this.#core.list();
  }

  /** The `limit` tools that best match `query`, best first. */
  search(query, limit = 5) {
    return this.#core.search(query, limit);
  }

  /** Everything needed to call `tool`: description, schemas, limits. */
  describe(tool) {
    return unwrap(this.#core.describe(tool));
  }

  /** The API of every callable tool: `typescript`, `typescript-module`, `python` or `python-module` source. */
  exportApi(language = 'typescript-module') {
    return unwrap(this.#core.exportApi(language));
  }

  /** Runs `tool` (`id` or `id@version`) with `args`; options `workspace`, `receipt`, `seed`,
   * `user`. Resolves to `{tool, output, files, stderr, stats, ...}`. */
  run(tool, args = {}, options = undefined) {
    // A call that ends in its first poll answers at once; a longer one, with a Promise.
    try {
      const answer = runCall(this.#runner, runRequest(tool, args, options));
      return typeof answer === 'string' ? Promise.resolve(finish(answer)) : answer.then(finish, rethrow);
    } catch (error) {
      return Promise.reject(reported(error));
    }
  }

  /** Runs calls (`{tool, arguments}`) as one batch: read-only ones concurrently. */
  async runBatch(calls) {
    const request = { calls: calls.map((c) => ({ ...snakeKeys(c), arguments: encode(c.arguments ?? {}) })) };
    return unwrap(JSON.parse(await this.#core.call('run_batch', JSON.stringify(request))));
  }

  /** Runs a chain of steps (`{tool, arguments, id?, when?, for_each?, as?}`); options
   * `maxCalls`, `wallTimeMs`. */
  async runChain(steps, options = {}) {
    const request = { steps: steps.map((s) => ({ ...s, arguments: encode(s.arguments ?? {}) })), ...snakeKeys(options) };
    return unwrap(JSON.parse(await this.#core.call('run_chain', JSON.stringify(request))));
  }

  /**
   * Chats with the model (the app's `llm`, or `model: {baseUrl, model, format?, apiKey?}`),
   * running the tools it calls until it answers: `{prompt}` or `{messages}`, with `system`,
   * `tools` (ids or globs), `maxSteps`, `maxTokens`, `timeoutMs`, `maxOutputTokens`,
   * `temperature`, `seed`, `workspace`. Returns a {@link Chat}: an async iterator of events
   * whose `result` is the transcript.
   */
  chat(request) {
    const body = snakeKeys(request);
    if (body.model !== undefined) body.model = snakeKeys(body.model);
    if (body.workspace !== undefined) body.workspace = String(body.workspace);
    return new Chat(this.#core.chat(body));
  }
}
