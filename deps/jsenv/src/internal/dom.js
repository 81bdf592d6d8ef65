// Event, EventTarget (event-target-shim), CustomEvent, DOMException and
// AbortController/AbortSignal. DOMException and the abort pair are small
// enough that no package does them better without a DOM.
const shim = require('event-target-shim');
const codes = { IndexSizeError: 1, HierarchyRequestError: 3, WrongDocumentError: 4, InvalidCharacterError: 5, NoModificationAllowedError: 7,
  NotFoundError: 8, NotSupportedError: 9, InvalidStateError: 11, SyntaxError: 12, InvalidModificationError: 13, NamespaceError: 14,
  InvalidAccessError: 15, TypeMismatchError: 17, SecurityError: 18, NetworkError: 19, AbortError: 20, URLMismatchError: 21,
  QuotaExceededError: 22, TimeoutError: 23, InvalidNodeTypeError: 24, DataCloneError: 25 };
class DOMException extends Error {
  #name; #message;
  constructor(message = '', options = 'Error') {
    super(String(message));
    let name = options;
    if (options !== null && typeof options === 'object') {
      name = 'name' in options ? options.name : 'Error';
      if ('cause' in options) Object.defineProperty(this, 'cause', { value: options.cause, writable: true, configurable: true });
    }
    this.#name = String(name);
    this.#message = String(message);
  }
  get name() { return this.#name; }
  get message() { return this.#message; }
  get code() { return codes[this.#name] || 0; }
}
Object.defineProperty(DOMException.prototype, Symbol.toStringTag, { value: 'DOMException', configurable: true });
for (const [k, v] of Object.entries(codes)) {
  const c = k.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase().replace(/_ERROR$/, '_ERR');
  Object.defineProperty(DOMException, c, { value: v, enumerable: true });
}

const Event = shim.Event;
const EventTarget = shim.EventTarget;
class CustomEvent extends Event {
  #detail;
  constructor(type, init) { super(type, init); this.#detail = init && init.detail !== undefined ? init.detail : null; }
  get detail() { return this.#detail; }
}

const internal = Symbol('code-runner abort');
class AbortSignal extends EventTarget {
  #aborted = false; #reason = undefined; onabort = null;
  constructor(key) {
    if (key !== internal) throw new TypeError('Illegal constructor');
    super();
  }
  get aborted() { return this.#aborted; }
  get reason() { return this.#reason; }
  throwIfAborted() { if (this.#aborted) throw this.#reason; }
  [internal](reason) {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason;
    const ev = new Event('abort');
    if (typeof this.onabort === 'function') this.onabort(ev);
    this.dispatchEvent(ev);
  }
  static abort(reason) { const s = new AbortSignal(internal); s[internal](reason); return s; }
  static timeout(ms) {
    const s = new AbortSignal(internal);
    const t = setTimeout(() => s[internal](new DOMException('The operation was aborted due to timeout', 'TimeoutError')), ms);
    if (t && t.unref) t.unref();
    return s;
  }
  static any(signals) {
    const s = new AbortSignal(internal);
    for (const x of signals) {
      if (x.aborted) { s[internal](x.reason); return s; }
    }
    for (const x of signals) x.addEventListener('abort', () => s[internal](x.reason), { once: true });
    return s;
  }
}
class AbortController {
  #signal = new AbortSignal(internal);
  get signal() { return this.#signal; }
  abort(reason) { this.#signal[internal](reason); }
}
module.exports = { DOMException, Event, EventTarget, CustomEvent, AbortController, AbortSignal };
