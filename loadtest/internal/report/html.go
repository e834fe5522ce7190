package report

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"os"
	"strings"
	"time"
)

// HTMLReport is a report with its own HTML page; any other report is
// written as its printed text in a <pre>.
type HTMLReport interface {
	Report
	HTML() (Page, error)
}

// Page is what the HTML template shows: everything inline, no network.
type Page struct {
	Title    string
	Subtitle string
	Notes    []string
	Checks   []Check
	Rows     [][2]string
	Tables   []Table
	Charts   []template.HTML
	Text     string // the printed report, for reports without charts
	Made     string
}

// Table is a titled table of strings.
type Table struct {
	Title  string
	Head   []string
	Body   [][]string
	Footer string
}

// WriteHTML writes rep to path as one HTML page needing no network: its
// own page for an HTMLReport, its printed text otherwise.
func WriteHTML(path string, rep Report) error {
	var p Page
	if h, ok := rep.(HTMLReport); ok {
		var err error
		if p, err = h.HTML(); err != nil {
			return fmt.Errorf("html report: %w", err)
		}
	} else {
		var b bytes.Buffer
		rep.Print(&b)
		p = Page{Title: "waiting room load test", Text: strings.TrimLeft(b.String(), "\n")}
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

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{"pass": PassFail}).Parse(`<!doctype html>
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

// Line is one line of a chart: y values at x (seconds); NaN y is a gap.
type Line struct {
	Name, Color string
	Dashed      bool
	X, Y        []float64
}

// Palette: distinguishable colors, also in grey print.
var Palette = []string{"#1f6fd1", "#d9480f", "#2b8a3e", "#7048e8", "#c2255c"}

// LineChart draws series as an SVG line chart: axes with round ticks, a
// legend, gaps where y is NaN. xmax is the x axis's end (seconds).
func LineChart(title, unit string, xmax float64, ss ...Line) template.HTML {
	const (
		w, h                   = 560.0, 240.0
		left, right, top, bott = 58.0, 14.0, 46.0, 30.0
	)
	pw, ph := w-left-right, h-top-bott
	ymax := 0.0
	for _, s := range ss {
		for _, y := range s.Y {
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
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="30" y2="30" stroke="%s" stroke-width="2.5"%s/>`, lx, lx+14, s.Color, dash(s.Dashed))
		fmt.Fprintf(&b, `<text x="%.1f" y="34" font-size="11" fill="#1d2330">%s</text>`, lx+18, template.HTMLEscapeString(s.Name))
		lx += 7*float64(len([]rune(s.Name))) + 34
	}
	for _, s := range ss {
		var pts []string
		flush := func() {
			if len(pts) == 1 {
				var x, y float64
				fmt.Sscanf(pts[0], "%f,%f", &x, &y)
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2" fill="%s"/>`, x, y, s.Color)
			} else if len(pts) > 1 {
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.8" stroke-linejoin="round"%s points="%s"/>`, s.Color, dash(s.Dashed), strings.Join(pts, " "))
			}
			pts = pts[:0]
		}
		for i := range min(len(s.X), len(s.Y)) {
			if math.IsNaN(s.Y[i]) || math.IsInf(s.Y[i], 0) {
				flush()
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(math.Min(s.X[i], xmax)), py(math.Max(s.Y[i], 0))))
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
		return TrimZero(fmt.Sprintf("%.1f", v/1e6)) + "M"
	case math.Abs(v) >= 1e4:
		return TrimZero(fmt.Sprintf("%.1f", v/1e3)) + "k"
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	}
	return TrimZero(fmt.Sprintf("%.2f", v))
}

// TrimZero drops a decimal number's trailing zeros and point: "2.50" → "2.5".
func TrimZero(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
