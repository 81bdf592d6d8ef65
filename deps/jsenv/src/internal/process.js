// The global `process` (contract §25.6): no environment, no host paths,
// exit and exitCode end the current call (the host stops the isolate's
// execution; a kept runtime lives on), stdout/stderr write into the call's
// streams.
const info = __cr.parse(__cr.native('info', ''));
const listeners = new Map();
function stream(level, fd) {
  return { fd, isTTY: false, columns: 80, rows: 24, writable: true,
    write(chunk, encoding, cb) {
      let text;
      if (typeof chunk === 'string') text = chunk;
      else if (chunk instanceof Uint8Array) text = new TextDecoder().decode(chunk);
      else { const e = new TypeError('The "chunk" argument must be of type string or an instance of Buffer or Uint8Array'); e.code = 'ERR_INVALID_ARG_TYPE'; throw e; }
      __cr.native('write', level + '\u0000' + text);
      const done = typeof encoding === 'function' ? encoding : cb;
      if (typeof done === 'function') queueMicrotask(done);
      return true;
    },
    end() {}, on() { return this; }, once() { return this; }, off() { return this; }, emit() { return false; },
    removeListener() { return this; }, getWindowSize: () => [80, 24], hasColors: () => false, getColorDepth: () => 1 };
}
let exitCode;
function exit(code) {
  if (code === undefined) code = exitCode === undefined ? 0 : exitCode;
  __cr.native('exit', String(Number(code) | 0));
  // The host stops execution when control returns to JavaScript; nothing
  // after this line runs.
  for (;;) {}
}
function hrtime(prev) {
  const ns = BigInt(__cr.native('hrtime', ''));
  let s = Number(ns / 1000000000n), n = Number(ns % 1000000000n);
  if (Array.isArray(prev)) {
    s -= prev[0]; n -= prev[1];
    if (n < 0) { s--; n += 1e9; }
  }
  return [s, n];
}
hrtime.bigint = () => BigInt(__cr.native('hrtime', ''));
const proc = {
  title: 'node', version: 'v' + info.v8, versions: { v8: info.v8, 'code-runner': info.version },
  arch: 'x64', platform: 'linux', release: { name: 'code-runner' }, env: {}, argv: ['node', '<code>'], argv0: 'node',
  execArgv: [], execPath: '/usr/bin/node', pid: 1, ppid: 0, features: {}, config: { variables: {} },
  exit, hrtime, cwd: () => '/scratch',
  chdir(dir) { const e = new Error('process.chdir() is not supported in code-runner'); e.code = 'ERR_WORKER_UNSUPPORTED_OPERATION'; throw e; },
  umask: () => 0o22, uptime: () => Number(__cr.native('now', '')) / 1000,
  memoryUsage() { return __cr.parse(__cr.native('memory', '')); },
  cpuUsage: () => ({ user: 0, system: 0 }), resourceUsage: () => ({}),
  // Ticks run before promise jobs, after each macrotask (node's order).
  nextTick: __cr.nextTick,
  emitWarning(w) { console.error('(node:1) ' + (typeof w === 'string' ? 'Warning: ' + w : String(w))); },
  stdout: stream('log', 1), stderr: stream('error', 2),
  on(ev, fn) { if (!listeners.has(ev)) listeners.set(ev, []); listeners.get(ev).push(fn); return proc; },
  off(ev, fn) { const l = listeners.get(ev); if (l) { const i = l.findIndex((f) => f === fn || f.listener === fn); if (i >= 0) l.splice(i, 1); } return proc; },
  emit(ev, ...args) { const l = listeners.get(ev); if (!l || l.length === 0) return false; for (const f of [...l]) f(...args); return true; },
  listeners: (ev) => (listeners.get(ev) || []).map((f) => f.listener || f), rawListeners: (ev) => [...(listeners.get(ev) || [])], listenerCount: (ev) => (listeners.get(ev) || []).length,
  binding() { throw new Error('No such module: process.binding is not available in code-runner'); },
  kill() { const e = new Error('kill EPERM'); e.code = 'EPERM'; throw e; },
  abort() { exit(134); },
};
proc.addListener = proc.on; proc.removeListener = proc.off; proc.removeAllListeners = (ev) => { if (ev === undefined) listeners.clear(); else listeners.delete(ev); return proc; };
proc.once = (ev, fn) => {
  const once = (...args) => { proc.off(ev, once); return fn(...args); };
  once.listener = fn;
  return proc.on(ev, once);
};
proc.prependListener = (ev, fn) => { if (!listeners.has(ev)) listeners.set(ev, []); listeners.get(ev).unshift(fn); return proc; };
proc.prependOnceListener = (ev, fn) => {
  const once = (...args) => { proc.off(ev, once); return fn(...args); };
  once.listener = fn;
  return proc.prependListener(ev, once);
};
Object.defineProperty(proc, 'exitCode', {
  get: () => exitCode,
  set(v) { exitCode = v; __cr.native('exitCode', v === undefined || v === null ? '' : String(Number(v) | 0)); },
  enumerable: true, configurable: true,
});
Object.defineProperty(proc, Symbol.toStringTag, { value: 'process' });
// stdin is what `node prog.js < /dev/null` has: a stream that ends at once
// (made on first use).
let stdin;
Object.defineProperty(proc, 'stdin', {
  get() {
    if (stdin === undefined) {
      const { Readable } = require('stream');
      stdin = new Readable({ read() { this.push(null); } });
      stdin.fd = 0;
    }
    return stdin;
  },
  enumerable: true, configurable: true,
});
__cr.setProcess(proc);
// Each run starts with no exit code of its own (node's is per process;
// here it is per call).
__cr.onRun(() => { exitCode = undefined; });
module.exports = proc;
