// Package roominfo answers GET /api/v1/rooms/{room}: what the page shows
// of a room before entering it (its name, description, pause, message,
// opening and method). The answers come from a directory of every room
// held in the instance's memory and read again from Redis at most once a
// second, so the endpoint costs Redis nothing per request, made-up room
// names included, and needs no rate limit of its own.
//
// Concurrency: the handler is safe for concurrent use; one request at a
// time reads the directory again while the others are answered from the
// previous one.
package roominfo
