// Package guidance owns the usage guidance code-runner appends to agent
// system prompts and the pre_generate mutation that appends it
// (docs/behaviour.md#guidance). It knows nothing about the bus: callers
// decode the harness event and encode the Response.
package guidance

import "strings"

// Text is the guidance paragraph appended after the base prompt.
const Text = "code-runner gives you a sandbox for quick calculations, reshaping data and small glue scripts, so reach for it before writing a throwaway shell script. " +
	"Call code-runner::run with {lang, code}; the sandbox has no network and cannot see the host filesystem (only read-only libraries), and there is no package installer. " +
	"With lang \"node\" you write JavaScript as for Node, minus the network and the host's files: console formats as Node's does (console.assert, table, time and group included), timers hold the answer until they ran, and URL, TextEncoder, atob, crypto (randomUUID, getRandomValues, subtle.digest, HMAC), structuredClone, AbortController, Blob, Buffer, process and performance are there; require() or import Node's I/O-free built-ins (assert, buffer, events, util, path, url, querystring, string_decoder, crypto, zlib, stream, os, timers) and the built-in packages " + nodePackages + "; static import/export and TypeScript syntax are accepted; fs reads and writes only the runtime's own scratch directory /scratch (iii.files); fetch, http, child_process and every other package fail (no npm install). " +
	"Your code is the body of an async function: `return x` becomes `result`, top-level await works, a promise that fails with no handler fails the call as in Node, and anything that must outlive one call goes on `globalThis`. " +
	"With lang \"python\" the code runs as a module: assign `result = x` (a top-level return is a SyntaxError), iii.trigger blocks until it answers, and files live under /work rather than iii.files; besides the standard library (asyncio included) it can import openpyxl, xlsxwriter, pypdf, sympy, networkx, dateutil, pytz, yaml, jinja2, bs4, markdown, rich, pygments, markdown_it, lark, pyparsing, tomlkit, xmltodict, jmespath, pydantic, jsonschema, attrs, toolz, more_itertools, sortedcontainers, cachetools, tabulate, humanize, unidecode, isodate, chardet, idna and packaging — but no pip, no numpy, no pandas. " +
	"Each run is one-shot unless you pass keep: true, which returns a runtime_id you send back to reuse the same globals and files; treat `runtime_id` as a secret and call code-runner::teardown when you are finished with it. " +
	"Console output comes back verbatim in stdout and stderr (not in logs); a script that throws still answers with a normal response whose exit_code is 1; an oversized result, stdout or stderr is replaced or trimmed around a marker, so print slices and return summaries. " +
	"From inside code, await iii.trigger({ function_id, payload, timeout }) reaches any bus function; iii.registerFunction(id, handler, { description, request_format, response_format }) returns { unregister() }; iii.registerTrigger, iii.registerTriggerType and iii.unregisterTriggerType are there too; iii.namespace is the prefix your runtime may register under; iii.shutdown() throws by design. " +
	"To publish a function that lasts, call code-runner::register_function { function_id: \"my-app::greet\", lang: \"node\", source: \"export function handler(p) { return p.n * 2 }\", description: \"what it does\" }: the source must DEFINE `handler(payload)` (export function handler, export default, exports.handler, imports and TypeScript all work; a bare expression is refused), one runtime per language backs each namespace, always give a description, request_format and response_format are catalog metadata and not call-time validation, and claiming an id that is already taken fails with code-runner::invalid_request. " +
	"A registered function stops resolving the moment it is torn down. Look a function up with engine::functions::info before calling one you do not know; the keep flag is how state survives between runs."

// nodePackages names the npm packages built into the node environment
// (contract §25.4; engines/node's tests hold this list to what require()
// loads).
const nodePackages = "lodash, date-fns, dayjs, zod, yaml, papaparse, marked, decimal.js, uuid, ajv, mathjs, fast-xml-parser, diff and semver"

// Mutations is the `mutations` object of a pre_generate response. An absent
// SystemPrompt serializes to {} — the harness's no-op.
type Mutations struct {
	SystemPrompt *string `json:"system_prompt,omitempty"`
}

// Response is the pre_generate hook's answer.
type Response struct {
	Mutations Mutations `json:"mutations"`
}

// Apply returns the pre_generate answer for base, the system prompt so far:
// the full replacement prompt base + "\n\n" + Text, or the no-op
// {"mutations": {}} when base is empty or already ends with Text. The
// second makes the hook idempotent: a prompt that went through it once —
// a second binding of the hook, from a second worker for a moment, say —
// is not given the guidance twice.
func Apply(base string) Response {
	if base == "" || strings.HasSuffix(strings.TrimRight(base, " \t\r\n"), Text) {
		return Response{}
	}
	p := base + "\n\n" + Text
	return Response{Mutations: Mutations{SystemPrompt: &p}}
}
