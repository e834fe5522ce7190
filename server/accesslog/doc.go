// Package accesslog is the access log: one line per request an operator
// asked for (Mode), within a line budget per status so that a
// flood of refused requests cannot fill the disk.
//
// A line holds what the caller puts in an Entry: never a query string, a
// header, a token or a cookie — the route is the pattern that matched, not
// the path. Lines go to the instance's log: INFO, or WARN for a 5xx.
//
// Concurrency: a Log is safe for concurrent use.
package accesslog
