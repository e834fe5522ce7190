package forwardauth

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/report"
)

// faReport is what the forward-auth scenario measured. A phase is nil
// when Ctrl-C came before it.
type faReport struct {
	Scenario      string  `json:"scenario"`
	Room          string  `json:"room"`
	CPUs          int     `json:"cpus"`
	Conns         int     `json:"conns"`
	Visitors      int     `json:"visitors"`
	WarmupSeconds float64 `json:"warmupSeconds"`
	Seconds       float64 `json:"seconds"` // measured, per phase
	PageBytes     int     `json:"pageBytes"`
	OpenURI       string  `json:"unprotectedUri"`
	ProtectedURI  string  `json:"protectedUri"`
	Nginx         string  `json:"nginx"`
	ProxyConfig   string  `json:"proxyConfig"`
	ProxyWorkers  int     `json:"proxyWorkers"`
	Redis         string  `json:"redis"`
	LoadBefore    string  `json:"loadAverageBefore"`
	LoadAfter     string  `json:"loadAverageAfter"`

	DecideOpen  *phase `json:"decideUnprotected,omitempty"`
	DecideVisit *phase `json:"decideProtected,omitempty"`
	Direct      *phase `json:"nginxToOrigin,omitempty"`
	AuthOpen    *phase `json:"nginxAuthUnprotected,omitempty"`
	AuthVisit   *phase `json:"nginxAuthProtected,omitempty"`
	// GatewayOpen and GatewayVisit: the waiting room in gateway mode in
	// nginx's place, in front of the same origin.
	GatewayOpen  *phase `json:"gatewayUnprotected,omitempty"`
	GatewayVisit *phase `json:"gatewayProtected,omitempty"`

	// OpenRatio and VisitRatio are the requests/s of nginx with
	// auth_request, unprotected and protected, ÷ nginx straight to the
	// origin's (0: unknown).
	OpenRatio  float64 `json:"nginxAuthUnprotectedRatio,omitempty"`
	VisitRatio float64 `json:"nginxAuthProtectedRatio,omitempty"`
	// OpenExtraMicros and VisitExtraMicros are the serving side's CPU per
	// request (ServingMicros) through auth_request less straight to the
	// origin's.
	OpenExtraMicros  float64 `json:"nginxAuthUnprotectedExtraCpuUs,omitempty"`
	VisitExtraMicros float64 `json:"nginxAuthProtectedExtraCpuUs,omitempty"`
	// GatewayOpenRatio and GatewayVisitRatio are the gateway's requests/s,
	// unprotected and protected, ÷ nginx straight to the origin's; the
	// ExtraMicros its serving side's CPU per request less nginx's.
	GatewayOpenRatio        float64 `json:"gatewayUnprotectedRatio,omitempty"`
	GatewayVisitRatio       float64 `json:"gatewayProtectedRatio,omitempty"`
	GatewayOpenExtraMicros  float64 `json:"gatewayUnprotectedExtraCpuUs,omitempty"`
	GatewayVisitExtraMicros float64 `json:"gatewayProtectedExtraCpuUs,omitempty"`

	Checks      []report.Check `json:"checks"`
	Interrupted bool           `json:"interrupted"`
}

// phase is one closed-loop measurement of one request.
type phase struct {
	Name     string          `json:"name"`
	URL      string          `json:"url"`
	Conns    int             `json:"conns"`
	Seconds  float64         `json:"seconds"`
	Requests int             `json:"requests"`
	OK       int             `json:"ok"`  // 200 answers
	RPS      float64         `json:"rps"` // OK ÷ Seconds
	Latency  measure.Summary `json:"latency"`
	// Passes counts the answers showing a pass: Waitingroom-Pass from
	// /_wr/auth, Origin-Got-Pass 1 through nginx.
	Passes     int `json:"passes"`
	SetCookies int `json:"setCookies"` // answers setting a cookie
	// Decisions is what the waiting room counted over the phase
	// (waitingroom_gateway_requests_total).
	Decisions      int  `json:"decisions"`
	DecisionsKnown bool `json:"decisionsKnown"`
	// CPUMicros is each process's CPU time per request (utime + stime of
	// /proc/<pid>/stat, an nginx's workers included), µs.
	CPUMicros map[string]float64 `json:"cpuUsPerRequest"`
	// ServingMicros is the sum of the waiting room's, the proxy's and the
	// origin's: the serving side, the load tool left out.
	ServingMicros float64 `json:"servingCpuUsPerRequest"`
	// MachineMicros is the machine's busy CPU time per request (/proc/stat,
	// everything running included), µs; BusyCores the same per second.
	MachineMicros float64  `json:"machineCpuUsPerRequest"`
	BusyCores     float64  `json:"busyCores"`
	Failures      []string `json:"failures,omitempty"` // the first few
}

func (r *faReport) phases() []*phase {
	return []*phase{r.DecideOpen, r.DecideVisit, r.Direct, r.AuthOpen, r.AuthVisit, r.GatewayOpen, r.GatewayVisit}
}

// finish works out the ratios and the checks.
func (r *faReport) finish() {
	if d := r.Direct; d != nil && d.RPS > 0 {
		if a := r.AuthOpen; a != nil {
			r.OpenRatio, r.OpenExtraMicros = a.RPS/d.RPS, a.ServingMicros-d.ServingMicros
		}
		if a := r.AuthVisit; a != nil {
			r.VisitRatio, r.VisitExtraMicros = a.RPS/d.RPS, a.ServingMicros-d.ServingMicros
		}
		if a := r.GatewayOpen; a != nil {
			r.GatewayOpenRatio, r.GatewayOpenExtraMicros = a.RPS/d.RPS, a.ServingMicros-d.ServingMicros
		}
		if a := r.GatewayVisit; a != nil {
			r.GatewayVisitRatio, r.GatewayVisitExtraMicros = a.RPS/d.RPS, a.ServingMicros-d.ServingMicros
		}
	}
	all := func(f func(p *phase) bool) (bool, string) {
		ok, n := true, 0
		var bad []string
		for _, p := range r.phases() {
			if p == nil {
				continue
			}
			n++
			if !f(p) {
				ok = false
				bad = append(bad, p.Name)
			}
		}
		if n == 0 {
			return false, "no phase measured"
		}
		if !ok {
			return false, "not in: " + strings.Join(bad, ", ")
		}
		return true, fmt.Sprintf("%d phases", n)
	}
	asksServer := func(p *phase) bool { return p != r.Direct }
	protected := func(p *phase) bool { return p == r.DecideVisit || p == r.AuthVisit || p == r.GatewayVisit }
	ok, got := all(func(p *phase) bool { return p.Requests > 0 && p.OK == p.Requests })
	r.Checks = append(r.Checks, report.NewCheck("every answer 200", ok, got+codesOf(r)))
	ok, got = all(func(p *phase) bool {
		want := 0
		if asksServer(p) {
			want = p.Requests
		}
		return p.DecisionsKnown && p.Decisions == want
	})
	r.Checks = append(r.Checks, report.NewCheck("the waiting room decided (the gateway forwarded) once per request, never for nginx → origin", ok, got+decisionsOf(r)))
	ok, got = all(func(p *phase) bool {
		if protected(p) {
			return p.Passes == p.Requests
		}
		return p.Passes == 0
	})
	r.Checks = append(r.Checks, report.NewCheck("a pass on every protected answer (at the origin through nginx), none on the others", ok, got))
	ok, got = all(func(p *phase) bool { return p.SetCookies == 0 })
	r.Checks = append(r.Checks, report.NewCheck("no answer sets a cookie (the visit is open)", ok, got))
}

func codesOf(r *faReport) string {
	var b strings.Builder
	for _, p := range r.phases() {
		if p != nil && p.OK != p.Requests {
			fmt.Fprintf(&b, "; %s: %s %v", p.Name, p.Latency.CodesString(), p.Failures)
		}
	}
	return b.String()
}

func decisionsOf(r *faReport) string {
	var b strings.Builder
	for _, p := range r.phases() {
		if p != nil {
			fmt.Fprintf(&b, "; %s %s of %s", p.Name, report.Commas(p.Decisions), report.Commas(p.Requests))
		}
	}
	return b.String()
}

func (r *faReport) Print(w io.Writer) {
	fmt.Fprintln(w, "\nforward-auth scenario: /_wr/auth decisions asked directly, then nginx with auth_request and the gateway against nginx straight to the origin, in one run")
	fmt.Fprintf(w, "waiting room: WR_FORWARD_AUTH=on, room %s protecting GET /checkout/*, Redis alone (%s); unprotected %s, protected %s\n",
		r.Room, r.Redis, r.OpenURI, r.ProtectedURI)
	fmt.Fprintf(w, "nginx %s: the proxy is %s as shipped (%d workers); nginx → origin the same file with auth_request off;\n",
		r.Nginx, r.ProxyConfig, r.ProxyWorkers)
	fmt.Fprintf(w, "  the origin, an nginx of its own (1 worker), answers a %s B static page; the gateway: a second waiting room, WR_UPSTREAM the origin, the same room and route\n", report.Commas(r.PageBytes))
	fmt.Fprintf(w, "%d keep-alive connections per phase from 127.0.0.1, %.0f s warm-up + %.0f s measured; every request carries the cookies of one of %d visitors admitted to %s\n",
		r.Conns, r.WarmupSeconds, r.Seconds, r.Visitors, r.Room)
	fmt.Fprintf(w, "machine: %d CPUs, load average %s before the run, %s after\n", r.CPUs, r.LoadBefore, r.LoadAfter)
	fmt.Fprintf(w, "NOTE: the load tool, nginx, the waiting room and Redis share the %d CPUs: rates are the whole machine's; compare the ratios within this run\n", r.CPUs)
	if r.Interrupted {
		fmt.Fprintln(w, "INTERRUPTED: phases not reached are missing")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\trequests\tstatus codes\treq/s\tp50 ms\tp99 ms\tmax ms\tdecisions\tpasses\tbusy cores\t")
	for _, p := range r.phases() {
		if p == nil {
			continue
		}
		l := p.Latency
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%.2f\t%.1f\t%s\t%s\t%.2f\t\n", p.Name, report.Commas(p.Requests), l.CodesString(),
			report.Commas(int(p.RPS+0.5)), report.Msf(l.P50), report.Msf(l.P99), report.Msf(l.Max),
			report.Commas(p.Decisions), report.Commas(p.Passes), p.BusyCores)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "CPU µs per request\t%s\t%s\t%s\t%s\tserving side\t%s\tmachine\t\n", procServer, procProxy, procOrigin, procGateway, procTool)
	for _, p := range r.phases() {
		if p == nil {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.1f\t%s\t%.1f\t\n", p.Name, micros(p, procServer), micros(p, procProxy), micros(p, procOrigin),
			micros(p, procGateway), p.ServingMicros, micros(p, procTool), p.MachineMicros)
	}
	tw.Flush()
	fmt.Fprintln(w, "(utime + stime of each process over the phase ÷ its requests, an nginx's workers included; serving side: the first four;")
	fmt.Fprintln(w, " machine: /proc/stat's busy time, anything else running included)")
	fmt.Fprintln(w)
	if a, b := r.DecideOpen, r.DecideVisit; a != nil && b != nil {
		fmt.Fprintf(w, "decisions/s asked directly: unprotected %s, protected with a visit %s\n", report.Commas(int(a.RPS+0.5)), report.Commas(int(b.RPS+0.5)))
		fmt.Fprintf(w, "waiting room CPU per decision: unprotected %s µs, protected with a visit %s µs\n", micros(a, procServer), micros(b, procServer))
	}
	if r.OpenRatio > 0 || r.VisitRatio > 0 {
		fmt.Fprintf(w, "through nginx, req/s ÷ nginx straight to the origin: unprotected %.2f×, protected with a visit %.2f×; p50 %.2f / %.2f / %.2f ms\n",
			r.OpenRatio, r.VisitRatio, p50(r.Direct), p50(r.AuthOpen), p50(r.AuthVisit))
		fmt.Fprintf(w, "auth_request's CPU per request (serving side, less straight to the origin's): unprotected %+.1f µs, protected %+.1f µs\n",
			r.OpenExtraMicros, r.VisitExtraMicros)
	}
	if r.GatewayOpenRatio > 0 || r.GatewayVisitRatio > 0 {
		fmt.Fprintf(w, "the gateway in nginx's place, req/s ÷ nginx straight to the origin: unprotected %.2f×, protected with a visit %.2f×; p50 %.2f / %.2f / %.2f ms\n",
			r.GatewayOpenRatio, r.GatewayVisitRatio, p50(r.Direct), p50(r.GatewayOpen), p50(r.GatewayVisit))
		fmt.Fprintf(w, "the gateway's CPU per request (serving side, less nginx straight to the origin's): unprotected %+.1f µs, protected %+.1f µs\n",
			r.GatewayOpenExtraMicros, r.GatewayVisitExtraMicros)
	}
	fmt.Fprintln(w)
	for _, c := range r.Checks {
		fmt.Fprintf(w, "%s  %s: %s\n", report.PassFail(c.OK), c.Name, c.Got)
	}
}

// micros is p's CPU µs per request of process name, "-" when unknown.
func micros(p *phase, name string) string {
	v, ok := p.CPUMicros[name]
	if !ok || math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.1f", v)
}

func p50(p *phase) float64 {
	if p == nil {
		return 0
	}
	return report.Msf(p.Latency.P50)
}
