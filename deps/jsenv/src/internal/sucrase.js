// The transform for ES module syntax and TypeScript (sucrase's imports
// and typescript transforms). It runs inside the tenant's own isolate.
const { transform } = require('sucrase');
const { parse } = require('sucrase/dist/parser');
const { TokenType: tt } = require('sucrase/dist/parser/tokenizer/types');

// replaceImportMeta rewrites each `import.meta` expression in code — found
// by sucrase's own tokenizer, so strings, comments and templates never
// match — to replacement; line breaks stay where they were. sucrase
// leaves import.meta as it is, and V8 refuses it outside a module. Code
// that does not parse is returned as it is (the transform reports why).
function replaceImportMeta(code, replacement) {
  let tokens;
  try {
    tokens = parse(code, false, true, false).tokens;
  } catch (_) {
    return code;
  }
  let out = '';
  let last = 0;
  for (let i = 0; i + 2 < tokens.length; i++) {
    const a = tokens[i], dot = tokens[i + 1], b = tokens[i + 2];
    if (a.type === tt.name && dot.type === tt.dot && b.type === tt.name &&
      code.slice(a.start, a.end) === 'import' && code.slice(b.start, b.end) === 'meta') {
      const between = code.slice(a.end, b.start).replace(/[^\n]/g, '');
      out += code.slice(last, a.start) + replacement + between;
      last = b.end;
      i += 2;
    }
  }
  return out + code.slice(last);
}

module.exports = transform;
module.exports.replaceImportMeta = replaceImportMeta;
