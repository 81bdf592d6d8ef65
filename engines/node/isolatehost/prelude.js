// code-runner isolate prelude. Runs once per context, before any tenant
// code, as a function expression called with (native, namespace, hint,
// filesEnabled). It installs `console` and the frozen global `iii`, removes
// WebAssembly, and returns the host API — an object only the Go side holds.
// Everything tenant code could tamper with later (JSON, Promise, Error, …)
// is captured here first.
(function (native, initialNamespace, hint, filesEnabled) {
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
  const StringCtor = String;
  const isArray = Array.isArray;
  const U8 = Uint8Array;
  const fromCharCode = String.fromCharCode;
  const MapCtor = Map;
  const mapGet = Map.prototype.get, mapSet = Map.prototype.set, mapDelete = Map.prototype.delete;
  const WeakMapCtor = WeakMap;
  const wmSet = WeakMap.prototype.set, wmGet = WeakMap.prototype.get;
  const arrayPush = Array.prototype.push, arraySplice = Array.prototype.splice, arrayJoin = Array.prototype.join;
  const charCodeAt = String.prototype.charCodeAt;
  const apply = Reflect.apply;

  // A quota refusal that escapes the run becomes the worker's own error
  // (resource_exhausted), so its text is kept here, where tenant code
  // cannot reach it: an edited e.message must not become worker text.
  const quotaErrors = new WeakMapCtor();

  // answer turns a native operation's JSON answer — {"v": value} or
  // {"e": message, "k": "TypeError"|"Error", "q": bool} — into its value
  // or a thrown error.
  function answer(text) {
    const r = parse(text);
    if (r.e !== undefined) {
      const e = r.k === 'TypeError' ? new TypeErrorCtor(r.e) : new ErrorCtor(r.e);
      if (r.q) apply(wmSet, quotaErrors, [e, r.e]);
      throw e;
    }
    return r.v;
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

  // --- console ---
  function fmt(a) {
    if (typeof a === 'string') return a;
    try {
      if (a instanceof ErrorCtor && typeof a.stack === 'string') return a.stack;
    } catch (_) {}
    try {
      const s = stringify(a);
      if (s !== undefined) return s;
    } catch (_) {}
    try {
      return StringCtor(a);
    } catch (_) {
      return '[unprintable value]';
    }
  }
  function logger(level) {
    return function () {
      const parts = [];
      for (let i = 0; i < arguments.length; i++) apply(arrayPush, parts, [fmt(arguments[i])]);
      native('log', level + '\u0000' + apply(arrayJoin, parts, [' ']));
    };
  }
  const consoleObject = {
    log: logger('log'), info: logger('log'), debug: logger('log'), dir: logger('log'),
    warn: logger('warn'), trace: logger('warn'), error: logger('error'),
  };
  defineProperty(globalThis, 'console', { value: consoleObject, writable: true, configurable: true, enumerable: false });
  delete globalThis.WebAssembly;

  // --- finished tasks, collected by the host after every entry ---
  const done = [];
  function finish(task, status, text) {
    apply(arrayPush, done, [{ task, status, text }]);
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
    // takeDone hands the finished tasks over as a flat array of primitives
    // (task, status, text, task, …): the host reads it element by element,
    // so no guest-reachable serialization (a tenant's toJSON) runs and the
    // result text is not copied and escaped once more.
    takeDone() {
      const out = [];
      for (let i = 0; i < done.length; i++) {
        const d = done[i];
        apply(arrayPush, out, [d.task, d.status, d.text]);
      }
      apply(arraySplice, done, [0, done.length]);
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
        h = factory();
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
