package surge

import (
	"fmt"
	"html/template"
	"math"

	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/report"
)

// HTML is the surge's page: the bar, charts over time, the tables.
func (r *Report) HTML() (report.Page, error) {
	p := report.Page{
		Title: fmt.Sprintf("Surge: %s users over %.0f s by %s", report.Commas(r.Users), r.OverSeconds, r.Transport),
		Subtitle: fmt.Sprintf("%s, room %s, targetActive %d, entry TTL %.0f s; run %.1f s; load generator and server share %d CPUs",
			r.Base, r.Room, r.Target, r.EntryTTLSeconds, r.Seconds, r.CPUs),
		Checks: r.checks(),
		Rows:   r.rows(),
	}
	if r.Interrupted {
		p.Notes = append(p.Notes, "Interrupted: the figures cover the run up to Ctrl-C.")
	}
	if r.HitMaxDuration {
		p.Notes = append(p.Notes, fmt.Sprintf("Stopped by --max-duration (%.0f s) before every user finished.", r.MaxDurationSeconds))
	}
	p.Notes = append(p.Notes, "Absolute figures vary run to run on a shared machine; compare ratios within one run.")

	p.Charts = r.charts()
	p.Tables = r.tables()
	return p, nil
}

// charts are the page's charts over time: the room's samples as taken,
// the rest per second of the run from the timeline.
func (r *Report) charts() []template.HTML {
	n := len(r.Timeline)
	xs := make([]float64, n)
	col := func(f func(TimelinePoint) (float64, bool)) []float64 {
		y := make([]float64, n)
		for i, t := range r.Timeline {
			v, ok := f(t)
			if !ok {
				v = math.NaN()
			}
			y[i] = v
		}
		return y
	}
	for i := range xs {
		xs[i] = float64(i) + 0.5 // a second's counts sit at its middle
	}
	xmax := math.Max(r.Seconds, 1)
	var sx, sw, sa, st []float64
	for _, s := range r.RoomSeries {
		sx = append(sx, s.At.Seconds())
		sw = append(sw, float64(s.Waiting))
		sa = append(sa, float64(s.Active))
		st = append(st, float64(s.Target))
	}
	c := report.Palette
	return []template.HTML{
		report.LineChart("Waiting users (admin API samples)", "users", xmax, report.Line{Name: "waiting", Color: c[0], X: sx, Y: sw}),
		report.LineChart("Active users vs targetActive (sampled)", "users", xmax,
			report.Line{Name: "active", Color: c[2], X: sx, Y: sa}, report.Line{Name: "targetActive", Color: c[1], Dashed: true, X: sx, Y: st}),
		report.LineChart("Per second: entered, admitted (READY), ordered", "users / s", xmax,
			report.Line{Name: "entered", Color: c[0], X: xs, Y: col(func(t TimelinePoint) (float64, bool) { return float64(t.Entered), true })},
			report.Line{Name: "admitted", Color: c[2], X: xs, Y: col(func(t TimelinePoint) (float64, bool) { return float64(t.Admitted), true })},
			report.Line{Name: "ordered", Color: c[3], Dashed: true, X: xs, Y: col(func(t TimelinePoint) (float64, bool) { return float64(t.Ordered), true })}),
		report.LineChart("Enter latency by second of response", "ms", xmax,
			report.Line{Name: "p50", Color: c[0], X: xs, Y: col(func(t TimelinePoint) (float64, bool) { return t.EnterP50, t.HasEnter })},
			report.Line{Name: "p90", Color: c[3], X: xs, Y: col(func(t TimelinePoint) (float64, bool) { return t.EnterP90, t.HasEnter })},
			report.Line{Name: "p99", Color: c[1], X: xs, Y: col(func(t TimelinePoint) (float64, bool) { return t.EnterP99, t.HasEnter })}),
		report.LineChart("Fan-out lag (receive − publish ts) by second", "ms", xmax,
			report.Line{Name: "p50", Color: c[0], X: xs, Y: col(func(t TimelinePoint) (float64, bool) { return t.LagP50, t.HasLag })},
			report.Line{Name: "p99", Color: c[1], X: xs, Y: col(func(t TimelinePoint) (float64, bool) { return t.LagP99, t.HasLag })}),
		report.LineChart("Server CPU (per-second, % of one core)", "%", xmax,
			report.Line{Name: "CPU", Color: c[4], X: xs, Y: col(func(t TimelinePoint) (float64, bool) { return t.CPUPct, t.HasCPUPct })}),
		report.LineChart("Server RSS", "MiB", xmax,
			report.Line{Name: "RSS", Color: c[3], X: xs, Y: col(func(t TimelinePoint) (float64, bool) { return t.RSSMiB, t.HasProc })}),
		r.etaChart(xmax),
		r.etaBandChart(xmax),
	}
}

// etaSeriesLine is one column of the ETA series as a line: y NaN where the
// second has no estimate (of the band).
func (r *Report) etaSeriesLine(name, color string, dashed bool, f func(etaPoint) (float64, bool)) report.Line {
	l := report.Line{Name: name, Color: color, Dashed: dashed}
	for _, p := range r.ETASeries {
		v, ok := f(p)
		if !ok {
			v = math.NaN()
		}
		l.X, l.Y = append(l.X, float64(p.T)+0.5), append(l.Y, v)
	}
	return l
}

// etaChart is the estimates shown against the waits that remained, by the
// second they were shown.
func (r *Report) etaChart(xmax float64) template.HTML {
	c := report.Palette
	return report.LineChart("ETA shown vs real remaining wait (median, by second shown)", "s", xmax,
		r.etaSeriesLine("ETA shown", c[1], false, func(p etaPoint) (float64, bool) { return p.ShownP50, p.Count > 0 }),
		r.etaSeriesLine("real remaining", c[0], true, func(p etaPoint) (float64, bool) { return p.RealP50, p.Count > 0 }))
}

// etaBandChart is the estimates' error per position band over time.
func (r *Report) etaBandChart(xmax float64) template.HTML {
	c := report.Palette
	var ls []report.Line
	for b, band := range positionBands {
		ls = append(ls, r.etaSeriesLine("positions "+band.name, c[[]int{2, 3, 4}[b]], false, func(p etaPoint) (float64, bool) {
			return p.BandAPEP50[b], p.BandCount[b] > 0
		}))
	}
	return report.LineChart("ETA |error| by position band (median, by second shown)", "%", xmax, ls...)
}

// tables are the page's tables: requests by endpoint, and the latency
// distributions.
func (r *Report) tables() []report.Table {
	req := report.Table{Title: "Requests", Head: []string{"endpoint", "requests", "status codes", "p50 ms", "p90 ms", "p99 ms", "max ms"},
		Footer: "Every attempt, retries of 429/503 included; 0 = no response."}
	for _, e := range []struct {
		name string
		s    measure.Summary
	}{{"enter", r.Enter}, {"position", r.Position}, {"orders", r.Orders}} {
		req.Body = append(req.Body, []string{e.name, report.Commas(e.s.Count), e.s.CodesString(),
			fmt.Sprintf("%.1f", report.Msf(e.s.P50)), fmt.Sprintf("%.1f", report.Msf(e.s.P90)), fmt.Sprintf("%.1f", report.Msf(e.s.P99)), fmt.Sprintf("%.1f", report.Msf(e.s.Max))})
	}
	lat := report.Table{Title: "Latency distributions", Head: []string{"what", "samples", "p50 ms", "p90 ms", "p99 ms", "max ms"}}
	for _, e := range []struct {
		name string
		l    measure.Latency
	}{{"enter (successful)", r.EnterLatency}, {"fan-out lag, all", r.Lag}, {"fan-out lag, SSE", r.LagSSE}, {"fan-out lag, WebSocket", r.LagWS}} {
		lat.Body = append(lat.Body, []string{e.name, report.Commas(e.l.Count),
			fmt.Sprintf("%.1f", report.Msf(e.l.P50)), fmt.Sprintf("%.1f", report.Msf(e.l.P90)), fmt.Sprintf("%.1f", report.Msf(e.l.P99)), fmt.Sprintf("%.1f", report.Msf(e.l.Max))})
	}
	eta := report.Table{Title: "ETA accuracy", Head: []string{"estimates", "compared", "median |error| %", "p90 |error| %"},
		Footer: "|ETA − real| ÷ real, real = admission − when shown; over the wait: every WAITING status shown (enter, pushes, polls, reloads), those shown under 1 s before the admission skipped."}
	row := func(name string, n int, med, p90 float64) {
		eta.Body = append(eta.Body, []string{name, report.Commas(n), fmt.Sprintf("%.0f", med), fmt.Sprintf("%.0f", p90)})
	}
	row("first shown", r.ETA.Count, r.ETA.MedianAPE, r.ETA.P90APE)
	row("over the wait", r.ETAWait.Count, r.ETAWait.MedianAPE, r.ETAWait.P90APE)
	for _, b := range r.ETAWait.ByBand {
		row("  positions "+b.Band, b.Count, b.MedianAPE, b.P90APE)
	}
	return []report.Table{req, lat, eta}
}
