// Package members knows the live instances of a deployment and which of
// them runs each room, so that a room's periodic work (its admission runs,
// its history, its adaptive steps) is done once for the cluster, not once
// per instance.
//
// Every instance beats (Beat) into one sorted set in Redis (member: the
// instance's id, score: Redis's clock at the beat); an instance whose last
// beat is older than the expiry has stopped, and leaves the set at the next
// beat of any other. Each instance reads the live set at its own beat and
// hands each room to one of them by rendezvous hashing (Owns): the instance
// whose hash of (instance, room) is highest. When an instance stops or
// starts, only its own share of the rooms moves.
//
// Views of the live set differ for at most one beat plus the expiry: for
// that long a room may be run by two instances, or (when a stopped instance
// is still thought live) by none. Both are harmless by design: every run is
// one atomic script, so two at once never admit beyond the target, and a
// stopped instance's rooms are taken over once it expires.
//
// Concurrency: a Members is safe for concurrent use; Beat is called by one
// loop (the admission loop's), Owns from anywhere.
package members
