// Package web owns the browser page of the waiting room: one static HTML
// page, one stylesheet and one script, embedded into the binary with
// go:embed. There is no build step and no framework; the files under static/
// are served as they are.
//
// The server serves index.html at "/" and at "/rooms/{room}", and the assets
// at "/static/app.js" and "/static/style.css". The page holds no inline script
// or style, so it runs under a Content-Security-Policy of default-src 'self'.
//
// FS is safe for concurrent use: it returns a read-only file system.
package web
