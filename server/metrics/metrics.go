package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"waitingroom/server/listener"
)

// Metrics are the instance's Prometheus collectors (the contract's names).
// Each instance has its own registry, so several can share a process
// (tests run two instances side by side).
type Metrics struct {
	// Registry holds them all, with the Go runtime's and the process's;
	// the management port serves it at /metrics.
	Registry       *prometheus.Registry
	Orders         *prometheus.CounterVec
	HTTPDuration   *prometheus.HistogramVec
	Bcrypt         prometheus.Histogram
	BcryptBusy     prometheus.Counter
	Streams        *prometheus.GaugeVec
	StreamEvents   *prometheus.CounterVec
	StreamDrops    prometheus.Counter
	FanoutLag      prometheus.Histogram
	ConnRefused    *prometheus.CounterVec
	IdleClosed     prometheus.Counter
	StreamReplaced prometheus.Counter
	RateLimited    *prometheus.CounterVec
	// ProtocolRefused: both apps' protocol filters.
	ProtocolRefused *prometheus.CounterVec
	SecEvents       *prometheus.CounterVec
	DependencyUp    *prometheus.GaugeVec // by dependency (package readiness)
	RoomsMissing    prometheus.Gauge     // configured rooms absent (package readiness)

	// rooms: every room-labelled series, bounded (Options), with the
	// totals across rooms; fed by the observers below.
	rooms *rooms
}

// New registers the instance's collectors on reg (a new registry when
// nil), together with the Go runtime and process collectors; opts (at
// most one; the defaults without) bound the per-room series.
func New(reg *prometheus.Registry, opts ...Options) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{Registry: reg, rooms: newRooms(o)}
	reg.MustRegister(m.rooms)
	m.registerQueue()
	m.registerHTTP()
	m.registerStreams()
	for _, reason := range []string{listener.RefusedCeiling, listener.RefusedAddress} {
		m.ConnRefused.WithLabelValues(reason) // present at 0 from the start
	}
	return m
}

func (m *Metrics) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	m.Registry.MustRegister(g)
	return g
}

func (m *Metrics) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	m.Registry.MustRegister(g)
	return g
}

func (m *Metrics) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	m.Registry.MustRegister(c)
	return c
}

func (m *Metrics) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	m.Registry.MustRegister(c)
	return c
}

func (m *Metrics) histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	m.Registry.MustRegister(h)
	return h
}

// registerQueue: the orders and the readiness gauges (the rooms' series
// are rooms's).
func (m *Metrics) registerQueue() {
	m.Orders = m.counterVec("waitingroom_orders_total", "Order attempts by result.", "result")
	m.DependencyUp = m.gaugeVec("waitingroom_dependency_up", "1 when the dependency (redis, postgres) answered this instance's last readiness check (every 5 s, as GET /readyz checks), else 0.", "dependency")
	m.RoomsMissing = m.gauge("waitingroom_rooms_missing", "Configured rooms (those created at start) absent from Redis at this instance's last readiness check (every 5 s, as GET /readyz's rooms check); kept while Redis does not answer.")
}

// registerHTTP: requests, logins, layer 1 and the public connections.
func (m *Metrics) registerHTTP() {
	m.HTTPDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "waitingroom_http_request_duration_seconds",
		Help:    "Public API request duration by route pattern and status code.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	}, []string{"route", "code"})
	m.Registry.MustRegister(m.HTTPDuration)
	m.Bcrypt = m.histogram("waitingroom_bcrypt_seconds", "BCrypt password verifications (login only).",
		[]float64{.01, .025, .05, .075, .1, .15, .25, .5, 1, 2.5})
	m.BcryptBusy = m.counter("waitingroom_bcrypt_busy_total", "Logins answered 503 because every BCrypt slot stayed taken for 2 s.")
	m.RateLimited = m.counterVec("waitingroom_rate_limited_total", "Requests refused with 429 by layer 1, by limit.", "limit")
	m.SecEvents = m.counterVec("waitingroom_security_events_total", "Security events by name (login_failed, token_refused, rate_limited, cross_site, admin_auth_failed, admin_auth_throttled, challenge_refused), counted whether or not their log line was suppressed.", "event")
	m.ConnRefused = m.counterVec("waitingroom_connections_refused_total", "Public connections refused with 503 at accept, by reason: ceiling (the connection cap) or per_address (the per-address cap).", "reason")
	m.ProtocolRefused = m.counterVec("waitingroom_protocol_refused_total", "Requests refused at the HTTP protocol's edge before any handler, by reason (content_encoding, length_and_chunked, method).", "reason")
	m.IdleClosed = m.counter("waitingroom_connections_idle_closed_total", "Public connections closed for not sending a complete first request within the first-request timeout.")
}

// registerStreams: the push streams.
func (m *Metrics) registerStreams() {
	m.Streams = m.gaugeVec("waitingroom_stream_connections", "Open push streams by transport (sse, ws).", "transport")
	m.StreamEvents = m.counterVec("waitingroom_stream_events_total", "Status updates written to push streams.", "transport")
	m.StreamDrops = m.counter("waitingroom_stream_dropped_total", "Streams dropped because their client did not read (slow or dead).")
	m.StreamReplaced = m.counter("waitingroom_stream_replaced_total", "Streams ended because their user opened a newer one beyond the per-user stream cap (the newest wins).")
	m.FanoutLag = m.histogram("waitingroom_stream_fanout_lag_seconds",
		"From an admission or departure being published (Redis clock) to its update being written to a stream.",
		[]float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5})
}
