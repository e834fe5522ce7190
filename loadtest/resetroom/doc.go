// Package resetroom is the reset-room scenario: it puts a room back to the
// demo's settings — targetActive --target, mode fixed, not paused, method
// fifo, no opening time — through PUT /admin/rooms/{room}, after waiting
// for the server (--wait-ready). make run runs it, so that a room left
// adaptive, paused or scheduled by an earlier run (the settings live in
// Redis) does not survive silently.
package resetroom
