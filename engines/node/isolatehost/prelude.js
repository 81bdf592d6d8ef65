// code-runner isolate prelude. Runs once per context, before any tenant
// code, as a function expression called with (native, namespace, hint,
// filesEnabled, packageList, envOn; envOn false is a bench-only build
// without the JavaScript environment, the baseline of its cost). It installs `console` and the frozen global `iii`, removes
// WebAssembly, and returns the host API — an object only the Go side holds.
// Everything tenant code could tamper with later (JSON, Promise, Error, …)
// is captured here first.
(function (native, initialNamespace, hint, filesEnabled, packageList, envOn) {
  'use strict';
  let namespace = initialNamespace;
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const freeze = Object.freeze;
  const defineProperty = Object.defineProperty;
  const PromiseCtor = Promise;
  const then = Promise.prototype.then;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const SyntaxErrorCtor = SyntaxError;
  const RangeErrorCtor = RangeError;
  const StringCtor = String;
  const isArray = Array.isArray;
  const U8 = Uint8Array;
  const fromCharCode = String.fromCharCode;
  const MapCtor = Map;
  const mapGet = Map.prototype.get, mapSet = Map.prototype.set, mapDelete = Map.prototype.delete;
  const WeakMapCtor = WeakMap;
  const wmSet = WeakMap.prototype.set, wmGet = WeakMap.prototype.get;
  const arrayPush = Array.prototype.push, arrayJoin = Array.prototype.join;
  const charCodeAt = String.prototype.charCodeAt;
  const apply = Reflect.apply;

  // A quota refusal that escapes the run becomes the worker's own error
  // (resource_exhausted), so its text is kept here, where tenant code
  // cannot reach it: an edited e.message must not become worker text.
  const quotaErrors = new WeakMapCtor();

  // answer turns a native operation's JSON answer — {"v": value} or
  // {"e": message, "k": "TypeError"|"Error", "q": bool} — into its value
  // or a thrown error.
  // Only the answer's own properties count: a tenant's getter on
  // Object.prototype must not forge an error (or a quota refusal, whose
  // text becomes the worker's).
  const hasOwnProperty = Object.prototype.hasOwnProperty;
  function own(o, k) {
    return apply(hasOwnProperty, o, [k]) ? o[k] : undefined;
  }
  function answer(text) {
    const r = parse(text);
    const msg = own(r, 'e');
    if (msg !== undefined) {
      const k = own(r, 'k');
      const e = k === 'TypeError' ? new TypeErrorCtor(msg) : k === 'RangeError' ? new RangeErrorCtor(msg) : new ErrorCtor(msg);
      if (own(r, 'q') === true) apply(wmSet, quotaErrors, [e, msg]);
      throw e;
    }
    return own(r, 'v');
  }
  function host(op, arg) {
    return answer(native(op, arg));
  }

  function serialize(v) {
    try {
      const s = stringify(v);
      return s === undefined ? 'null' : s;
    } catch (_) {
      return 'null';
    }
  }

  function errorText(e) {
    try {
      if (e instanceof ErrorCtor) {
        const s = e.stack;
        if (typeof s === 'string' && s !== '') return s;
      }
    } catch (_) {}
    try {
      if (e !== null && typeof e === 'object' && ('name' in e || 'message' in e)) {
        return StringCtor(e.name) + ': ' + StringCtor(e.message);
      }
    } catch (_) {}
    try {
      return StringCtor(e);
    } catch (_) {}
    return 'unstringifiable thrown value';
  }

  // --- the environment's units (contract §25), compiled on first touch ---
  // A unit is a function (module, exports, require, __cr) the host
  // compiles from the binary's jsenv bundles (with a code cache per host
  // process). cr is what our own units reach the host through; tenant
  // code never sees it.
  const units = new MapCtor();
  let resetExitCode = null;
  const cr = freeze({
    native,
    filesOn: filesEnabled,
    unit: loadUnit,
    // The JSON of the isolate as it was before any tenant code ran: host
    // answers are parsed with it, never with a JSON.parse a tenant replaced.
    parse,
    stringify,
    own,
    markQuota(e, text) { apply(wmSet, quotaErrors, [e, text]); },
    onRun(fn) { resetExitCode = fn; },
  });
  function loadUnit(name) {
    const have = apply(mapGet, units, [name]);
    if (have !== undefined) return have.exports;
    const outer = native('unit', name);
    if (typeof outer !== 'function') throw new ErrorCtor(StringCtor(outer));
    const fn = outer(cr);
    const module = { exports: {}, loading: true };
    apply(mapSet, units, [name, module]);
    try {
      apply(fn, undefined, [module, module.exports, requireFn]);
    } catch (e) {
      apply(mapDelete, units, [name]);
      throw e;
    }
    module.loading = false;
    return module.exports;
  }
  // unitLoading says whether the named unit is being evaluated now: a
  // global it provides, read meanwhile (by the unit itself or one it
  // requires), is still undefined.
  function unitLoading(name) {
    const m = apply(mapGet, units, [name]);
    return m !== undefined && m.loading;
  }
  // lazy defines a global whose value is made when code first reads it;
  // an assignment replaces it like any writable global.
  function lazy(name, make, unit) {
    if (!envOn) return;
    defineProperty(globalThis, name, {
      configurable: true, enumerable: false,
      get() {
        if (unit !== undefined && unitLoading(unit)) return undefined;
        const v = make();
        defineProperty(globalThis, name, { value: v, writable: true, configurable: true, enumerable: false });
        return v;
      },
      set(v) {
        defineProperty(globalThis, name, { value: v, writable: true, configurable: true, enumerable: false });
      },
    });
  }
  function setGlobal(name, value) {
    if (!envOn) return;
    defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });
  }
  function codedError(Ctor, code, message, above) {
    const e = new Ctor(message);
    if (above !== undefined) ErrorCtor.captureStackTrace(e, above);
    defineProperty(e, 'code', { value: code, writable: true, configurable: true, enumerable: true });
    // As node does: the stack's first line names the code.
    try {
      defineProperty(e, 'name', { value: e.name + ' [' + code + ']', writable: true, configurable: true, enumerable: false });
      void e.stack;
      delete e.name;
    } catch (_) {}
    return e;
  }

  // --- console (contract §4.3: node's util.format, groups, counters, timers, table) ---
  const strIndexOf = String.prototype.indexOf, strReplace = String.prototype.replace, strRepeat = String.prototype.repeat;
  const encodeURIFn = encodeURI, strSlice = String.prototype.slice;
  const objectKeys = Object.keys, objectValues = Object.values, hasOwn = Object.prototype.hasOwnProperty;
  const mathMax = Math.max;
  let inspectUnit;
  function inspector() {
    if (inspectUnit === undefined) inspectUnit = loadUnit('internal/inspect');
    return inspectUnit;
  }
  function fallbackFormat(a) {
    if (typeof a === 'string') return a;
    try {
      if (a instanceof ErrorCtor && typeof a.stack === 'string') return a.stack;
    } catch (_) {}
    try {
      const s = stringify(a);
      if (s !== undefined) return s;
    } catch (_) {}
    try { return StringCtor(a); } catch (_) { return '[unprintable value]'; }
  }
  function formatArgs(args) {
    let plain = true;
    for (let i = 0; i < args.length; i++) {
      if (typeof args[i] !== 'string') { plain = false; break; }
    }
    // Strings with no format directive are joined as they are: the common
    // case never compiles util.inspect.
    if (plain && (args.length === 0 || apply(strIndexOf, args[0], ['%']) < 0)) return apply(arrayJoin, args, [' ']);
    let u;
    try {
      if (!envOn) throw null;
      u = inspector();
    } catch (_) {
      const parts = [];
      for (let i = 0; i < args.length; i++) apply(arrayPush, parts, [fallbackFormat(args[i])]);
      return apply(arrayJoin, parts, [' ']);
    }
    return apply(u.formatWithOptions, undefined, [{}, ...args]);
  }
  let groupIndent = '';
  const groupNewline = /\n/g;
  function emit(level, text) {
    if (groupIndent !== '') text = groupIndent + apply(strReplace, text, [groupNewline, '\n' + groupIndent]);
    native('log', level + '\u0000' + text);
  }
  function logger(level) {
    return function (...args) { emit(level, formatArgs(args)); };
  }
  const counts = new MapCtor();
  const timersByLabel = new MapCtor();
  function label(l) { return l === undefined ? 'default' : StringCtor(l); }
  function formatTime(ms) {
    let hours = 0, minutes = 0, seconds = 0;
    if (ms >= 1000) {
      if (ms >= 60000) {
        if (ms >= 3600000) { hours = Math.floor(ms / 3600000); ms = ms % 3600000; }
        minutes = Math.floor(ms / 60000);
        ms = ms % 60000;
      }
      seconds = ms / 1000;
    }
    const pad = (v) => (StringCtor(v).length < 2 ? '0' + v : StringCtor(v));
    if (hours !== 0 || minutes !== 0) {
      const parts = seconds.toFixed(3).split('.');
      const res = hours !== 0 ? hours + ':' + pad(minutes) : minutes;
      return res + ':' + pad(parts[0]) + '.' + parts[1] + ' (' + (hours !== 0 ? 'h:m' : '') + 'm:ss.mmm)';
    }
    if (seconds !== 0) return seconds.toFixed(3) + 's';
    return Number(ms.toFixed(3)) + 'ms';
  }
  function nowMs() { return +native('now', ''); }
  // tableText renders console.table as node 20's cli_table does (cells
  // left-aligned, as since 20.17).
  function tableText(head, columns) {
    const width = (s) => s.length;
    const rows = [];
    const widths = head.map(width);
    const longest = mathMax(...columns.map((a) => a.length));
    for (let i = 0; i < head.length; i++) {
      const column = columns[i];
      for (let j = 0; j < longest; j++) {
        if (rows[j] === undefined) rows[j] = [];
        const value = rows[j][i] = apply(hasOwn, column, [j]) ? column[j] : '';
        widths[i] = mathMax(widths[i] || 0, width(value));
      }
    }
    const row = (r) => {
      let out = '│ ';
      for (let i = 0; i < r.length; i++) {
        out += r[i] + apply(strRepeat, ' ', [widths[i] - width(r[i])]);
        if (i !== r.length - 1) out += ' │ ';
      }
      return out + ' │';
    };
    const divider = widths.map((w) => apply(strRepeat, '─', [w + 2]));
    let out = '┌' + divider.join('┬') + '┐\n' + row(head) + '\n' + '├' + divider.join('┼') + '┤\n';
    for (const r of rows) out += row(r) + '\n';
    return out + '└' + divider.join('┴') + '┘';
  }
  function table(data, properties) {
    if (properties !== undefined && !isArray(properties)) {
      throw codedError(TypeErrorCtor, 'ERR_INVALID_ARG_TYPE', 'The "properties" argument must be an instance of Array.');
    }
    if (data === null || typeof data !== 'object') { emit('log', formatArgs([data])); return; }
    const u = inspector();
    const ins = (v) => {
      const depth = v !== null && typeof v === 'object' && !isArray(v) && objectKeys(v).length > 2 ? -1 : 0;
      return u.inspect(v, { depth, maxArrayLength: 3, breakLength: Infinity });
    };
    const indexes = (n) => Array.from({ length: n }, (_, i) => ins(i));
    if (data instanceof MapCtor) {
      const keys = [], values = [];
      for (const [k, v] of data) { keys.push(ins(k)); values.push(ins(v)); }
      emit('log', tableText(['(iteration index)', 'Key', 'Values'], [indexes(keys.length), keys, values]));
      return;
    }
    if (data instanceof Set) {
      const values = [];
      for (const v of data) values.push(ins(v));
      emit('log', tableText(['(iteration index)', 'Values'], [indexes(values.length), values]));
      return;
    }
    const map = Object.create(null);
    let hasPrimitives = false;
    const valuesColumn = [];
    const indexKeys = objectKeys(data);
    for (let i = 0; i < indexKeys.length; i++) {
      const item = data[indexKeys[i]];
      const primitive = item === null || (typeof item !== 'function' && typeof item !== 'object');
      if (properties === undefined && primitive) {
        hasPrimitives = true;
        valuesColumn[i] = ins(item);
      } else {
        const keys = properties || objectKeys(item);
        for (const key of keys) {
          if (map[key] === undefined) map[key] = [];
          if ((primitive && properties) || !apply(hasOwn, item, [key])) map[key][i] = '';
          else map[key][i] = ins(item[key]);
        }
      }
    }
    const keys = objectKeys(map);
    const values = objectValues(map);
    if (hasPrimitives) { keys.push('Values'); values.push(valuesColumn); }
    keys.unshift('(index)');
    values.unshift(indexKeys);
    emit('log', tableText(keys, values));
  }
  const consoleObject = {
    log: logger('log'), info: logger('log'), debug: logger('log'), dirxml: logger('log'),
    warn: logger('warn'), error: logger('error'),
    trace(...args) {
      const e = new ErrorCtor(formatArgs(args));
      e.name = 'Trace';
      let stack = StringCtor(e.stack);
      // Drop the frame of trace itself.
      const lines = stack.split('\n');
      if (lines.length > 1) { lines.splice(1, 1); stack = lines.join('\n'); }
      emit('warn', stack);
    },
    assert(value, ...args) {
      if (value) return;
      // As node: the first argument becomes part of the message as a
      // template string would make it (an object reads [object Object], a
      // symbol throws), and the rest are formatted after it.
      args[0] = `Assertion failed${args.length === 0 ? '' : `: ${args[0]}`}`;
      emit('warn', formatArgs(args));
    },
    dir(obj, options) {
      const u = inspector();
      emit('log', u.inspect(obj, Object.assign({ customInspect: false }, options)));
    },
    table,
    count(l) {
      const k = label(l);
      const n = (apply(mapGet, counts, [k]) || 0) + 1;
      apply(mapSet, counts, [k, n]);
      emit('log', k + ': ' + n);
    },
    countReset(l) {
      const k = label(l);
      if (apply(mapGet, counts, [k]) === undefined) { emit('warn', "Count for '" + k + "' does not exist"); return; }
      apply(mapSet, counts, [k, 0]);
    },
    group(...args) {
      if (args.length > 0) emit('log', formatArgs(args));
      groupIndent += '  ';
    },
    groupEnd() { groupIndent = groupIndent.slice(0, groupIndent.length - 2); },
    time(l) {
      const k = label(l);
      if (apply(mapGet, timersByLabel, [k]) !== undefined) { emit('error', "(node:1) Warning: Label '" + k + "' already exists for console.time()"); return; }
      apply(mapSet, timersByLabel, [k, nowMs()]);
    },
    timeLog(l, ...data) {
      const k = label(l);
      const t = apply(mapGet, timersByLabel, [k]);
      if (t === undefined) { emit('error', "(node:1) Warning: No such label '" + k + "' for console.timeLog()"); return; }
      const text = k + ': ' + formatTime(nowMs() - t);
      emit('log', data.length ? text + ' ' + formatArgs(data) : text);
    },
    timeEnd(l) {
      const k = label(l);
      const t = apply(mapGet, timersByLabel, [k]);
      if (t === undefined) { emit('error', "(node:1) Warning: No such label '" + k + "' for console.timeEnd()"); return; }
      apply(mapDelete, timersByLabel, [k]);
      emit('log', k + ': ' + formatTime(nowMs() - t));
    },
    timeStamp() {}, profile() {}, profileEnd() {},
  };
  consoleObject.groupCollapsed = consoleObject.group;
  defineProperty(globalThis, 'console', { value: consoleObject, writable: true, configurable: true, enumerable: false });
  delete globalThis.WebAssembly;

  // --- timers (contract §25.2): the host keeps the schedule and fires them ---
  const timerFns = new MapCtor(); // pending timers: id → entry
  const timeoutEntries = new WeakMapCtor(); // every Timeout → its entry, for refresh() after it fired
  let timerSeq = 0;
  function describe(v) {
    if (v === null || v === undefined) return StringCtor(v);
    if (typeof v === 'function') return 'function ' + (v.name || '<anonymous>');
    if (typeof v === 'object') return 'an instance of ' + ((v.constructor && v.constructor.name) || 'Object');
    let shown = typeof v === 'string' ? "'" + v + "'" : StringCtor(v);
    if (shown.length > 28) shown = shown.slice(0, 25) + '...';
    return 'type ' + typeof v + ' (' + shown + ')';
  }
  function validateCallback(fn) {
    if (typeof fn !== 'function') throw codedError(TypeErrorCtor, 'ERR_INVALID_ARG_TYPE', 'The "callback" argument must be of type function. Received ' + describe(fn));
  }
  class Timeout {
    constructor(id, delay, repeat) {
      defineProperty(this, '_id', { value: id });
      defineProperty(this, '_idleTimeout', { value: delay, writable: true, enumerable: true, configurable: true });
      defineProperty(this, '_repeat', { value: repeat ? delay : null, writable: true, enumerable: true, configurable: true });
    }
    ref() { native('timer.ref', this._id + ',1'); return this; }
    unref() { native('timer.ref', this._id + ',0'); return this; }
    hasRef() { return native('timer.hasRef', StringCtor(this._id)) === '1'; }
    refresh() {
      const id = this._id;
      if (apply(mapGet, timerFns, [id]) !== undefined) {
        native('timer.refresh', StringCtor(id));
        return this;
      }
      // A timeout that already fired is armed again, as in node.
      const entry = apply(wmGet, timeoutEntries, [this]);
      if (entry === undefined || entry.cleared) return this;
      apply(mapSet, timerFns, [id, entry]);
      const r = native('timer.set', id + ',' + this._idleTimeout + ',0,0');
      if (r !== '') {
        apply(mapDelete, timerFns, [id]);
        answer(r);
      }
      return this;
    }
    close() { clearTimer(this); return this; }
    [Symbol.toPrimitive]() { return this._id; }
  }
  class Immediate {
    constructor(id) { defineProperty(this, '_id', { value: id }); }
    ref() { native('timer.ref', this._id + ',1'); return this; }
    unref() { native('timer.ref', this._id + ',0'); return this; }
    hasRef() { return native('timer.hasRef', StringCtor(this._id)) === '1'; }
  }
  function arm(fn, delay, args, repeat, immediate) {
    validateCallback(fn);
    if (immediate) delay = 0;
    else {
      delay = +delay;
      if (!(delay >= 1 && delay <= 2147483647)) delay = 1;
    }
    const id = ++timerSeq;
    // Everything the tenant's code could interrupt comes before the host
    // arms the timer: an armed timer always has its callback to clear.
    const t = immediate ? new Immediate(id) : new Timeout(id, delay, repeat);
    const entry = { fn, args, repeat, t, cleared: false };
    if (!immediate) apply(wmSet, timeoutEntries, [t, entry]);
    apply(mapSet, timerFns, [id, entry]);
    const r = native('timer.set', id + ',' + delay + ',' + (repeat ? 1 : 0) + ',' + (immediate ? 1 : 0));
    if (r !== '') {
      apply(mapDelete, timerFns, [id]);
      answer(r);
    }
    return t;
  }
  function clearTimer(t) {
    let id;
    if (t !== null && typeof t === 'object') id = t._id;
    else id = +t;
    const entry = typeof id === 'number' ? apply(mapGet, timerFns, [id]) : undefined;
    if (entry === undefined) {
      // A fired timeout that is cleared cannot be refreshed back.
      const fired = t !== null && typeof t === 'object' ? apply(wmGet, timeoutEntries, [t]) : undefined;
      if (fired !== undefined) fired.cleared = true;
      return;
    }
    entry.cleared = true;
    apply(mapDelete, timerFns, [id]);
    native('timer.clear', StringCtor(id));
  }
  // uncaught reports an exception nothing caught (a timer callback, a
  // microtask): as in node, it fails the call whose work it was.
  function uncaught(e) {
    native('uncaught', errorText(e));
  }
  setGlobal('setTimeout', function setTimeout(fn, delay, ...args) { return arm(fn, delay, args, false, false); });
  setGlobal('setInterval', function setInterval(fn, delay, ...args) { return arm(fn, delay, args, true, false); });
  setGlobal('setImmediate', function setImmediate(fn, ...args) { return arm(fn, 0, args, false, true); });
  // util.promisify(setTimeout) and util.promisify(setImmediate) are
  // timers/promises' own functions, as in node (loaded on first use).
  if (envOn) {
    const promisifyCustom = Symbol.for('nodejs.util.promisify.custom');
    for (const name of ['setTimeout', 'setImmediate']) {
      defineProperty(globalThis[name], promisifyCustom, {
        get() { return requireFn('timers/promises')[name]; }, configurable: true, enumerable: false,
      });
    }
  }
  setGlobal('clearTimeout', function clearTimeout(t) { clearTimer(t); });
  setGlobal('clearInterval', function clearInterval(t) { clearTimer(t); });
  setGlobal('clearImmediate', function clearImmediate(t) { clearTimer(t); });
  setGlobal('queueMicrotask', function queueMicrotask(fn) {
    validateCallback(fn);
    apply(then, PromiseCtor.resolve(), [() => {
      try { apply(fn, undefined, []); } catch (e) { uncaught(e); }
    }]);
  });

  // --- web-platform globals (contract §25.1), each compiled on first touch ---
  setGlobal('global', globalThis);
  function fromUnit(unit, keys) {
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i];
      lazy(k, () => loadUnit(unit)[k], unit);
    }
  }
  fromUnit('internal/url', ['URL', 'URLSearchParams']);
  fromUnit('internal/encoding', ['TextEncoder', 'TextDecoder']);
  lazy('structuredClone', () => loadUnit('internal/structuredclone'), 'internal/structuredclone');
  fromUnit('internal/webcrypto', ['crypto', 'Crypto', 'CryptoKey', 'SubtleCrypto']);
  fromUnit('internal/dom', ['DOMException', 'Event', 'EventTarget', 'CustomEvent', 'AbortController', 'AbortSignal']);
  fromUnit('internal/blob', ['Blob', 'File']);
  fromUnit('internal/fetch', ['fetch', 'Request', 'Response', 'Headers', 'WebSocket', 'FormData']);
  fromUnit('node/buffer', ['Buffer']);
  lazy('process', () => loadUnit('internal/process'), 'internal/process');
  lazy('performance', () => {
    const origin = +native('timeOrigin', '');
    const perf = {
      timeOrigin: origin,
      now: () => +native('now', ''),
      mark() {}, measure() {}, clearMarks() {}, clearMeasures() {},
      getEntries: () => [], getEntriesByName: () => [], getEntriesByType: () => [],
      toJSON() { return { timeOrigin: origin }; },
    };
    return perf;
  });
  lazy('navigator', () => freeze({ userAgent: 'code-runner', language: 'en-US', languages: freeze(['en-US']), hardwareConcurrency: 1, platform: 'linux' }));
  const b64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  setGlobal('btoa', function btoa(data) {
    if (arguments.length === 0) throw codedError(TypeErrorCtor, 'ERR_MISSING_ARGS', 'The "data" argument must be specified');
    const s = StringCtor(data);
    let out = '';
    for (let i = 0; i < s.length; i += 3) {
      const a = apply(charCodeAt, s, [i]), b = apply(charCodeAt, s, [i + 1]), c = apply(charCodeAt, s, [i + 2]);
      if (a > 255 || b > 255 || c > 255) throw new globalThis.DOMException('Invalid character', 'InvalidCharacterError');
      const n = (a << 16) | ((b || 0) << 8) | (c || 0);
      out += b64[n >> 18] + b64[(n >> 12) & 63] + (i + 1 < s.length ? b64[(n >> 6) & 63] : '=') + (i + 2 < s.length ? b64[n & 63] : '=');
    }
    return out;
  });
  setGlobal('atob', function atob(data) {
    if (arguments.length === 0) throw codedError(TypeErrorCtor, 'ERR_MISSING_ARGS', 'The "data" argument must be specified');
    let s = apply(strReplace, StringCtor(data), [/[\t\n\f\r ]/g, '']);
    if (s.length % 4 === 0) s = apply(strReplace, s, [/==?$/, '']);
    if (s.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(s)) {
      throw new globalThis.DOMException('The string to be decoded is not correctly encoded.', 'InvalidCharacterError');
    }
    let out = '', bits = 0, acc = 0;
    for (let i = 0; i < s.length; i++) {
      acc = (acc << 6) | apply(strIndexOf, b64, [s[i]]);
      bits += 6;
      if (bits >= 8) { bits -= 8; out += fromCharCode((acc >> bits) & 255); }
    }
    return out;
  });

  // --- require (contract §25.3–5): node's built-ins, the built-in packages, iii.files ---
  const builtinUnits = {
    assert: 'node/assert', 'assert/strict': 'node/assert/strict', buffer: 'node/buffer', events: 'node/events',
    util: 'node/util', 'util/types': 'node/util/types', path: 'node/path', 'path/posix': 'node/path/posix', url: 'node/url',
    querystring: 'node/querystring', string_decoder: 'node/string_decoder', punycode: 'node/punycode',
    crypto: 'node/crypto', zlib: 'node/zlib', timers: 'node/timers', 'timers/promises': 'node/timers/promises',
    stream: 'node/stream', 'stream/promises': 'node/stream/promises', os: 'node/os', perf_hooks: 'node/perf_hooks',
    fs: 'node/fs', 'fs/promises': 'node/fs/promises', process: 'internal/process',
  };
  const nodeOnly = ['async_hooks', 'child_process', 'cluster', 'console', 'constants', 'dgram', 'diagnostics_channel', 'dns',
    'dns/promises', 'domain', 'http', 'http2', 'https', 'inspector', 'inspector/promises', 'module', 'net', 'readline',
    'readline/promises', 'repl', 'sea', 'sqlite', 'sys', 'test', 'test/reporters', 'tls', 'trace_events', 'tty', 'v8', 'vm',
    'wasi', 'worker_threads', 'path/win32', 'stream/web', 'stream/consumers'];
  // The built-in npm packages, as the binary embeds them (jsenv.Packages).
  const packageNames = packageList === '' ? [] : packageList.split(',');
  const fileModules = new MapCtor();
  function notFound(spec) {
    const e = new ErrorCtor("Cannot find module '" + spec + "': code-runner has no network and no npm install; built-in packages: " + apply(arrayJoin, packageNames, [', ']));
    defineProperty(e, 'code', { value: 'MODULE_NOT_FOUND', writable: true, configurable: true, enumerable: true });
    ErrorCtor.captureStackTrace(e, requireFn);
    return e;
  }
  function requireFn(spec) {
    if (typeof spec !== 'string') {
      throw codedError(TypeErrorCtor, 'ERR_INVALID_ARG_TYPE', 'The "id" argument must be of type string. Received ' + describe(spec));
    }
    if (spec === '') throw codedError(TypeErrorCtor, 'ERR_INVALID_ARG_VALUE', "The argument 'id' must be a non-empty string. Received ''");
    let name = spec;
    const prefixed = apply(strIndexOf, spec, ['node:']) === 0;
    if (prefixed) name = spec.slice(5);
    if (apply(hasOwn, builtinUnits, [name])) return loadUnit(builtinUnits[name]);
    if (prefixed || apply(arrayIndexOf, nodeOnly, [name]) >= 0) {
      throw codedError(ErrorCtor, 'ERR_CODE_RUNNER_UNAVAILABLE', 'node:' + name + ' is not available in code-runner (no network, no processes, no host files)', requireFn);
    }
    if (name[0] === '.' || name[0] === '/') return requireFile(name);
    const parts = name.split('/');
    const top = name[0] === '@' ? parts[0] + '/' + parts[1] : parts[0];
    if (apply(arrayIndexOf, packageNames, [top]) < 0) throw notFound(spec);
    if (name === top) return loadUnit('pkg/' + name);
    if (native('hasUnit', 'pkg/' + name) === '1') return loadUnit('pkg/' + name);
    // lodash/map, date-fns/addDays: one function of the package.
    const sub = name.slice(top.length + 1).replace(/\.js$/, '');
    if ((top === 'lodash' || top === 'date-fns') && /^[A-Za-z0-9_]+$/.test(sub)) {
      const main = loadUnit('pkg/' + top);
      if (apply(hasOwn, main, [sub])) return top === 'date-fns' ? { [sub]: main[sub], default: main[sub] } : main[sub];
    }
    throw notFound(spec);
  }
  const arrayIndexOf = Array.prototype.indexOf;
  // requireFile loads a module the runtime wrote with iii.files: one
  // level of plain names (./x.js, /scratch/x.js, x.js after ./).
  function requireFile(spec) {
    let name = spec;
    if (apply(strIndexOf, name, ['./']) === 0) name = name.slice(2);
    else if (apply(strIndexOf, name, ['/scratch/']) === 0) name = name.slice(9);
    else throw notFound(spec);
    if (name === '' || apply(strIndexOf, name, ['/']) >= 0 || !filesEnabled) throw notFound(spec);
    const listed = host('files.list', '');
    const have = (n) => { for (let i = 0; i < listed.length; i++) if (listed[i].name === n) return true; return false; };
    let file;
    for (const cand of [name, name + '.js', name + '.json', name + '.cjs', name + '.mjs']) {
      if (have(cand)) { file = cand; break; }
    }
    if (file === undefined) throw notFound(spec);
    const cached = apply(mapGet, fileModules, [file]);
    if (cached !== undefined) return cached.exports;
    const text = host('files.readText', stringify({ name: file, t: 'string' }));
    const module = { id: '/scratch/' + file, filename: '/scratch/' + file, exports: {}, loaded: false, children: [], paths: [] };
    apply(mapSet, fileModules, [file, module]);
    try {
      if (/\.json$/.test(file)) {
        module.exports = parse(text);
      } else {
        const fn = compileModule(text, '/scratch/' + file, /\.mjs$/.test(file));
        apply(fn, module.exports, [module.exports, requireFn, module, '/scratch/' + file, '/scratch']);
      }
    } catch (e) {
      apply(mapDelete, fileModules, [file]);
      throw e;
    }
    module.loaded = true;
    return module.exports;
  }
  // compileWrapped compiles a module's code in its CommonJS wrapper (the
  // host's compileWrapped: code that declares one of the wrapper's names
  // keeps its own declaration). It answers the function or the error text.
  function compileWrapped(filename, src) {
    const fn = native('compile', filename, src);
    // The compiled script threw (code that closed the wrapper early).
    if (typeof fn === 'string' && apply(strIndexOf, fn, ['\u0001']) === 0) return apply(strSlice, fn, [1]);
    return fn;
  }
  function compileModule(text, filename, esm) {
    let src = text;
    if (esm || /\bimport\s*\(/.test(src)) src = transformCode(src, filename);
    let fn = compileWrapped(filename, src);
    if (typeof fn !== 'function' && src === text) {
      // Not plain JavaScript: module syntax or TypeScript, or a plain
      // syntax error (then V8's own message is the one to give).
      const v8Error = StringCtor(fn);
      try {
        src = transformCode(text, filename);
      } catch (e) {
        if (!moduleSyntax.test(text)) throw new SyntaxErrorCtor(v8Error);
        throw e;
      }
      fn = compileWrapped(filename, src);
    }
    if (typeof fn !== 'function') throw new SyntaxErrorCtor(StringCtor(fn));
    return fn;
  }
  // moduleSyntax decides whose syntax error a tenant sees when the
  // transform fails too: the transformer's for code that uses import/export
  // or TypeScript, V8's own otherwise.
  const moduleSyntax = /^\s*(import|export)\b|^\s*(interface|enum|declare|namespace|abstract\s+class)\s|^\s*type\s+[A-Za-z_$][\w$]*\s*(<[^>]*>)?\s*=|\)\s*:\s*[A-Za-z_${[(]|\b(let|const|var)\s+[A-Za-z_$][\w$]*\s*:\s*[A-Za-z_${[(]|\bas\s+(const|any|unknown|string|number|boolean)\b|\bsatisfies\b/m;
  const transformOptions = freeze({ transforms: freeze(['typescript', 'imports']) });
  // transformCode turns module syntax into require calls and removes
  // TypeScript (sucrase, which keeps every line where it was).
  function transformCode(code, filename) {
    const transform = loadUnit('internal/sucrase');
    try {
      return withImportMeta(transform, code, filename);
    } catch (e) {
      // sucrase's message ends with the tenant's (line:column).
      let msg = e && typeof e.message === 'string' ? e.message : StringCtor(e);
      msg = apply(strReplace, msg, [/^Error transforming [^:]*: /, '']);
      throw new SyntaxErrorCtor(msg + ' in ' + filename);
    }
  }
  // withImportMeta transforms code, giving it the import.meta node gives
  // an ES module (url, filename, dirname): sucrase leaves the expression
  // as it is, and V8 refuses it outside a module. Each import.meta (found
  // by sucrase's tokenizer, never inside a string or a comment) becomes a
  // call of a function declared after the code — hoisted, so every line
  // stays where it was — that makes the object on first use.
  // The object has node's shape: a null prototype, dirname, filename,
  // resolve (a relative or absolute path to its file: URL, a node: name
  // as it is, a bare name to node:<name>) and url. The names __crIM and
  // __crIMv are the code's own from then on.
  function withImportMeta(transform, code, filename) {
    const uses = apply(strIndexOf, code, ['import']) >= 0 && apply(strIndexOf, code, ['meta']) >= 0;
    const src = uses ? transform.replaceImportMeta(code, '__crIM') : code;
    const out = transform(src, { filePath: filename, transforms: transformOptions.transforms, disableESTransforms: true, production: true }).code;
    if (src === code) return out;
    const path = filename === '<code>' ? '/scratch/<code>' : filename;
    return out + '\n;var __crIMv; function __crIM() { if (__crIMv) return __crIMv; ' +
      'const url = ' + stringify('file://' + encodeURIFn(path)) + '; __crIMv = Object.create(null); ' +
      '__crIMv.dirname = "/scratch"; __crIMv.filename = ' + stringify(path) + '; ' +
      '__crIMv.resolve = function resolve(s) { s = String(s); if (/^(\\.{0,2}\\/)/.test(s)) return "file://" + encodeURI(s[0] === "/" ? s : "/scratch/" + s.replace(/^\\.\\//, "")); return s.startsWith("node:") ? s : "node:" + s; }; ' +
      '__crIMv.url = url; return __crIMv; }';
  }
  requireFn.resolve = function resolve(spec) {
    requireFn(spec);
    return spec;
  };
  requireFn.cache = Object.create(null);
  setGlobal('require', requireFn);

  // --- finished tasks, collected by the host after every entry ---
  // Records are defined as own elements (never push, which would call a
  // tenant's setter on Array.prototype and let it forge or swallow one).
  const done = [];
  function append(arr, v) {
    defineProperty(arr, arr.length, { value: v, writable: true, enumerable: true, configurable: true });
  }
  function finish(task, status, text) {
    append(done, freeze({ task, status, text }));
  }
  function track(task, p) {
    apply(then, PromiseCtor.resolve(p), [
      (v) => finish(task, 'ok', serialize(v)),
      (e) => {
        let quota;
        try { quota = apply(wmGet, quotaErrors, [e]); } catch (_) {}
        if (typeof quota === 'string') finish(task, 'quota', quota);
        else finish(task, 'error', errorText(e));
      },
    ]);
  }

  // --- iii.trigger ---
  const pending = new MapCtor();
  function trigger(request) {
    return new PromiseCtor((resolve, reject) => {
      if (request === null || typeof request !== 'object' || isArray(request)) throw new TypeErrorCtor('trigger(request): request must be an object');
      const fid = request.function_id;
      if (typeof fid !== 'string' || fid === '') throw new TypeErrorCtor('trigger(request): function_id must be a non-empty string');
      const action = request.action;
      if (action !== undefined && typeof action !== 'string') throw new TypeErrorCtor('trigger(request): action must be a string when given');
      const timeout = request.timeout;
      if (timeout !== undefined && typeof timeout !== 'number') throw new TypeErrorCtor('trigger(request): timeout must be a number when given');
      const timeoutMs = request.timeout_ms;
      if (timeoutMs !== undefined && typeof timeoutMs !== 'number') throw new TypeErrorCtor('trigger(request): timeout_ms must be a number when given');
      const payload = request.payload === undefined ? {} : request.payload;
      let payloadText = stringify(payload);
      if (payloadText === undefined) payloadText = 'null';
      const head = stringify({ function_id: fid, action: action === undefined ? null : action,
        timeout: timeout === undefined ? null : timeout, timeout_ms: timeoutMs === undefined ? null : timeoutMs });
      const id = host('trigger', head + '\u0000' + payloadText);
      apply(mapSet, pending, [id, { resolve, reject }]);
    });
  }

  // --- registrations ---
  const handlers = new MapCtor();
  const triggerTypes = new MapCtor();
  const RF = 'registerFunction(functionId, handler, options?): ';

  function registerFunction(functionId, handler, options) {
    return registerImpl(functionId, handler, options, null);
  }

  function registerImpl(functionId, handler, options, defaultDescription) {
    if (typeof functionId !== 'string' || functionId === '') throw new TypeErrorCtor(RF + 'functionId must be a non-empty string');
    if (typeof handler !== 'function') throw new TypeErrorCtor(RF + 'handler must be a function — HTTP-invoked functions cannot be registered from a code-runner runtime');
    if (options !== undefined && (options === null || typeof options !== 'object' || isArray(options))) throw new TypeErrorCtor(RF + 'options must be an object when given');
    const opts = options === undefined ? {} : options;
    const description = opts.description;
    if (description !== undefined && typeof description !== 'string') throw new TypeErrorCtor(RF + 'options.description must be a string when given');
    const has = (k) => opts[k] !== undefined;
    host('registerFunction', stringify({ id: functionId, description: description === undefined ? null : description,
      request_format: has('request_format') ? opts.request_format : null, has_request_format: has('request_format'),
      response_format: has('response_format') ? opts.response_format : null, has_response_format: has('response_format'),
      default_description: defaultDescription }));
    apply(mapSet, handlers, [functionId, handler]);
    let gone = false;
    return freeze({
      unregister() {
        if (gone) return;
        gone = true;
        if (apply(mapGet, handlers, [functionId]) === handler) apply(mapDelete, handlers, [functionId]);
        host('unregisterFunction', stringify({ id: functionId }));
      },
    });
  }

  function registerTrigger(input) {
    return new PromiseCtor((resolve) => {
      if (input === null || typeof input !== 'object' || isArray(input)) throw new TypeErrorCtor('registerTrigger(input): input must be an object');
      for (const k of ['type', 'function_id', 'config']) {
        if (input[k] === undefined) throw new TypeErrorCtor('invalid trigger registration: missing field `' + k + '`');
      }
      for (const k of ['type', 'function_id']) {
        if (typeof input[k] !== 'string' || input[k] === '') throw new TypeErrorCtor('registerTrigger(input): ' + k + ' must be a non-empty string');
      }
      const id = host('registerTrigger', stringify({ type: input.type, function_id: input.function_id, config: input.config,
        metadata: input.metadata === undefined ? null : input.metadata }));
      let gone = false;
      resolve(freeze({
        unregister() {
          if (gone) return;
          gone = true;
          host('unregisterTrigger', stringify({ id }));
        },
      }));
    });
  }

  function registerTriggerType(triggerType, handler) {
    if (triggerType === null || typeof triggerType !== 'object' || typeof triggerType.id !== 'string' || triggerType.id === '') {
      throw new TypeErrorCtor('registerTriggerType(triggerType, handler): triggerType.id must be a non-empty string');
    }
    if (handler === null || typeof handler !== 'object' && typeof handler !== 'function' ||
        typeof handler.registerTrigger !== 'function' || typeof handler.unregisterTrigger !== 'function') {
      throw new TypeErrorCtor('registerTriggerType(triggerType, handler): handler must have registerTrigger and unregisterTrigger methods');
    }
    const id = triggerType.id;
    const description = triggerType.description;
    host('registerTriggerType', stringify({ id, description: typeof description === 'string' ? description : null }));
    apply(mapSet, triggerTypes, [id, handler]);
    let gone = false;
    return freeze({
      unregister() {
        if (gone) return;
        gone = true;
        unregisterTriggerType(id);
      },
    });
  }

  function unregisterTriggerType(idOrObject) {
    const id = typeof idOrObject === 'string' ? idOrObject : (idOrObject !== null && typeof idOrObject === 'object' ? idOrObject.id : undefined);
    host('unregisterTriggerType', stringify({ id: id === undefined ? null : id }));
    apply(mapDelete, triggerTypes, [id]);
  }

  function shutdown() {
    throw new ErrorCtor('iii.shutdown() is not available in a code-runner runtime — the engine connection belongs to the worker and is shared by every runtime. Use code-runner::teardown to dispose this runtime.');
  }

  // --- iii.files ---
  // toBytes turns a one-byte string (each char one byte) into bytes,
  // skipping the first `from` chars.
  function toBytes(s, from) {
    const u = new U8(s.length - from);
    for (let i = from; i < s.length; i++) u[i - from] = apply(charCodeAt, s, [i]);
    return u;
  }
  function toBinaryString(u) {
    let out = '';
    for (let i = 0; i < u.length; i += 8192) out += apply(fromCharCode, null, u.subarray(i, i + 8192));
    return out;
  }
  const files = filesEnabled ? freeze({
    list() { return host('files.list', ''); },
    read(name) {
      // The bytes come back as a one-byte string behind a leading \u0001
      // (a refusal is JSON like every other answer): no JSON escaping, so
      // a file costs about its size to read.
      const r = native('files.read', stringify({ name: name === undefined ? null : name, t: typeof name }));
      if (r.length > 0 && apply(charCodeAt, r, [0]) === 1) return toBytes(r, 1);
      return answer(r);
    },
    readText(name) { return host('files.readText', stringify({ name: name === undefined ? null : name, t: typeof name })); },
    remove(name) { host('files.remove', stringify({ name: name === undefined ? null : name, t: typeof name })); },
    write(name, contents) {
      let data, binary = false;
      if (typeof contents === 'string') data = contents;
      else if (contents instanceof U8) { data = toBinaryString(contents); binary = true; }
      else data = null;
      // The contents travel as a third argument, not inside the JSON head.
      answer(native('files.write', stringify({ name: name === undefined ? null : name, t: typeof name, has: data !== null, binary }), data === null ? '' : data));
    },
  }) : undefined;

  const iii = {};
  if (files) iii.files = files;
  defineProperty(iii, 'namespace', { get: () => namespace, enumerable: true });
  iii.registerFunction = registerFunction;
  iii.registerTrigger = registerTrigger;
  iii.registerTriggerType = registerTriggerType;
  iii.shutdown = shutdown;
  iii.trigger = trigger;
  iii.unregisterTriggerType = unregisterTriggerType;
  const hintFn = function toString() { return hint; };
  defineProperty(iii, 'toString', { value: hintFn, enumerable: false });
  defineProperty(iii, Symbol.for('nodejs.util.inspect.custom'), { value: hintFn, enumerable: false });
  defineProperty(iii, Symbol.toStringTag, { value: hint, enumerable: false });
  freeze(iii);
  defineProperty(globalThis, 'iii', { value: iii, writable: false, configurable: false, enumerable: false });

  // --- the host API (held by Go only) ---
  return freeze({
    bind(ns) {
      namespace = ns;
    },
    track,
    // main runs a run's code, compiled as an async arrow taking CommonJS's
    // (exports, require, module, __filename, __dirname), as node's main module.
    // mainModule makes a run's module object (require.main); the host
    // calls the run's function with it directly, so no frame of ours is on
    // the tenant's stack.
    mainModule() {
      if (resetExitCode !== null) resetExitCode();
      const module = { id: '.', filename: '/scratch/<code>', exports: {}, loaded: false, children: [], paths: [] };
      requireFn.main = module;
      return module;
    },
    require: requireFn,
    // transform answers the transformed code, or "\u0000" and the
    // transformer's error (nothing after it: give V8's own error).
    transform(code, filename) {
      try {
        return transformCode(code, filename);
      } catch (e) {
        if (!moduleSyntax.test(code)) return '\u0000';
        let text;
        try { text = 'SyntaxError: ' + StringCtor(e.message); } catch (_) { text = 'SyntaxError'; }
        return '\u0000' + text;
      }
    },
    fireTimer(id) {
      const t = apply(mapGet, timerFns, [id]);
      if (t === undefined) return;
      if (!t.repeat) apply(mapDelete, timerFns, [id]);
      try {
        apply(t.fn, t.t, t.args);
      } catch (e) {
        uncaught(e);
      }
    },
    // takeDone hands the finished tasks over as a flat array of primitives
    // (task, status, text, task, …): the host reads it element by element,
    // so no guest-reachable serialization (a tenant's toJSON) runs and the
    // result text is not copied and escaped once more.
    takeDone() {
      const out = [];
      for (let i = 0; i < done.length; i++) {
        const d = done[i];
        append(out, d.task);
        append(out, d.status);
        append(out, d.text);
      }
      done.length = 0;
      return out;
    },
    settle(id, ok, text) {
      const p = apply(mapGet, pending, [id]);
      if (p === undefined) return;
      apply(mapDelete, pending, [id]);
      if (ok) p.resolve(text === '' ? null : parse(text));
      else p.reject(new ErrorCtor(text));
    },
    invoke(task, functionId, payloadText) {
      const h = apply(mapGet, handlers, [functionId]);
      if (h === undefined) {
        finish(task, 'missing', '');
        return;
      }
      track(task, (async () => h(parse(payloadText)))());
    },
    define(task, functionId, factory, optionsText) {
      let h;
      try {
        const module = { id: '.', filename: '/scratch/<source>', exports: {}, loaded: false, children: [], paths: [] };
        h = factory(undefined, module.exports, requireFn, module);
        if (typeof h !== 'function') {
          // export function handler / export default / module.exports.handler
          const ex = module.exports;
          if (typeof ex === 'function') h = ex;
          else if (ex !== null && typeof ex === 'object') h = typeof ex.handler === 'function' ? ex.handler : ex.default;
        }
      } catch (e) {
        finish(task, 'threw', errorText(e));
        return;
      }
      if (typeof h !== 'function') {
        finish(task, 'threw', 'TypeError: source must define handler(payload)');
        return;
      }
      try {
        const o = parse(optionsText);
        registerImpl(functionId, h, o, 'Registered through code-runner::register_function; implemented in JavaScript.');
      } catch (e) {
        finish(task, 'refused', (e !== null && typeof e === 'object') ? StringCtor(e.message) : StringCtor(e));
        return;
      }
      finish(task, 'ok', 'null');
    },
    triggerRegister(task, typeId, bindingText) {
      const h = apply(mapGet, triggerTypes, [typeId]);
      if (h === undefined) {
        finish(task, 'missing', '');
        return;
      }
      track(task, (async () => h.registerTrigger(parse(bindingText)))());
    },
    triggerUnregister(task, typeId, bindingText) {
      const h = apply(mapGet, triggerTypes, [typeId]);
      if (h === undefined) {
        finish(task, 'ok', 'null');
        return;
      }
      track(task, (async () => h.unregisterTrigger(parse(bindingText)))());
    },
  });
})
