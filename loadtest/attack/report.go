package attack

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"

	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/report"
	"waitingroom/loadtest/internal/scenario"
	"waitingroom/loadtest/surge"
)

// attackReport is what the attack scenario measured: the surge without and
// with the attacks, and what each attack achieved.
type attackReport struct {
	Scenario    string   `json:"scenario"`
	Base        string   `json:"base"`
	Room        string   `json:"room"`
	CPUs        int      `json:"cpus"`
	Users       int      `json:"users"`
	Transport   string   `json:"transport"`
	AttacksOn   string   `json:"attacks"`
	WindowSecs  float64  `json:"attackWindowSeconds"`
	RSSSlackMiB float64  `json:"rssSlackMiB"`
	MaxStreams  int      `json:"maxStreamsPerUser"`
	Interrupted bool     `json:"interrupted"`
	Notes       []string `json:"notes,omitempty"`

	Baseline       *surge.Report `json:"baseline"`
	Attack         *surge.Report `json:"underAttack"`
	BcryptBaseline float64       `json:"bcryptVerificationsBaseline"` // Δ waitingroom_bcrypt_seconds_count
	BcryptAttack   float64       `json:"bcryptVerificationsUnderAttack"`

	Stuffing    *stuffingResult    `json:"credentialStuffing,omitempty"`
	Storm       *stormResult       `json:"refreshStorm,omitempty"`
	IdleFlood   *idleFloodResult   `json:"idleSocketFlood,omitempty"`
	StreamFlood *streamFloodResult `json:"streamFlood,omitempty"`
	Bombs       *bombResult        `json:"decompressionBombs,omitempty"`
	CrossSite   *crossSiteResult   `json:"crossSite,omitempty"`

	Checks []report.Check `json:"checks"`
}

func newAttackReport(o *scenario.Options, cfg surge.Config, ac attackConfig) *attackReport {
	var on []string
	for _, n := range attackNames {
		if ac.on[n] {
			on = append(on, n)
		}
	}
	s := strings.Join(on, ", ")
	if s == "" {
		s = "none"
	}
	return &attackReport{Scenario: "attack", Base: o.Base, Room: o.Room, CPUs: runtime.NumCPU(), Users: cfg.N, Transport: cfg.Transport,
		AttacksOn: s, WindowSecs: ac.for_.Seconds(), RSSSlackMiB: ac.rssSlackMiB, MaxStreams: ac.maxStreams}
}

// finish computes the checks.
func (r *attackReport) finish() { r.Checks = r.checks() }

// refusedBy says whether every answer of s was one of codes (and there
// was at least one).
func refusedBy(s measure.Summary, codes ...int) bool {
	if s.Count == 0 {
		return false
	}
	for c := range s.Codes {
		if !slices.Contains(codes, c) {
			return false
		}
	}
	return true
}

// serverErrors counts answers 5xx or none in s.
func serverErrors(s measure.Summary) int {
	n := 0
	for c, k := range s.Codes {
		if c == measure.NoResponse || c >= 500 {
			n += k
		}
	}
	return n
}

// checks are the bar: the legitimate users under attack, then what each
// attack should have met (the server's defences of issue 12).
func (r *attackReport) checks() []report.Check {
	var cs []report.Check
	b, a := r.Baseline, r.Attack
	if a != nil && b != nil {
		cs = append(cs,
			report.NewCheck("legit: errors", a.ErrorCount == 0 && a.AttemptErrors == 0,
				fmt.Sprintf("%d users failed, %s requests answered 429/5xx or not at all (baseline %d, %s)", a.ErrorCount, report.Commas(a.AttemptErrors), b.ErrorCount, report.Commas(b.AttemptErrors))),
			report.NewCheck("legit: users lost", a.Lost == 0 && a.Entered > 0, fmt.Sprintf("%d of %s entered (baseline %d)", a.Lost, report.Commas(a.Entered), b.Lost)),
			report.NewCheck("legit: FIFO inversions", a.Inversions == 0 && a.Admissions > 0, fmt.Sprintf("%d among %s admissions (baseline %d)", a.Inversions, report.Commas(a.Admissions), b.Inversions)),
			report.NewCheck("legit: enter p99 ≤ 2× baseline", b.EnterLatency.Count > 0 && a.EnterLatency.Count > 0 && a.EnterLatency.P99 <= 2*b.EnterLatency.P99,
				fmt.Sprintf("%s vs %s (%.2f×)", report.Ms(a.EnterLatency.P99), report.Ms(b.EnterLatency.P99), report.Ratio(a.EnterLatency.P99, b.EnterLatency.P99))),
			report.NewCheck("server RSS bounded", a.ServerRSSMax > 0 && a.ServerRSSMax <= b.ServerRSSMax+r.RSSSlackMiB,
				fmt.Sprintf("max %.1f MiB vs %.1f MiB without attack (bar: + %.0f MiB)", a.ServerRSSMax, b.ServerRSSMax, r.RSSSlackMiB)),
		)
	}
	if s := r.Stuffing; s != nil {
		cs = append(cs,
			report.NewCheck("stuffing: limited before BCrypt", s.Codes.Codes[http.StatusTooManyRequests] > 0 && serverErrors(s.Codes) == 0,
				fmt.Sprintf("%s of %s attempts refused with 429; %.0f BCrypt verifications in the run; answers %s", report.Commas(s.Codes.Codes[http.StatusTooManyRequests]), report.Commas(s.Attempts), r.BcryptAttack, s.Codes.CodesString())),
			report.NewCheck("stuffing: owner's correct login", s.OwnerCode == http.StatusOK,
				fmt.Sprintf("%s from a fresh address after %d wrong passwords for the account: %s", s.Owner, s.OwnerHits, codeName(s.OwnerCode))))
	}
	if s := r.Storm; s != nil {
		// While a token waits, its polls past the band's pace get 429;
		// once READY they are not paced (pollAfterMs 0). Either way the
		// server answers.
		waiting := s.Codes.Count - s.Ready
		cs = append(cs, report.NewCheck("storm: paced while waiting, no 5xx", serverErrors(s.Codes) == 0 && s.Codes.Count > 0 && (waiting <= 5*s.Tokens || s.Codes.Codes[http.StatusTooManyRequests] > 0),
			fmt.Sprintf("%s polls from %d tokens (%.0f/s): %s; READY %s", report.Commas(s.Codes.Count), s.Tokens, s.PerSecond, s.Codes.CodesString(), report.Commas(s.Ready))))
	}
	if f := r.IdleFlood; f != nil {
		got := fmt.Sprintf("%d of %d still open %.1f s after the last was opened (deadline %.0f s); refused 503 at accept %d; max open %d",
			f.HeldPastDeadline, f.Connected, f.CheckedAtSeconds, f.DeadlineSeconds, f.Refused503, f.MaxOpen)
		if f.HeldPastDeadline < 0 {
			got = "the run ended before the check"
		}
		cs = append(cs, report.NewCheck("idle sockets: closed by the deadline", f.HeldPastDeadline == 0 && f.Connected > 0, got))
	}
	if f := r.StreamFlood; f != nil {
		got := fmt.Sprintf("%d open 2 s after the last of %d attempts (max %d at once; %d told reconnect); answers %s",
			f.OpenAfterSettle, f.Attempts, f.MaxOpen, f.Replaced, f.Codes.CodesString())
		if f.OpenAfterSettle < 0 {
			got = "the run ended before the check"
		}
		cs = append(cs, report.NewCheck(fmt.Sprintf("stream flood: ≤ %d streams held", r.MaxStreams), f.OpenAfterSettle >= 0 && f.OpenAfterSettle <= r.MaxStreams && f.Codes.Codes[http.StatusOK] > 0, got))
	}
	if bo := r.Bombs; bo != nil {
		var parts []string
		ok := true
		for _, t := range bombTargets {
			s := bo.Codes[t]
			if s.Count == 0 {
				continue
			}
			parts = append(parts, t+" "+s.CodesString())
			ok = ok && refusedBy(s, http.StatusUnsupportedMediaType, http.StatusRequestEntityTooLarge)
		}
		cs = append(cs, report.NewCheck("bombs: refused unread (415/413)", ok && len(parts) > 0,
			fmt.Sprintf("%s; RSS %.1f → %.1f MiB", strings.Join(parts, ", "), bo.RSSBefore, bo.RSSAfter)))
	}
	if x := r.CrossSite; x != nil {
		cs = append(cs,
			report.NewCheck("cross-site: form POST leave → 403", refusedBy(x.Leave, http.StatusForbidden), x.Leave.CodesString()),
			report.NewCheck("cross-site: WebSocket → 403", refusedBy(x.WS, http.StatusForbidden),
				fmt.Sprintf("%s; first frames read %d, with an entryToken %d", x.WS.CodesString(), x.WSFirstFrame, x.WSLeaked)),
			report.NewCheck("cross-site: victim keeps the place", x.PlaceCode == http.StatusOK, "position afterwards: "+codeName(x.PlaceCode)))
		if x.EnterFailure != "" {
			cs[len(cs)-1].Got += " (the victim could not enter: " + x.EnterFailure + ")"
		}
	}
	return cs
}

func codeName(c int) string {
	if c == measure.NoResponse {
		return "no answer"
	}
	return fmt.Sprintf("%d", c)
}

func (r *attackReport) Print(w io.Writer) {
	fmt.Fprintf(w, "\nattack scenario: %s users by %s to %s room %s, twice: alone, then beside the attacks (%s) in a %.0f s window\n",
		report.Commas(r.Users), r.Transport, r.Base, r.Room, r.AttacksOn, r.WindowSecs)
	fmt.Fprintf(w, "NOTE: the load generator and the attackers share this machine's %d CPUs with the server; compare the two runs, not absolute figures\n", r.CPUs)
	if r.Interrupted {
		fmt.Fprintln(w, "INTERRUPTED: the figures cover the runs up to Ctrl-C")
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	if r.Baseline != nil {
		for _, e := range r.Baseline.Errors {
			fmt.Fprintln(w, "setup:", e)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nlegitimate users\t without attack\t with attacks")
	for _, row := range r.sideBySide() {
		fmt.Fprintf(tw, "%s\t %s\t %s\n", row[0], row[1], row[2])
	}
	tw.Flush()
	if rows := r.attackRows(); len(rows) > 0 {
		fmt.Fprintln(w, "\nattacks")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "attack\t from\t sent\t answers\t achieved")
		for _, row := range rows {
			fmt.Fprintln(tw, strings.Join(row, "\t "))
		}
		tw.Flush()
	}
	fmt.Fprintln(w, "\nbar (issue 12: with every attack on, the legitimate users see 0 errors, 0 lost, 0 inversions, enter p99 within 2× of the run without attack, server RSS bounded; each attack refused as built):")
	for _, c := range r.checks() {
		fmt.Fprintf(w, "  %-38s %-5s %s\n", c.Name, report.PassFail(c.OK), c.Got)
	}
}

// sideBySide are the legitimate users' figures of both runs: label,
// without, with.
func (r *attackReport) sideBySide() [][3]string {
	b, a := r.Baseline, r.Attack
	if b == nil {
		return nil
	}
	if a == nil {
		a = &surge.Report{}
	}
	f := func(label string, g func(*surge.Report) string) [3]string { return [3]string{label, g(b), g(a)} }
	rows := [][3]string{
		f("entered / arrived", func(s *surge.Report) string {
			return fmt.Sprintf("%s / %s", report.Commas(s.Entered), report.Commas(s.Arrived))
		}),
		f("enter p50 / p99", func(s *surge.Report) string {
			return fmt.Sprintf("%s / %s", report.Ms(s.EnterLatency.P50), report.Ms(s.EnterLatency.P99))
		}),
		f("errors (users; 429/5xx/no answer)", func(s *surge.Report) string {
			return fmt.Sprintf("%d; %s", s.ErrorCount, report.Commas(s.AttemptErrors))
		}),
		f("enter requests", func(s *surge.Report) string { return s.Enter.CodesString() }),
		f("lost users", func(s *surge.Report) string { return report.Commas(s.Lost) }),
		f("READY / ordered", func(s *surge.Report) string {
			return fmt.Sprintf("%s / %s", report.Commas(s.Ready), report.Commas(s.Ordered))
		}),
		f("FIFO inversions", func(s *surge.Report) string {
			return fmt.Sprintf("%d (%s compared)", s.Inversions, report.Commas(s.Admissions))
		}),
		f("fan-out lag p99", func(s *surge.Report) string {
			return fmt.Sprintf("%s (%s events)", report.Ms(s.Lag.P99), report.Commas(s.Lag.Count))
		}),
		f("drained (last READY)", func(s *surge.Report) string { return fmt.Sprintf("%.1f s", s.DrainSeconds) }),
		f("stream drops", func(s *surge.Report) string { return report.Commas(s.Drops) }),
		f("server RSS start / max", func(s *surge.Report) string { return fmt.Sprintf("%.1f / %.1f MiB", s.ServerRSS0MiB, s.ServerRSSMax) }),
		f("server CPU mean / peak", func(s *surge.Report) string {
			return fmt.Sprintf("%.0f %% / %.0f %% of a core (%.1f s)", s.ServerCPUMean, s.ServerCPUPeak, s.ServerCPUSecs)
		}),
		f("load generator CPU", func(s *surge.Report) string { return fmt.Sprintf("%.1f s", s.ToolCPUSeconds) }),
		f("machine load average", func(s *surge.Report) string { return s.LoadAvgStart + " → " + s.LoadAvgEnd }),
		f("source addresses", func(s *surge.Report) string {
			return fmt.Sprintf("%s (%d users each)", report.Commas(s.SourceAddrs), s.UsersPerAddr)
		}),
	}
	rows = append(rows, [3]string{"BCrypt verifications", fmt.Sprintf("%.0f", r.BcryptBaseline), fmt.Sprintf("%.0f", r.BcryptAttack)})
	return rows
}

// attackRows are the attacks' table: attack, from, sent, answers, achieved.
func (r *attackReport) attackRows() [][]string {
	var rows [][]string
	if s := r.Stuffing; s != nil {
		rows = append(rows, []string{"credential stuffing", fmt.Sprintf("127.2.0.1-%d", s.Addrs), report.Commas(s.Attempts), s.Codes.CodesString(),
			fmt.Sprintf("%.0f BCrypt verifications in the run (the owner's login included); %d loginIds, %d attempts on %s; the owner's own login from 127.3.0.1: %s",
				r.BcryptAttack, s.LoginIDs, s.OwnerHits, s.Owner, codeName(s.OwnerCode))})
	}
	if s := r.Storm; s != nil {
		row := []string{"refresh storm", "127.2.1.1", report.Commas(s.Codes.Count), s.Codes.CodesString(),
			fmt.Sprintf("%d tokens from the back of the queue, %.0f polls/s over %.1f s; %s of the 200s READY (not paced)", s.Tokens, s.PerSecond, s.Seconds, report.Commas(s.Ready))}
		if s.EnterFailure != "" {
			row[4] += "; enter failed: " + s.EnterFailure
		}
		rows = append(rows, row)
	}
	if f := r.IdleFlood; f != nil {
		ans := fmt.Sprintf("503×%d closed×%d%s", f.Refused503, f.Closed, report.Counts(f.Answered))
		life := "none closed by the server"
		if f.MaxLifeSeconds > 0 {
			life = fmt.Sprintf("closed by the server after median %.1f s, max %.1f s", f.MedianLifeSeconds, f.MaxLifeSeconds)
		}
		rows = append(rows, []string{"idle-socket flood", "127.2.2.1", report.Commas(f.Connected), ans,
			fmt.Sprintf("max %d open at once; %d held past the deadline; %s; %d dials failed", f.MaxOpen, f.HeldPastDeadline, life, f.DialFails)})
	}
	if f := r.StreamFlood; f != nil {
		row := []string{"stream flood (one user)", "127.2.3.1", report.Commas(f.Codes.Count), f.Codes.CodesString(),
			fmt.Sprintf("max %d open at once, %d after settling; told reconnect %d", f.MaxOpen, f.OpenAfterSettle, f.Replaced)}
		if len(f.Ended) > 0 {
			row[4] += "; ended by the server:" + report.Counts(f.Ended)
		}
		rows = append(rows, row)
	}
	if b := r.Bombs; b != nil {
		var parts []string
		n := 0
		for _, t := range bombTargets {
			if s := b.Codes[t]; s.Count > 0 {
				parts = append(parts, t+": "+s.CodesString())
				n += s.Count
			}
		}
		rows = append(rows, []string{"decompression bombs", "127.2.4.1", report.Commas(n), strings.Join(parts, ", "),
			fmt.Sprintf("%d-byte bodies inflating to %d MiB; server RSS %.1f MiB before, %.1f MiB after", b.BodyBytes, b.InflateMiB, b.RSSBefore, b.RSSAfter)})
	}
	if x := r.CrossSite; x != nil {
		rows = append(rows,
			[]string{"cross-site WebSocket", "127.2.5.1", report.Commas(x.WS.Count), x.WS.CodesString(),
				fmt.Sprintf("cookie %s + Origin %s; frames read %d, with an entryToken %d", x.Cookie, evilOrigin, x.WSFirstFrame, x.WSLeaked)},
			[]string{"cross-site form POST leave", "127.2.5.1", report.Commas(x.Leave.Count), x.Leave.CodesString(),
				fmt.Sprintf("the victim's position afterwards: %s", codeName(x.PlaceCode))})
	}
	return rows
}

// HTML is the attack scenario's page: the bar, both runs' charts overlaid,
// the side-by-side table and the attacks.
func (r *attackReport) HTML() (report.Page, error) {
	p := report.Page{
		Title:    fmt.Sprintf("Attack beside a surge: %s users by %s", report.Commas(r.Users), r.Transport),
		Subtitle: fmt.Sprintf("%s, room %s; attacks: %s in a %.0f s window; load generator, attackers and server share %d CPUs", r.Base, r.Room, r.AttacksOn, r.WindowSecs, r.CPUs),
		Checks:   r.checks(),
		Notes:    slices.Clone(r.Notes),
	}
	if r.Interrupted {
		p.Notes = append(p.Notes, "Interrupted: the figures cover the runs up to Ctrl-C.")
	}
	p.Notes = append(p.Notes, "Compare the two runs; absolute figures vary on a shared machine.")
	side := report.Table{Title: "Legitimate users: without and with the attacks", Head: []string{"", "without attack", "with attacks"}}
	for _, row := range r.sideBySide() {
		side.Body = append(side.Body, row[:])
	}
	att := report.Table{Title: "Attacks", Head: []string{"attack", "from", "sent", "answers", "achieved"}, Footer: "Answers by status; err = no answer."}
	att.Body = r.attackRows()
	p.Tables = []report.Table{side, att}
	if r.Baseline == nil || r.Attack == nil {
		return p, nil
	}
	b, a := r.Baseline, r.Attack
	xmax := math.Max(math.Max(b.Seconds, a.Seconds), 1)
	series := func(s *surge.Report, f func(surge.TimelinePoint) (float64, bool)) ([]float64, []float64) {
		xs, ys := make([]float64, len(s.Timeline)), make([]float64, len(s.Timeline))
		for i, t := range s.Timeline {
			v, ok := f(t)
			if !ok {
				v = math.NaN()
			}
			xs[i], ys[i] = float64(i)+0.5, v
		}
		return xs, ys
	}
	c := report.Palette
	both := func(title, unit string, f func(surge.TimelinePoint) (float64, bool)) template.HTML {
		bx, by := series(b, f)
		ax, ay := series(a, f)
		return report.LineChart(title, unit, xmax, report.Line{Name: "without attack", Color: c[0], Dashed: true, X: bx, Y: by}, report.Line{Name: "with attacks", Color: c[1], X: ax, Y: ay})
	}
	p.Charts = []template.HTML{
		both("Enter latency p99 by second", "ms", func(t surge.TimelinePoint) (float64, bool) { return t.EnterP99, t.HasEnter }),
		both("Admitted (READY) per second", "users / s", func(t surge.TimelinePoint) (float64, bool) { return float64(t.Admitted), true }),
		both("Fan-out lag p99 by second", "ms", func(t surge.TimelinePoint) (float64, bool) { return t.LagP99, t.HasLag }),
		both("Server RSS", "MiB", func(t surge.TimelinePoint) (float64, bool) { return t.RSSMiB, t.HasProc }),
		both("Server CPU (% of one core)", "%", func(t surge.TimelinePoint) (float64, bool) { return t.CPUPct, t.HasCPUPct }),
		both("Waiting users (sampled, last of each second)", "users", func(t surge.TimelinePoint) (float64, bool) { return float64(t.Waiting), t.HasRoom }),
	}
	return p, nil
}
