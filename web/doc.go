// Package web owns the browser pages: the waiting room's (static/) and the
// operator dashboard's (admin/), each one static HTML page, one stylesheet
// and one script, embedded into the binary with go:embed. There is no build
// step and no framework; the files are served as they are.
//
// The server serves index.html at "/" and at "/rooms/{room}" (or
// "/?room={room}"), and the assets at "/static/app.js" and
// "/static/style.css"; in gateway mode all of it under "/_wr", the root
// element carrying data-base="/_wr" and data-gateway="1", where the page
// queues anonymous visitors (solving the room's proof of work in
// static/pow-worker.js) and sends them back to ?return= at READY. The page holds no inline script or style, so it runs
// under a Content-Security-Policy of default-src 'self'.
//
// What the page does (static/app.js):
//
//   - Sign in, then one click to enter the room. While waiting it shows the
//     position, the people waiting, the ETA as an estimate, a progress bar
//     from the position at entry to the front, the time waited and the
//     connection tier. Text is updated in place; a polite aria-live region
//     announces changes (routine ones at most every 30 s); focus moves only
//     when the focused element disappears.
//   - Transport tiers: EventSource first, then WebSocket, then polling GET
//     position at the server's pollAfterMs. The HttpOnly wr_queue cookie
//     authenticates the streams, so no token is ever put in a URL. When a
//     stream fails, GET position tells why: the place is gone (the page says
//     so and offers to enter again), the server is down (reconnect with
//     exponential backoff and jitter), or the stream was refused while the
//     API answers (the tier is blocked: move to the next one). A stream that
//     sends nothing for 10 s counts as refused (a buffering proxy). SSE
//     "reconnect" and WebSocket close 1001 (server restarting) reconnect the
//     same tier after 1–3 s. ?transport=sse|ws|poll forces one tier.
//   - Tabs: the queue token and the place live in sessionStorage, so a
//     reload resumes; a tab without them asks GET position with the cookie.
//     Per room, one tab holds the stream (a Web Lock); the others follow it
//     over a BroadcastChannel and take over when it closes.
//   - READY: a countdown to the end of the entry window, product, quantity,
//     Order (POST /orders with X-Entry-Token); sold out, window over and an
//     expired place each explain themselves and offer to enter again.
//   - English and Korean, from the browser's language, with a switch;
//     numbers are formatted with Intl for the language.
//
// The operator dashboard (admin/, returned by AdminFS) is a second page,
// served by the management port only, at "/admin/" with its assets under
// "/admin/static/": dashboard.js samples GET /admin/rooms once a second,
// keeps ten minutes of history per room in memory and draws it as inline
// SVG (people waiting; active and the admission limit; admitted per second,
// from the admitted counter between samples; order latency p90 and the error
// rate when the server reports signals). Its controls PUT only the fields
// they change, and only fields the room's document has: a control for a
// field the server does not report (mode, method, opensAt) stays hidden.
// The admin token is typed by the operator and kept in sessionStorage (see
// server/admin/dashboard.go for why the page itself needs no token). Failed
// samples show "unreachable" and break the lines; sampling goes on and the
// page recovers by itself.
//
// FS and AdminFS are safe for concurrent use: they return read-only file
// systems.
package web
