// Package access owns the access lists: three sets shared by every instance
// through Redis, managed through the admin API and read into memory, so
// that checking them costs no Redis call:
//
//	deny    IPs/CIDRs and user ids refused with 403 before any work
//	allow   IPs/CIDRs and user ids exempt from the rate limits (not the queue)
//	bypass  user ids admitted at once when they enter (staff testing a live
//	        sale); the server logs every use at WARN as an audit record
//
// An entry is an IP ("198.51.100.7"), a CIDR ("203.0.113.0/24") or
// "user:<id>". The package owns the lists' Redis keys (keys.go), their
// parsing (list.go) and the refresh loop (Lists.Run, once a second); the
// HTTP side is elsewhere: package server's middleware refuses and exempts,
// package admin's handlers read and replace the lists.
//
// Concurrency: a Lists is safe for concurrent use. Current returns an
// immutable Snapshot, swapped atomically by Load; Run loads on the caller's
// goroutine until its context is done. While Redis is unreachable the last
// lists stay in force.
package access
