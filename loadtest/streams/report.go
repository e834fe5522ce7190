package streams

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/report"
)

// serverSamples are the server's metrics before the streams opened, with
// all open, and at the end (streams still open); an error string when a
// scrape failed.
type serverSamples struct {
	Before    map[string]float64 `json:"before,omitempty"`
	BeforeErr string             `json:"beforeError,omitempty"`
	Open      map[string]float64 `json:"open,omitempty"`
	OpenErr   string             `json:"openError,omitempty"`
	End       map[string]float64 `json:"end,omitempty"`
	EndErr    string             `json:"endError,omitempty"`
}

// streamsReport is what the streams scenario measured.
type streamsReport struct {
	Scenario       string  `json:"scenario"`
	Transport      string  `json:"transport"`
	Base           string  `json:"base"`
	Room           string  `json:"room"`
	CPUs           int     `json:"cpus"`
	Users          int     `json:"users"`
	Tokens         string  `json:"tokens"`
	Prepared       int     `json:"prepared"` // users that entered
	PrepareSeconds float64 `json:"prepareSeconds"`
	Errors         string  `json:"errors,omitempty"`     // of preparing the users, or of resuming admission
	OriginalTarget int64   `json:"originalTargetActive"` // restored after the run
	Target         int64   `json:"targetActive"`         // while driving
	Interrupted    bool    `json:"interrupted"`

	Opened          int             `json:"opened"`
	OpenFailed      int             `json:"openFailed"`
	OpenFailures    map[string]int  `json:"openFailures,omitempty"`
	OpenSeconds     float64         `json:"openSeconds"`     // until every open attempt ended
	LastOpenSeconds float64         `json:"lastOpenSeconds"` // until the last successful open
	Open            measure.Latency `json:"openLatency"`     // connect → first message

	DriveSeconds    float64                    `json:"driveSeconds"`
	Events          int                        `json:"events"`
	Heartbeats      int                        `json:"heartbeats"`
	BadMessages     int                        `json:"badMessages"`
	OtherMessages   int                        `json:"otherMessages"`
	EventsWithoutTS int                        `json:"eventsWithoutTs"`
	Lag             map[string]measure.Latency `json:"lag"` // by lagBands
	Ready           int                        `json:"ready"`
	Ordered         int                        `json:"ordered"`
	OrderFailed     int                        `json:"orderFailed"`
	Orders          measure.Summary            `json:"orders"`
	Gone            int                        `json:"gone"`
	Dropped         int                        `json:"dropped"`
	Drops           map[string]int             `json:"drops,omitempty"`
	StillWaiting    int                        `json:"stillWaiting"` // open at the end, closed by the tool

	Server          serverSamples `json:"server"`
	RSSPerStreamKiB float64       `json:"rssPerStreamKiB,omitempty"`
	CPUOpenSeconds  float64       `json:"serverCpuOpenSeconds,omitempty"`
	CPUDriveSeconds float64       `json:"serverCpuDriveSeconds,omitempty"`
}

// collect fills the report from the streams' records.
func (rep *streamsReport) collect(results []streamResult, rec *measure.Recorder) {
	rep.OpenFailures, rep.Drops = map[string]int{}, map[string]int{}
	var opens []time.Duration
	var lags [5][]time.Duration
	for i := range results {
		res := &results[i]
		switch res.outcome {
		case outOpenFailed:
			rep.OpenFailed++
			rep.OpenFailures[res.why]++
			continue
		case outNotOpened:
			continue
		case outReady:
			rep.Ready++
		case outOrdered:
			rep.Ready++
			rep.Ordered++
		case outOrderFailed:
			rep.Ready++
			rep.OrderFailed++
		case outGone:
			rep.Gone++
		case outDropped:
			rep.Dropped++
			rep.Drops[res.why]++
		case outOpen:
			rep.StillWaiting++
		}
		rep.Opened++
		opens = append(opens, res.openDur)
		rep.Events += res.events
		rep.Heartbeats += res.heartbeats
		rep.BadMessages += res.bad
		rep.OtherMessages += res.other
		rep.EventsWithoutTS += res.noTS
		for b, l := range res.lags {
			lags[0] = append(lags[0], l...)
			lags[b+1] = append(lags[b+1], l...)
		}
	}
	rep.Open = measure.NewLatency(opens)
	rep.Lag = map[string]measure.Latency{}
	for b, l := range lags {
		rep.Lag[lagBands[b]] = measure.NewLatency(l)
	}
	rep.Orders = rec.Summary("orders")

	s := rep.Server
	if rss0, ok := s.Before[measure.MetricRSS]; ok && rep.Opened > 0 {
		if rss1, ok := s.Open[measure.MetricRSS]; ok {
			rep.RSSPerStreamKiB = (rss1 - rss0) / float64(rep.Opened) / 1024
		}
	}
	if c0, ok := s.Before[measure.MetricCPU]; ok {
		if c1, ok := s.Open[measure.MetricCPU]; ok {
			rep.CPUOpenSeconds = c1 - c0
			if c2, ok := s.End[measure.MetricCPU]; ok {
				rep.CPUDriveSeconds = c2 - c1
			}
		}
	}
}

func (r *streamsReport) Print(w io.Writer) {
	fmt.Fprintf(w, "\nstreams scenario: %s %s streams to %s, room %s; admission frozen while opening, then targetActive %d for the drive\n",
		report.Commas(r.Users), r.Transport, r.Base, r.Room, r.Target)
	fmt.Fprintf(w, "NOTE: the load generator shares this machine's %d CPUs with the server\n", r.CPUs)
	if r.Interrupted {
		fmt.Fprintln(w, "INTERRUPTED: the figures cover the run up to Ctrl-C")
	}
	fmt.Fprintf(w, "prepare: %s of %s users entered in %.1f s (access tokens: %s)\n", report.Commas(r.Prepared), report.Commas(r.Users), r.PrepareSeconds, r.Tokens)
	if r.Errors != "" {
		fmt.Fprintf(w, "  errors: %s\n", r.Errors)
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "streams requested / opened / failed\t %s / %s / %s%s\n", report.Commas(r.Prepared), report.Commas(r.Opened), report.Commas(r.OpenFailed), report.Counts(r.OpenFailures))
	fmt.Fprintf(tw, "open time\t %.1f s for all attempts, last stream open at %.1f s; connect → first event p50 %s, p99 %s, max %s\n",
		r.OpenSeconds, r.LastOpenSeconds, report.Ms(r.Open.P50), report.Ms(r.Open.P99), report.Ms(r.Open.Max))
	fmt.Fprintf(tw, "drive\t %.1f s at targetActive %d\n", r.DriveSeconds, r.Target)
	perSec := 0.0
	if r.DriveSeconds > 0 {
		perSec = float64(r.Events) / r.DriveSeconds
	}
	fmt.Fprintf(tw, "status events received\t %s (≈ %s/s over the drive), heartbeats %s, undecodable %d, other %d\n",
		report.Commas(r.Events), report.Commas(int(perSec+0.5)), report.Commas(r.Heartbeats), r.BadMessages, r.OtherMessages)
	fmt.Fprintf(tw, "READY received\t %s\n", report.Commas(r.Ready))
	fmt.Fprintf(tw, "orders placed\t %s (failed %d; codes %s)\n", report.Commas(r.Ordered), r.OrderFailed, r.Orders.CodesString())
	fmt.Fprintf(tw, "gone\t %d\n", r.Gone)
	fmt.Fprintf(tw, "dropped by the server\t %d%s (closed without gone, or silent for --idle)\n", r.Dropped, report.Counts(r.Drops))
	fmt.Fprintf(tw, "still waiting at the end\t %s (closed by the tool)\n", report.Commas(r.StillWaiting))
	tw.Flush()

	fmt.Fprintln(w, "\nfan-out lag = receive time − \"ts\" (the admission's publish time, Redis clock), every status event after the on-connect one:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "position band\tevents\tp50 ms\tp90 ms\tp99 ms\tmax ms\t")
	for _, b := range lagBands {
		l := r.Lag[b]
		if l.Count == 0 {
			fmt.Fprintf(tw, "%s\t0\t-\t-\t-\t-\t\n", b)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t\n", b, report.Commas(l.Count), report.Msf(l.P50), report.Msf(l.P90), report.Msf(l.P99), report.Msf(l.Max))
	}
	tw.Flush()
	if r.EventsWithoutTS > 0 {
		fmt.Fprintf(w, "%s events carried no \"ts\": their lag is unknown and not counted above\n", report.Commas(r.EventsWithoutTS))
	}

	fmt.Fprintln(w, "\nserver (/metrics on the admin port):")
	s := r.Server
	fmt.Fprintf(w, "  RSS: before streams %s, with the streams open %s, at the end of the drive %s\n",
		mib(s.Before, s.BeforeErr), mib(s.Open, s.OpenErr), mib(s.End, s.EndErr))
	fmt.Fprintf(w, "  CPU seconds: opening %.2f, driving %.2f\n", r.CPUOpenSeconds, r.CPUDriveSeconds)
	fmt.Fprintf(w, "  %s: with the streams open %s, at the end of the drive %s\n", measure.MetricConns, value(s.Open, measure.MetricConns), value(s.End, measure.MetricConns))
	if d0, ok := s.Before[measure.MetricDropped]; ok {
		if d1, ok := s.End[measure.MetricDropped]; ok {
			fmt.Fprintf(w, "  %s: +%.0f during the run\n", measure.MetricDropped, d1-d0)
		}
	} else {
		fmt.Fprintf(w, "  %s: not exported\n", measure.MetricDropped)
	}

	fmt.Fprintf(w, "\nbars (DESIGN.md, %s streams on one instance, one 2-core machine):\n", report.Commas(barStreams))
	if r.Opened != barStreams {
		fmt.Fprintf(w, "  (this run held %s streams: compare with care)\n", report.Commas(r.Opened))
	}
	p99 := r.Lag["all"].P99
	switch {
	case r.Lag["all"].Count == 0:
		fmt.Fprintln(w, "  fan-out lag p99 ≤ 250 ms: unknown (no events with \"ts\" after connecting)")
	default:
		fmt.Fprintf(w, "  fan-out lag p99 ≤ %.0f ms: %s — %s (moonshot ≤ %.0f ms: %s)\n", report.Msf(barLagP99), report.Ms(p99), verdict(p99 <= barLagP99),
			report.Msf(moonshotLagP99), verdict(p99 <= moonshotLagP99))
	}
	if r.RSSPerStreamKiB > 0 {
		fmt.Fprintf(w, "  RSS per stream ≤ %.0f KiB: %.1f KiB — %s\n", barRSSKiB, r.RSSPerStreamKiB, verdict(r.RSSPerStreamKiB <= barRSSKiB))
	} else {
		fmt.Fprintf(w, "  RSS per stream ≤ %.0f KiB: unknown (%s not readable, or no stream opened)\n", barRSSKiB, measure.MetricRSS)
	}
	fmt.Fprintln(w, "RSS per stream = (RSS with the streams open − RSS before) ÷ streams opened; RSS includes garbage the server's GC has not returned")
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func mib(m map[string]float64, errText string) string {
	if v, ok := m[measure.MetricRSS]; ok {
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	}
	if errText != "" {
		return "n/a (" + errText + ")"
	}
	return "n/a"
}

func value(m map[string]float64, name string) string {
	if v, ok := m[name]; ok {
		return report.Commas(int(v))
	}
	return "n/a"
}
