module.exports = { performance: globalThis.performance, PerformanceObserver: class PerformanceObserver { observe() {} disconnect() {} } };
