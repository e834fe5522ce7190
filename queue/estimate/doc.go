// Package estimate computes the wait a waiting user is shown: from what a
// room measures once a second (how long its orders hold a slot, the share
// of no-shows, departures), a forecast of how many people the room will
// admit over the coming seconds, and from it the time until a given
// position is reached.
//
// Forecast.Known is false, and the API withholds etaSeconds, while the
// room is paused or closed, admits nobody, or has not yet measured enough
// and expects nothing. What it expects (Sample.Prior: the operator's
// expected order time, the figures of its last sale) bridges that gap,
// and the forecast says so (Provisional) until measured figures replace
// it; a guess from targetActive alone never does.
//
// Concurrency: an Estimator is not safe for concurrent use (its owner feeds
// it from one goroutine); a Forecast is an immutable value, safe to share.
//
// The model, what is measured and why: see docs/design.md, "The ETA
// estimator".
package estimate
