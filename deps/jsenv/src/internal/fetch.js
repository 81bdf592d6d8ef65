// fetch and its classes exist so that feature detection works; every
// network use fails with the settled text (contract §25.1).
const text = 'fetch failed: code-runner has no network (call bus functions with iii.trigger)';
class Headers {
  #m = new Map();
  constructor(init) {
    if (init instanceof Headers) init = [...init];
    else if (init && typeof init === 'object' && !Array.isArray(init) && typeof init[Symbol.iterator] !== 'function') init = Object.entries(init);
    if (init) for (const [k, v] of init) this.append(k, v);
  }
  append(k, v) { k = String(k).toLowerCase(); const o = this.#m.get(k); this.#m.set(k, o === undefined ? String(v) : o + ', ' + v); }
  set(k, v) { this.#m.set(String(k).toLowerCase(), String(v)); }
  get(k) { const v = this.#m.get(String(k).toLowerCase()); return v === undefined ? null : v; }
  has(k) { return this.#m.has(String(k).toLowerCase()); }
  delete(k) { this.#m.delete(String(k).toLowerCase()); }
  forEach(f, self) { for (const [k, v] of this) f.call(self, v, k, this); }
  *entries() { yield* [...this.#m.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)); }
  keys() { return [...this.entries()].map((e) => e[0])[Symbol.iterator](); }
  values() { return [...this.entries()].map((e) => e[1])[Symbol.iterator](); }
  [Symbol.iterator]() { return this.entries(); }
}
function noNetwork() { return new TypeError(text); }
async function fetch() { throw noNetwork(); }
class Request { constructor() { throw noNetwork(); } }
class Response {
  #body; #init;
  constructor(body = null, init = {}) { this.#body = body; this.#init = init; this.headers = new Headers(init.headers); }
  get status() { return this.#init.status === undefined ? 200 : this.#init.status; }
  get ok() { return this.status >= 200 && this.status < 300; }
  get statusText() { return this.#init.statusText || ''; }
  async text() { const b = this.#body; return b === null ? '' : typeof b === 'string' ? b : b instanceof Blob ? b.text() : new TextDecoder().decode(b); }
  async json() { return JSON.parse(await this.text()); }
  async arrayBuffer() { return new TextEncoder().encode(await this.text()).buffer; }
  static json(v, init) { return new Response(JSON.stringify(v), init); }
  static error() { return new Response(null, { status: 0 }); }
}
class WebSocket { constructor() { throw noNetwork(); } }
class FormData {
  #e = [];
  append(k, v) { this.#e.push([String(k), v]); }
  get(k) { const e = this.#e.find((x) => x[0] === k); return e ? e[1] : null; }
  getAll(k) { return this.#e.filter((x) => x[0] === k).map((x) => x[1]); }
  has(k) { return this.#e.some((x) => x[0] === k); }
  delete(k) { this.#e = this.#e.filter((x) => x[0] !== k); }
  set(k, v) { this.delete(k); this.append(k, v); }
  *entries() { yield* this.#e; }
  [Symbol.iterator]() { return this.entries(); }
}
module.exports = { fetch, Request, Response, Headers, WebSocket, FormData };
