package main

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"os"
	"strings"
	"time"

	"waitingroom/loadtest/internal/measure"
)

// htmlReport is a report with its own HTML page; any other report is
// written as its printed text in a <pre>.
type htmlReport interface {
	report
	html() (page, error)
}

// page is what the HTML template shows: everything inline, no network.
type page struct {
	Title    string
	Subtitle string
	Notes    []string
	Checks   []check
	Rows     [][2]string
	Tables   []table
	Charts   []template.HTML
	Text     string // the printed report, for reports without charts
	Made     string
}

// table is a titled table of strings.
type table struct {
	Title  string
	Head   []string
	Body   [][]string
	Footer string
}

func writeHTML(path string, rep report) error {
	var p page
	if h, ok := rep.(htmlReport); ok {
		var err error
		if p, err = h.html(); err != nil {
			return fmt.Errorf("html report: %w", err)
		}
	} else {
		var b bytes.Buffer
		rep.print(&b)
		p = page{Title: "waiting room load test", Text: strings.TrimLeft(b.String(), "\n")}
	}
	p.Made = time.Now().UTC().Format("2006-01-02 15:04 UTC")
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, p); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	return nil
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{"pass": verdictPass}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2330;margin:24px auto;max-width:1140px;padding:0 16px;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:22px 0 8px}
.sub{color:#56607a;margin:0 0 12px}.note{color:#8a5a00;margin:2px 0}
table{border-collapse:collapse;margin:4px 0 8px;font-variant-numeric:tabular-nums}
td,th{border-bottom:1px solid #e3e6ee;padding:4px 10px;text-align:left;vertical-align:top}
th{background:#f4f6fa;font-weight:600}td.num,th.num{text-align:right}
.PASS{color:#137333;font-weight:700}.FAIL{color:#b3261e;font-weight:700}
.charts{display:grid;grid-template-columns:1fr 1fr;gap:12px}
.charts svg{width:100%;height:auto;border:1px solid #e3e6ee;border-radius:6px;background:#fcfcfe}
pre{background:#f4f6fa;padding:12px;overflow:auto;font-size:12.5px}
footer{color:#8a93a8;font-size:12px;margin-top:20px}
</style></head><body>
<h1>{{.Title}}</h1>
{{if .Subtitle}}<p class="sub">{{.Subtitle}}</p>{{end}}
{{range .Notes}}<p class="note">{{.}}</p>{{end}}
{{if .Checks}}<h2>Bar</h2><table><tr><th>check</th><th>verdict</th><th>measured</th></tr>
{{range .Checks}}<tr><td>{{.Name}}</td><td class="{{pass .OK}}">{{pass .OK}}</td><td>{{.Got}}</td></tr>{{end}}</table>{{end}}
{{if .Charts}}<h2>Over time</h2><div class="charts">{{range .Charts}}{{.}}{{end}}</div>{{end}}
{{if .Rows}}<h2>Summary</h2><table>{{range .Rows}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table>{{end}}
{{range .Tables}}<h2>{{.Title}}</h2><table><tr>{{range $i, $h := .Head}}<th{{if $i}} class="num"{{end}}>{{$h}}</th>{{end}}</tr>
{{range .Body}}<tr>{{range $i, $c := .}}<td{{if $i}} class="num"{{end}}>{{$c}}</td>{{end}}</tr>{{end}}</table>{{if .Footer}}<p class="sub">{{.Footer}}</p>{{end}}{{end}}
{{if .Text}}<pre>{{.Text}}</pre>{{end}}
<footer>waitingroom loadtest · {{.Made}} · self-contained: no scripts, no network</footer>
</body></html>
`))

// line is one line of a chart: y values at x (seconds); NaN y is a gap.
type line struct {
	name, color string
	dashed      bool
	x, y        []float64
}

// chartPalette: distinguishable colors, also in grey print.
var chartPalette = []string{"#1f6fd1", "#d9480f", "#2b8a3e", "#7048e8", "#c2255c"}

// lineChart draws series as an SVG line chart: axes with round ticks, a
// legend, gaps where y is NaN. xmax is the x axis's end (seconds).
func lineChart(title, unit string, xmax float64, ss ...line) template.HTML {
	const (
		w, h                   = 560.0, 240.0
		left, right, top, bott = 58.0, 14.0, 46.0, 30.0
	)
	pw, ph := w-left-right, h-top-bott
	ymax := 0.0
	for _, s := range ss {
		for _, y := range s.y {
			if !math.IsNaN(y) && !math.IsInf(y, 0) {
				ymax = max(ymax, y)
			}
		}
	}
	ystep := niceStep(ymax, 5)
	ytop := math.Max(ystep, math.Ceil(ymax/ystep)*ystep)
	xmax = math.Max(xmax, 1)
	xstep := niceStep(xmax, 8)
	px := func(x float64) float64 { return left + pw*x/xmax }
	py := func(y float64) float64 { return top + ph*(1-y/ytop) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s">`, w, h, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="13" font-weight="600" fill="#1d2330">%s</text>`, left, template.HTMLEscapeString(title))
	for y := 0.0; y <= ytop+ystep/2; y += ystep {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e3e6ee"/>`, left, left+pw, py(y), py(y))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="#56607a" text-anchor="end">%s</text>`, left-6, py(y)+3.5, tickLabel(y))
	}
	for x := 0.0; x <= xmax+xstep/100; x += xstep {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#c9cedb"/>`, px(x), px(x), top+ph, top+ph+4)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="#56607a" text-anchor="middle">%s</text>`, px(x), top+ph+15, tickLabel(x))
	}
	fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#8a93a8"/>`, left, left+pw, top+ph, top+ph)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="#56607a" text-anchor="end">s</text>`, left+pw, h-2)
	fmt.Fprintf(&b, `<text x="12" y="%.1f" font-size="10" fill="#56607a" transform="rotate(-90 12 %.1f)" text-anchor="middle">%s</text>`,
		top+ph/2, top+ph/2, template.HTMLEscapeString(unit))
	lx := left
	for _, s := range ss { // legend, on its own line under the title
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="30" y2="30" stroke="%s" stroke-width="2.5"%s/>`, lx, lx+14, s.color, dash(s.dashed))
		fmt.Fprintf(&b, `<text x="%.1f" y="34" font-size="11" fill="#1d2330">%s</text>`, lx+18, template.HTMLEscapeString(s.name))
		lx += 7*float64(len([]rune(s.name))) + 34
	}
	for _, s := range ss {
		var pts []string
		flush := func() {
			if len(pts) == 1 {
				var x, y float64
				fmt.Sscanf(pts[0], "%f,%f", &x, &y)
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2" fill="%s"/>`, x, y, s.color)
			} else if len(pts) > 1 {
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.8" stroke-linejoin="round"%s points="%s"/>`, s.color, dash(s.dashed), strings.Join(pts, " "))
			}
			pts = pts[:0]
		}
		for i := range min(len(s.x), len(s.y)) {
			if math.IsNaN(s.y[i]) || math.IsInf(s.y[i], 0) {
				flush()
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(math.Min(s.x[i], xmax)), py(math.Max(s.y[i], 0))))
		}
		flush()
	}
	if ymax == 0 {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="12" fill="#8a93a8" text-anchor="middle">no data</text>`, left+pw/2, top+ph/2)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // built from numbers and escaped strings only
}

func dash(d bool) string {
	if d {
		return ` stroke-dasharray="5 4"`
	}
	return ""
}

// niceStep is a round step (1, 2, 2.5 or 5 × 10^k) giving about n ticks
// up to v.
func niceStep(v float64, n int) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	raw := v / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

// tickLabel prints an axis value: 1500 → "1.5k", 2.5 → "2.5".
func tickLabel(v float64) string {
	switch {
	case math.Abs(v) >= 1e6:
		return trimZero(fmt.Sprintf("%.1f", v/1e6)) + "M"
	case math.Abs(v) >= 1e4:
		return trimZero(fmt.Sprintf("%.1f", v/1e3)) + "k"
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	}
	return trimZero(fmt.Sprintf("%.2f", v))
}

func trimZero(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// html is the surge's page: the bar, charts over time, the tables.
func (r *surgeReport) html() (page, error) {
	p := page{
		Title: fmt.Sprintf("Surge: %s users over %.0f s by %s", commas(r.Users), r.OverSeconds, r.Transport),
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
func (r *surgeReport) charts() []template.HTML {
	n := len(r.Timeline)
	xs := make([]float64, n)
	col := func(f func(timelinePoint) (float64, bool)) []float64 {
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
	c := chartPalette
	return []template.HTML{
		lineChart("Waiting users (admin API samples)", "users", xmax, line{name: "waiting", color: c[0], x: sx, y: sw}),
		lineChart("Active users vs targetActive (sampled)", "users", xmax,
			line{name: "active", color: c[2], x: sx, y: sa}, line{name: "targetActive", color: c[1], dashed: true, x: sx, y: st}),
		lineChart("Per second: entered, admitted (READY), ordered", "users / s", xmax,
			line{name: "entered", color: c[0], x: xs, y: col(func(t timelinePoint) (float64, bool) { return float64(t.Entered), true })},
			line{name: "admitted", color: c[2], x: xs, y: col(func(t timelinePoint) (float64, bool) { return float64(t.Admitted), true })},
			line{name: "ordered", color: c[3], dashed: true, x: xs, y: col(func(t timelinePoint) (float64, bool) { return float64(t.Ordered), true })}),
		lineChart("Enter latency by second of response", "ms", xmax,
			line{name: "p50", color: c[0], x: xs, y: col(func(t timelinePoint) (float64, bool) { return t.EnterP50, t.HasEnter })},
			line{name: "p90", color: c[3], x: xs, y: col(func(t timelinePoint) (float64, bool) { return t.EnterP90, t.HasEnter })},
			line{name: "p99", color: c[1], x: xs, y: col(func(t timelinePoint) (float64, bool) { return t.EnterP99, t.HasEnter })}),
		lineChart("Fan-out lag (receive − publish ts) by second", "ms", xmax,
			line{name: "p50", color: c[0], x: xs, y: col(func(t timelinePoint) (float64, bool) { return t.LagP50, t.HasLag })},
			line{name: "p99", color: c[1], x: xs, y: col(func(t timelinePoint) (float64, bool) { return t.LagP99, t.HasLag })}),
		lineChart("Server CPU (per-second, % of one core)", "%", xmax,
			line{name: "CPU", color: c[4], x: xs, y: col(func(t timelinePoint) (float64, bool) { return t.CPUPct, t.HasCPUPct })}),
		lineChart("Server RSS", "MiB", xmax,
			line{name: "RSS", color: c[3], x: xs, y: col(func(t timelinePoint) (float64, bool) { return t.RSSMiB, t.HasProc })}),
		r.etaChart(xmax),
		r.etaBandChart(xmax),
	}
}

// etaSeriesLine is one column of the ETA series as a line: y NaN where the
// second has no estimate (of the band).
func (r *surgeReport) etaSeriesLine(name, color string, dashed bool, f func(etaPoint) (float64, bool)) line {
	l := line{name: name, color: color, dashed: dashed}
	for _, p := range r.ETASeries {
		v, ok := f(p)
		if !ok {
			v = math.NaN()
		}
		l.x, l.y = append(l.x, float64(p.T)+0.5), append(l.y, v)
	}
	return l
}

// etaChart is the estimates shown against the waits that remained, by the
// second they were shown.
func (r *surgeReport) etaChart(xmax float64) template.HTML {
	c := chartPalette
	return lineChart("ETA shown vs real remaining wait (median, by second shown)", "s", xmax,
		r.etaSeriesLine("ETA shown", c[1], false, func(p etaPoint) (float64, bool) { return p.ShownP50, p.Count > 0 }),
		r.etaSeriesLine("real remaining", c[0], true, func(p etaPoint) (float64, bool) { return p.RealP50, p.Count > 0 }))
}

// etaBandChart is the estimates' error per position band over time.
func (r *surgeReport) etaBandChart(xmax float64) template.HTML {
	c := chartPalette
	var ls []line
	for b, band := range positionBands {
		ls = append(ls, r.etaSeriesLine("positions "+band.name, c[[]int{2, 3, 4}[b]], false, func(p etaPoint) (float64, bool) {
			return p.BandAPEP50[b], p.BandCount[b] > 0
		}))
	}
	return lineChart("ETA |error| by position band (median, by second shown)", "%", xmax, ls...)
}

// tables are the page's tables: requests by endpoint, and the latency
// distributions.
func (r *surgeReport) tables() []table {
	req := table{Title: "Requests", Head: []string{"endpoint", "requests", "status codes", "p50 ms", "p90 ms", "p99 ms", "max ms"},
		Footer: "Every attempt, retries of 429/503 included; 0 = no response."}
	for _, e := range []struct {
		name string
		s    measure.Summary
	}{{"enter", r.Enter}, {"position", r.Position}, {"orders", r.Orders}} {
		req.Body = append(req.Body, []string{e.name, commas(e.s.Count), e.s.CodesString(),
			fmt.Sprintf("%.1f", msf(e.s.P50)), fmt.Sprintf("%.1f", msf(e.s.P90)), fmt.Sprintf("%.1f", msf(e.s.P99)), fmt.Sprintf("%.1f", msf(e.s.Max))})
	}
	lat := table{Title: "Latency distributions", Head: []string{"what", "samples", "p50 ms", "p90 ms", "p99 ms", "max ms"}}
	for _, e := range []struct {
		name string
		l    measure.Latency
	}{{"enter (successful)", r.EnterLatency}, {"fan-out lag, all", r.Lag}, {"fan-out lag, SSE", r.LagSSE}, {"fan-out lag, WebSocket", r.LagWS}} {
		lat.Body = append(lat.Body, []string{e.name, commas(e.l.Count),
			fmt.Sprintf("%.1f", msf(e.l.P50)), fmt.Sprintf("%.1f", msf(e.l.P90)), fmt.Sprintf("%.1f", msf(e.l.P99)), fmt.Sprintf("%.1f", msf(e.l.Max))})
	}
	eta := table{Title: "ETA accuracy", Head: []string{"estimates", "compared", "median |error| %", "p90 |error| %"},
		Footer: "|ETA − real| ÷ real, real = admission − when shown; over the wait: every WAITING status shown (enter, pushes, polls, reloads), those shown under 1 s before the admission skipped."}
	row := func(name string, n int, med, p90 float64) {
		eta.Body = append(eta.Body, []string{name, commas(n), fmt.Sprintf("%.0f", med), fmt.Sprintf("%.0f", p90)})
	}
	row("first shown", r.ETA.Count, r.ETA.MedianAPE, r.ETA.P90APE)
	row("over the wait", r.ETAWait.Count, r.ETAWait.MedianAPE, r.ETAWait.P90APE)
	for _, b := range r.ETAWait.ByBand {
		row("  positions "+b.Band, b.Count, b.MedianAPE, b.P90APE)
	}
	return []table{req, lat, eta}
}
