module.exports = __cr.unit('internal/process');
