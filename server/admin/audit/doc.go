// Package audit owns the log of the operators' changes: one Entry per
// successful change through the admin API (when, who, what, the resource
// before and after), kept in Redis so that every instance writes to and
// reads from the same log, newest first.
//
// The log is a list under the instance's key prefix ("<prefix>admin:audit",
// no room's hash tag: it is one key of its own), capped at Keep entries;
// Record pushes an entry and trims the list in one MULTI. Bodies and
// documents are bounded (MaxBody, MaxDoc) so that an entry stays small.
// Who made the change is the admin token's fingerprint (Fingerprint: the
// first 8 hex digits of its SHA-256, never the token) and the client
// address; package admin's middleware fills the entries in.
//
// Concurrency: a Log is safe for concurrent use.
package audit
