// util.format / util.inspect exactly as node's (node-inspect-extracted),
// for console.
module.exports = require('node-inspect-extracted');
