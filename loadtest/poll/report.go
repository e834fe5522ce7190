package poll

import (
	"fmt"
	"io"
	"text/tabwriter"

	"waitingroom/loadtest/internal/report"
)

func (r *pollReport) Print(w io.Writer) {
	if r.Limit != nil {
		r.printLimit(w)
		return
	}
	fmt.Fprintf(w, "\npoll scenario (%s loop): GET %s/api/v1/rooms/%s/position (queue JWT; status from memory — at the front after one shared read of the room's event number — else one Redis script)\n", r.Mode, r.Base, r.Room)
	fmt.Fprintf(w, "the pollers wait behind %d users (positions %d–%d)\n", r.Ahead, r.Ahead+1, r.Ahead+r.Users)
	fmt.Fprintf(w, "admission frozen during the run (targetActive %d → 0 → %d): every poll answers WAITING for one of %d users\n",
		r.TargetActive, r.TargetActive, r.Users)
	if r.Mode == "open" {
		fmt.Fprintln(w, "open loop: each user polls pollAfterMs after its answer (Retry-After after a 429): the offered rate is the crowd's, not the server's ceiling")
	} else {
		fmt.Fprintf(w, "response body: server %d B, baseline %d B (c.JSON of the same document, %s on 127.0.0.1:0)\n", r.BodyBytes, r.BaselineBytes, r.BaselineWhere)
	}
	fmt.Fprintf(w, "NOTE: the load generator (and the baseline) share this machine's %d CPUs with the server;\n", r.CPUs)
	fmt.Fprintln(w, "      compare the ratios, not the absolute rates")
	if r.RedisShared {
		fmt.Fprintln(w, "Redis figures are Redis's own counters (INFO) over each phase: they include anything else that Redis served meanwhile")
	}
	if r.Interrupted {
		fmt.Fprintln(w, "INTERRUPTED: phases not reached are missing")
	}
	fmt.Fprintln(w)
	phases := []*phase{r.Server, r.Baseline}
	if e := r.Enter; e != nil {
		phases = append(phases, e.Waiting, e.Fresh, e.Baseline)
	}
	printPhases(w, append(phases, r.Login))
	fmt.Fprintln(w)
	r.printRatios(w)
}

// printPhases prints one row per phase, then each phase's costs.
func printPhases(w io.Writer, phases []*phase) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\tconns\tseconds\trequests\tstatus codes\treq/s (2xx)\tanswered/s\tp50 ms\tp99 ms\tmax ms\t")
	for _, p := range phases {
		if p == nil {
			continue
		}
		l := p.Latency
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%s\t%s\t%s\t%s\t%.2f\t%.2f\t%.1f\t\n", p.Target, p.Conns, p.Seconds, report.Commas(l.Count),
			l.CodesString(), report.Commas(int(p.RPS+0.5)), report.Commas(int(p.AnsweredRPS+0.5)), report.Msf(l.P50), report.Msf(l.P99), report.Msf(l.Max))
	}
	tw.Flush()
	for _, p := range phases {
		if p == nil {
			continue
		}
		if p.OfferedRPS > 0 {
			fmt.Fprintf(w, "%s: offered %.0f polls/s (Σ 1/pollAfter over the users' last answers)\n", p.Target, p.OfferedRPS)
		}
		if p.ServerCPUPerReqMicros > 0 {
			fmt.Fprintf(w, "%s: server CPU %.1f µs per answer (process_cpu_seconds_total)\n", p.Target, p.ServerCPUPerReqMicros)
		}
		if p.Redis != nil {
			fmt.Fprintf(w, "%s: Redis %s\n", p.Target, p.Redis)
		}
	}
}

// printRatios prints the ratios against the yardstick and login.
func (r *pollReport) printRatios(w io.Writer) {
	verdict := func(ratio, bar float64) string {
		if ratio >= bar {
			return "met"
		}
		return "NOT met"
	}
	switch {
	case r.AnsweredRatio > 0:
		fmt.Fprintf(w, "poll throughput ratio server ÷ baseline, answers (200 and 429): %.2f (contract bar ≥ 0.5: %s)\n", r.AnsweredRatio, verdict(r.AnsweredRatio, 0.5))
		fmt.Fprintf(w, "  some polls were refused (429): a closed loop is a refresh storm, which the limits refuse; a refused poll runs the whole path,\n")
		fmt.Fprintf(w, "  then is refused by the pace. 200s alone: %.2f. For the limits' cost as it would occur, use --mode open\n", r.Ratio)
	case r.Ratio > 0:
		fmt.Fprintf(w, "poll throughput ratio server ÷ baseline: %.2f (contract bar ≥ 0.5: %s)\n", r.Ratio, verdict(r.Ratio, 0.5))
	}
	if e := r.Enter; e != nil {
		if e.Error != "" {
			fmt.Fprintf(w, "enter: %s\n", e.Error)
		}
		if e.WaitingRatio > 0 {
			fmt.Fprintf(w, "enter throughput ratio ÷ baseline (%d B body; baseline before %s, after %s req/s): users already waiting %.2f, fresh users %.2f (contract bar ≥ 0.4: %s, %s); %s fresh users entered and left\n",
				e.BodyBytes, report.Commas(int(e.BaselineBefore.RPS+0.5)), report.Commas(int(e.Baseline.RPS+0.5)),
				e.WaitingRatio, e.FreshRatio, verdict(e.WaitingRatio, 0.4), verdict(e.FreshRatio, 0.4), report.Commas(e.FreshEntered))
		}
	}
	if r.CostRatio > 0 {
		fmt.Fprintf(w, "per-request cost: the seed's poll ran BCrypt, ≈ one login = 1/%.1f req/s = %.2f ms; ours = 1/%s answers/s = %.3f ms\n",
			r.Login.RPS, 1000/r.Login.RPS, report.Commas(int(r.Server.AnsweredRPS+0.5)), 1000/r.Server.AnsweredRPS)
		fmt.Fprintf(w, "per-request cost ratio (1/login rps) ÷ (1/poll rps): %s× (seed: 1×; contract: per-poll CPU ≥ 1000× below one BCrypt cost-10 verify)\n",
			report.Commas(int(r.CostRatio+0.5)))
		fmt.Fprintln(w, "  both are wall-clock costs at saturation of the shared CPUs; the load generator's share weighs far more on a poll than on a login")
	}
}

// printLimit prints --limit's report: each phase with its costs, then one
// table of the paths against both yardsticks.
func (r *pollReport) printLimit(w io.Writer) {
	l := r.Limit
	fmt.Fprintf(w, "\npoll scenario, --limit: %s, room %s; every phase at the same connections, one after another on this machine's %d CPUs\n", r.Base, r.Room, r.CPUs)
	fmt.Fprintf(w, "(a) a plain Fiber handler answering enter's body (%d B) with c.JSON; (b) the same handler making one EVALSHA first (ZADD NX + ZRANK, a new member per request, on key %s of the server's Redis); both in processes of their own\n", l.BodyBytes, l.FloorKey)
	fmt.Fprintf(w, "(c) POST enter: users already waiting enter again; fresh users take a ticket (last: they leave afterwards); (d) GET position for %d users at positions 1–%d (body %d B); admission frozen\n", r.Users, r.Users, l.PollBodyBytes)
	fmt.Fprintln(w, "order: (a), (b), (c) users waiting, (d), (b), (a), (c) fresh users; the ratios are to the mean of each yardstick's two runs")
	fmt.Fprintf(w, "load average (1, 5, 15 min): %s before, %s after\n", l.LoadBefore, l.LoadAfter)
	fmt.Fprintln(w, "NOTE: the load generator shares the machine with the server, the yardsticks and Redis: compare the ratios, not the absolute rates")
	if r.Interrupted {
		fmt.Fprintln(w, "INTERRUPTED: phases not reached are missing")
	}
	if l.Error != "" {
		fmt.Fprintf(w, "error: %s\n", l.Error)
	}
	fmt.Fprintln(w)
	printPhases(w, []*phase{l.PlainBefore, l.FloorBefore, l.Waiting, l.Poll, l.FloorAfter, l.PlainAfter, l.Fresh})
	fmt.Fprintf(w, "floor key: %s members after the floor's phases (one per request that made its Redis call, warm-ups included); %s fresh users entered and left\n",
		report.Commas(int(l.FloorMembers)), report.Commas(l.FreshEntered))
	if l.CPUProfile != "" {
		fmt.Fprintf(w, "server CPU profile over the fresh-enter phase: %s (go tool pprof -top -cum %s)\n", l.CPUProfile, l.CPUProfile)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "path\treq/s\tp50 ms\tp99 ms\t÷ (a)\t÷ (b)\t")
	for _, row := range l.Rows {
		vsFloor := "—"
		if row.VsFloor > 0 {
			vsFloor = fmt.Sprintf("%.2f", row.VsFloor)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%.2f\t%s\t\n", row.Name, report.Commas(int(row.RPS+0.5)), row.P50Ms, row.P99Ms, row.VsPlain, vsFloor)
	}
	tw.Flush()
	fmt.Fprintln(w, "(a) and (b): the mean rate of their two runs, the p50/p99 of the first")
	if c, d := l.row(limitFresh), l.row(limitPoll); c != nil || d != nil {
		fmt.Fprint(w, "the bars for later work: enter ÷ (b) ≥ 0.8")
		if c != nil {
			fmt.Fprintf(w, " (fresh users now %.2f", c.VsFloor)
			if cw := l.row(limitWaiting); cw != nil {
				fmt.Fprintf(w, ", users waiting %.2f", cw.VsFloor)
			}
			fmt.Fprint(w, ")")
		}
		fmt.Fprint(w, ", poll ÷ (a) ≥ 0.6")
		if d != nil {
			fmt.Fprintf(w, " (now %.2f)", d.VsPlain)
		}
		fmt.Fprintln(w)
	}
}
