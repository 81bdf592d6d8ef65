module.exports = __cr.unit('internal/nodecrypto');
