package push

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"waitingroom/queue"
	"waitingroom/server/api"
	"waitingroom/server/metrics"
	"waitingroom/server/queuestatus"
	"waitingroom/server/token"
	"waitingroom/stream"
)

// Options are what the streams need.
type Options struct {
	Hub *stream.Hub
	// SSE and WS are the transports offered; a disabled one answers 503 so
	// clients fall back (polling is always on).
	SSE, WS bool
	// Open admits a stream's request before it starts: its queue token,
	// its limits, its user's status and its client's slot. A refusal is
	// its error, answered as JSON before any streaming; a nil Start with a
	// nil error says Open answered the request itself (the idle refusal).
	Open func(c *fiber.Ctx) (*Start, error)
	// Docs is how a status reads; IdleDoc is the gone event's data for a
	// user dropped as idle (the idle refusal's JSON).
	Docs    queuestatus.Docs
	IdleDoc []byte
	Metrics *metrics.Metrics
}

// Start is a stream Open admitted.
type Start struct {
	Claims *token.Claims // the queue token's
	Room   string
	Status queue.Status // the user's, sent first
	// Release gives the client's stream slot back: called once, when the
	// stream ends (or its upgrade fails).
	Release func()
}

// Streams serve the push endpoints: SSE (Events) and WebSocket (Upgrade,
// then WebSocket).
type Streams struct{ o Options }

// New returns the Streams.
func New(o Options) *Streams { return &Streams{o: o} }

const (
	// heartbeatEvery keeps proxies from closing idle streams and finds
	// clients that left: on fasthttp a failed write is the only sign.
	heartbeatEvery = 15 * time.Second
	// streamWriteTimeout bounds one write to a stream; a peer that does not
	// read for this long is dropped (the deadline moves at most once a
	// second: a write gets 9 to 10 s).
	streamWriteTimeout = 10 * time.Second
	// wsReadLimit is the largest frame a client may send (they send none
	// but control frames).
	wsReadLimit = 512
)

// replacedRetryMs is the retry: hint of a stream ended by a newer one of
// the same user: 5 minutes. The page does not reconnect at all (it polls);
// a plain EventSource would, and taking the slot back from the newer
// stream at once would make the two take turns every few seconds.
const replacedRetryMs = 300_000

// replacedDoc is the data of the "reconnect" event (SSE) and the body of the
// {"type":"reconnect",...} frame (WebSocket) of a replaced stream.
var replacedDoc = `"reason":"replaced","retryAfterMs":` + strconv.Itoa(replacedRetryMs) + `,"message":"this place is followed by a newer connection (another tab or device); this one stops, and the place is kept"}`

// errTransportOff: the operator disabled this push transport (Options.SSE,
// Options.WS).
var errTransportOff = &api.Error{Status: 503, Code: "unavailable", Message: "this push transport is off here: use another one, or poll", RetryAfter: 60}

// goneDoc is the data of a "gone" event: the contract's error form.
var goneDoc = []byte(`{"error":"not_in_queue","message":"you are no longer in this queue (admitted window ended, left, or ordered): enter again"}`)

// goneData is the data of u's "gone" event: the idle refusal (with its
// reason and timeout) when the user was dropped as idle, else goneDoc.
func (p *Streams) goneData(u stream.Update) []byte {
	if u.Idle {
		return p.o.IdleDoc
	}
	return goneDoc
}

// appendStatus appends the stream form of a status: the status
// document (with "type":kind first when kind is set, for WebSocket) plus
// "ts", the publish time of the change (Unix ms), so clients and the load
// tool can measure fan-out lag.
func (p *Streams) appendStatus(b []byte, room string, u stream.Update, kind string) []byte {
	doc := p.o.Docs.Of(room, u.Status)
	b = append(b, '{')
	if kind != "" {
		b = append(append(append(b, `"type":"`...), kind...), `",`...)
	}
	b = queuestatus.AppendFields(b, &doc)
	if !u.Published.IsZero() {
		b = strconv.AppendInt(append(b, `,"ts":`...), u.Published.UnixMilli(), 10)
	}
	return append(b, '}')
}

// outageRetryHint is the reconnect delay while Redis is unreachable: 5 to
// 15 s, so clients cut off meanwhile do not hammer an instance that can
// only answer 503 until Redis is back.
func outageRetryHint() int { return 5000 + rand.IntN(10000) }

// degradedOver is the data of the "degraded" event that ends an outage.
const degradedOver = `{"degraded":false}`

// appendDegraded appends the data of the "degraded" event that starts an
// outage (with a "type" first when kind is set, for WebSocket).
func appendDegraded(b []byte, kind string, retryMs int) []byte {
	b = append(b, '{')
	if kind != "" {
		b = append(b, `"type":"`+kind+`",`...)
	}
	return fmt.Appendf(b, `"degraded":true,"retryAfterMs":%d,"message":"the queue service is briefly unreachable: your place is kept and nobody is admitted meanwhile"}`, retryMs)
}

// retryHint is a reconnect delay with jitter, so clients that lose their
// instance together do not all come back in the same millisecond.
func retryHint() int { return 1000 + rand.IntN(2000) }

// bufs are the stream writers' message buffers: one per write under way,
// not one per stream.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// observeSent counts a written update and its fan-out lag.
func (p *Streams) observeSent(events prometheus.Counter, u stream.Update) {
	events.Inc()
	if !u.Published.IsZero() {
		p.o.Metrics.FanoutLag.Observe(time.Since(u.Published).Seconds())
	}
}
