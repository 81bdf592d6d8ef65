// The global URL and URLSearchParams: whatwg-url, the reference
// implementation of the WHATWG URL standard, with node's error code and
// console output.
const w = require('whatwg-url');
const custom = Symbol.for('nodejs.util.inspect.custom');
class URL extends w.URL {
  constructor(url, base) {
    try {
      if (base === undefined) super(url);
      else super(url, base);
    } catch (e) {
      if (e instanceof TypeError) {
        const err = new TypeError('Invalid URL');
        err.code = 'ERR_INVALID_URL';
        err.input = String(url);
        if (base !== undefined) err.base = String(base);
        throw err;
      }
      throw e;
    }
  }
  [custom](depth, options, inspect) {
    if (typeof depth === 'number' && depth < 0) return this;
    const obj = { href: this.href, origin: this.origin, protocol: this.protocol, username: this.username, password: this.password,
      host: this.host, hostname: this.hostname, port: this.port, pathname: this.pathname, search: this.search,
      searchParams: this.searchParams, hash: this.hash };
    return 'URL ' + inspect(obj, options);
  }
}
class URLSearchParams extends w.URLSearchParams {
  [custom](depth, options, inspect) {
    const parts = [];
    for (const [k, v] of this) parts.push(inspect(k, options) + ' => ' + inspect(v, options));
    return parts.length === 0 ? 'URLSearchParams {}' : 'URLSearchParams { ' + parts.join(', ') + ' }';
  }
}
module.exports = { URL, URLSearchParams };
