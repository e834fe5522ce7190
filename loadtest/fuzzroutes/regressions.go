package fuzzroutes

// Regressions are cases the campaign found reaching a protected handler
// without a pass (docs/fuzz-routes.md, "What the campaign found"), kept
// literally: the bounded test sends each through every pair.
var Regressions = []Case{}
