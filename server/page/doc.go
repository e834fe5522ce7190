// Package page serves the waiting room's page (package web's embedded
// files): index.html at / and /rooms/{room}, its assets under /static/,
// each with its Content-Security-Policy and caching, and in gateway mode
// all under gateway.Prefix, the page rewritten to say so.
//
// Concurrency: the handlers serve files read once, at Mount; safe for
// concurrent use.
package page
