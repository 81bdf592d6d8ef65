module.exports = __cr.unit('internal/fs').promises;
