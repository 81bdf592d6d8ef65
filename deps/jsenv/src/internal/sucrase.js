// The transform for ES module syntax and TypeScript (sucrase's imports
// and typescript transforms). It runs inside the tenant's own isolate.
const { transform } = require('sucrase');
const { parse } = require('sucrase/dist/parser');
const { TokenType: tt } = require('sucrase/dist/parser/tokenizer/types');

// replaceImportMeta rewrites each `import.meta` expression in code — found
// by sucrase's own tokenizer, so strings, comments, templates and property
// names (obj.import.meta, this.#import) never match — to call(), padded or
// parenthesised to the same 11 characters so that lines and columns stay
// where they were (after `new`, the call is parenthesised: new
// import.meta.K() constructs K). sucrase leaves import.meta as it is, and
// V8 refuses it outside a module. Code that does not parse is returned as
// it is (the transform reports why). call must be 6 characters long.
function replaceImportMeta(code, call) {
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
    if (a.type !== tt.name || dot.type !== tt.dot || b.type !== tt.name ||
      code.slice(a.start, a.end) !== 'import' || code.slice(b.start, b.end) !== 'meta') continue;
    const before = i > 0 ? tokens[i - 1].type : null;
    if (before === tt.dot || before === tt.questionDot || before === tt.hash) continue;
    const breaks = code.slice(a.end, b.start).replace(/[^\n\r\u2028\u2029]/g, '');
    out += code.slice(last, a.start) + (before === tt._new ? '(' + call + '( ))' : call + '(   )') + breaks;
    last = b.end;
    i += 2;
  }
  return out + code.slice(last);
}

module.exports = transform;
module.exports.replaceImportMeta = replaceImportMeta;
