// Package sseclient reads a text/event-stream: the client side of Server-Sent
// Events, as the HTML Standard's "Interpreting an event stream"
// (https://html.spec.whatwg.org/multipage/server-sent-events.html) defines
// it. The load tool uses it to hold thousands of streams of the waiting
// room's GET /api/v1/rooms/{room}/events at once; anything that consumes the
// server's push stream from Go can use it.
//
// What it implements of the standard's parsing, and nothing else: lines end
// in CRLF, LF or CR; one leading UTF-8 BOM is skipped; the stream is decoded
// as UTF-8 with invalid sequences replaced by U+FFFD; a line starting with
// ':' is a comment (counted, so heartbeats can be checked); `field:value`
// loses one leading space of the value, and a line without a colon is a
// field with an empty value; `event`, `data`, `id` (ignored when it holds
// NULL) and `retry` (only ASCII digits) are interpreted and other fields
// ignored; a blank line dispatches the event, unless its data is empty; a
// block that EOF cuts off before its blank line is discarded. Connecting,
// reconnecting and sending Last-Event-ID are the caller's business: the
// Reader only parses (its LastEventID and Retry say what to reconnect with).
//
// Memory is bounded against a hostile or broken server: a line longer than
// MaxLine bytes or an event whose data exceeds MaxLine bytes ends the stream
// with an error instead of growing a buffer without limit. Reading needs a
// 4 KiB buffer plus the longest line seen.
//
// Concurrency: a Reader belongs to one goroutine; none of its methods may be
// called concurrently with Next.
package sseclient
