// The transform for ES module syntax and TypeScript (sucrase's imports
// and typescript transforms). It runs inside the tenant's own isolate.
const { transform } = require('sucrase');
module.exports = transform;
