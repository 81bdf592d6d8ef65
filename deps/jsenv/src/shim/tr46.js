// tr46 (UTS #46 host processing) for whatwg-url, loaded only for a host
// that needs it: its mapping table is most of URL's cost per isolate. A
// host of ASCII letters, digits and hyphens in labels, none an "xn--" label,
// maps to itself lowercased under the options whatwg-url passes (hyphens
// unchecked, STD3 rules off, DNS length unchecked), so those skip it.
const plain = /^[A-Za-z0-9-]*(\.[A-Za-z0-9-]*)*$/;
const punycodeLabel = /(^|\.)xn--/i;
function simple(domain) {
  return typeof domain === 'string' && plain.test(domain) && !punycodeLabel.test(domain);
}
module.exports = {
  toASCII(domain, options) {
    if (simple(domain)) return domain.toLowerCase();
    return __cr.unit('internal/tr46').toASCII(domain, options);
  },
  toUnicode(domain, options) {
    if (simple(domain)) return { domain: domain.toLowerCase(), error: false };
    return __cr.unit('internal/tr46').toUnicode(domain, options);
  },
};
