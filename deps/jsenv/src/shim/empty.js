// An empty module: stands in for an import made only for a side effect the
// environment does not need (see build.mjs).
