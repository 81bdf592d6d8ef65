// node:timers/promises
function abortError(signal) {
  const e = new Error('The operation was aborted', { cause: signal && signal.reason });
  e.name = 'AbortError'; e.code = 'ABORT_ERR';
  return e;
}
function later(arm, clear, delay, value, options) {
  const signal = options && options.signal;
  return new Promise((resolve, reject) => {
    if (signal && signal.aborted) { reject(abortError(signal)); return; }
    const t = arm(() => { if (signal) signal.removeEventListener('abort', onAbort); resolve(value); }, delay);
    if (options && options.ref === false && t && t.unref) t.unref();
    function onAbort() { clear(t); reject(abortError(signal)); }
    if (signal) signal.addEventListener('abort', onAbort, { once: true });
  });
}
module.exports = {
  setTimeout: (delay, value, options) => later(setTimeout, clearTimeout, delay, value, options),
  setImmediate: (value, options) => later((f) => setImmediate(f), clearImmediate, 0, value, options),
  async *setInterval(delay, value) {
    for (;;) { await later(setTimeout, clearTimeout, delay, undefined); yield value; }
  },
  scheduler: { wait: (delay, options) => later(setTimeout, clearTimeout, delay, undefined, options), yield: () => later((f) => setImmediate(f), clearImmediate, 0) },
};
