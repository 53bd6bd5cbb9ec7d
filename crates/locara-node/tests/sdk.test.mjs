// @locara/sdk as an app uses it: real tools on real input, from the installed npm tarball.
//
// `cargo xtask sdk test` packs the package, installs it into a fresh project, copies this file
// there and runs it with LOCARA_TEST_HOME (a home with the tools it calls) and LOCARA_REPO.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

import { Locara, LocaraError, ProducedFile, file } from '@locara/sdk';

const HOME = process.env.LOCARA_TEST_HOME;
const REPO = process.env.LOCARA_REPO;
const VENV = process.env.LOCARA_PY_VENV ?? '/var/tmp/locara-py';
const PDF = '/usr/share/doc/libtasn1-doc/libtasn1.pdf';

// Every scratch folder is removed when the file's tests are done.
const scratches = [];
const scratch = () => {
  const dir = mkdtempSync(join(tmpdir(), 'locara-sdk-'));
  scratches.push(dir);
  return dir;
};
after(() => {
  for (const dir of scratches) rmSync(dir, { recursive: true, force: true });
});

let loc;
before(async () => {
  loc = await Locara.open({ home: HOME });
});

test('the package is the installed tarball', () => {
  const installed = realpathSync(createRequire(import.meta.url).resolve('@locara/sdk'));
  assert.match(installed, /node_modules\/@locara\/sdk\/index\.js$/);
});

test('list, search and describe', () => {
  const ids = loc.list().map((t) => t.id);
  assert.ok(ids.includes('text.chunk') && ids.includes('pdf.split'), ids.join(' '));
  assert.equal(loc.search('split a PDF into parts', 3)[0].id, 'pdf.split');
  assert.ok('ranges' in loc.describe('pdf.split').input_schema.properties);
  assert.throws(() => loc.describe('no.such-tool'), (e) => e instanceof LocaraError && e.code === 'not_found' && e.hint !== '');
  assert.ok(Object.keys(loc.tools).includes('pdfSplit'));
  assert.match(loc.exportApi(), /pdfSplit\(args: PdfSplitInput\)/);
  assert.doesNotMatch(loc.exportApi(), /declare global/);
});

test('ocr reads a real image given as a Buffer, a file() or a file: URL', async () => {
  const dir = scratch();
  const png = join(dir, 'title');
  execFileSync('pdftoppm', ['-png', '-singlefile', '-r', '100', '-f', '1', '-l', '1', '-x', '110', '-y', '280',
    '-W', '640', '-H', '110', PDF, png]);
  const byBuffer = await loc.tools.ocr({ source: readFileSync(`${png}.png`) });
  assert.match(byBuffer.output.text, /Abstract Syntax Notation One/);
  const byFile = await loc.tools.ocr({ source: file(`${png}.png`) });
  const byUrl = await loc.tools['ocr']({ source: pathToFileURL(`${png}.png`) });
  assert.deepEqual(byFile.output, byBuffer.output);
  assert.deepEqual(byUrl.output, byBuffer.output);
});

test('pdf.split returns files that save without overwriting', async () => {
  const result = await loc.tools.pdfSplit({ source: file(PDF), ranges: ['1-2', '3-end'] });
  assert.deepEqual(result.files.map((f) => f.name), ['part-001.pdf', 'part-002.pdf']);
  assert.ok(result.files[0] instanceof ProducedFile);
  assert.equal(result.files[0].data.subarray(0, 4).toString(), '%PDF');
  const dir = scratch();
  const first = await result.files[1].save(dir);
  const second = await result.files[1].save(dir);
  assert.deepEqual([first, second], [join(dir, 'part-002.pdf'), join(dir, 'part-002-1.pdf')]);
  assert.match(execFileSync('pdfinfo', [first]).toString(), /^Pages:\s+34$/m);
});

test('code runs in the sandbox', async () => {
  const { output } = await loc.tools.codeExecPython({ code: 'print(6 * 7)' });
  assert.equal(output.stdout, '42\n');
});

test('a chain splits a PDF and extracts each part', async () => {
  const response = await loc.runChain([
    { id: 'pages', tool: 'pdf.split', arguments: { source: file(PDF), ranges: ['1', '2'] } },
    { id: 'texts', tool: 'pdf.extract-text', for_each: { $ref: 'pages.files' }, as: 'part', arguments: { source: { $ref: 'part' } } },
  ]);
  assert.ok(response.ok, JSON.stringify(response).slice(0, 500));
  // Step 1 ran once per part; its calls are the chain's calls 1 and 2.
  assert.deepEqual(response.trace.map((t) => [t.step, t.calls]), [[0, [0]], [1, [1, 2]]]);
  const texts = response.trace[1].calls.map((i) => response.steps[i].output);
  assert.deepEqual(texts.map((t) => t.page_count), [1, 1]);
  assert.match(texts[0].pages[0].text, /Abstract Syntax Notation One/);
});

test('a batch reports each call and overlaps read-only ones', async () => {
  const response = await loc.runBatch([
    ...[0, 1, 2, 3].map((n) => ({ tool: 'text.chunk', arguments: { text: `One. Two. ${n}.`, max_chars: 5 } })),
    { tool: 'text.chunk', arguments: { text: 7 } },
  ]);
  assert.deepEqual(response.results.slice(0, 4).map((r) => r.response.ok), [true, true, true, true]);
  assert.equal(response.ok, false);
  assert.equal(response.results[4].error.code, 'invalid_input');
  // Read-only calls of a batch overlap: four half-second sleeps in about one.
  await loc.tools.codeExecPython({ code: 'print(1)' }); // compiled, warm
  const started = performance.now();
  const sleeps = await loc.runBatch(Array(4).fill({ tool: 'code-exec.python', arguments: { code: 'import time\ntime.sleep(0.5)' } }));
  assert.ok(sleeps.ok, JSON.stringify(sleeps).slice(0, 500));
  assert.ok(performance.now() - started < 1600);
});

const rejectsWith = (promise, code, check = () => true) =>
  assert.rejects(promise, (e) => {
    assert.ok(e instanceof LocaraError, String(e));
    assert.equal(e.code, code, e.message);
    return check(e);
  });

test('errors are LocaraErrors with the code, hint, violations and limit', async () => {
  await rejectsWith(loc.tools.textChunk({ text: 7 }), 'invalid_input', (e) => e.violations[0].pointer === '/text');
  await rejectsWith(loc.run('no.such-tool'), 'not_found');
  await rejectsWith(loc.run('text.chunk!'), 'invalid_tool_ref');
  await assert.rejects(loc.run(7), (e) => e instanceof TypeError && /named by a string/.test(e.message));
  await rejectsWith(Locara.open({ home: HOME, engine: 'v8' }), 'invalid_request');
  await rejectsWith(Locara.open({ home: scratch() }), 'no_tools');
  await rejectsWith(loc.tools.filesystemSearch({ query: 'x' }), 'capability_denied');
  await rejectsWith(loc.tools.pdfSplit({ source: Buffer.from('not a pdf'), ranges: ['1'] }), 'tool_error',
    (e) => e.result !== undefined && e.exitCode !== undefined);
  await rejectsWith(loc.tools.codeExecPython({ code: "print('x' * 50_000_000)" }), 'limit_exceeded',
    (e) => ['output_bytes', 'memory', 'fuel', 'wall_time'].includes(e.limit));
  assert.throws(() => loc.tools.noSuchTool, /no callable tool is named noSuchTool/);
});

test('a workspace is granted read-only unless writes are allowed', async () => {
  const dir = scratch();
  writeFileSync(join(dir, 'notes.md'), 'beavers build dams\n');
  const reader = await Locara.open({ home: HOME, workspace: dir });
  const found = await reader.tools.filesystemSearch({ query: 'dams' });
  assert.match(JSON.stringify(found.output), /notes\.md/);
  const edit = { path: 'notes.md', edits: [{ old: 'dams', new: 'lodges' }] };
  await rejectsWith(reader.tools.fileEdit(edit), 'capability_denied');
  const writer = await Locara.open({ home: HOME, workspace: dir, allowWrite: true });
  await writer.tools.fileEdit(edit);
  assert.equal(readFileSync(join(dir, 'notes.md'), 'utf8'), 'beavers build lodges\n');
});

test('eight concurrent calls overlap and never block the event loop', async () => {
  const sleep = { code: "import time\ntime.sleep(0.5)\nprint('slept')" };
  await loc.tools.codeExecPython({ code: 'print(1)' }); // compiled, warm
  let ticks = 0;
  const timer = setInterval(() => { ticks += 1; }, 20);
  const started = performance.now();
  const results = await Promise.all(Array.from({ length: 8 }, () => loc.tools.codeExecPython(sleep)));
  const elapsed = performance.now() - started;
  clearInterval(timer);
  assert.deepEqual(results.map((r) => r.output.stdout), Array(8).fill('slept\n'));
  // One after another they would take 4 s; the event loop kept ticking meanwhile.
  assert.ok(elapsed < 2500, `8 concurrent calls took ${elapsed.toFixed(0)} ms`);
  assert.ok(ticks >= elapsed / 20 / 4, `the event loop ticked ${ticks} times in ${elapsed.toFixed(0)} ms`);
});

// Qwen2.5-Coder-0.5B-Instruct served by llama.cpp on loopback, as the Rust chat tests use it.
let server;
let modelUrl;
before(async () => {
  server = spawn(`${VENV}/bin/python`, [
    `${REPO}/tests/llm/serve.py`, `${VENV}/share/locara/Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf`,
    '--ctx', '4096', '--chat-template', `${REPO}/tests/llm/qwen2.5-coder-tools.jinja`,
  ], { stdio: ['pipe', 'pipe', 'ignore'] });
  const lines = createInterface({ input: server.stdout });
  const [line] = await Promise.race([
    new Promise((resolve) => lines.once('line', (l) => resolve([l]))),
    new Promise((_, reject) => server.once('exit', (code) => reject(new Error(`the model server exited: ${code}`)))),
  ]);
  assert.match(line, /^listening /);
  modelUrl = `${line.slice('listening '.length).trim()}/v1`;
});
after(() => server?.kill('SIGTERM'));

test('chat is an async iterator of events whose result is the transcript', async () => {
  const gates = join(scratch(), 'gates');
  mkdirSync(gates);
  writeFileSync(join(gates, 'gates.txt'), 'The access code for the north gate is 7319-KESTREL. The south gate has no code.\n');
  const chatter = await Locara.open({ home: HOME, workspace: gates, llm: modelUrl, llmModel: 'qwen2.5-coder-0.5b-instruct' });
  const chat = chatter.chat({
    prompt: "What is the access code for the north gate? Search the file contents for 'north gate'.",
    tools: ['filesystem.search'], temperature: 0, seed: 7, maxOutputTokens: 200,
  });
  const events = [];
  for await (const event of chat) events.push(event);
  const transcript = await chat.result;
  assert.equal(transcript.stop_reason, 'final_answer', JSON.stringify(transcript).slice(0, 800));
  assert.match(transcript.answer, /7319-KESTREL/);
  assert.deepEqual(events[0], { type: 'step', step: 1 });
  assert.deepEqual(events.filter((e) => e.type === 'tool_call').map((e) => e.call.tool), ['filesystem.search']);
  assert.ok(events.some((e) => e.type === 'text'));
  await rejectsWith(chatter.chat({ prompt: 'hi', tools: ['no.such-*'] }).result, 'not_found');
});
