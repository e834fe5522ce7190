// Package roominfo answers GET /api/v1/rooms/{room}: what the page shows
// of a room before entering it (its name, description, pause, message,
// opening and method). The answers come from the instance's memory: the
// set of room names, read again from Redis at most once a second, so an
// unknown room (a made-up name) costs Redis nothing per request; and the
// configuration of each room asked for, read only when asked for and at
// most once a second per room. So the endpoint costs Redis what the rooms
// pages ask for, not what the cluster holds, and needs no rate limit of
// its own. While Redis cannot be read, the last answers are kept.
//
// Concurrency: the handler is safe for concurrent use; one request at a
// time reads the set, or a room, again while the others are answered from
// the previous read, or, with none yet, wait for that one read.
package roominfo
