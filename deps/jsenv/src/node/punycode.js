module.exports = require('punycode/punycode.js');
