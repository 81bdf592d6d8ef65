module.exports = require('util').types;
