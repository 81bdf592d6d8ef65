// tr46 itself, a unit of its own (see src/shim/tr46.js).
module.exports = require('tr46');
