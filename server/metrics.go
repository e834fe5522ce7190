package server

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
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
	abandoned    *prometheus.CounterVec
	secEvents    *prometheus.CounterVec

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
	m := &metrics{
		reg: reg,
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "waitingroom_queue_waiting", Help: "People waiting in the room's queue (as of this instance's last admission run).",
		}, []string{"room"}),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "waitingroom_active", Help: "Admitted users plus orders in flight (as of this instance's last admission run).",
		}, []string{"room"}),
		target: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "waitingroom_target_active", Help: "The room's targetActive.",
		}, []string{"room"}),
		admitted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitingroom_admitted_total", Help: "Users admitted by this instance's admission runs.",
		}, []string{"room"}),
		entered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitingroom_entered_total", Help: "New tickets issued through this instance.",
		}, []string{"room"}),
		expired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitingroom_entry_expired_total", Help: "Admissions whose entry window ended unused (no-shows), pruned by this instance.",
		}, []string{"room"}),
		orders: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitingroom_orders_total", Help: "Order attempts by result.",
		}, []string{"result"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "waitingroom_http_request_duration_seconds",
			Help:    "Public API request duration by route pattern and status code.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route", "code"}),
		bcrypt: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "waitingroom_bcrypt_seconds",
			Help:    "BCrypt password verifications (login only).",
			Buckets: []float64{.01, .025, .05, .075, .1, .15, .25, .5, 1, 2.5},
		}),
		bcryptBusy: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "waitingroom_bcrypt_busy_total",
			Help: "Logins answered 503 because every BCrypt slot (WR_BCRYPT_CONCURRENCY) stayed taken for 2 s.",
		}),
		streams: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "waitingroom_stream_connections", Help: "Open push streams by transport (sse, ws).",
		}, []string{"transport"}),
		streamEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "waitingroom_stream_events_total", Help: "Status updates written to push streams.",
		}, []string{"transport"}),
		streamDrops: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "waitingroom_stream_dropped_total", Help: "Streams dropped because their client did not read (slow or dead).",
		}),
		fanoutLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "waitingroom_stream_fanout_lag_seconds",
			Help:    "From an admission or departure being published (Redis clock) to its update being written to a stream.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
	}
	m.connRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "waitingroom_connections_refused_total", Help: "Public connections refused with 503 at accept, by reason: ceiling (WR_MAX_CONNS) or per_address (WR_MAX_CONNS_PER_IP).",
	}, []string{"reason"})
	m.idleClosed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "waitingroom_connections_idle_closed_total", Help: "Public connections closed for not sending a complete first request within WR_FIRST_REQUEST_TIMEOUT.",
	})
	m.streamRepl = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "waitingroom_stream_replaced_total", Help: "Streams ended because their user opened a newer one beyond WR_MAX_STREAMS_PER_USER (the newest wins).",
	})
	reg.MustRegister(m.idleClosed, m.streamRepl)
	m.rateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "waitingroom_rate_limited_total", Help: "Requests refused with 429 by layer 1, by limit.",
	}, []string{"limit"})
	m.abandoned = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "waitingroom_abandoned_total", Help: "Waiting users removed for neither polling nor holding a stream for WR_IDLE_TIMEOUT (counted by the instance whose admission run removed them).",
	}, []string{"room"})
	reg.MustRegister(m.abandoned)
	m.secEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "waitingroom_security_events_total", Help: "Security events by name (login_failed, token_refused, rate_limited, cross_site, admin_auth_failed, admin_auth_throttled), counted whether or not their log line was suppressed.",
	}, []string{"event"})
	reg.MustRegister(m.secEvents)
	room := []string{"room"}
	gauge := func(name, help string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, room)
		reg.MustRegister(g)
		return g
	}
	m.limit = gauge("waitingroom_admission_limit", "The admission limit in force (targetActive), set by the operator or, in adaptive mode, by the limit controller.")
	m.sigOrders = gauge("waitingroom_adaptive_window_orders", "Orders finished in the last evaluated signals window, all instances.")
	m.sigErrorRate = gauge("waitingroom_adaptive_error_ratio", "Share of the last window's orders that failed for an infrastructure reason (DB down, timeout).")
	m.sigP90 = gauge("waitingroom_adaptive_order_p90_seconds", "Order latency p90 of the last window, all instances.")
	m.sigBaseline = gauge("waitingroom_adaptive_order_p90_baseline_seconds", "Long-run order latency p90 (EWMA of healthy windows' p90s).")
	m.sigPoolWait = gauge("waitingroom_adaptive_pool_wait_seconds", "Mean Postgres pool acquire wait per acquire in the last window.")
	m.limitChanges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "waitingroom_admission_limit_changes_total", Help: "Changes of the adaptive admission limit made by this instance's controller, by reason.",
	}, []string{"room", "reason"})
	reg.MustRegister(m.limitChanges)
	reg.MustRegister(m.streams, m.streamEvents, m.streamDrops, m.fanoutLag, m.connRefused, m.rateLimited)
	reg.MustRegister(m.waiting, m.active, m.target, m.admitted, m.entered, m.expired, m.orders, m.httpDuration, m.bcrypt, m.bcryptBusy)
	return m
}
