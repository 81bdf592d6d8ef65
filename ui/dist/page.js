// src/configForm.tsx
import { useEffect, useRef } from "react";
import { jsx, jsxs } from "react/jsx-runtime";
var SECTIONS = [
  { title: "output caps", applies: "applies to the next call", fields: [{ key: "max_result_bytes", kind: "int", unit: "bytes" }, { key: "max_stream_bytes", kind: "int", unit: "bytes" }] },
  { title: "agent guidance", applies: "applies to the next call", fields: [{ key: "inject_guidance", kind: "bool" }] },
  { title: "timeouts", applies: "applies to the next call", fields: [{ key: "default_timeout_ms", kind: "int", unit: "ms" }, { key: "max_timeout_ms", kind: "int", unit: "ms" }] },
  { title: "runtimes & memory", applies: "applies immediately", fields: [{ key: "max_runtimes", kind: "int" }, { key: "idle_ttl_secs", kind: "int", unit: "s" }] },
  { title: "runtimes & memory", applies: "applies to runtimes created after saving", fields: [{ key: "heap_mb", kind: "int", unit: "MiB" }, { key: "external_mb", kind: "int", unit: "MiB" }] },
  { title: "scratch", applies: "applies to runtimes created after saving", fields: [{ key: "scratch_mb", kind: "int", unit: "MiB" }, { key: "scratch_files", kind: "int" }, { key: "scratch_root", kind: "path" }] },
  { title: "warm pools", applies: "resizes in the background", fields: [{ key: "warm_pool_node", kind: "int", max: 16 }, { key: "warm_pool_python", kind: "int", max: 16 }] },
  { title: "python packages", applies: "applies to python interpreters started after saving", fields: [{ key: "python_path", kind: "paths" }] },
  { title: "stopping", applies: "applies to the next stop", fields: [{ key: "drain_secs", kind: "int", unit: "s", max: 300 }] }
];
function pathList(text) {
  return text.split("\n").map((l) => l.trim()).filter((l) => l !== "");
}
var DEFAULTS = {
  max_runtimes: 32,
  default_timeout_ms: 5e3,
  max_timeout_ms: 3e4,
  idle_ttl_secs: 900,
  heap_mb: 128,
  external_mb: 64,
  scratch_mb: 8,
  scratch_files: 64,
  scratch_root: null,
  inject_guidance: true,
  max_result_bytes: 32768,
  max_stream_bytes: 16384,
  warm_pool_node: 2,
  warm_pool_python: 2,
  python_path: [],
  drain_secs: 8
};
function tokens(bytes) {
  return bytes === 0 ? "disabled" : `≈ ${Math.round(bytes / 4).toLocaleString("en-US")} tokens`;
}
function description(schema, key) {
  const props = schema && typeof schema.properties === "object" ? schema.properties : {};
  return props[key]?.description ?? "";
}
function CodeRunnerConfigForm(props) {
  const value = { ...DEFAULTS, ...typeof props.value === "object" && props.value ? props.value : {} };
  const root = useRef(null);
  const focus = props.focusField?.[0];
  useEffect(() => {
    if (!focus || !root.current) return;
    const el = root.current.querySelector(`[data-field="${focus}"]`);
    el?.scrollIntoView?.({ block: "center" });
    el?.focus?.();
  }, [focus]);
  const set = (key, v) => props.onChange({ ...value, [key]: v });
  const footprint = Number(value.max_runtimes) * Number(value.scratch_mb);
  return /* @__PURE__ */ jsx("div", { "data-iii-ui": "code-runner", className: "cr-config", ref: root, children: SECTIONS.map((s, i) => /* @__PURE__ */ jsxs("fieldset", { className: "cr-config-section", children: [
    /* @__PURE__ */ jsxs("legend", { children: [
      s.title,
      " ",
      /* @__PURE__ */ jsx("span", { className: "cr-applies", children: s.applies })
    ] }),
    s.fields.map((f) => {
      const err = props.errors?.get(`/${f.key}`);
      return /* @__PURE__ */ jsxs("label", { className: `cr-field${focus === f.key ? " cr-field--focus" : ""}`, children: [
        /* @__PURE__ */ jsxs("span", { className: "cr-field-name", children: [
          /* @__PURE__ */ jsx("code", { children: f.key }),
          f.unit ? ` (${f.unit})` : ""
        ] }),
        f.kind === "bool" ? /* @__PURE__ */ jsx("input", { type: "checkbox", "data-field": f.key, checked: value[f.key] === true, onChange: (e) => set(f.key, e.target.checked) }) : f.kind === "paths" ? /* @__PURE__ */ jsx(
          "textarea",
          {
            "data-field": f.key,
            rows: 3,
            placeholder: "one absolute path per line: a directory, .zip or .whl",
            value: Array.isArray(value[f.key]) ? value[f.key].join("\n") : "",
            onChange: (e) => set(f.key, pathList(e.target.value))
          }
        ) : f.kind === "path" ? /* @__PURE__ */ jsx(
          "input",
          {
            type: "text",
            "data-field": f.key,
            value: typeof value[f.key] === "string" ? value[f.key] : "",
            placeholder: "system temp dir",
            onChange: (e) => set(f.key, e.target.value === "" ? null : e.target.value)
          }
        ) : /* @__PURE__ */ jsx(
          "input",
          {
            type: "number",
            min: 0,
            max: f.max,
            "data-field": f.key,
            value: String(value[f.key] ?? ""),
            onChange: (e) => set(f.key, e.target.value === "" ? 0 : Math.max(0, Math.floor(Number(e.target.value))))
          }
        ),
        f.unit === "bytes" ? /* @__PURE__ */ jsx("span", { className: "cr-hint", children: tokens(Number(value[f.key])) }) : null,
        /* @__PURE__ */ jsx("span", { className: "cr-field-desc", children: description(props.schema, f.key) }),
        err ? /* @__PURE__ */ jsx("span", { className: "cr-field-error", children: err }) : null
      ] }, f.key);
    }),
    s.title === "scratch" ? /* @__PURE__ */ jsxs("p", { className: "cr-hint cr-footprint", children: [
      "worst-case scratch footprint: max_runtimes × scratch_mb = ",
      footprint.toLocaleString("en-US"),
      " MiB, plus 256 MiB of /work per python runtime"
    ] }) : null
  ] }, `${s.title}-${i}`)) });
}

// src/redact.ts
var RUNTIME_ID = /rt-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
function truncateId(id) {
  return id.length <= 8 ? id : id.slice(0, 7) + "…";
}
function redactString(s) {
  return s.replace(RUNTIME_ID, (m) => truncateId(m));
}
function redactRuntimeIdsDeep(value) {
  const ancestors = /* @__PURE__ */ new Set();
  const walk = (v) => {
    if (typeof v === "string") return redactString(v);
    if (v === null || typeof v !== "object") return v;
    if (ancestors.has(v)) return "[circular]";
    ancestors.add(v);
    try {
      if (Array.isArray(v)) return v.map(walk);
      const out = {};
      for (const [k, val] of Object.entries(v)) out[redactString(k)] = walk(val);
      return out;
    } finally {
      ancestors.delete(v);
    }
  };
  return walk(value);
}

// src/common.tsx
import { useState } from "react";
import { jsx as jsx2, jsxs as jsxs2 } from "react/jsx-runtime";
var isObj = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
function unwrap(output) {
  if (isObj(output) && "content" in output && "details" in output) {
    if (isObj(output.details)) return output.details;
    if (typeof output.content === "string") {
      try {
        return JSON.parse(output.content);
      } catch {
        return output.content;
      }
    }
  }
  return output;
}
function errorOf(output) {
  const e = isObj(output) && isObj(output.error) ? output.error : output;
  if (isObj(e) && typeof e.message === "string" && (typeof e.code === "string" || isObj(output) && "error" in output)) {
    return { code: String(e.code ?? "error"), message: e.message };
  }
  return null;
}
function deniedOf(output) {
  if (isObj(output) && (output.decision === "deny" || output.denied === true)) {
    return typeof output.reason === "string" ? output.reason : "denied by the approval gate";
  }
  return null;
}
function clamp(text, maxLines, maxChars) {
  let t = text;
  let clipped = false;
  const lines = t.split("\n");
  if (lines.length > maxLines) {
    t = lines.slice(0, maxLines).join("\n");
    clipped = true;
  }
  if (t.length > maxChars) {
    t = t.slice(0, maxChars);
    clipped = true;
  }
  return { text: t, clipped };
}
function Card(props) {
  return /* @__PURE__ */ jsx2("div", { "data-iii-ui": "code-runner", style: { display: "contents" }, children: /* @__PURE__ */ jsx2("section", { className: `cr-card cr-card--${props.kind} cr-tone--${props.tone ?? "muted"}`, children: props.children }) });
}
function Chip(props) {
  return /* @__PURE__ */ jsx2("span", { className: "cr-chip", title: props.title, children: props.children });
}
function RuntimeChip(props) {
  const [copied, setCopied] = useState(false);
  const copy = () => {
    const nav = globalThis.navigator;
    void nav?.clipboard?.writeText(props.id).then(
      () => setCopied(true),
      () => setCopied(false)
    );
  };
  return /* @__PURE__ */ jsxs2("button", { type: "button", className: "cr-chip cr-chip--runtime", onClick: copy, title: "click to copy the full runtime id (a secret)", children: [
    truncateId(props.id),
    copied ? " · copied" : ""
  ] });
}
function Terminal(props) {
  const { text, clipped } = clamp(redactString(props.text), 12, 2e3);
  return /* @__PURE__ */ jsxs2("div", { className: "cr-term", children: [
    /* @__PURE__ */ jsx2("div", { className: "cr-term-label", children: props.label }),
    /* @__PURE__ */ jsx2("pre", { className: "cr-term-body", children: text }),
    clipped ? /* @__PURE__ */ jsx2("div", { className: "cr-note", children: "output clipped in this card; the full text is in the raw tab" }) : null
  ] });
}
function Source(props) {
  const { text, clipped } = clamp(redactString(props.code), 14, 2e3);
  return /* @__PURE__ */ jsxs2("div", { className: "cr-source", children: [
    /* @__PURE__ */ jsx2("pre", { className: `cr-code cr-lang-${props.lang ?? "text"}`, children: /* @__PURE__ */ jsx2("code", { children: highlight(text, props.lang) }) }),
    clipped ? /* @__PURE__ */ jsx2("div", { className: "cr-note", children: "source clipped to 14 lines / 2000 characters" }) : null
  ] });
}
var KEYWORDS = {
  node: new Set("async await break case catch class const continue default delete do else export for function if import in instanceof let new of return switch throw try typeof var void while yield".split(" ")),
  python: new Set("and as assert async await break class continue def del elif else except False finally for from global if import in is lambda None nonlocal not or pass raise return True try while with yield".split(" "))
};
function highlight(code, lang) {
  const kw = KEYWORDS[lang ?? ""] ?? /* @__PURE__ */ new Set();
  const re = lang === "python" ? /(#[^\n]*|"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|\b[A-Za-z_]\w*\b)/g : /(\/\/[^\n]*|`(?:\\.|[^`\\])*`|"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|\b[A-Za-z_$][\w$]*\b)/g;
  const out = [];
  let last = 0;
  let i = 0;
  for (const m of code.matchAll(re)) {
    const tok = m[0];
    const at = m.index ?? 0;
    if (at > last) out.push(code.slice(last, at));
    let cls = "";
    if (tok.startsWith("#") || tok.startsWith("//")) cls = "cr-hl-comment";
    else if (/^["'`]/.test(tok)) cls = "cr-hl-string";
    else if (kw.has(tok)) cls = "cr-hl-keyword";
    out.push(cls ? /* @__PURE__ */ jsx2("span", { className: cls, children: tok }, i++) : tok);
    last = at + tok.length;
  }
  if (last < code.length) out.push(code.slice(last));
  return out;
}
function ErrorCard(props) {
  return /* @__PURE__ */ jsxs2(Card, { kind: "error", tone: "alert", children: [
    /* @__PURE__ */ jsxs2("header", { className: "cr-head", children: [
      /* @__PURE__ */ jsx2("strong", { children: props.functionId }),
      " failed: ",
      /* @__PURE__ */ jsx2("code", { children: props.code })
    ] }),
    /* @__PURE__ */ jsx2("pre", { className: "cr-error-body", children: redactString(props.message) })
  ] });
}
function DeniedCard(props) {
  return /* @__PURE__ */ jsxs2(Card, { kind: "denied", tone: "warn", children: [
    /* @__PURE__ */ jsxs2("header", { className: "cr-head", children: [
      /* @__PURE__ */ jsx2("strong", { children: props.functionId }),
      " was denied at the gate — it never ran"
    ] }),
    /* @__PURE__ */ jsx2("p", { className: "cr-note", children: redactString(props.reason) })
  ] });
}
function RunningCard(props) {
  return /* @__PURE__ */ jsxs2(Card, { kind: "running", children: [
    /* @__PURE__ */ jsxs2("header", { className: "cr-head cr-running", children: [
      /* @__PURE__ */ jsx2("span", { className: "cr-spinner", "aria-hidden": "true" }),
      " ",
      props.title
    ] }),
    props.children
  ] });
}
function jsonText(v) {
  return JSON.stringify(redactRuntimeIdsDeep(v), null, 2) ?? "undefined";
}

// src/register.tsx
import { Fragment, jsx as jsx3, jsxs as jsxs3 } from "react/jsx-runtime";
function namespaceOf(id) {
  const i = id.indexOf("::");
  return i > 0 ? id.slice(0, i) + "::" : null;
}
function definesHandler(source, lang) {
  return lang === "python" ? /\bdef\s+handler\s*\(|\bhandler\s*=/.test(source) : /\bhandler\b/.test(source);
}
function Body({ message }) {
  const input = isObj(message.input) ? message.input : {};
  const id = typeof input.function_id === "string" ? input.function_id : "";
  const lang = typeof input.lang === "string" ? input.lang : void 0;
  const source = typeof input.source === "string" ? input.source : null;
  const ns = namespaceOf(id);
  const warnings = [];
  if (!id) warnings.push("function_id is missing or not a string");
  if (lang !== "node" && lang !== "python") warnings.push('lang must be "node" or "python"');
  if (source === null) warnings.push("source is missing or not a string");
  return /* @__PURE__ */ jsxs3(Fragment, { children: [
    /* @__PURE__ */ jsx3("div", { className: "cr-fn-id", children: /* @__PURE__ */ jsx3("code", { children: redactString(id || "(no function_id)") }) }),
    /* @__PURE__ */ jsx3("div", { className: "cr-namespace", children: ns ? /* @__PURE__ */ jsxs3(Fragment, { children: [
      "claims namespace ",
      /* @__PURE__ */ jsx3("code", { children: redactString(ns) }),
      " — ids are claimed across BOTH engines"
    ] }) : /* @__PURE__ */ jsx3("span", { className: "cr-warning", children: 'no namespace: the id needs a "my-app::" prefix' }) }),
    typeof input.description === "string" && input.description ? /* @__PURE__ */ jsx3("p", { className: "cr-description", children: redactString(input.description) }) : /* @__PURE__ */ jsx3("div", { className: "cr-warning", children: "no description — callers see only a default in engine::functions::info" }),
    /* @__PURE__ */ jsx3("div", { className: "cr-chips", children: lang ? /* @__PURE__ */ jsx3(Chip, { children: lang }) : null }),
    source !== null ? /* @__PURE__ */ jsx3(Source, { lang, code: source }) : null,
    source !== null && !definesHandler(source, lang) ? /* @__PURE__ */ jsxs3("div", { className: "cr-warning", children: [
      "nothing named ",
      /* @__PURE__ */ jsx3("code", { children: "handler" }),
      " appears in the source —",
      " ",
      lang === "python" ? "this registration will be REFUSED" : "it will be refused too"
    ] }) : null,
    warnings.map((w) => /* @__PURE__ */ jsx3("div", { className: "cr-warning", children: w }, w))
  ] });
}
function RegisterCard({ message }) {
  const output = unwrap(message.output);
  const denied = deniedOf(output);
  if (denied) return /* @__PURE__ */ jsx3(DeniedCard, { functionId: message.functionId, reason: denied });
  const err = errorOf(output);
  if (err) return /* @__PURE__ */ jsx3(ErrorCard, { functionId: message.functionId, code: err.code, message: err.message });
  const input = isObj(message.input) ? message.input : {};
  const ok = isObj(output) && output.registered === true;
  const mismatch = isObj(output) && typeof output.function_id === "string" && output.function_id !== input.function_id;
  return /* @__PURE__ */ jsxs3(Card, { kind: "register", tone: ok && !mismatch ? "ok" : "warn", children: [
    /* @__PURE__ */ jsx3("header", { className: "cr-head", children: ok ? "registered" : "not registered" }),
    /* @__PURE__ */ jsx3(Body, { message }),
    !isObj(output) ? /* @__PURE__ */ jsx3("div", { className: "cr-malformed", children: "malformed response" }) : null,
    mismatch ? /* @__PURE__ */ jsx3("div", { className: "cr-warning", children: "the response names a different function id" }) : null
  ] });
}
function RegisterRunning({ message }) {
  return /* @__PURE__ */ jsx3(RunningCard, { title: "registering…", children: /* @__PURE__ */ jsx3(Body, { message }) });
}
function RegisterPreview({ message }) {
  return /* @__PURE__ */ jsxs3(Card, { kind: "preview", children: [
    /* @__PURE__ */ jsx3("header", { className: "cr-head", children: "register this function?" }),
    /* @__PURE__ */ jsx3(Body, { message })
  ] });
}

// src/run.tsx
import { jsx as jsx4, jsxs as jsxs4 } from "react/jsx-runtime";
var RETURN_HINT = {
  node: "node runs code as a function body — use `return` to send a value back",
  python: "python runs code as a module — assign `result` to send a value back"
};
var PYTHON_LIBRARIES = "openpyxl, xlsxwriter, pypdf, sympy, networkx, dateutil, pytz, yaml, jinja2, bs4, markdown, rich, pygments, markdown_it, lark, pyparsing, tomlkit, xmltodict, jmespath, pydantic, jsonschema, attrs, toolz, more_itertools, sortedcontainers, cachetools, tabulate, humanize, unidecode, isodate, chardet, idna, packaging";
function missingModule(stderr) {
  if (typeof stderr !== "string") return null;
  const m = /ModuleNotFoundError: No module named '([^']+)'/.exec(stderr);
  return m ? m[1] : null;
}
var NODE_PACKAGES = "lodash, date-fns, dayjs, zod, yaml, papaparse, marked, decimal.js, uuid, ajv, mathjs, fast-xml-parser, diff, semver";
function nodeHint(stderr) {
  if (typeof stderr !== "string") return null;
  const missing = /Cannot find module '([^']+)'/.exec(stderr);
  if (missing) {
    return `no package ${missing[1]} here: no npm install and no network; built in: ${NODE_PACKAGES}, and node's I/O-free built-ins (assert, buffer, crypto, events, path, stream, url, util, zlib, fs over /scratch)`;
  }
  const unavailable = /node:([\w/]+) is not available in code-runner/.exec(stderr);
  if (unavailable) {
    return `node:${unavailable[1]} is not here: no network, no processes, no host files — call bus functions with iii.trigger instead`;
  }
  const ref = /ReferenceError: ([\w$]+) is not defined/.exec(stderr);
  if (ref) {
    return `${ref[1]} is not defined here: the sandbox has node's and the web's globals (timers, console, URL, TextEncoder, crypto, structuredClone, Buffer, process, require) but no DOM (window, document) and no network`;
  }
  return null;
}
function chips(input, output) {
  const rid = typeof output?.runtime_id === "string" ? output.runtime_id : typeof input.runtime_id === "string" ? input.runtime_id : "";
  const mode = typeof input.runtime_id === "string" && input.runtime_id ? "reused runtime" : input.keep === true ? "keeps the runtime" : "one-shot";
  return /* @__PURE__ */ jsxs4("div", { className: "cr-chips", children: [
    rid ? /* @__PURE__ */ jsx4(RuntimeChip, { id: rid }) : null,
    /* @__PURE__ */ jsx4(Chip, { children: mode }),
    typeof input.lang === "string" ? /* @__PURE__ */ jsx4(Chip, { children: input.lang }) : null,
    input.timeout_ms != null ? /* @__PURE__ */ jsxs4(Chip, { children: [
      "timeout ",
      String(input.timeout_ms),
      " ms"
    ] }) : null,
    input.memory_mb != null ? /* @__PURE__ */ jsxs4(Chip, { children: [
      "memory ",
      String(input.memory_mb),
      " MiB"
    ] }) : null
  ] });
}
function Completion(props) {
  if (!("result" in props.output)) {
    return /* @__PURE__ */ jsx4("div", { className: "cr-result cr-malformed", children: "malformed response: no `result` key" });
  }
  const r = props.output.result;
  if (r === null) {
    return /* @__PURE__ */ jsxs4("div", { className: "cr-result", children: [
      /* @__PURE__ */ jsx4("span", { className: "cr-result-null", children: "returned nothing" }),
      props.lang && RETURN_HINT[props.lang] ? /* @__PURE__ */ jsxs4("span", { className: "cr-note", children: [
        " — ",
        RETURN_HINT[props.lang]
      ] }) : null
    ] });
  }
  const text = isObj(r) || Array.isArray(r) ? jsonText(r) : typeof r === "string" ? redactString(r) : String(r);
  return /* @__PURE__ */ jsx4("div", { className: "cr-result", children: /* @__PURE__ */ jsx4("pre", { className: "cr-ui-result-body", children: text }) });
}
function RunCard({ message }) {
  const input = isObj(message.input) ? message.input : {};
  const output = unwrap(message.output);
  const denied = deniedOf(output);
  if (denied) return /* @__PURE__ */ jsx4(DeniedCard, { functionId: message.functionId, reason: denied });
  const err = errorOf(output);
  if (err) return /* @__PURE__ */ jsx4(ErrorCard, { functionId: message.functionId, code: err.code, message: err.message });
  if (!isObj(output)) {
    return /* @__PURE__ */ jsx4(Card, { kind: "run", tone: "warn", children: /* @__PURE__ */ jsxs4("div", { className: "cr-malformed", children: [
      "malformed response: ",
      redactString(JSON.stringify(output) ?? String(output))
    ] }) });
  }
  const exit = typeof output.exit_code === "number" ? output.exit_code : null;
  const failed = exit !== 0;
  const lang = typeof input.lang === "string" ? input.lang : void 0;
  const duration = typeof output.duration_ms === "number" ? output.duration_ms : message.durationMs;
  return /* @__PURE__ */ jsxs4(Card, { kind: "run", tone: failed ? "warn" : "ok", children: [
    /* @__PURE__ */ jsxs4("header", { className: `cr-head cr-verdict ${failed ? "cr-verdict--warn" : "cr-verdict--ok"}`, children: [
      /* @__PURE__ */ jsxs4("strong", { children: [
        "exit ",
        exit ?? "?"
      ] }),
      /* @__PURE__ */ jsx4("span", { className: "cr-note", children: failed ? " — the code threw or failed; see stderr" : " — completed" }),
      duration != null ? /* @__PURE__ */ jsxs4("span", { className: "cr-duration", children: [
        " · ",
        duration,
        " ms"
      ] }) : null
    ] }),
    chips(input, output),
    /* @__PURE__ */ jsx4(Completion, { output, lang }),
    typeof input.code === "string" ? /* @__PURE__ */ jsx4(Source, { lang, code: input.code }) : null,
    typeof output.stdout === "string" && output.stdout !== "" ? /* @__PURE__ */ jsx4(Terminal, { label: "stdout", text: output.stdout }) : null,
    typeof output.stderr === "string" && output.stderr !== "" ? /* @__PURE__ */ jsx4(Terminal, { label: "stderr", text: output.stderr }) : null,
    lang === "python" && missingModule(output.stderr) ? /* @__PURE__ */ jsxs4("div", { className: "cr-note cr-missing-module", children: [
      "no module ",
      missingModule(output.stderr),
      " here: there is no pip and no network (no numpy, no pandas); built in besides the standard library: ",
      PYTHON_LIBRARIES
    ] }) : null,
    lang === "node" && nodeHint(output.stderr) ? /* @__PURE__ */ jsx4("div", { className: "cr-note cr-missing-module", children: nodeHint(output.stderr) }) : null
  ] });
}
function RunRunning({ message }) {
  const input = isObj(message.input) ? message.input : {};
  return /* @__PURE__ */ jsxs4(RunningCard, { title: `running ${typeof input.lang === "string" ? input.lang : "code"}…`, children: [
    chips(input, null),
    typeof input.code === "string" ? /* @__PURE__ */ jsx4(Source, { lang: typeof input.lang === "string" ? input.lang : void 0, code: input.code }) : null
  ] });
}
function RunPreview({ message }) {
  const input = isObj(message.input) ? message.input : {};
  const code = typeof input.code === "string" ? input.code : "";
  const clipped = code.length > 256;
  return /* @__PURE__ */ jsxs4(Card, { kind: "preview", children: [
    /* @__PURE__ */ jsxs4("header", { className: "cr-head", children: [
      "run ",
      typeof input.lang === "string" ? input.lang : "",
      " code?"
    ] }),
    chips(input, null),
    /* @__PURE__ */ jsx4("pre", { className: "cr-code", children: redactString(clipped ? code.slice(0, 256) : code) }),
    clipped ? /* @__PURE__ */ jsxs4("div", { className: "cr-warning", children: [
      "preview clipped to 256 of ",
      code.length,
      " characters — check the full code before approving"
    ] }) : null
  ] });
}

// src/teardown.tsx
import { jsx as jsx5, jsxs as jsxs5 } from "react/jsx-runtime";
function Target({ input }) {
  if (typeof input.runtime_id === "string" && input.runtime_id) {
    return /* @__PURE__ */ jsxs5("div", { className: "cr-chips", children: [
      /* @__PURE__ */ jsx5(Chip, { children: "runtime" }),
      /* @__PURE__ */ jsx5(RuntimeChip, { id: input.runtime_id })
    ] });
  }
  if (typeof input.namespace === "string" && input.namespace) {
    return /* @__PURE__ */ jsxs5("div", { className: "cr-chips", children: [
      /* @__PURE__ */ jsx5(Chip, { children: "namespace" }),
      /* @__PURE__ */ jsx5("code", { children: redactString(input.namespace) })
    ] });
  }
  return /* @__PURE__ */ jsx5("div", { className: "cr-warning", children: "neither runtime_id nor namespace was given" });
}
function TeardownCard({ message }) {
  const input = isObj(message.input) ? message.input : {};
  const output = unwrap(message.output);
  const denied = deniedOf(output);
  if (denied) return /* @__PURE__ */ jsx5(DeniedCard, { functionId: message.functionId, reason: denied });
  const err = errorOf(output);
  if (err) return /* @__PURE__ */ jsx5(ErrorCard, { functionId: message.functionId, code: err.code, message: err.message });
  const o = isObj(output) ? output : {};
  const list = o.unregistered;
  const warnings = [];
  if (o.torn_down !== true) warnings.push("torn_down is not true");
  let ids = [];
  let malformed = [];
  if (!Array.isArray(list)) warnings.push("the unregistered list is missing");
  else {
    ids = list.filter((x) => typeof x === "string");
    malformed = list.filter((x) => typeof x !== "string");
    if (malformed.length) warnings.push(`${malformed.length} malformed entr${malformed.length === 1 ? "y" : "ies"} in unregistered`);
  }
  const shown = ids.slice(0, 12);
  const rest = ids.slice(12);
  return /* @__PURE__ */ jsxs5(Card, { kind: "teardown", tone: warnings.length ? "warn" : "ok", children: [
    /* @__PURE__ */ jsxs5("header", { className: "cr-head", children: [
      "torn down · ",
      ids.length,
      " function id",
      ids.length === 1 ? "" : "s",
      " stopped resolving"
    ] }),
    /* @__PURE__ */ jsx5(Target, { input }),
    Array.isArray(list) && ids.length === 0 && malformed.length === 0 ? /* @__PURE__ */ jsx5("p", { className: "cr-note", children: "no bus functions were registered — nothing else stopped resolving" }) : null,
    /* @__PURE__ */ jsxs5("ul", { className: "cr-ids", children: [
      shown.map((id) => /* @__PURE__ */ jsx5("li", { children: /* @__PURE__ */ jsx5("code", { children: redactString(id) }) }, id)),
      malformed.map((m, i) => /* @__PURE__ */ jsx5("li", { className: "cr-malformed", children: redactString(JSON.stringify(m) ?? String(m)) }, `m${i}`))
    ] }),
    rest.length ? /* @__PURE__ */ jsxs5("details", { className: "cr-more", children: [
      /* @__PURE__ */ jsxs5("summary", { children: [
        rest.length,
        " more"
      ] }),
      /* @__PURE__ */ jsx5("ul", { className: "cr-ids", children: rest.map((id) => /* @__PURE__ */ jsx5("li", { children: /* @__PURE__ */ jsx5("code", { children: redactString(id) }) }, id)) })
    ] }) : null,
    warnings.map((w) => /* @__PURE__ */ jsx5("div", { className: "cr-warning", children: w }, w))
  ] });
}
function TeardownRunning({ message }) {
  return /* @__PURE__ */ jsx5(RunningCard, { title: "tearing down…", children: /* @__PURE__ */ jsx5(Target, { input: isObj(message.input) ? message.input : {} }) });
}
function TeardownPreview({ message }) {
  return /* @__PURE__ */ jsxs5(Card, { kind: "preview", children: [
    /* @__PURE__ */ jsx5("header", { className: "cr-head", children: "tear this down?" }),
    /* @__PURE__ */ jsx5(Target, { input: isObj(message.input) ? message.input : {} })
  ] });
}

// src/page.tsx
import { jsx as jsx6 } from "react/jsx-runtime";
function renderer(id, name, settled, running, preview) {
  const fn = `code-runner::${name}`;
  const mine = (m) => m && m.functionId === fn;
  const Settled = settled;
  const Running = running;
  const Preview = preview;
  return {
    id,
    isMatch: (functionId) => functionId === fn,
    tryRender: (m) => mine(m) ? m.running ? /* @__PURE__ */ jsx6(Running, { message: m }) : /* @__PURE__ */ jsx6(Settled, { message: m }) : null,
    tryRenderRunning: (m) => mine(m) ? /* @__PURE__ */ jsx6(Running, { message: m }) : null,
    tryRenderPreview: (m) => mine(m) ? /* @__PURE__ */ jsx6(Preview, { message: m }) : null,
    primaryTabLabel: name,
    redactRaw: (v) => redactRuntimeIdsDeep(v)
  };
}
var renderers = [
  renderer("code-runner/page.js#run", "run", RunCard, RunRunning, RunPreview),
  renderer("code-runner/page.js#register_function", "register_function", RegisterCard, RegisterRunning, RegisterPreview),
  renderer("code-runner/page.js#teardown", "teardown", TeardownCard, TeardownRunning, TeardownPreview)
];
function setup(host) {
  const handles = renderers.map((r) => host.functionTriggers.register(r));
  host.configForms.register("code-runner", CodeRunnerConfigForm);
  return () => {
    for (const h of handles) if (typeof h === "function") h();
  };
}
export {
  CodeRunnerConfigForm,
  setup as default,
  redactRuntimeIdsDeep,
  redactString,
  renderers,
  truncateId
};
