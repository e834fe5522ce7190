package admin

import (
	"context"
	"math"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// Gateway modes, as Options.GatewayMode and shopDoc.Mode name them.
const (
	ModeGateway     = "gateway"
	ModeForwardAuth = "forwardAuth"
)

// shopDoc is GET /admin/stats' "shop": the origin's side of this
// instance's gateway (its waitingroom_gateway_* series since it started,
// every room's requests together), null outside gateway and forward-auth
// modes. In forward auth the origin's answers never reach the instance:
// OriginVisible is false, Answers and Latency stay empty and Origin null;
// Requests holds the decisions.
type shopDoc struct {
	Mode          string `json:"mode"`
	OriginVisible bool   `json:"originVisible"`
	// Origin is the origin check (gateway.Gateway.OriginCheck, as /readyz
	// reports it): "ok", "unreachable: …" or "errors: …".
	Origin *string `json:"origin"`
	// Requests are waitingroom_gateway_requests_total by outcome
	// (forwarded, no_pass, bad_gateway, timeout, ambiguous, allowed, …),
	// the kinds summed; timeout and bad_gateway are always present in
	// gateway mode, allowed, no_pass and rate_limited in forward auth.
	Requests map[string]int64 `json:"requests"`
	// Passed are the protected requests that held a pass: forwarded or
	// upgraded, or in forward auth allowed.
	Passed int64 `json:"passed"`
	// Answers are the origin's answers relayed, by status class (1xx to
	// 5xx, other; 2xx to 5xx always present in gateway mode).
	Answers map[string]int64 `json:"answers"`
	// Latency is waitingroom_gateway_upstream_seconds, the kinds summed.
	Latency latencyDoc `json:"latency"`
	// Tunnels are the WebSocket connections joined to the origin now.
	Tunnels int64 `json:"tunnels"`
}

// latencyDoc is a histogram of the origin's answer times: its count,
// p50 and p90 since the start (linear within a bucket, as Prometheus's
// histogram_quantile; null before any answer, the largest bound when the
// quantile is past it), and its cumulative buckets, which a reader
// subtracts from a later read for the quantiles of the time between.
type latencyDoc struct {
	Count      uint64      `json:"count"`
	P50Seconds *float64    `json:"p50Seconds"`
	P90Seconds *float64    `json:"p90Seconds"`
	Buckets    []bucketDoc `json:"buckets"`
}

// bucketDoc is one bucket: Count answers took at most LeSeconds (the
// +Inf bucket is Latency.Count).
type bucketDoc struct {
	LeSeconds float64 `json:"leSeconds"`
	Count     uint64  `json:"count"`
}

// Metric names shopDoc reads.
const (
	metricGatewayRequests = "waitingroom_gateway_requests_total"
	metricGatewayAnswers  = "waitingroom_gateway_origin_responses_total"
	metricGatewayUpstream = "waitingroom_gateway_upstream_seconds"
	metricGatewayTunnels  = "waitingroom_gateway_tunnels"
)

// newShop is an empty shopDoc of mode, with the figures an operator
// watches present at 0.
func newShop(mode string) *shopDoc {
	d := &shopDoc{Mode: mode, Requests: map[string]int64{}, Answers: map[string]int64{}, Latency: latencyDoc{Buckets: []bucketDoc{}}}
	always := []string{"allowed", "no_pass", "rate_limited"}
	if mode == ModeGateway {
		d.OriginVisible = true
		always = []string{"forwarded", "no_pass", "rate_limited", "timeout", "bad_gateway"}
		for _, c := range []string{"2xx", "3xx", "4xx", "5xx"} {
			d.Answers[c] = 0
		}
	}
	for _, o := range always {
		d.Requests[o] = 0
	}
	return d
}

// add reads one metric family of the gateway's into d; false: not one.
func (d *shopDoc) add(mf *dto.MetricFamily) bool {
	switch mf.GetName() {
	case metricGatewayRequests:
		for _, m := range mf.GetMetric() {
			outcome, v := label(m, "outcome"), m.GetCounter().GetValue()
			addCount(d.Requests, outcome, v)
			if label(m, "kind") == "protected" && (outcome == "forwarded" || outcome == "upgraded" || outcome == "allowed") {
				d.Passed += int64(v)
			}
		}
	case metricGatewayAnswers, metricGatewayUpstream, metricGatewayTunnels:
		if !d.OriginVisible {
			return true // series made at 0 in every mode: nothing of the origin in forward auth
		}
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case metricGatewayAnswers:
				addCount(d.Answers, label(m, "class"), m.GetCounter().GetValue())
			case metricGatewayUpstream:
				d.Latency.addHistogram(m.GetHistogram())
			default:
				d.Tunnels += int64(m.GetGauge().GetValue())
			}
		}
	default:
		return false
	}
	return true
}

// addCount adds v to counts[k]; a 0 only when k is there already (the
// series made at 0 for alerts that do not concern this mode stay out).
func addCount(counts map[string]int64, k string, v float64) {
	if _, ok := counts[k]; ok || v != 0 {
		counts[k] += int64(v)
	}
}

// label is m's value of the label name ("" without it).
func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// addHistogram adds h's buckets to l's (every kind has the same bounds).
func (l *latencyDoc) addHistogram(h *dto.Histogram) {
	l.Count += h.GetSampleCount()
	for i, b := range h.GetBucket() {
		if math.IsInf(b.GetUpperBound(), 1) {
			continue
		}
		if i < len(l.Buckets) && l.Buckets[i].LeSeconds == b.GetUpperBound() {
			l.Buckets[i].Count += b.GetCumulativeCount()
			continue
		}
		l.Buckets = append(l.Buckets, bucketDoc{LeSeconds: b.GetUpperBound(), Count: b.GetCumulativeCount()})
	}
}

// settle computes l's quantiles from its buckets.
func (l *latencyDoc) settle() {
	l.P50Seconds, l.P90Seconds = quantile(0.5, l.Buckets, l.Count), quantile(0.9, l.Buckets, l.Count)
}

// quantile is the q-quantile of count observations in cumulative
// buckets, linear within the bucket it falls in (from 0 in the first);
// past the last bound, that bound. nil when count is 0.
func quantile(q float64, buckets []bucketDoc, count uint64) *float64 {
	if count == 0 || len(buckets) == 0 {
		return nil
	}
	rank := q * float64(count)
	lower, below := 0.0, uint64(0)
	for _, b := range buckets {
		if float64(b.Count) >= rank {
			v := b.LeSeconds
			if n := b.Count - below; n > 0 {
				v = lower + (b.LeSeconds-lower)*(rank-float64(below))/float64(n)
			}
			return &v
		}
		lower, below = b.LeSeconds, b.Count
	}
	v := buckets[len(buckets)-1].LeSeconds
	return &v
}

// originCheck is the origin check's word for the shop (nil: no check).
func (a *app) originCheck(ctx context.Context) *string {
	if a.CheckOrigin == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	s := "ok"
	if err := a.CheckOrigin(ctx); err != nil {
		s = err.Error()
	}
	return &s
}
