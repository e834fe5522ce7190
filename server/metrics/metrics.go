package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"waitingroom/queue"
	"waitingroom/queue/adaptive"
	"waitingroom/queue/history"
	"waitingroom/server/listener"
)

// Metrics are the instance's Prometheus collectors (the contract's names).
// Each instance has its own registry, so several can share a process
// (tests run two instances side by side).
type Metrics struct {
	// Registry holds them all, with the Go runtime's and the process's;
	// the management port serves it at /metrics.
	Registry       *prometheus.Registry
	Waiting        *prometheus.GaugeVec
	Active         *prometheus.GaugeVec
	Target         *prometheus.GaugeVec
	Admitted       *prometheus.CounterVec
	Entered        *prometheus.CounterVec
	Expired        *prometheus.CounterVec
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
	Abandoned       *prometheus.CounterVec
	SecEvents       *prometheus.CounterVec
	Paused          *prometheus.GaugeVec // by room
	DependencyUp    *prometheus.GaugeVec // by dependency (package readiness)
	RoomsMissing    prometheus.Gauge     // configured rooms absent (package readiness)
	// The wait estimate, judged against the waits that followed.
	ETAError  *prometheus.GaugeVec
	ETAJudged *prometheus.GaugeVec

	// Adaptive admission: the limit in force and the last window's signals
	// (as of this instance's last controller step).
	Limit        *prometheus.GaugeVec
	LimitChanges *prometheus.CounterVec
	SigOrders    *prometheus.GaugeVec
	SigErrorRate *prometheus.GaugeVec
	SigP90       *prometheus.GaugeVec
	SigBaseline  *prometheus.GaugeVec
	SigPoolWait  *prometheus.GaugeVec
}

// New registers the instance's collectors on reg (a new registry when
// nil), together with the Go runtime and process collectors.
func New(reg *prometheus.Registry) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{Registry: reg}
	m.registerQueue()
	m.registerHTTP()
	m.registerStreams()
	m.registerAdaptive()
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

// registerQueue: the rooms as this instance's admission runs see them, and
// the orders.
func (m *Metrics) registerQueue() {
	m.Waiting = m.gaugeVec("waitingroom_queue_waiting", "People waiting in the room's queue (as of this instance's last admission run).", "room")
	m.Active = m.gaugeVec("waitingroom_active", "Admitted users plus orders in flight (as of this instance's last admission run).", "room")
	m.Target = m.gaugeVec("waitingroom_target_active", "The room's targetActive.", "room")
	m.Admitted = m.counterVec("waitingroom_admitted_total", "Users admitted by this instance's admission runs.", "room")
	m.Entered = m.counterVec("waitingroom_entered_total", "New tickets issued through this instance.", "room")
	m.Expired = m.counterVec("waitingroom_entry_expired_total", "Admissions whose entry window ended unused (no-shows), pruned by this instance.", "room")
	m.Abandoned = m.counterVec("waitingroom_abandoned_total", "Waiting users removed for neither polling nor holding a stream for WR_IDLE_TIMEOUT (counted by the instance whose admission run removed them).", "room")
	m.Orders = m.counterVec("waitingroom_orders_total", "Order attempts by result.", "result")
	m.Paused = m.gaugeVec("waitingroom_room_paused", "1 while the operator has paused the room (as of this instance's last admission run).", "room")
	m.DependencyUp = m.gaugeVec("waitingroom_dependency_up", "1 when the dependency (redis, postgres) answered this instance's last readiness check (every 5 s, as GET /readyz checks), else 0.", "dependency")
	m.RoomsMissing = m.gauge("waitingroom_rooms_missing", "Configured rooms (WR_ROOMS) absent from Redis at this instance's last readiness check (every 5 s, as GET /readyz's rooms check); kept while Redis does not answer.")
	m.ETAError = m.gaugeVec("waitingroom_eta_error_ratio",
		"Median |ETA − wait| ÷ wait of the estimates shown to the room's last in line and to the one in the middle over the last hour, judged once they had their turn (0 until one is: see waitingroom_eta_judged).", "room")
	m.ETAJudged = m.gaugeVec("waitingroom_eta_judged", "Estimates judged for waitingroom_eta_error_ratio (the last hour's, recorded once a second).", "room")
}

// JudgedETA records a room's judged estimates (history.WithJudge).
func (m *Metrics) JudgedETA(room string, e history.ETAError) {
	m.ETAError.WithLabelValues(room).Set(e.MedianPct / 100)
	m.ETAJudged.WithLabelValues(room).Set(float64(e.Count))
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
	m.BcryptBusy = m.counter("waitingroom_bcrypt_busy_total", "Logins answered 503 because every BCrypt slot (WR_BCRYPT_CONCURRENCY) stayed taken for 2 s.")
	m.RateLimited = m.counterVec("waitingroom_rate_limited_total", "Requests refused with 429 by layer 1, by limit.", "limit")
	m.SecEvents = m.counterVec("waitingroom_security_events_total", "Security events by name (login_failed, token_refused, rate_limited, cross_site, admin_auth_failed, admin_auth_throttled, challenge_refused), counted whether or not their log line was suppressed.", "event")
	m.ConnRefused = m.counterVec("waitingroom_connections_refused_total", "Public connections refused with 503 at accept, by reason: ceiling (WR_MAX_CONNS) or per_address (WR_MAX_CONNS_PER_IP).", "reason")
	m.ProtocolRefused = m.counterVec("waitingroom_protocol_refused_total", "Requests refused at the HTTP protocol's edge before any handler, by reason (content_encoding, length_and_chunked, method).", "reason")
	m.IdleClosed = m.counter("waitingroom_connections_idle_closed_total", "Public connections closed for not sending a complete first request within WR_FIRST_REQUEST_TIMEOUT.")
}

// registerStreams: the push streams.
func (m *Metrics) registerStreams() {
	m.Streams = m.gaugeVec("waitingroom_stream_connections", "Open push streams by transport (sse, ws).", "transport")
	m.StreamEvents = m.counterVec("waitingroom_stream_events_total", "Status updates written to push streams.", "transport")
	m.StreamDrops = m.counter("waitingroom_stream_dropped_total", "Streams dropped because their client did not read (slow or dead).")
	m.StreamReplaced = m.counter("waitingroom_stream_replaced_total", "Streams ended because their user opened a newer one beyond WR_MAX_STREAMS_PER_USER (the newest wins).")
	m.FanoutLag = m.histogram("waitingroom_stream_fanout_lag_seconds",
		"From an admission or departure being published (Redis clock) to its update being written to a stream.",
		[]float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5})
}

// registerAdaptive: the admission limit and the signals it follows.
func (m *Metrics) registerAdaptive() {
	m.Limit = m.gaugeVec("waitingroom_admission_limit", "The admission limit in force (targetActive), set by the operator or, in adaptive mode, by the limit controller.", "room")
	m.SigOrders = m.gaugeVec("waitingroom_adaptive_window_orders", "Orders finished in the last evaluated signals window, all instances.", "room")
	m.SigErrorRate = m.gaugeVec("waitingroom_adaptive_error_ratio", "Share of the last window's orders that failed for an infrastructure reason (DB down, timeout).", "room")
	m.SigP90 = m.gaugeVec("waitingroom_adaptive_order_p90_seconds", "Order latency p90 of the last window, all instances.", "room")
	m.SigBaseline = m.gaugeVec("waitingroom_adaptive_order_p90_baseline_seconds", "Long-run order latency p90 (EWMA of healthy windows' p90s).", "room")
	m.SigPoolWait = m.gaugeVec("waitingroom_adaptive_pool_wait_seconds", "Mean Postgres pool acquire wait per acquire in the last window.", "room")
	m.LimitChanges = m.counterVec("waitingroom_admission_limit_changes_total", "Changes of the adaptive admission limit made by this instance's controller, by reason.", "room", "reason")
}

// ObserveAdmission sets the room's gauges and counts after one admission
// run (queue.AdmitterOptions.OnAdmit).
func (m *Metrics) ObserveAdmission(r queue.AdmitResult) {
	m.Waiting.WithLabelValues(r.Room).Set(float64(r.Waiting))
	m.Active.WithLabelValues(r.Room).Set(float64(r.Active))
	m.Target.WithLabelValues(r.Room).Set(float64(r.Target))
	m.Limit.WithLabelValues(r.Room).Set(float64(r.Target))
	m.Paused.WithLabelValues(r.Room).Set(map[bool]float64{true: 1}[r.Paused])
	if n := len(r.Admitted); n > 0 {
		m.Admitted.WithLabelValues(r.Room).Add(float64(n))
	}
	if r.Pruned > 0 {
		m.Expired.WithLabelValues(r.Room).Add(float64(r.Pruned))
	}
	if r.Abandoned > 0 {
		m.Abandoned.WithLabelValues(r.Room).Add(float64(r.Abandoned))
	}
}

// ObserveStep sets the adaptive metrics of room after a controller step
// (adaptive.Options.OnStep).
func (m *Metrics) ObserveStep(room string, st adaptive.State, limit int64) {
	m.Limit.WithLabelValues(room).Set(float64(limit))
	sig := st.Signals
	m.SigOrders.WithLabelValues(room).Set(float64(sig.Orders))
	m.SigErrorRate.WithLabelValues(room).Set(sig.ErrorRate())
	m.SigP90.WithLabelValues(room).Set(sig.P90.Seconds())
	m.SigBaseline.WithLabelValues(room).Set(sig.Baseline.Seconds())
	m.SigPoolWait.WithLabelValues(room).Set(sig.PoolWait.Seconds())
}

// ObserveLimitChange counts a change of room's adaptive limit
// (adaptive.Options.OnChange).
func (m *Metrics) ObserveLimitChange(room string, st adaptive.Step) {
	m.LimitChanges.WithLabelValues(room, st.Reason).Inc()
}
