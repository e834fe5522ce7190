// Package queuestatus is the contract's status document (Doc): what the
// enter and position answers say, and the data of a stream's status
// events. It owns how a queue.Status reads (Docs.Of: the state, the
// place, when to poll again by the poll bands, the wait estimate), the
// poll bands themselves (Bands, ParseBands), and the document's JSON,
// written without reflection (AppendFields, Send) byte for byte as
// encoding/json would.
//
// Concurrency: Docs and Bands are values, read-only once built; safe for
// concurrent use.
package queuestatus
