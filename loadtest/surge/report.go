package surge

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/report"
)

// maxTimeline caps the per-second timeline (one hour).
const maxTimeline = 3600

// Report is what the surge scenario measured.
type Report struct {
	Scenario           string   `json:"scenario"`
	Transport          string   `json:"transport"`
	Base               string   `json:"base"`
	Room               string   `json:"room"`
	CPUs               int      `json:"cpus"`
	Users              int      `json:"users"`
	OverSeconds        float64  `json:"arrivalSeconds"`
	MaxDurationSeconds float64  `json:"maxDurationSeconds"`
	Tokens             string   `json:"tokens"`
	UsersPerAddr       int      `json:"usersPerSourceAddress,omitempty"` // --users-per-addr
	SourceAddrs        int      `json:"sourceAddresses,omitempty"`       // the crowd's addresses; 0: the shared pool
	OriginalTarget     int64    `json:"originalTargetActive"`
	Target             int64    `json:"targetActive"`
	EntryTTLSeconds    float64  `json:"entryTtlSeconds"`
	Seconds            float64  `json:"seconds"`
	Interrupted        bool     `json:"interrupted"`
	HitMaxDuration     bool     `json:"hitMaxDuration"`
	Errors             []string `json:"setupErrors,omitempty"`
	Shoppers           string   `json:"shoppers"`                 // the shopper model's flags
	TrickleSeconds     float64  `json:"trickleSeconds,omitempty"` // --trickle-over

	Arrived       int             `json:"arrived"`
	Entered       int             `json:"entered"`
	EnterFailed   int             `json:"enterFailed"`
	EnterFailures map[string]int  `json:"enterFailures,omitempty"`
	EnterLatency  measure.Latency `json:"enterLatency"` // successful enters, the last attempt
	Enter         measure.Summary `json:"enterRequests"`
	Immediate     int             `json:"readyAtEnter"`
	Ready         int             `json:"ready"`
	Ordered       int             `json:"ordered"`
	OrderFailed   int             `json:"orderFailed"`
	OrderFailures map[string]int  `json:"orderFailures,omitempty"`
	Orders        measure.Summary `json:"orderRequests"`
	// With --slowdown: the injected order delay and when it started; the
	// pool's acquires during the run and their mean wait (server-side).
	SlowdownMs        float64 `json:"slowdownMs,omitempty"`
	SlowdownAtSeconds float64 `json:"slowdownAtSeconds,omitempty"`
	// --slowdown-until: when the delay was removed (0: at the end).
	SlowdownUntilSeconds float64 `json:"slowdownUntilSeconds,omitempty"`
	// --row-delay: slept inside each order's row lock over the run.
	RowDelayMs float64 `json:"rowDelayMs,omitempty"`
	// --limit-change: targetActive LimitChangeTo from LimitChangeAtSeconds.
	LimitChangeTo        int64           `json:"limitChangeTo,omitempty"`
	LimitChangeAtSeconds float64         `json:"limitChangeAtSeconds,omitempty"`
	PoolAcquires         int64           `json:"poolAcquires"`
	PoolWaitMeanMs       float64         `json:"poolWaitMeanMs"`
	PoolWaitP99Ms        float64         `json:"poolWaitP99Ms"` // from the acquire-wait histogram's buckets
	Gone                 int             `json:"toldWhy"`
	GoneWhy              map[string]int  `json:"toldWhyCounts,omitempty"`
	NoShows              int             `json:"noShows"`   // READY, never ordered (the model's no-shows)
	Abandoned            int             `json:"abandoned"` // stopped waiting (the model's abandons)
	Reloads              int             `json:"reloads"`   // users who reloaded mid-wait
	Absent               absentFigures   `json:"absent"`    // what the abandoners cost the room
	Lost                 int             `json:"lost"`
	LostAtEnd            int             `json:"lostStillWaitingAtEnd"`
	LostWhy              map[string]int  `json:"lostWhy,omitempty"`
	ErrorCount           int             `json:"errors"`        // enter and order failures, failed polls
	AttemptErrors        int             `json:"attemptErrors"` // requests answered 429 / 5xx or not at all, retried ones included
	Drops                int             `json:"streamDrops"`
	Polls                int             `json:"polls"`
	PollErrors           int             `json:"pollErrors"`
	Position             measure.Summary `json:"positionRequests"`
	ByTransport          map[string]int  `json:"usersByTransport"`

	DrainSeconds     float64 `json:"drainSeconds"`      // first arrival → last READY received
	AdmitPerSecond   float64 `json:"admittedPerSecond"` // READY ÷ (last READY − first enter)
	OrdersPerSecond  float64 `json:"ordersPerSecond"`   // ordered ÷ drain time: the throughput a limit gave
	MaxActive        int64   `json:"maxActive"`
	MaxActiveTarget  int64   `json:"maxActiveTargetActive"` // targetActive at that sample
	RoomSamples      int     `json:"roomSamples"`
	RoomSampleErrs   int     `json:"roomSampleErrors"`
	SamplesOverLimit int     `json:"samplesActiveOverTarget"`

	Admissions     int             `json:"admissionsCompared"`
	NoAdmitTime    int             `json:"readyWithoutAdmissionTime"`
	Inversions     int64           `json:"fifoInversions"`
	ETA            etaAccuracy     `json:"eta"`                  // the first estimate shown
	ETAFirst       []FirstShown    `json:"firstEstimates"`       // each user's
	ETAWait        waitAccuracy    `json:"etaOverWait"`          // every estimate shown
	ETASeries      []etaPoint      `json:"etaSeries"`            // per second shown
	ETAChanges     []etaChange     `json:"etaChanges,omitempty"` // after --slowdown, --limit-change
	Lag            measure.Latency `json:"fanOutLag"`
	LagSSE         measure.Latency `json:"fanOutLagSse"`
	LagWS          measure.Latency `json:"fanOutLagWs"`
	ServerRSS0MiB  float64         `json:"serverRssStartMiB"`
	ServerRSSMax   float64         `json:"serverRssMaxMiB"`
	ServerRSSEnd   float64         `json:"serverRssEndMiB"`
	ServerCPUSecs  float64         `json:"serverCpuSeconds"`
	ServerCPUMean  float64         `json:"serverCpuMeanPct"` // of one core
	ServerCPUPeak  float64         `json:"serverCpuPeakPct"`
	ToolCPUSeconds float64         `json:"loadGeneratorCpuSeconds"`
	LoadAvgStart   string          `json:"loadAvgStart,omitempty"` // the machine's 1-minute load average
	LoadAvgEnd     string          `json:"loadAvgEnd,omitempty"`
	ProcErr        string          `json:"processMetricsError,omitempty"`

	Checks     []report.Check  `json:"checks"`
	Timeline   []TimelinePoint `json:"timeline"`
	RoomSeries []roomSample    `json:"roomSeries"` // every admin API sample
}

// TimelinePoint is one second of the run. Latencies are milliseconds;
// NaN-free: a second without samples has zeros and Has* false.
type TimelinePoint struct {
	T         int     `json:"t"`
	Entered   int     `json:"entered"`
	Admitted  int     `json:"admitted"`
	Ordered   int     `json:"ordered"`
	Errors    int     `json:"errors"`
	HasRoom   bool    `json:"hasRoom"`
	Waiting   int64   `json:"waiting"`
	Active    int64   `json:"active"`
	Target    int64   `json:"targetActive"`
	HasEnter  bool    `json:"hasEnter"`
	EnterP50  float64 `json:"enterP50Ms"`
	EnterP90  float64 `json:"enterP90Ms"`
	EnterP99  float64 `json:"enterP99Ms"`
	HasLag    bool    `json:"hasLag"`
	LagP50    float64 `json:"lagP50Ms"`
	LagP99    float64 `json:"lagP99Ms"`
	HasProc   bool    `json:"hasProcess"`
	RSSMiB    float64 `json:"rssMiB"`
	CPUPct    float64 `json:"cpuPct"`
	HasCPUPct bool    `json:"hasCpuPct"`
}

// checks are the surge's pass/fail lines: the contract's bar.
func (r *Report) checks() []report.Check {
	return []report.Check{
		report.NewCheck("errors (enter, order, poll)", r.ErrorCount == 0 && r.AttemptErrors == 0,
			fmt.Sprintf("%s users failed; %s requests answered 429/5xx or not at all (retried ones included)", report.Commas(r.ErrorCount), report.Commas(r.AttemptErrors))),
		report.NewCheck("FIFO inversions", r.Inversions == 0 && r.Admissions > 0, fmt.Sprintf("%d (%s admissions compared)", r.Inversions, report.Commas(r.Admissions))),
		report.NewCheck("active ≤ targetActive (sampled)", r.SamplesOverLimit == 0 && r.RoomSamples > 0,
			fmt.Sprintf("max %d of %d; %d of %s samples over", r.MaxActive, r.MaxActiveTarget, r.SamplesOverLimit, report.Commas(r.RoomSamples))),
		report.NewCheck("users lost", r.Lost == 0, report.Commas(r.Lost)),
		report.NewCheck("every user READY → ordered", r.Ordered == r.Users-r.NoShows-r.Abandoned, r.orderedString()),
	}
}

func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "\nsurge scenario: %s users arriving over %.0f s, waiting by %s, to %s room %s; targetActive %d (entry TTL %.0f s)\n",
		report.Commas(r.Users), r.OverSeconds, r.Transport, r.Base, r.Room, r.Target, r.EntryTTLSeconds)
	fmt.Fprintf(w, "NOTE: the load generator shares this machine's %d CPUs with the server; absolute figures vary run to run\n", r.CPUs)
	if r.Interrupted {
		fmt.Fprintln(w, "INTERRUPTED: the figures cover the run up to Ctrl-C")
	}
	if r.HitMaxDuration {
		fmt.Fprintf(w, "STOPPED by --max-duration (%.0f s) before every user finished\n", r.MaxDurationSeconds)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "setup: %s\n", e)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, row := range r.rows() {
		fmt.Fprintf(tw, "%s\t %s\n", row[0], row[1])
	}
	tw.Flush()
	fmt.Fprintln(w, "\nbar (DESIGN.md: 10,000 users entering within 10 s):")
	for _, c := range r.checks() {
		fmt.Fprintf(w, "  %-32s %-5s %s\n", c.Name, report.PassFail(c.OK), c.Got)
	}
}

// rows are the summary table: label, value.
func (r *Report) rows() [][2]string {
	lat := func(l measure.Latency) string {
		if l.Count == 0 {
			return "-"
		}
		return fmt.Sprintf("p50 %s  p90 %s  p99 %s  max %s  (%s)", report.Ms(l.P50), report.Ms(l.P90), report.Ms(l.P99), report.Ms(l.Max), report.Commas(l.Count))
	}
	rows := [][2]string{
		{"run", fmt.Sprintf("%.1f s; users by transport%s; access tokens %s; %s", r.Seconds, report.Counts(r.ByTransport), r.Tokens, r.addrString())},
		{"entered", fmt.Sprintf("%s of %s arrived (failed %d%s); READY at entry %s", report.Commas(r.Entered), report.Commas(r.Arrived), r.EnterFailed, report.Counts(r.EnterFailures), report.Commas(r.Immediate))},
		{"enter latency", lat(r.EnterLatency)},
		{"enter requests", r.Enter.CodesString() + " (retries of 429/503 included)"},
		{"READY / ordered", fmt.Sprintf("%s / %s (order failures %d%s; codes %s)", report.Commas(r.Ready), report.Commas(r.Ordered), r.OrderFailed, report.Counts(r.OrderFailures), r.Orders.CodesString())},
		{"order latency", fmt.Sprintf("p50 %s  p99 %s  max %s", report.Ms(r.Orders.P50), report.Ms(r.Orders.P99), report.Ms(r.Orders.Max))},
		{"pool acquire wait", fmt.Sprintf("mean %.1f ms, p99 %.1f ms over %s acquires; injected order delay %.0f ms from %.1f s%s", r.PoolWaitMeanMs, r.PoolWaitP99Ms, report.Commas(int(r.PoolAcquires)), r.SlowdownMs, r.SlowdownAtSeconds, r.untilString())},
		{"row-lock delay", fmt.Sprintf("%.0f ms inside each order's row lock", r.RowDelayMs)},
		{"told why (gone / 404)", fmt.Sprintf("%d%s", r.Gone, report.Counts(r.GoneWhy))},
		{"lost", fmt.Sprintf("%d%s; of them still waiting at the end: %d", r.Lost, report.Counts(r.LostWhy), r.LostAtEnd)},
		{"errors", fmt.Sprintf("%d (enter %d, order %d, poll %d); requests answered 429/5xx or not at all, retries included: %s; stream drops (then re-opened or polled) %d",
			r.ErrorCount, r.EnterFailed, r.OrderFailed, r.PollErrors, report.Commas(r.AttemptErrors), r.Drops)},
		{"polls", fmt.Sprintf("%s (codes %s)", report.Commas(r.Polls), r.Position.CodesString())},
		{"queue drained", fmt.Sprintf("%.1f s after the first arrival (last READY); %.0f admitted/s; throughput %.1f orders/s (ordered ÷ drain time)", r.DrainSeconds, r.AdmitPerSecond, r.OrdersPerSecond)},
		{"max active (sampled)", fmt.Sprintf("%d (targetActive %d); %s samples, %d over target, %d failed reads", r.MaxActive, r.MaxActiveTarget, report.Commas(r.RoomSamples), r.SamplesOverLimit, r.RoomSampleErrs)},
		{"FIFO inversions", fmt.Sprintf("%d among %s admissions (ticket order vs entryExpiresAt − entryTtl); %d READY without a time", r.Inversions, report.Commas(r.Admissions), r.NoAdmitTime)},
		{"shoppers", fmt.Sprintf("%s; no-shows %s, abandoned %s, reloaded %s", r.Shoppers, report.Commas(r.NoShows), report.Commas(r.Abandoned), report.Commas(r.Reloads))},
		{"no-shows by cause", r.Absent.noShowString(r.NoShows)},
		{"slots held by the absent", r.Absent.slotString(r.Target, r.DrainSeconds)},
		{"ETA accuracy, first estimate", r.etaString()},
		{"ETA accuracy over the wait", r.etaWaitString()},
		{"ETA after a change", r.etaChangeString()},
		{"  by position", r.etaBandString()},
		{"fan-out lag", lat(r.Lag)},
		{"  sse / ws", fmt.Sprintf("p99 %s (%s) / p99 %s (%s)", report.Ms(r.LagSSE.P99), report.Commas(r.LagSSE.Count), report.Ms(r.LagWS.P99), report.Commas(r.LagWS.Count))},
	}
	if r.ProcErr != "" && r.ServerRSSMax == 0 {
		rows = append(rows, [2]string{"server", "n/a (" + r.ProcErr + ")"})
	} else {
		rows = append(rows,
			[2]string{"server RSS", fmt.Sprintf("%.1f MiB at start, max %.1f MiB, %.1f MiB at the end", r.ServerRSS0MiB, r.ServerRSSMax, r.ServerRSSEnd)},
			[2]string{"server CPU", fmt.Sprintf("%.1f s over the run: mean %.0f %%, peak %.0f %% of one core (per-second)", r.ServerCPUSecs, r.ServerCPUMean, r.ServerCPUPeak)})
	}
	if r.Seconds > 0 {
		rows = append(rows, [2]string{"load generator CPU", fmt.Sprintf("%.1f s over the run: mean %.0f %% of one core", r.ToolCPUSeconds, 100*r.ToolCPUSeconds/r.Seconds)})
	}
	if r.LoadAvgStart != "" {
		rows = append(rows, [2]string{"machine load average", fmt.Sprintf("%s at the start, %s at the end (1 min; %d CPUs: above %d, other work competed)",
			r.LoadAvgStart, r.LoadAvgEnd, r.CPUs, r.CPUs)})
	}
	return rows
}

// untilString says when the injected delay was removed, if before the end.
func (r *Report) untilString() string {
	if r.SlowdownUntilSeconds == 0 {
		return ""
	}
	return fmt.Sprintf(" to %.1f s", r.SlowdownUntilSeconds)
}

// addrString says where the crowd's connections came from.
func (r *Report) addrString() string {
	if r.SourceAddrs == 0 {
		return "connections spread over the tool's 16 source addresses"
	}
	return fmt.Sprintf("%d users per source address, %s addresses (127.1.x.y)", r.UsersPerAddr, report.Commas(r.SourceAddrs))
}

func (r *Report) etaString() string {
	if r.ETA.Count == 0 {
		return "- (no user waited with an ETA)"
	}
	return fmt.Sprintf("median |error| %.0f %%, p90 %.0f %% over %s users; median ETA − wait %+.1f s (waits < 1 s count as 1 s); shown at entry to %s, the others %.0f s after entering on median (at most %.0f s)",
		r.ETA.MedianAPE, r.ETA.P90APE, report.Commas(r.ETA.Count), r.ETA.MedianErrSeconds, report.Commas(r.ETA.AtEntry), r.ETA.MedianAfterSeconds, r.ETA.MaxAfterSeconds)
}

// orderedString is the ordered check's figure: the users who did not
// leave by the shopper model's plan, and how many of them ordered.
func (r *Report) orderedString() string {
	if r.NoShows+r.Abandoned == 0 {
		return fmt.Sprintf("%s of %s", report.Commas(r.Ordered), report.Commas(r.Users))
	}
	return fmt.Sprintf("%s of %s (%s users less %s no-shows and %s abandoned)", report.Commas(r.Ordered),
		report.Commas(r.Users-r.NoShows-r.Abandoned), report.Commas(r.Users), report.Commas(r.NoShows), report.Commas(r.Abandoned))
}

func (r *Report) etaChangeString() string {
	if len(r.ETAChanges) == 0 {
		return "- (no --slowdown or --limit-change)"
	}
	var parts []string
	for _, c := range r.ETAChanges {
		re := "never re-converged"
		if c.ReconvergedSeconds >= 0 {
			re = fmt.Sprintf("re-converged %.0f s after (per-second median ≤ %d %% for %d s)", c.ReconvergedSeconds, reconvergedPct, reconvergedHold)
		}
		parts = append(parts, fmt.Sprintf("%s at %.0f s: %s; from 30 s after, median |error| %.0f %%, p90 %.0f %% over %s estimates",
			c.What, c.AtSeconds, re, c.After.MedianAPE, c.After.P90APE, report.Commas(c.After.Count)))
	}
	return strings.Join(parts, "; ")
}

func (r *Report) etaWaitString() string {
	a := r.ETAWait
	if a.Count == 0 {
		return fmt.Sprintf("- (no estimate shown ≥ 1 s before an admission; withheld %s)", report.Commas(a.Withheld))
	}
	known := "none"
	if a.Guessed < a.Count {
		known = fmt.Sprintf("median %.0f %% of %s", a.KnownMedianAPE, report.Commas(a.Count-a.Guessed))
	}
	return fmt.Sprintf("median |error| %.0f %%, p90 %.0f %% over %s estimates shown to %s users; median ETA − remaining %+.1f s; etaKnown only: %s (withheld %s; remaining < 1 s skipped)",
		a.MedianAPE, a.P90APE, report.Commas(a.Count), report.Commas(a.Users), a.MedianErrSeconds, known, report.Commas(a.Withheld))
}

func (r *Report) etaBandString() string {
	s := ""
	for i, b := range r.ETAWait.ByBand {
		if i > 0 {
			s += "; "
		}
		if b.Count == 0 {
			s += b.Band + " -"
			continue
		}
		s += fmt.Sprintf("%s median %.0f %% p90 %.0f %% (%s)", b.Band, b.MedianAPE, b.P90APE, report.Commas(b.Count))
	}
	if s == "" {
		return "-"
	}
	return s
}
