// structuredClone: @ungap/structured-clone, with the DataCloneError the
// HTML standard names for what cannot be cloned.
const sc = require('@ungap/structured-clone');
const clone = sc.default || sc;
function uncloneable(v, seen) {
  if (typeof v === 'function' || typeof v === 'symbol') return v;
  if (v === null || typeof v !== 'object' || seen.has(v)) return undefined;
  seen.add(v);
  if (v instanceof WeakMap || v instanceof WeakSet || v instanceof Promise) return v;
  const vals = v instanceof Map ? [...v.keys(), ...v.values()] : v instanceof Set ? [...v] : ArrayBuffer.isView(v) ? [] : Object.values(v);
  for (const x of vals) { const u = uncloneable(x, seen); if (u !== undefined) return u; }
  return undefined;
}
module.exports = function structuredClone(value, options) {
  if (arguments.length === 0) throw new TypeError("The \"value\" argument must be specified");
  const bad = uncloneable(value, new Set());
  if (bad !== undefined) {
    let text;
    try { text = typeof bad === 'symbol' ? bad.toString() : typeof bad === 'function' ? String(bad) : '#<' + (bad.constructor && bad.constructor.name || 'Object') + '>'; } catch (_) { text = 'value'; }
    throw new DOMException(text + ' could not be cloned.', 'DataCloneError');
  }
  return clone(value, options);
};
