// Package seclog is the security log: the events an operator needs to see
// an attack, each counted and logged within a per-event line budget.
//
// Concurrency: a Log is safe for concurrent use.
package seclog
