// node:assert — the browserify assert package (a port of node's own).
module.exports = require('assert');
