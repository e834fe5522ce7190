package pgstore

import (
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// durationBuckets resolve 0.5 ms to 5 s: an order that holds its connection
// for 1 ms and one stuck behind 75 ms of BCrypt land in different buckets.
var durationBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .2, .3, .5, .75, 1, 1.5, 2.5, 5}

type metrics struct {
	acquireWait prometheus.Histogram
	hold        prometheus.Histogram
	pool        prometheus.Collector

	registerer prometheus.Registerer // nil when not registered
}

func newMetrics(pool *pgxpool.Pool) *metrics {
	return &metrics{
		acquireWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "waitingroom_db_pool_acquire_wait_seconds",
			Help:    "Time spent waiting for a connection from the Postgres pool.",
			Buckets: durationBuckets,
		}),
		hold: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "waitingroom_db_connection_hold_seconds",
			Help:    "Time a Postgres connection is held, from pool acquire to release.",
			Buckets: durationBuckets,
		}),
		pool: poolCollector{pool: pool, desc: prometheus.NewDesc(
			"waitingroom_db_pool_connections",
			"Postgres pool connections by state (acquired, idle, total, max).",
			[]string{"state"}, nil,
		)},
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.acquireWait, m.hold, m.pool}
}

// register registers every collector with reg, or none of them.
func (m *metrics) register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	for i, c := range m.collectors() {
		if err := reg.Register(c); err != nil {
			for _, done := range m.collectors()[:i] {
				reg.Unregister(done)
			}
			return fmt.Errorf("pgstore: register metrics: %w", err)
		}
	}
	m.registerer = reg
	return nil
}

func (m *metrics) unregister() {
	if m.registerer == nil {
		return
	}
	for _, c := range m.collectors() {
		m.registerer.Unregister(c)
	}
	m.registerer = nil
}

// poolCollector reports pool.Stat() as gauges. It reads one Stat per scrape so
// that acquired + idle never exceeds total within a scrape, which separate
// GaugeFuncs could not promise.
type poolCollector struct {
	pool *pgxpool.Pool
	desc *prometheus.Desc
}

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.pool.Stat()
	for state, v := range map[string]int32{
		"acquired": st.AcquiredConns(),
		"idle":     st.IdleConns(),
		"total":    st.TotalConns(),
		"max":      st.MaxConns(),
	} {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(v), state)
	}
}
