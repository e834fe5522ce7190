package server

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"waitingroom/queue/history"
)

// metrics are the server's Prometheus collectors (the contract's names).
// Each Server has its own registry, so several servers can share a process
// (tests run two instances side by side).
type metrics struct {
	reg          *prometheus.Registry
	waiting      *prometheus.GaugeVec
	active       *prometheus.GaugeVec
	target       *prometheus.GaugeVec
	admitted     *prometheus.CounterVec
	entered      *prometheus.CounterVec
	expired      *prometheus.CounterVec
	orders       *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	bcrypt       prometheus.Histogram
	bcryptBusy   prometheus.Counter
	streams      *prometheus.GaugeVec
	streamEvents *prometheus.CounterVec
	streamDrops  prometheus.Counter
	fanoutLag    prometheus.Histogram
	connRefused  *prometheus.CounterVec
	idleClosed   prometheus.Counter
	streamRepl   prometheus.Counter
	rateLimited  *prometheus.CounterVec
	// protocolRefused: both apps' protocol filters (protocolfilter.go).
	protocolRefused *prometheus.CounterVec
	abandoned       *prometheus.CounterVec
	secEvents       *prometheus.CounterVec
	paused          *prometheus.GaugeVec // by room
	dependencyUp    *prometheus.GaugeVec // by dependency (readiness.go)
	roomsMissing    prometheus.Gauge     // configured rooms absent (readiness.go)
	// The wait estimate, judged against the waits that followed.
	etaError  *prometheus.GaugeVec
	etaJudged *prometheus.GaugeVec

	// Adaptive admission: the limit in force and the last window's signals
	// (as of this instance's last controller step).
	limit        *prometheus.GaugeVec
	limitChanges *prometheus.CounterVec
	sigOrders    *prometheus.GaugeVec
	sigErrorRate *prometheus.GaugeVec
	sigP90       *prometheus.GaugeVec
	sigBaseline  *prometheus.GaugeVec
	sigPoolWait  *prometheus.GaugeVec
}

// newMetrics registers the server's collectors on reg (a new registry when
// nil), together with the Go runtime and process collectors.
func newMetrics(reg *prometheus.Registry) *metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &metrics{reg: reg}
	m.registerQueue()
	m.registerHTTP()
	m.registerStreams()
	m.registerAdaptive()
	return m
}

func (m *metrics) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	m.reg.MustRegister(g)
	return g
}

func (m *metrics) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	m.reg.MustRegister(g)
	return g
}

func (m *metrics) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	m.reg.MustRegister(c)
	return c
}

func (m *metrics) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	m.reg.MustRegister(c)
	return c
}

func (m *metrics) histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	m.reg.MustRegister(h)
	return h
}

// registerQueue: the rooms as this instance's admission runs see them, and
// the orders.
func (m *metrics) registerQueue() {
	m.waiting = m.gaugeVec("waitingroom_queue_waiting", "People waiting in the room's queue (as of this instance's last admission run).", "room")
	m.active = m.gaugeVec("waitingroom_active", "Admitted users plus orders in flight (as of this instance's last admission run).", "room")
	m.target = m.gaugeVec("waitingroom_target_active", "The room's targetActive.", "room")
	m.admitted = m.counterVec("waitingroom_admitted_total", "Users admitted by this instance's admission runs.", "room")
	m.entered = m.counterVec("waitingroom_entered_total", "New tickets issued through this instance.", "room")
	m.expired = m.counterVec("waitingroom_entry_expired_total", "Admissions whose entry window ended unused (no-shows), pruned by this instance.", "room")
	m.abandoned = m.counterVec("waitingroom_abandoned_total", "Waiting users removed for neither polling nor holding a stream for WR_IDLE_TIMEOUT (counted by the instance whose admission run removed them).", "room")
	m.orders = m.counterVec("waitingroom_orders_total", "Order attempts by result.", "result")
	m.paused = m.gaugeVec("waitingroom_room_paused", "1 while the operator has paused the room (as of this instance's last admission run).", "room")
	m.dependencyUp = m.gaugeVec("waitingroom_dependency_up", "1 when the dependency (redis, postgres) answered this instance's last readiness check (every 5 s, as GET /readyz checks), else 0.", "dependency")
	m.roomsMissing = m.gauge("waitingroom_rooms_missing", "Configured rooms (WR_ROOMS) absent from Redis at this instance's last readiness check (every 5 s, as GET /readyz's rooms check); kept while Redis does not answer.")
	m.etaError = m.gaugeVec("waitingroom_eta_error_ratio",
		"Median |ETA − wait| ÷ wait of the estimates shown to the room's last in line and to the one in the middle over the last hour, judged once they had their turn (0 until one is: see waitingroom_eta_judged).", "room")
	m.etaJudged = m.gaugeVec("waitingroom_eta_judged", "Estimates judged for waitingroom_eta_error_ratio (the last hour's, recorded once a second).", "room")
}

// judgedETA records a room's judged estimates (history.WithJudge).
func (m *metrics) judgedETA(room string, e history.ETAError) {
	m.etaError.WithLabelValues(room).Set(e.MedianPct / 100)
	m.etaJudged.WithLabelValues(room).Set(float64(e.Count))
}

// registerHTTP: requests, logins, layer 1 and the public connections.
func (m *metrics) registerHTTP() {
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "waitingroom_http_request_duration_seconds",
		Help:    "Public API request duration by route pattern and status code.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	}, []string{"route", "code"})
	m.reg.MustRegister(m.httpDuration)
	m.bcrypt = m.histogram("waitingroom_bcrypt_seconds", "BCrypt password verifications (login only).",
		[]float64{.01, .025, .05, .075, .1, .15, .25, .5, 1, 2.5})
	m.bcryptBusy = m.counter("waitingroom_bcrypt_busy_total", "Logins answered 503 because every BCrypt slot (WR_BCRYPT_CONCURRENCY) stayed taken for 2 s.")
	m.rateLimited = m.counterVec("waitingroom_rate_limited_total", "Requests refused with 429 by layer 1, by limit.", "limit")
	m.secEvents = m.counterVec("waitingroom_security_events_total", "Security events by name (login_failed, token_refused, rate_limited, cross_site, admin_auth_failed, admin_auth_throttled, challenge_refused), counted whether or not their log line was suppressed.", "event")
	m.connRefused = m.counterVec("waitingroom_connections_refused_total", "Public connections refused with 503 at accept, by reason: ceiling (WR_MAX_CONNS) or per_address (WR_MAX_CONNS_PER_IP).", "reason")
	m.protocolRefused = m.counterVec("waitingroom_protocol_refused_total", "Requests refused at the HTTP protocol's edge before any handler, by reason (content_encoding, length_and_chunked, method).", "reason")
	m.idleClosed = m.counter("waitingroom_connections_idle_closed_total", "Public connections closed for not sending a complete first request within WR_FIRST_REQUEST_TIMEOUT.")
}

// registerStreams: the push streams.
func (m *metrics) registerStreams() {
	m.streams = m.gaugeVec("waitingroom_stream_connections", "Open push streams by transport (sse, ws).", "transport")
	m.streamEvents = m.counterVec("waitingroom_stream_events_total", "Status updates written to push streams.", "transport")
	m.streamDrops = m.counter("waitingroom_stream_dropped_total", "Streams dropped because their client did not read (slow or dead).")
	m.streamRepl = m.counter("waitingroom_stream_replaced_total", "Streams ended because their user opened a newer one beyond WR_MAX_STREAMS_PER_USER (the newest wins).")
	m.fanoutLag = m.histogram("waitingroom_stream_fanout_lag_seconds",
		"From an admission or departure being published (Redis clock) to its update being written to a stream.",
		[]float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5})
}

// registerAdaptive: the admission limit and the signals it follows.
func (m *metrics) registerAdaptive() {
	m.limit = m.gaugeVec("waitingroom_admission_limit", "The admission limit in force (targetActive), set by the operator or, in adaptive mode, by the limit controller.", "room")
	m.sigOrders = m.gaugeVec("waitingroom_adaptive_window_orders", "Orders finished in the last evaluated signals window, all instances.", "room")
	m.sigErrorRate = m.gaugeVec("waitingroom_adaptive_error_ratio", "Share of the last window's orders that failed for an infrastructure reason (DB down, timeout).", "room")
	m.sigP90 = m.gaugeVec("waitingroom_adaptive_order_p90_seconds", "Order latency p90 of the last window, all instances.", "room")
	m.sigBaseline = m.gaugeVec("waitingroom_adaptive_order_p90_baseline_seconds", "Long-run order latency p90 (EWMA of healthy windows' p90s).", "room")
	m.sigPoolWait = m.gaugeVec("waitingroom_adaptive_pool_wait_seconds", "Mean Postgres pool acquire wait per acquire in the last window.", "room")
	m.limitChanges = m.counterVec("waitingroom_admission_limit_changes_total", "Changes of the adaptive admission limit made by this instance's controller, by reason.", "room", "reason")
}
