package main

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"text/tabwriter"
	"time"
)

// maxTimeline caps the per-second timeline (one hour).
const maxTimeline = 3600

// surgeReport is what the surge scenario measured.
type surgeReport struct {
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

	Arrived       int            `json:"arrived"`
	Entered       int            `json:"entered"`
	EnterFailed   int            `json:"enterFailed"`
	EnterFailures map[string]int `json:"enterFailures,omitempty"`
	EnterLatency  latency        `json:"enterLatency"` // successful enters, the last attempt
	Enter         Summary        `json:"enterRequests"`
	Immediate     int            `json:"readyAtEnter"`
	Ready         int            `json:"ready"`
	Ordered       int            `json:"ordered"`
	OrderFailed   int            `json:"orderFailed"`
	OrderFailures map[string]int `json:"orderFailures,omitempty"`
	Orders        Summary        `json:"orderRequests"`
	// With --slowdown: the injected order delay and when it started; the
	// pool's acquires during the run and their mean wait (server-side).
	SlowdownMs        float64        `json:"slowdownMs,omitempty"`
	SlowdownAtSeconds float64        `json:"slowdownAtSeconds,omitempty"`
	PoolAcquires      int64          `json:"poolAcquires"`
	PoolWaitMeanMs    float64        `json:"poolWaitMeanMs"`
	Gone              int            `json:"toldWhy"`
	GoneWhy           map[string]int `json:"toldWhyCounts,omitempty"`
	Lost              int            `json:"lost"`
	LostAtEnd         int            `json:"lostStillWaitingAtEnd"`
	LostWhy           map[string]int `json:"lostWhy,omitempty"`
	ErrorCount        int            `json:"errors"`        // enter and order failures, failed polls
	AttemptErrors     int            `json:"attemptErrors"` // requests answered 429 / 5xx or not at all, retried ones included
	Drops             int            `json:"streamDrops"`
	Polls             int            `json:"polls"`
	PollErrors        int            `json:"pollErrors"`
	Position          Summary        `json:"positionRequests"`
	ByTransport       map[string]int `json:"usersByTransport"`

	DrainSeconds     float64 `json:"drainSeconds"`      // first arrival → last READY received
	AdmitPerSecond   float64 `json:"admittedPerSecond"` // READY ÷ (last READY − first enter)
	MaxActive        int64   `json:"maxActive"`
	MaxActiveTarget  int64   `json:"maxActiveTargetActive"` // targetActive at that sample
	RoomSamples      int     `json:"roomSamples"`
	RoomSampleErrs   int     `json:"roomSampleErrors"`
	SamplesOverLimit int     `json:"samplesActiveOverTarget"`

	Admissions     int         `json:"admissionsCompared"`
	NoAdmitTime    int         `json:"readyWithoutAdmissionTime"`
	Inversions     int64       `json:"fifoInversions"`
	ETA            etaAccuracy `json:"eta"`
	Lag            latency     `json:"fanOutLag"`
	LagSSE         latency     `json:"fanOutLagSse"`
	LagWS          latency     `json:"fanOutLagWs"`
	ServerRSS0MiB  float64     `json:"serverRssStartMiB"`
	ServerRSSMax   float64     `json:"serverRssMaxMiB"`
	ServerRSSEnd   float64     `json:"serverRssEndMiB"`
	ServerCPUSecs  float64     `json:"serverCpuSeconds"`
	ServerCPUMean  float64     `json:"serverCpuMeanPct"` // of one core
	ServerCPUPeak  float64     `json:"serverCpuPeakPct"`
	ToolCPUSeconds float64     `json:"loadGeneratorCpuSeconds"`
	LoadAvgStart   string      `json:"loadAvgStart,omitempty"` // the machine's 1-minute load average
	LoadAvgEnd     string      `json:"loadAvgEnd,omitempty"`
	ProcErr        string      `json:"processMetricsError,omitempty"`

	Checks     []check         `json:"checks"`
	Timeline   []timelinePoint `json:"timeline"`
	RoomSeries []roomSample    `json:"roomSeries"` // every admin API sample
}

// timelinePoint is one second of the run. Latencies are milliseconds;
// NaN-free: a second without samples has zeros and Has* false.
type timelinePoint struct {
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

// collect fills the report from the users' records and the samples.
func (rep *surgeReport) collect(r *surgeRun, rec *Recorder, s samples) {
	rep.EnterFailures, rep.OrderFailures, rep.GoneWhy, rep.LostWhy = map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	rep.ByTransport = map[string]int{}
	bins := min(int(math.Ceil(rep.Seconds))+1, maxTimeline)
	tl := make([]timelinePoint, bins)
	for i := range tl {
		tl[i].T = i
	}
	bin := func(d time.Duration) int { return min(max(int(d/time.Second), 0), bins-1) }
	enterBins := make([][]time.Duration, bins)
	lagBins := make([][]time.Duration, bins)

	var enters, lags, lagSSE, lagWS []time.Duration
	var adm []admission
	var etas []etaSample
	firstEnter, lastReady := time.Duration(math.MaxInt64), time.Duration(0)
	for i := range r.users {
		u := &r.users[i]
		if u.outcome == surgeNotArrived {
			continue
		}
		rep.Arrived++
		rep.ByTransport[u.transport]++
		rep.Polls += u.polls
		rep.PollErrors += u.pollErrors
		rep.Drops += u.drops
		if u.outcome == surgeEnterFailed {
			rep.EnterFailed++
			rep.EnterFailures[u.why]++
			continue
		}
		rep.Entered++
		enters = append(enters, u.enterLat)
		firstEnter = min(firstEnter, u.enterAt)
		tl[bin(u.enterAt)].Entered++
		enterBins[bin(u.enterAt)] = append(enterBins[bin(u.enterAt)], u.enterLat)
		for _, l := range u.lags {
			lags = append(lags, l.lag)
			if u.transport == "ws" {
				lagWS = append(lagWS, l.lag)
			} else {
				lagSSE = append(lagSSE, l.lag)
			}
			lagBins[bin(l.at)] = append(lagBins[bin(l.at)], l.lag)
		}
		switch u.outcome {
		case surgeWaiting:
			rep.Lost++
			why := u.why
			if why == "" {
				why = "still waiting"
			}
			rep.LostWhy[why]++
			if r.ctx.Err() != nil {
				rep.LostAtEnd++
			}
			continue
		case surgeGone:
			rep.Gone++
			rep.GoneWhy[u.why]++
			continue
		}
		// READY, whatever followed.
		rep.Ready++
		if u.immediate {
			rep.Immediate++
		}
		lastReady = max(lastReady, u.readyAt)
		tl[bin(u.readyAt)].Admitted++
		if u.admittedAt.IsZero() || u.ticket == 0 {
			rep.NoAdmitTime++
		} else {
			adm = append(adm, admission{ticket: u.ticket, at: u.admittedAt})
			if u.hasETA && !u.immediate {
				enterWall := r.start.Add(u.enterAt)
				etas = append(etas, etaSample{eta: u.eta, real: u.admittedAt.Sub(enterWall)})
			}
		}
		switch u.outcome {
		case surgeOrdered:
			rep.Ordered++
			tl[bin(u.orderAt)].Ordered++
		case surgeOrderFailed:
			rep.OrderFailed++
			rep.OrderFailures[u.why]++
			tl[bin(u.orderAt)].Errors++
		}
	}
	rep.ErrorCount = rep.EnterFailed + rep.OrderFailed + rep.PollErrors
	rep.EnterLatency = newLatency(enters)
	rep.Enter, rep.Orders, rep.Position = rec.Summary("enter"), rec.Summary("orders"), rec.Summary("position")
	for _, e := range []Summary{rep.Enter, rep.Orders, rep.Position} {
		for code, k := range e.Codes {
			if code == codeError || code == http.StatusTooManyRequests || code >= 500 {
				rep.AttemptErrors += k
			}
		}
	}
	rep.Lag, rep.LagSSE, rep.LagWS = newLatency(lags), newLatency(lagSSE), newLatency(lagWS)
	rep.Admissions = len(adm)
	rep.Inversions = fifoInversions(adm)
	rep.ETA = newETAAccuracy(etas)
	if rep.Ready > 0 {
		rep.DrainSeconds = lastReady.Seconds()
		if span := (lastReady - firstEnter).Seconds(); span > 0 {
			rep.AdmitPerSecond = float64(rep.Ready) / span
		}
	}

	// Room samples: the maximum active, and the last sample of each second.
	rep.RoomSamples, rep.RoomSampleErrs, rep.RoomSeries = len(s.Room), s.RoomErrs, s.Room
	// A lowered limit (an operator's change, or an adaptive room's cut)
	// applies to new admissions: users admitted before it keep their slots
	// until they order. So a sample is over the limit only when active
	// exceeds every targetActive sampled within that hold — the slowest
	// order plus a second to notice READY — before it.
	hold := rep.Orders.Max + time.Second
	for i, x := range s.Room {
		if i == 0 || x.Active > rep.MaxActive {
			rep.MaxActive, rep.MaxActiveTarget = x.Active, x.Target
		}
		limit := x.Target
		for j := i - 1; j >= 0 && x.At-s.Room[j].At <= hold; j-- {
			limit = max(limit, s.Room[j].Target)
		}
		if x.Active > limit {
			rep.SamplesOverLimit++
		}
		p := &tl[bin(x.At)]
		p.HasRoom, p.Waiting, p.Active, p.Target = true, x.Waiting, x.Active, x.Target
	}
	// Process samples: RSS and CPU.
	rep.ProcErr = s.FirstProc
	for i, x := range s.Proc {
		mb := x.RSSBytes / (1 << 20)
		if i == 0 {
			rep.ServerRSS0MiB = mb
		}
		rep.ServerRSSMax = max(rep.ServerRSSMax, mb)
		rep.ServerRSSEnd = mb
		p := &tl[bin(x.At)]
		p.HasProc, p.RSSMiB = true, mb
		if i > 0 {
			prev := s.Proc[i-1]
			if dt := (x.At - prev.At).Seconds(); dt > 0 {
				pct := 100 * (x.CPUSeconds - prev.CPUSeconds) / dt
				p.CPUPct, p.HasCPUPct = pct, true
				rep.ServerCPUPeak = max(rep.ServerCPUPeak, pct)
			}
		}
	}
	if n := len(s.Proc); n > 1 {
		rep.ServerCPUSecs = s.Proc[n-1].CPUSeconds - s.Proc[0].CPUSeconds
		if dt := (s.Proc[n-1].At - s.Proc[0].At).Seconds(); dt > 0 {
			rep.ServerCPUMean = 100 * rep.ServerCPUSecs / dt
		}
	}
	for i := range tl {
		if l := enterBins[i]; len(l) > 0 {
			slices.Sort(l)
			tl[i].HasEnter = true
			tl[i].EnterP50, tl[i].EnterP90, tl[i].EnterP99 = msf(Percentile(l, 50)), msf(Percentile(l, 90)), msf(Percentile(l, 99))
		}
		if l := lagBins[i]; len(l) > 0 {
			slices.Sort(l)
			tl[i].HasLag = true
			tl[i].LagP50, tl[i].LagP99 = msf(Percentile(l, 50)), msf(Percentile(l, 99))
		}
	}
	rep.Timeline = tl
	rep.Checks = rep.checks()
}

// checks are the surge's pass/fail lines: the contract's bar.
func (r *surgeReport) checks() []check {
	return []check{
		{"errors (enter, order, poll)", r.ErrorCount == 0 && r.AttemptErrors == 0,
			fmt.Sprintf("%s users failed; %s requests answered 429/5xx or not at all (retried ones included)", commas(r.ErrorCount), commas(r.AttemptErrors))},
		{"FIFO inversions", r.Inversions == 0 && r.Admissions > 0, fmt.Sprintf("%d (%s admissions compared)", r.Inversions, commas(r.Admissions))},
		{"active ≤ targetActive (sampled)", r.SamplesOverLimit == 0 && r.RoomSamples > 0,
			fmt.Sprintf("max %d of %d; %d of %s samples over", r.MaxActive, r.MaxActiveTarget, r.SamplesOverLimit, commas(r.RoomSamples))},
		{"users lost", r.Lost == 0, commas(r.Lost)},
		{"every user READY → ordered", r.Ordered == r.Users, fmt.Sprintf("%s of %s", commas(r.Ordered), commas(r.Users))},
	}
}

// check is one pass/fail line of a report.
type check struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	Got  string `json:"measured"`
}

func (r *surgeReport) print(w io.Writer) {
	fmt.Fprintf(w, "\nsurge scenario: %s users arriving over %.0f s, waiting by %s, to %s room %s; targetActive %d (entry TTL %.0f s)\n",
		commas(r.Users), r.OverSeconds, r.Transport, r.Base, r.Room, r.Target, r.EntryTTLSeconds)
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
		fmt.Fprintf(w, "  %-32s %-5s %s\n", c.Name, verdictPass(c.OK), c.Got)
	}
}

func verdictPass(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// rows are the summary table: label, value.
func (r *surgeReport) rows() [][2]string {
	lat := func(l latency) string {
		if l.Count == 0 {
			return "-"
		}
		return fmt.Sprintf("p50 %s  p90 %s  p99 %s  max %s  (%s)", ms(l.P50), ms(l.P90), ms(l.P99), ms(l.Max), commas(l.Count))
	}
	rows := [][2]string{
		{"run", fmt.Sprintf("%.1f s; users by transport%s; access tokens %s; %s", r.Seconds, countsString(r.ByTransport), r.Tokens, r.addrString())},
		{"entered", fmt.Sprintf("%s of %s arrived (failed %d%s); READY at entry %s", commas(r.Entered), commas(r.Arrived), r.EnterFailed, countsString(r.EnterFailures), commas(r.Immediate))},
		{"enter latency", lat(r.EnterLatency)},
		{"enter requests", r.Enter.CodesString() + " (retries of 429/503 included)"},
		{"READY / ordered", fmt.Sprintf("%s / %s (order failures %d%s; codes %s)", commas(r.Ready), commas(r.Ordered), r.OrderFailed, countsString(r.OrderFailures), r.Orders.CodesString())},
		{"order latency", fmt.Sprintf("p50 %s  p99 %s  max %s", ms(r.Orders.P50), ms(r.Orders.P99), ms(r.Orders.Max))},
		{"pool acquire wait", fmt.Sprintf("mean %.1f ms over %s acquires; injected order delay %.0f ms from %.1f s", r.PoolWaitMeanMs, commas(int(r.PoolAcquires)), r.SlowdownMs, r.SlowdownAtSeconds)},
		{"told why (gone / 404)", fmt.Sprintf("%d%s", r.Gone, countsString(r.GoneWhy))},
		{"lost", fmt.Sprintf("%d%s; of them still waiting at the end: %d", r.Lost, countsString(r.LostWhy), r.LostAtEnd)},
		{"errors", fmt.Sprintf("%d (enter %d, order %d, poll %d); requests answered 429/5xx or not at all, retries included: %s; stream drops (then re-opened or polled) %d",
			r.ErrorCount, r.EnterFailed, r.OrderFailed, r.PollErrors, commas(r.AttemptErrors), r.Drops)},
		{"polls", fmt.Sprintf("%s (codes %s)", commas(r.Polls), r.Position.CodesString())},
		{"queue drained", fmt.Sprintf("%.1f s after the first arrival (last READY); %.0f admitted/s", r.DrainSeconds, r.AdmitPerSecond)},
		{"max active (sampled)", fmt.Sprintf("%d (targetActive %d); %s samples, %d over target, %d failed reads", r.MaxActive, r.MaxActiveTarget, commas(r.RoomSamples), r.SamplesOverLimit, r.RoomSampleErrs)},
		{"FIFO inversions", fmt.Sprintf("%d among %s admissions (ticket order vs entryExpiresAt − entryTtl); %d READY without a time", r.Inversions, commas(r.Admissions), r.NoAdmitTime)},
		{"ETA accuracy", r.etaString()},
		{"fan-out lag", lat(r.Lag)},
		{"  sse / ws", fmt.Sprintf("p99 %s (%s) / p99 %s (%s)", ms(r.LagSSE.P99), commas(r.LagSSE.Count), ms(r.LagWS.P99), commas(r.LagWS.Count))},
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

// addrString says where the crowd's connections came from.
func (r *surgeReport) addrString() string {
	if r.SourceAddrs == 0 {
		return "connections spread over the tool's 16 source addresses"
	}
	return fmt.Sprintf("%d users per source address, %s addresses (127.1.x.y)", r.UsersPerAddr, commas(r.SourceAddrs))
}

func (r *surgeReport) etaString() string {
	if r.ETA.Count == 0 {
		return "- (no user waited with an ETA)"
	}
	return fmt.Sprintf("median |error| %.0f %%, p90 %.0f %% over %s users; median ETA − wait %+.1f s (waits < 1 s count as 1 s)",
		r.ETA.MedianAPE, r.ETA.P90APE, commas(r.ETA.Count), r.ETA.MedianErrSeconds)
}
