// code-runner isolate prelude. Runs once per context, before any tenant
// code — when the startup snapshot is made, or in an isolate made without
// one — as a function expression called with (native, intrinsics, hint,
// packageList, envOn; envOn false is a bench-only build without the
// JavaScript environment, the baseline of its cost). native reaches the
// host (Go); intrinsics are answered by the binding in C++ (promise
// states, modules, structured clone, byte encodings, microtasks). It
// installs `console` and the global `iii`, removes WebAssembly, and
// returns the host API — an object only the Go side holds. What differs
// between isolates made from one snapshot (iii.files, the namespace) is
// set by the API's configure and bind, before any tenant code runs.
// Everything tenant code could tamper with later (JSON, Promise, Error,
// the prototypes' methods) is captured here first, as node's primordials.
(function (native, intrinsics, hint, packageList, envOn) {
  'use strict';
  let namespace = '';
  let filesEnabled = false;
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
  const captureStackTrace = Error.captureStackTrace;
  // uncurry(f)(self, ...args) is self.f(...args) with the f captured now.
  const uncurry = Function.prototype.bind.bind(Function.prototype.call);
  const StringSlice = uncurry(String.prototype.slice);
  const StringReplace = uncurry(String.prototype.replace), StringStartsWith = uncurry(String.prototype.startsWith);
  const StringIndexOf = uncurry(String.prototype.indexOf), StringEndsWith = uncurry(String.prototype.endsWith);
  const StringLastIndexOf = uncurry(String.prototype.lastIndexOf);
  // Regular expressions the environment uses are hardened as node's are
  // (hardenRegExp): exec, the symbol methods and the flags are own
  // properties holding V8's originals, so a tenant that replaces
  // RegExp.prototype's reaches none of ours; matches calls the original
  // exec directly.
  const RegExpExec = uncurry(RegExp.prototype.exec);
  const regExpOwn = [];
  for (const k of ['exec', Symbol.match, Symbol.matchAll, Symbol.replace, Symbol.search, Symbol.split]) {
    regExpOwn[regExpOwn.length] = [k, RegExp.prototype[k]];
  }
  const regExpFlags = ['dotAll', 'flags', 'global', 'hasIndices', 'ignoreCase', 'multiline', 'source', 'sticky', 'unicode', 'unicodeSets'];
  const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  function hardened(re) {
    for (let i = 0; i < regExpOwn.length; i++) defineProperty(re, regExpOwn[i][0], { value: regExpOwn[i][1], configurable: true });
    for (let i = 0; i < regExpFlags.length; i++) {
      const d = getOwnPropertyDescriptor(RegExp.prototype, regExpFlags[i]);
      if (d !== undefined && d.get !== undefined) defineProperty(re, regExpFlags[i], { value: apply(d.get, re, []), configurable: true });
    }
    return re;
  }
  function matches(re, s) { return RegExpExec(re, s) !== null; }
  // splitOn splits s at every ch (one character), without String's split.
  function splitOn(s, ch) {
    const out = [];
    let from = 0;
    for (let i = 0; i < s.length; i++) {
      if (s[i] === ch) { out[out.length] = StringSlice(s, from, i); from = i + 1; }
    }
    out[out.length] = StringSlice(s, from);
    return out;
  }
  const ArrayIndexOf = uncurry(Array.prototype.indexOf), ArrayJoin = uncurry(Array.prototype.join);
  const ArrayPush = uncurry(Array.prototype.push);
  const ArraySlice = uncurry(Array.prototype.slice);
  const MapGet = uncurry(Map.prototype.get), MapSet = uncurry(Map.prototype.set), MapHas = uncurry(Map.prototype.has);
  const MapDelete = uncurry(Map.prototype.delete);
  const WeakMapGet = uncurry(WeakMap.prototype.get), WeakMapSet = uncurry(WeakMap.prototype.set);
  const WeakMapDelete = uncurry(WeakMap.prototype.delete);
  const PromiseThen = uncurry(Promise.prototype.then);
  const ObjectKeys = Object.keys, ObjectCreate = Object.create, getOwnPropertyNames = Object.getOwnPropertyNames;
  const isPrototypeOf = uncurry(Object.prototype.isPrototypeOf);
  const runMicrotasks = intrinsics.runMicrotasks, ownerNow = intrinsics.owner, setOwner = intrinsics.setOwner;

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
    intrinsics,
    get filesOn() { return filesEnabled; },
    unit: loadUnit,
    // The JSON of the isolate as it was before any tenant code ran: host
    // answers are parsed with it, never with a JSON.parse a tenant replaced.
    parse,
    stringify,
    own,
    markQuota(e, text) { apply(wmSet, quotaErrors, [e, text]); },
    onRun(fn) { resetExitCode = fn; },
    // The process object, once made: its listeners hear unhandled
    // rejections.
    setProcess(p) { processObject = p; },
    nextTick,
    // An error as node's internals make them: its code on it and in its
    // stack's first line, the frames from above on left out.
    codedError,
    // How node's argument errors show a value they got ("type string
    // ('x')", "an instance of Map", "function f", "null").
    received: describe,
  });
  let processObject = null;
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
    if (above !== undefined) captureStackTrace(e, above);
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
  const groupNewline = hardened(/\n/g);
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
      const parts = splitOn(apply(numberToFixed, seconds, [3]), '.');
      const res = hours !== 0 ? hours + ':' + pad(minutes) : minutes;
      return res + ':' + pad(parts[0]) + '.' + parts[1] + ' (' + (hours !== 0 ? 'h:m' : '') + 'm:ss.mmm)';
    }
    if (seconds !== 0) return apply(numberToFixed, seconds, [3]) + 's';
    return +apply(numberToFixed, ms, [3]) + 'ms';
  }
  function nowMs() { return +native('now', ''); }
  const numberToFixed = Number.prototype.toFixed;
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
      const lines = splitOn(stack, '\n');
      if (lines.length > 1) {
        stack = lines[0];
        for (let i = 2; i < lines.length; i++) stack += '\n' + lines[i];
      }
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
    groupEnd() { groupIndent = StringSlice(groupIndent, 0, groupIndent.length - 2); },
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
  function resetConsoleState() {
    apply(Map.prototype.clear, counts, []);
    apply(Map.prototype.clear, timersByLabel, []);
  }
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
    if (shown.length > 28) shown = StringSlice(shown, 0, 25) + '...';
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
    fatalException(e, 'uncaughtException', errorText(e));
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
  // structuredClone is V8's own serializer, as node's is.
  const structuredCloneFn = intrinsics.structuredClone;
  function codeError(Ctor, code, message) {
    const e = new Ctor(message);
    defineProperty(e, 'code', { value: code, writable: true, configurable: true, enumerable: true });
    return e;
  }
  setGlobal('structuredClone', function structuredClone(value, options) {
    if (arguments.length === 0) throw codeError(TypeErrorCtor, 'ERR_MISSING_ARGS', 'The value argument must be specified');
    let transfer;
    if (options !== undefined && options !== null) {
      if (typeof options !== 'object' && typeof options !== 'function') {
        throw codeError(TypeErrorCtor, 'ERR_INVALID_ARG_TYPE', 'The options argument must be either an object or undefined');
      }
      const list = options.transfer;
      if (list !== undefined && list !== null) {
        if (typeof list !== 'object' || typeof list[Symbol.iterator] !== 'function') {
          throw codeError(TypeErrorCtor, 'ERR_INVALID_ARG_TYPE', 'Optional transferList argument must be an iterable');
        }
        transfer = [];
        for (const x of list) apply(arrayPush, transfer, [x]);
      }
    }
    return structuredCloneFn(value, transfer);
  });
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
    readline: 'node/readline', 'readline/promises': 'node/readline/promises',
  };
  const nodeOnly = ['async_hooks', 'child_process', 'cluster', 'console', 'constants', 'dgram', 'diagnostics_channel', 'dns',
    'dns/promises', 'domain', 'http', 'http2', 'https', 'inspector', 'inspector/promises', 'module', 'net',
    'repl', 'sea', 'sqlite', 'sys', 'test', 'test/reporters', 'tls', 'trace_events', 'tty', 'v8', 'vm',
    'wasi', 'worker_threads', 'path/win32', 'stream/web', 'stream/consumers'];
  // The built-in npm packages, as the binary embeds them (jsenv.Packages).
  const packageNames = packageList === '' ? [] : packageList.split(',');
  const fileModules = new MapCtor();
  function notFound(spec) {
    const e = new ErrorCtor("Cannot find module '" + spec + "': code-runner has no network and no npm install; built-in packages: " + apply(arrayJoin, packageNames, [', ']));
    defineProperty(e, 'code', { value: 'MODULE_NOT_FOUND', writable: true, configurable: true, enumerable: true });
    captureStackTrace(e, requireFn);
    return e;
  }
  function requireFn(spec) {
    if (typeof spec !== 'string') {
      throw codedError(TypeErrorCtor, 'ERR_INVALID_ARG_TYPE', 'The "id" argument must be of type string. Received ' + describe(spec));
    }
    if (spec === '') throw codedError(TypeErrorCtor, 'ERR_INVALID_ARG_VALUE', "The argument 'id' must be a non-empty string. Received ''");
    let name = spec;
    const prefixed = StringStartsWith(spec, 'node:');
    if (prefixed) name = StringSlice(spec, 5);
    if (apply(hasOwn, builtinUnits, [name])) return loadUnit(builtinUnits[name]);
    if (prefixed || apply(arrayIndexOf, nodeOnly, [name]) >= 0) {
      throw codedError(ErrorCtor, 'ERR_CODE_RUNNER_UNAVAILABLE', 'node:' + name + ' is not available in code-runner (no network, no processes, no host files)', requireFn);
    }
    if (name[0] === '.' || name[0] === '/') return requireFile(name);
    const parts = splitOn(name, '/');
    const top = name[0] === '@' ? parts[0] + '/' + parts[1] : parts[0];
    if (apply(arrayIndexOf, packageNames, [top]) < 0) throw notFound(spec);
    if (name === top) return loadUnit('pkg/' + name);
    if (native('hasUnit', 'pkg/' + name) === '1') return loadUnit('pkg/' + name);
    // lodash/map, date-fns/addDays: one function of the package.
    let sub = StringSlice(name, top.length + 1);
    if (StringEndsWith(sub, '.js')) sub = StringSlice(sub, 0, sub.length - 3);
    if ((top === 'lodash' || top === 'date-fns') && matches(identifierChars, sub)) {
      const main = loadUnit('pkg/' + top);
      if (apply(hasOwn, main, [sub])) return top === 'date-fns' ? { [sub]: main[sub], default: main[sub] } : main[sub];
    }
    throw notFound(spec);
  }
  const arrayIndexOf = Array.prototype.indexOf;
  const identifierChars = hardened(/^[A-Za-z0-9_]+$/);
  // requireFile loads a module the runtime wrote with iii.files: one
  // level of plain names (./x.js, /scratch/x.js, x.js after ./).
  // fileName resolves a module specifier to the name of a file the runtime
  // wrote (one level of plain names: ./x.js, /scratch/x.js, x.js after ./),
  // trying node's extensions; undefined when there is none.
  function fileName(spec) {
    let name = spec;
    if (StringStartsWith(name, './')) name = StringSlice(name, 2);
    else if (StringStartsWith(name, '/scratch/')) name = StringSlice(name, 9);
    else if (StringStartsWith(name, 'file:///scratch/')) name = StringSlice(name, 16);
    else return undefined;
    if (name === '' || StringIndexOf(name, '/') >= 0 || !filesEnabled) return undefined;
    const listed = host('files.list', '');
    const have = (n) => { for (let i = 0; i < listed.length; i++) if (listed[i].name === n) return true; return false; };
    const cands = [name, name + '.js', name + '.json', name + '.cjs', name + '.mjs'];
    for (let i = 0; i < cands.length; i++) if (have(cands[i])) return cands[i];
    return undefined;
  }
  function requireFile(spec) {
    const file = fileName(spec);
    if (file === undefined) throw notFound(spec);
    const cached = apply(mapGet, fileModules, [file]);
    if (cached !== undefined) return cached.exports;
    const text = host('files.readText', stringify({ name: file, t: 'string' }));
    const module = { id: '/scratch/' + file, filename: '/scratch/' + file, exports: {}, loaded: false, children: [], paths: [] };
    apply(mapSet, fileModules, [file, module]);
    try {
      if (StringEndsWith(file, '.json')) {
        module.exports = parse(text);
      } else {
        const fn = compileModule(text, '/scratch/' + file, StringEndsWith(file, '.mjs'));
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
    if (esm) src = transformCode(src, filename);
    let fn = compileWrapped(filename, src);
    if (typeof fn !== 'function' && src === text) {
      // Not plain JavaScript: module syntax or TypeScript, or a plain
      // syntax error (then V8's own message is the one to give).
      const v8Error = StringCtor(fn);
      try {
        src = transformCode(text, filename);
      } catch (e) {
        if (!matches(moduleSyntax, text)) throw new SyntaxErrorCtor(v8Error);
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
  const moduleSyntax = hardened(MODULE_SYNTAX);
  // transformCode turns module syntax into require calls and removes
  // TypeScript (sucrase, which keeps every line where it was, run by the
  // host in an isolate of its own whose intrinsics no tenant can touch),
  // giving import.meta node's shape. mode 'esm' only removes TypeScript
  // (an ES module file V8 compiles as a module).
  function transformCode(code, filename, mode) {
    const r = native('transform', code, filename, mode === undefined ? 'cjs' : mode);
    if (typeof r === 'string' && r.length > 0 && apply(charCodeAt, r, [0]) === 0) {
      throw new SyntaxErrorCtor(StringSlice(r, 1) + ' in ' + filename);
    }
    return r;
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
  // A run's result over its cap (limit, in bytes of JSON) is answered as
  // its size and shape ('omitted': "<bytes> string|array <n>"), for the
  // host to answer the cap's marker: a string is measured without being
  // encoded, an array's text never leaves the isolate.
  function resultOf(task, v, limit) {
    if (limit > 0 && typeof v === 'string') {
      const m = intrinsics.jsonStringLength(v);
      if (m[0] > limit) return finish(task, 'omitted', m[0] + ' string ' + m[1]);
    }
    const s = serialize(v);
    if (limit > 0 && s.length > limit / 4 && isArray(v)) {
      const bytes = intrinsics.utf8Length(s);
      if (bytes > limit) return finish(task, 'omitted', bytes + ' array ' + v.length);
    }
    finish(task, 'ok', s);
  }
  function track(task, p, limit) {
    apply(then, PromiseCtor.resolve(p), [
      (v) => resultOf(task, v, typeof limit === 'number' ? limit : 0),
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
  // Bytes cross to and from the host as Uint8Arrays (the binding copies
  // them once each way); a refusal is JSON like every other answer.
  const files = freeze({
    list() { return host('files.list', ''); },
    read(name) {
      const r = native('files.read', stringify({ name: name === undefined ? null : name, t: typeof name }));
      if (r instanceof U8) return r;
      return answer(r);
    },
    readText(name) { return host('files.readText', stringify({ name: name === undefined ? null : name, t: typeof name })); },
    remove(name) { host('files.remove', stringify({ name: name === undefined ? null : name, t: typeof name })); },
    write(name, contents) {
      let data, binary = false;
      if (typeof contents === 'string') data = contents;
      else if (contents instanceof U8) { data = contents; binary = true; }
      else data = null;
      // The contents travel as a third argument, not inside the JSON head.
      answer(native('files.write', stringify({ name: name === undefined ? null : name, t: typeof name, has: data !== null, binary }), data === null ? '' : data));
    },
  });

  // iii is made by configure (iii.files only where the runtime has a
  // scratch directory), then frozen.
  const hintFn = function toString() { return hint; };
  function makeIII() {
    const iii = {};
    if (filesEnabled) iii.files = files;
    defineProperty(iii, 'namespace', { get: () => namespace, enumerable: true });
    iii.registerFunction = registerFunction;
    iii.registerTrigger = registerTrigger;
    iii.registerTriggerType = registerTriggerType;
    iii.shutdown = shutdown;
    iii.trigger = trigger;
    iii.unregisterTriggerType = unregisterTriggerType;
    defineProperty(iii, 'toString', { value: hintFn, enumerable: false });
    defineProperty(iii, Symbol.for('nodejs.util.inspect.custom'), { value: hintFn, enumerable: false });
    defineProperty(iii, Symbol.toStringTag, { value: hint, enumerable: false });
    return freeze(iii);
  }

  // --- node's job order (contract §25.9): ticks, then microtasks, repeated ---
  // A tick runs as the call that queued it (its owner), as node's async
  // context follows process.nextTick.
  let ticks = [];
  let tickHead = 0;
  function nextTick(fn, ...args) {
    validateCallback(fn);
    apply(arrayPush, ticks, [{ fn, args, owner: ownerNow() }]);
  }
  function hasTicks() { return tickHead < ticks.length; }
  function runTicks() {
    while (tickHead < ticks.length) {
      // A tick that queues a tick forever runs in constant memory, as in
      // node: the run part of the queue goes once it is most of it.
      if (tickHead >= 1024 && tickHead * 2 >= ticks.length) {
        ticks = ArraySlice(ticks, tickHead);
        tickHead = 0;
      }
      const t = ticks[tickHead];
      ticks[tickHead++] = undefined;
      setOwner(t.owner);
      try {
        apply(t.fn, undefined, t.args);
      } catch (e) {
        uncaught(e);
      }
    }
    ticks = [];
    tickHead = 0;
  }

  // --- unhandled rejections (contract §25.8: node 20's default mode) ---
  // V8 reports each rejection with no handler and each handler added after;
  // what is still unhandled once the ticks and microtasks after the
  // macrotask have run is an uncaught error of the call that rejected it.
  const maybeUnhandled = new WeakMapCtor();
  let pendingUnhandled = [];
  let asyncHandled = [];
  function onReject(event, promise, reason, owner) {
    if (event === 0) {
      apply(wmSet, maybeUnhandled, [promise, { reason, owner, warned: false }]);
      apply(arrayPush, pendingUnhandled, [promise]);
    } else if (event === 1) {
      const info = apply(wmGet, maybeUnhandled, [promise]);
      if (info !== undefined) {
        WeakMapDelete(maybeUnhandled, promise);
        if (info.warned) apply(arrayPush, asyncHandled, [{ promise, owner: info.owner }]);
      }
    }
  }
  function emitProcess(event, a, b) {
    const p = processObject;
    if (p === null) return false;
    try {
      return p.emit(event, a, b) === true;
    } catch (e) {
      uncaught(e);
      return true;
    }
  }
  // UnhandledPromiseRejection is node's error for a rejection with a value
  // that is not an error; its stack is node 20's (the frames of node's own
  // code that made it there).
  const unhandledText = 'This error originated either by throwing inside of an async function without a catch block, ' +
    'or by rejecting a promise which was not handled with .catch(). The promise rejected with the reason ';
  function unhandledRejectionError(reason) {
    let shown;
    try { shown = intrinsics.detailString(reason); } catch (_) { shown = 'unknown'; }
    const e = new ErrorCtor(unhandledText + '"' + shown + '".');
    defineProperty(e, 'name', { value: 'UnhandledPromiseRejection', writable: true, configurable: true, enumerable: false });
    defineProperty(e, 'code', { value: 'ERR_UNHANDLED_REJECTION', writable: true, configurable: true, enumerable: true });
    defineProperty(e, 'stack', { value: 'UnhandledPromiseRejection: ' + e.message +
      '\n    at throwUnhandledRejectionsMode (node:internal/process/promises:389:7)' +
      '\n    at processPromiseRejections (node:internal/process/promises:470:17)' +
      '\n    at process.processTicksAndRejections (node:internal/process/task_queues:96:32)',
    writable: true, configurable: true, enumerable: false });
    return e;
  }
  // isErrorLike is node's test (internal/process/promises): an object with
  // a stack of its own. Reading it may throw (a revoked Proxy): node's
  // throws there too, and the throw is the uncaught error.
  function isErrorLike(v) {
    return v !== null && typeof v === 'object' && apply(hasOwn, v, ['stack']);
  }
  // uncaughtText is what node prints for an uncaught error: an error with
  // its own properties as util.inspect shows them, anything else as
  // errorText does.
  function uncaughtText(e) {
    try {
      if (isErrorLike(e)) return inspector().inspect(e);
    } catch (_) {}
    return errorText(e);
  }
  // fatalException is node's triggerUncaughtException: process's
  // 'uncaughtException' listeners get the error and its origin
  // ('uncaughtException' or 'unhandledRejection') when there are any, and
  // it fails the call of the code that threw otherwise — or when a
  // listener throws, with what the listener threw.
  function fatalException(e, origin, text) {
    const p = processObject;
    let listening = 0;
    if (p !== null) {
      try { listening = p.listenerCount('uncaughtException'); } catch (_) {}
    }
    if (listening > 0) {
      try {
        p.emit('uncaughtExceptionMonitor', e, origin);
        p.emit('uncaughtException', e, origin);
        return;
      } catch (thrown) {
        native('uncaught', errorText(thrown));
        return;
      }
    }
    native('uncaught', text === undefined ? uncaughtText(e) : text);
  }
  // The queues are taken whole and walked by index (shifting each entry off
  // would cost the square of their length); what a listener queues meanwhile
  // waits for the next pass, as in node.
  function processPromiseRejections() {
    let scheduled = asyncHandled.length > 0;
    while (asyncHandled.length > 0) {
      const handled = asyncHandled;
      asyncHandled = [];
      for (let i = 0; i < handled.length; i++) {
        setOwner(handled[i].owner);
        emitProcess('rejectionHandled', handled[i].promise);
      }
    }
    const batch = pendingUnhandled;
    pendingUnhandled = [];
    for (let i = 0; i < batch.length; i++) {
      const promise = batch[i];
      const info = apply(wmGet, maybeUnhandled, [promise]);
      if (info === undefined) continue;
      info.warned = true;
      setOwner(info.owner);
      if (!emitProcess('unhandledRejection', info.reason, promise)) {
        const reason = info.reason;
        let err;
        try {
          err = isErrorLike(reason) ? reason : unhandledRejectionError(reason);
        } catch (thrown) {
          err = thrown;
        }
        fatalException(err, 'unhandledRejection');
      }
      scheduled = true;
    }
    return scheduled || pendingUnhandled.length !== 0;
  }
  // drain runs after every macrotask (the run's code, a timer, a reply):
  // node's InternalCallbackScope::Close and processTicksAndRejections.
  function drain() {
    const owner = ownerNow();
    if (!hasTicks() && pendingUnhandled.length === 0 && asyncHandled.length === 0) runMicrotasks();
    if (hasTicks() || pendingUnhandled.length !== 0 || asyncHandled.length !== 0) {
      do {
        runTicks();
        runMicrotasks();
      } while (hasTicks() || processPromiseRejections());
    }
    setOwner(owner);
  }

  // --- ES modules (contract §25.10): import() anywhere, module files ---
  // Every module gets an id from the binding; built-ins and packages are
  // synthetic modules over what require gives (default: its exports, and
  // each of their own names), files ending .mjs or holding import/export
  // declarations are ES modules V8 compiles (TypeScript removed first),
  // other files CommonJS as require loads them.
  const moduleIds = new MapCtor(); // resolved key → module id
  const modulePaths = new MapCtor(); // module id → /scratch path of a file module
  const esmSyntax = hardened(/(^|[\n;])\s*(import\s*[\w*{'"]|export\s|export\{)|\bimport\.meta\b|(^|[\n;])\s*await\s/);
  const identifierName = hardened(/^[A-Za-z_$][\w$]*$/);
  const relativePath = hardened(/^(\.{0,2}\/)/), dotSlash = hardened(/^\.\//);
  // syntheticModule makes a module of what require gave: its own names
  // (names, when given, is the list node's import gives a package, taken
  // when the environment was built) and default.
  function syntheticModule(key, exports, names) {
    const values = ObjectCreate(null);
    const object = exports !== null && (typeof exports === 'object' || typeof exports === 'function');
    let hasDefault = true;
    if (names !== undefined) {
      hasDefault = false;
      for (let i = 0; i < names.length; i++) {
        const k = names[i];
        if (k === 'default') hasDefault = true;
        else if (object) values[k] = exports[k];
      }
    } else if (object) {
      const own = ObjectKeys(exports);
      for (let i = 0; i < own.length; i++) {
        const k = own[i];
        if (k !== 'default' && matches(identifierName, k)) values[k] = exports[k];
      }
    }
    // An ES module's default export; CommonJS's module.exports.
    if (hasDefault) values.default = names !== undefined && object && exports.__esModule === true && 'default' in exports ? exports.default : exports;
    return intrinsics.moduleSynthetic(key, values);
  }
  // esmNames is the list of names node's import gives a built-in package
  // (undefined for anything else).
  function esmNames(spec) {
    const text = native('esmNames', spec);
    return text === '' ? undefined : parse(text);
  }
  function importMetaOf(path) {
    const url = 'file://' + encodeURIFn(path);
    const meta = ObjectCreate(null);
    meta.dirname = '/scratch';
    meta.filename = path;
    meta.resolve = function resolve(s) {
      s = StringCtor(s);
      if (matches(relativePath, s)) return 'file://' + encodeURIFn(s[0] === '/' ? s : '/scratch/' + StringReplace(s, dotSlash, ''));
      return StringStartsWith(s, 'node:') ? s : 'node:' + s;
    };
    meta.url = url;
    return meta;
  }
  // moduleFor resolves specifier to a module id: compiled (a file) or
  // made (a built-in, a package, JSON), instantiated later.
  function moduleFor(specifier) {
    const spec = StringCtor(specifier);
    const file = (StringStartsWith(spec, '.') || StringStartsWith(spec, '/') || StringStartsWith(spec, 'file:')) ? fileName(spec) : null;
    if (file === undefined) {
      // As node's ES module loader says it.
      const path = StringStartsWith(spec, 'file://') ? StringSlice(spec, 7) : StringStartsWith(spec, '/') ? spec : '/scratch/' + StringReplace(spec, dotSlash, '');
      throw codedError(ErrorCtor, 'ERR_MODULE_NOT_FOUND', "Cannot find module '" + path + "' imported from /scratch/<code>");
    }
    const key = file === null ? spec : '/scratch/' + file;
    const have = apply(mapGet, moduleIds, [key]);
    if (have !== undefined) {
      // A module whose evaluation was stopped (its call terminated) is
      // loaded anew, as a fresh process would.
      const st = intrinsics.moduleStatus(have);
      if (st[0] !== 5 || st[1] !== null) return have;
      apply(mapDelete, moduleIds, [key]);
    }
    let id;
    if (file === null) {
      id = syntheticModule(key, requireFn(spec), esmNames(StringStartsWith(spec, 'node:') ? StringSlice(spec, 5) : spec));
    } else if (StringEndsWith(file, '.json')) {
      id = syntheticModule(key, parse(host('files.readText', stringify({ name: file, t: 'string' }))));
    } else {
      const text = host('files.readText', stringify({ name: file, t: 'string' }));
      const esm = StringEndsWith(file, '.mjs') || (!StringEndsWith(file, '.cjs') && matches(esmSyntax, text));
      if (esm) {
        const url = 'file://' + encodeURIFn(key);
        try {
          id = intrinsics.moduleCompile(text, url);
        } catch (e) {
          // TypeScript in an ES module file: its types removed, the module
          // kept as it is.
          if (!(e instanceof SyntaxErrorCtor) || !matches(moduleSyntax, text)) throw e;
          id = intrinsics.moduleCompile(transformCode(text, key, 'esm'), url);
        }
        apply(mapSet, modulePaths, [id, key]);
      } else {
        id = syntheticModule(key, requireFile('/scratch/' + file));
      }
    }
    apply(mapSet, moduleIds, [key, id]);
    return id;
  }
  function resolveStatic(specifier) { return moduleFor(specifier); }
  // importModule loads a module and its imports, evaluates it (its
  // top-level await included) and answers its namespace.
  function importModule(specifier) {
    const id = moduleFor(specifier);
    intrinsics.moduleInstantiate(id, resolveStatic);
    const done = intrinsics.moduleEvaluate(id);
    return apply(then, PromiseCtor.resolve(done), [() => intrinsics.moduleNamespace(id)]);
  }
  // import() loads its module on a job of its own, as node's loader does
  // (later, never inside the expression): code running while a module
  // graph links or evaluates — a CommonJS file the resolver loads, a
  // module's own top level — never re-enters that graph.
  function onImport(specifier, referrer) {
    return apply(then, PromiseCtor.resolve(), [() => importModule(specifier)]);
  }
  function onImportMeta(id, meta) {
    const path = apply(mapGet, modulePaths, [id]);
    const m = importMetaOf(path === undefined ? '/scratch/<code>' : path);
    const keys = ObjectKeys(m);
    for (let i = 0; i < keys.length; i++) meta[keys[i]] = m[keys[i]];
  }
  function cloneError(message) {
    const D = globalThis.DOMException;
    if (typeof D === 'function') return new D(message, 'DataCloneError');
    return new ErrorCtor(message);
  }

  // --- the host API (held by Go only) ---
  return freeze({
    // configure finishes what differs between isolates made from one
    // snapshot, before any tenant code: iii.files where the runtime has a
    // scratch directory; then iii is frozen.
    configure(filesOn) {
      // V8 adds WebAssembly to every context made from a snapshot.
      delete globalThis.WebAssembly;
      filesEnabled = filesOn === true;
      defineProperty(globalThis, 'iii', { value: makeIII(), writable: false, configurable: false, enumerable: false });
    },
    // resetConsole forgets the console's counters, timers and groups (the
    // snapshot's maker used the console to warm it).
    resetConsole() {
      groupIndent = '';
      resetConsoleState();
    },
    bind(ns) {
      namespace = ns;
    },
    // warm loads what the startup snapshot holds made: each name is a
    // global to read or a module to require.
    warm(names) {
      for (let i = 0; i < names.length; i++) {
        const n = names[i];
        if (StringStartsWith(n, 'require:')) requireFn(StringSlice(n, 8));
        else if (StringStartsWith(n, 'unit:')) loadUnit(StringSlice(n, 5));
        else void globalThis[n];
      }
    },
    // hooks are the functions the binding calls on V8's behalf.
    hooks: freeze({ onReject, onImport, onImportMeta, cloneError }),
    drain,
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
