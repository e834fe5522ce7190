package gatewayattack

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/report"
	"waitingroom/loadtest/internal/scenario"
)

// gwReport is what the gateway-attack scenario measured.
type gwReport struct {
	Scenario    string   `json:"scenario"`
	Base        string   `json:"base"`
	Room        string   `json:"room"`
	CPUs        int      `json:"cpus"`
	Visitors    int      `json:"visitors"`
	OverSecs    float64  `json:"overSeconds"`
	AttacksOn   string   `json:"attacks"`
	ServerPID   int      `json:"serverPid"`
	RSSSlackMiB float64  `json:"rssSlackMiB"`
	Interrupted bool     `json:"interrupted"`
	Notes       []string `json:"notes,omitempty"`

	Baseline *gwRun      `json:"baseline"`
	Attack   *gwRun      `json:"underAttack"`
	Attacks  []*gwAttack `json:"attacksRun"`

	sessionBurst int
	sessionRate  float64
	attackFor    time.Duration
	Checks       []report.Check `json:"checks"`
}

func newGWReport(o *scenario.Options, c gwConfig) *gwReport {
	return &gwReport{Scenario: "gateway-attack", Base: o.Base, Room: o.Room, CPUs: runtime.NumCPU(), Visitors: c.n,
		OverSecs: c.over.Seconds(), ServerPID: c.pid, RSSSlackMiB: c.rssSlackMiB,
		sessionBurst: c.sessionBurst, sessionRate: c.sessionRate, attackFor: c.attackFor}
}

func (r *gwReport) attacksOn(c gwConfig) string {
	var on []string
	for _, n := range gwAttackNames {
		if c.on[n] {
			on = append(on, n)
		}
	}
	if len(on) == 0 {
		return "none"
	}
	return strings.Join(on, ", ")
}

func (r *gwReport) finish() { r.Checks = r.checks() }

// checks are the bar: no protected request without a pass at the origin,
// the legitimate visitors unharmed, RSS bounded, each attack refused.
func (r *gwReport) checks() []report.Check {
	var cs []report.Check
	b, a := r.Baseline, r.Attack
	if b == nil || a == nil {
		return cs
	}
	cs = append(cs,
		report.NewCheck("origin: unpassed protected requests", b.Origin.UnpassedTotal == 0 && a.Origin.UnpassedTotal == 0,
			fmt.Sprintf("%d with attacks (%s), %d without", a.Origin.UnpassedTotal, bySender(a.Origin.Unpassed), b.Origin.UnpassedTotal)),
		report.NewCheck("legit: completed", a.Legit.Completed == a.Legit.Visitors,
			fmt.Sprintf("%d of %d (baseline %d of %d)", a.Legit.Completed, a.Legit.Visitors, b.Legit.Completed, b.Legit.Visitors)),
		report.NewCheck("legit: errors", a.Legit.Errors == 0, fmt.Sprintf("%d (baseline %d)", a.Legit.Errors, b.Legit.Errors)),
		report.NewCheck("legit: lost", a.Legit.Lost == 0, fmt.Sprintf("%d (baseline %d)", a.Legit.Lost, b.Legit.Lost)),
		report.NewCheck("legit: enter→READY p95 ≤ 2× baseline", within2(a.Legit.EnterReady, b.Legit.EnterReady),
			fmt.Sprintf("%s vs %s (%.2f×; or + 10 ms)", report.Ms(a.Legit.EnterReady.P95), report.Ms(b.Legit.EnterReady.P95), report.Ratio(a.Legit.EnterReady.P95, b.Legit.EnterReady.P95))),
		report.NewCheck("legit: protected p95 ≤ 2× baseline", within2(a.Legit.Protected, b.Legit.Protected),
			fmt.Sprintf("%s vs %s (%.2f×; or + 10 ms)", report.Ms(a.Legit.Protected.P95), report.Ms(b.Legit.Protected.P95), report.Ratio(a.Legit.Protected.P95, b.Legit.Protected.P95))),
	)
	if r.ServerPID != 0 {
		cs = append(cs, report.NewCheck("server RSS bounded", a.RSS.Peak > 0 && a.RSS.Peak <= b.RSS.Peak+r.RSSSlackMiB,
			fmt.Sprintf("peak %.1f MiB vs %.1f MiB without attack (bar: + %.0f MiB); after %.1f MiB", a.RSS.Peak, b.RSS.Peak, r.RSSSlackMiB, a.RSS.After)))
	}
	for _, at := range r.Attacks {
		switch at.Name {
		case "smuggle":
			cs = append(cs, report.NewCheck("smuggle: no tunnel without a 101", at.Codes["upgrade 101"] == 0 && at.Codes["smuggled 201"] == 0 && at.Codes["smuggled 200"] == 0,
				at.codesString()))
		case "session-share":
			// The burst, then the rate over the window (and a second's slack).
			most := r.sessionBurst + int(r.sessionRate*(r.attackFor.Seconds()+1)) + 1
			ok := at.Codes["200"]
			cs = append(cs, report.NewCheck("session-share: rate-bound", at.Detail != "" && !strings.HasPrefix(at.Detail, "the owner") && ok <= most,
				fmt.Sprintf("%s passed of %s (bar: at most %d); the origin got %d with a pass", report.Commas(ok), report.Commas(at.Sent), most, a.Origin.Passed["session-share"])))
		case "stuffing":
			placed := at.Codes["bare 200"] + at.Codes["solved 200"]
			cs = append(cs, report.NewCheck("stuffing: bare enters refused", at.Codes["bare 200"] == 0,
				fmt.Sprintf("%d places taken of %d enters: %s", placed, at.Sent, at.codesString())))
		}
	}
	return cs
}

// latencyFloor is the slack below which a p95 is not judged by the ratio:
// a protected request answered in 1 ms alone and 4 ms beside the attacks
// on a shared 2-core machine harms nobody.
const latencyFloor = 10 * time.Millisecond

// within2 says whether a's p95 is within twice b's, or within latencyFloor
// of it (both measured).
func within2(a, b measure.Summary) bool {
	return a.Count > 0 && b.Count > 0 && (a.P95 <= 2*b.P95 || a.P95 <= b.P95+latencyFloor)
}

// bySender lists a count by sender, e.g. "smuggle 3, variants 1" ("-" when none).
func bySender(m map[string]int) string {
	var parts []string
	for _, n := range append(append([]string{"legit"}, gwAttackNames...), noForwarded, "other") {
		if m[n] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", n, m[n]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func (r *gwReport) Print(w io.Writer) {
	fmt.Fprintf(w, "\ngateway-attack scenario: %s anonymous visitors over %.0f s to %s room %s, twice: alone, then beside the gateway attacks (%s)\n",
		report.Commas(r.Visitors), r.OverSecs, r.Base, r.Room, r.AttacksOn)
	fmt.Fprintf(w, "NOTE: the visitors, the attackers and the origin share this machine's %d CPUs with the server; compare the two runs, not absolute figures\n", r.CPUs)
	if r.Interrupted {
		fmt.Fprintln(w, "INTERRUPTED: the figures cover the runs up to Ctrl-C")
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	b, a := r.Baseline, r.Attack
	if b == nil {
		return
	}
	if a == nil {
		a = &gwRun{Legit: &gwLegit{}}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nlegitimate visitors\t without attack\t with attacks")
	row := func(label string, f func(*gwRun) string) { fmt.Fprintf(tw, "%s\t %s\t %s\n", label, f(b), f(a)) }
	row("completed / visitors", func(g *gwRun) string { return fmt.Sprintf("%d / %d", g.Legit.Completed, g.Legit.Visitors) })
	row("errors / lost", func(g *gwRun) string { return fmt.Sprintf("%d / %d", g.Legit.Errors, g.Legit.Lost) })
	row("enter→READY p50 / p95", func(g *gwRun) string {
		return fmt.Sprintf("%s / %s", report.Ms(g.Legit.EnterReady.P50), report.Ms(g.Legit.EnterReady.P95))
	})
	row("protected request p50 / p95", func(g *gwRun) string {
		return fmt.Sprintf("%s / %s", report.Ms(g.Legit.Protected.P50), report.Ms(g.Legit.Protected.P95))
	})
	row("protected answers", func(g *gwRun) string { return g.Legit.Protected.CodesString() })
	row("origin: requests / unpassed protected", func(g *gwRun) string {
		return fmt.Sprintf("%s / %d", report.Commas(g.Origin.Requests), g.Origin.UnpassedTotal)
	})
	row("server RSS before / peak / after", func(g *gwRun) string {
		if r.ServerPID == 0 {
			return "- (no --server-pid)"
		}
		return fmt.Sprintf("%.1f / %.1f / %.1f MiB", g.RSS.Before, g.RSS.Peak, g.RSS.After)
	})
	tw.Flush()
	for _, f := range a.Legit.Failures {
		fmt.Fprintln(w, "  a visitor under attack:", f)
	}
	if len(r.Attacks) > 0 {
		fmt.Fprintln(w, "\ngateway attacks")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "attack\t sent\t the gateway answered\t unpassed at origin\t detail")
		for _, at := range r.Attacks {
			fmt.Fprintf(tw, "%s\t %s\t %s\t %d\t %s\n", at.Name, report.Commas(at.Sent), at.codesString(), at.Unpassed, at.Detail)
		}
		tw.Flush()
	}
	fmt.Fprintln(w, "\nbar (issue 27: with every gateway attack on, no protected request reaches the origin without a pass; the visitors see 0 errors, 0 lost, p95 within 2× (or 10 ms) of the run without attack; server RSS bounded):")
	for _, c := range r.checks() {
		fmt.Fprintf(w, "  %-40s %-5s %s\n", c.Name, report.PassFail(c.OK), c.Got)
	}
}
