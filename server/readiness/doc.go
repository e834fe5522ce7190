// Package readiness owns the instance's readiness checks: the pings of
// Redis and Postgres (when the instance uses it) and the rooms check (the
// configured rooms exist in Redis), which GET /readyz runs on demand (package admin) and the
// readiness loop (Checks.Run) runs every 5 s, reporting them to the
// metrics (waitingroom_dependency_up, waitingroom_rooms_missing).
//
// Concurrency: Checks are safe for concurrent use; Run is one loop, the
// composition root's to start and stop.
package readiness
