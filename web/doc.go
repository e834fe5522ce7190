// Package web owns the browser pages: the waiting room's (static/) and the
// operator dashboard's (admin/), each one static HTML page, one stylesheet
// and one script, embedded into the binary with go:embed. There is no build
// step and no framework; the files are served as they are, with no inline
// script or style, so they run under a Content-Security-Policy of
// default-src 'self'.
//
// FS holds the page, served at "/" and "/rooms/{room}" with its assets
// under "/static/" (all of it under "/_wr" in gateway mode); AdminFS holds
// the dashboard, served by the management port only, at "/admin/".
//
// Concurrency: FS and AdminFS are safe for concurrent use: they return
// read-only file systems.
//
// What the page and the dashboard do: see docs/design.md, "The page and
// the dashboard", and docs/api.md, "The waiting-room page".
package web
