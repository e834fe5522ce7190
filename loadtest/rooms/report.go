package rooms

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/report"
)

// roomsReport is what the rooms scenario measured. A phase is nil when
// Ctrl-C (or a failed creation) came before it.
type roomsReport struct {
	Scenario   string     `json:"scenario"`
	Instances  []instance `json:"instances"`
	CPUs       int        `json:"cpus"`
	Rooms      int        `json:"rooms"` // idle rooms asked for
	Users      int        `json:"users"` // per phase
	Transport  string     `json:"transport"`
	Target     int64      `json:"targetActive"` // the busy room's
	Prefix     string     `json:"prefix"`
	BusyRoom   string     `json:"busyRoom"`
	Tokens     string     `json:"tokens"`
	RedisGiven bool       `json:"redisGiven"` // --redis: Redis figures include anything else it served meanwhile

	Lone   *phaseResult `json:"lone,omitempty"`
	Create *creation    `json:"create,omitempty"`
	Among  *phaseResult `json:"among,omitempty"`

	// PerIdleRoom is the among window's cost less the lone window's, ÷
	// the idle rooms created (nil until both windows are measured).
	PerIdleRoom *perRoom `json:"perIdleRoom,omitempty"`
	// ReadyP50Ratio and ReadyP90Ratio are among ÷ lone (0: unknown).
	ReadyP50Ratio float64 `json:"readyP50Ratio,omitempty"`
	ReadyP90Ratio float64 `json:"readyP90Ratio,omitempty"`

	Cleanup     *cleanup `json:"cleanup,omitempty"`
	Interrupted bool     `json:"interrupted"`
}

// phaseResult is one phase: its idle window, then its users' READY.
type phaseResult struct {
	IdleRooms int       `json:"idleRooms"` // idle rooms present (0: the lone phase)
	Window    *window   `json:"window,omitempty"`
	Ready     *readyRun `json:"ready,omitempty"`
}

// perRoom is what one idle room costs per second.
type perRoom struct {
	CommandsPerSecond float64 `json:"redisCommandsPerSecond"`
	RedisCPUMicros    float64 `json:"redisCpuUsPerSecond"`
	// InstanceCPUMicros is per instance: 0 where unknown, InstanceKnown
	// false.
	InstanceCPUMicros []float64 `json:"instanceCpuUsPerSecond"`
	InstanceKnown     []bool    `json:"instanceCpuKnown"`
}

// derive fills the figures computed from the phases.
func (r *roomsReport) derive() {
	lw, aw := windowOf(r.Lone), windowOf(r.Among)
	if lw != nil && aw != nil && lw.Seconds > 0 && aw.Seconds > 0 && r.Create != nil && r.Create.Created > 0 {
		n := float64(r.Create.Created)
		p := &perRoom{}
		if lw.Redis != nil && aw.Redis != nil {
			p.CommandsPerSecond = (aw.CommandsPerSecond - lw.CommandsPerSecond) / n
			p.RedisCPUMicros = (aw.RedisCores - lw.RedisCores) * 1e6 / n
		}
		for i := range aw.Instances {
			ok := i < len(lw.Instances) && lw.Instances[i].Error == "" && aw.Instances[i].Error == ""
			v := 0.0
			if ok {
				v = (aw.Instances[i].Cores - lw.Instances[i].Cores) * 1e6 / n
			}
			p.InstanceCPUMicros, p.InstanceKnown = append(p.InstanceCPUMicros, v), append(p.InstanceKnown, ok)
		}
		r.PerIdleRoom = p
	}
	lr, ar := readyOf(r.Lone), readyOf(r.Among)
	if lr != nil && ar != nil && lr.Measured > 0 && ar.Measured > 0 {
		r.ReadyP50Ratio = finite(report.Ratio(ar.Latency.P50, lr.Latency.P50))
		r.ReadyP90Ratio = finite(report.Ratio(ar.Latency.P90, lr.Latency.P90))
	}
}

func windowOf(p *phaseResult) *window {
	if p == nil {
		return nil
	}
	return p.Window
}

func readyOf(p *phaseResult) *readyRun {
	if p == nil {
		return nil
	}
	return p.Ready
}

// finite is v, or 0 for NaN and ±Inf (JSON has neither).
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// Print writes the report for a reader: the run, the creation, the two
// phases side by side, the per-idle-room cost, then the cleanup.
func (r *roomsReport) Print(w io.Writer) {
	among := "among idle rooms"
	if r.Among != nil {
		among = "among " + report.Commas(r.Among.IdleRooms) + " idle rooms"
	}
	r.printRun(w)
	r.printPhases(w, among)
	r.printPerIdleRoom(w, among)
	r.printCleanup(w)
}

// printRun writes the run's setting, the instances and the creation.
func (r *roomsReport) printRun(w io.Writer) {
	fmt.Fprintf(w, "\nrooms scenario: %s idle rooms beside the busy room %s (targetActive %s) on %d instance(s); %d users enter it one after another in each phase (%s)\n",
		report.Commas(r.Rooms), r.BusyRoom, report.Commas(int(r.Target)), len(r.Instances), r.Users, r.Transport)
	for i, in := range r.Instances {
		fmt.Fprintf(w, "  instance %d: %s, admin %s\n", i+1, in.Base, in.Admin)
	}
	fmt.Fprintf(w, "NOTE: the load generator shares this machine's %d CPUs with the instances and Redis\n", r.CPUs)
	if r.Interrupted {
		fmt.Fprintln(w, "INTERRUPTED: the figures cover the run up to Ctrl-C")
	}
	if c := r.Create; c != nil {
		fmt.Fprintf(w, "create: %s of %s idle rooms in %.1f s (%s/s), PUT /admin/rooms/{room}; failed %d%s\n",
			report.Commas(c.Created), report.Commas(c.Rooms), c.Seconds, report.Commas(int(c.PerSecond+0.5)), c.Failed, report.Counts(c.Failures))
	}
}

// printPhases writes the table of the lone phase beside the among phase:
// the idle window's costs, then the users' READY.
func (r *roomsReport) printPhases(w io.Writer, among string) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\t lone\t %s\n", among)
	row := func(name string, f func(p *phaseResult) string) {
		fmt.Fprintf(tw, "%s\t %s\t %s\n", name, cell(r.Lone, f), cell(r.Among, f))
	}
	row("idle window", func(p *phaseResult) string {
		return winCell(p, func(w *window) string { return fmt.Sprintf("%.1f s", w.Seconds) })
	})
	row("Redis commands/s", func(p *phaseResult) string {
		return winCell(p, func(w *window) string { return redisCell(w, report.Commas(int(w.CommandsPerSecond+0.5))) })
	})
	row("Redis CPU (cores)", func(p *phaseResult) string {
		return winCell(p, func(w *window) string { return redisCell(w, fmt.Sprintf("%.3f", w.RedisCores)) })
	})
	for i := range r.Instances {
		row(fmt.Sprintf("instance %d CPU (cores)", i+1), func(p *phaseResult) string {
			return winCell(p, func(w *window) string {
				if i >= len(w.Instances) {
					return "-"
				}
				if e := w.Instances[i].Error; e != "" {
					return "n/a (" + e + ")"
				}
				return fmt.Sprintf("%.3f", w.Instances[i].Cores)
			})
		})
	}
	rd := func(f func(rr *readyRun) string) func(p *phaseResult) string {
		return func(p *phaseResult) string {
			if p.Ready == nil {
				return "-"
			}
			return f(p.Ready)
		}
	}
	row("users READY", rd(func(rr *readyRun) string {
		return fmt.Sprintf("%d of %d (failed %d%s)", rr.Measured, rr.Users, rr.Failed, report.Counts(rr.Failures))
	}))
	row("READY p50", rd(func(rr *readyRun) string { return latCell(rr, rr.Latency.P50) }))
	row("READY p90", rd(func(rr *readyRun) string { return latCell(rr, rr.Latency.P90) }))
	row("READY max", rd(func(rr *readyRun) string { return latCell(rr, rr.Latency.Max) }))
	row("READY seen in", rd(func(rr *readyRun) string {
		return strings.TrimSuffix(strings.TrimPrefix(report.Counts(rr.ByWay), " ("), ")")
	}))
	tw.Flush()
	fmt.Fprintln(w, "READY latency: from sending the enter to READY seen (the enter answer, the stream or a poll); cores = CPU seconds ÷ wall seconds of the window")
}

// printPerIdleRoom writes what one idle room costs, the READY ratios and
// Redis's top commands in each phase.
func (r *roomsReport) printPerIdleRoom(w io.Writer, among string) {
	if p := r.PerIdleRoom; p != nil {
		fmt.Fprintf(w, "\nper idle room (among − lone, ÷ %s rooms): ", report.Commas(r.Among.IdleRooms))
		if r.Lone.Window.Redis != nil && r.Among.Window.Redis != nil {
			fmt.Fprintf(w, "%.2f Redis commands/s, Redis CPU %.1f µs/s", p.CommandsPerSecond, p.RedisCPUMicros)
		} else {
			fmt.Fprint(w, "Redis n/a (pass --redis)")
		}
		for i, v := range p.InstanceCPUMicros {
			if p.InstanceKnown[i] {
				fmt.Fprintf(w, "; instance %d CPU %.1f µs/s", i+1, v)
			} else {
				fmt.Fprintf(w, "; instance %d CPU n/a", i+1)
			}
		}
		fmt.Fprintln(w)
	}
	if r.ReadyP50Ratio > 0 {
		fmt.Fprintf(w, "READY among ÷ lone: p50 %.2f×, p90 %.2f×\n", r.ReadyP50Ratio, r.ReadyP90Ratio)
	}
	for _, ph := range []struct {
		name string
		p    *phaseResult
	}{{"lone", r.Lone}, {among, r.Among}} {
		if w0 := windowOf(ph.p); w0 != nil && w0.Redis != nil && w0.Seconds > 0 {
			fmt.Fprintf(w, "Redis's top commands, %s (calls/s, scripts' own calls included): %s\n", ph.name, topString(w0.Redis.TopCommands, w0.Seconds))
		}
	}
	if !r.RedisGiven {
		fmt.Fprintln(w, "Redis figures: n/a (pass --redis URL)")
	}
}

// printCleanup writes what the cleanup deleted, or why there was none.
func (r *roomsReport) printCleanup(w io.Writer) {
	if c := r.Cleanup; c != nil {
		fmt.Fprintln(w)
		switch {
		case !c.Offered:
			fmt.Fprintf(w, "cleanup: %s\n", c.Note)
		default:
			fmt.Fprintf(w, "cleanup: %s of %s rooms deleted in %.1f s (DELETE /admin/rooms/{room}?force=true), absent %d, failed %d%s; left %d\n",
				report.Commas(c.Deleted), report.Commas(c.Rooms), c.Seconds, c.Absent, c.Failed, report.Counts(c.Failures), c.Left)
		}
	}
}

// cell is f of p, "-" when the phase did not run.
func cell(p *phaseResult, f func(p *phaseResult) string) string {
	if p == nil {
		return "-"
	}
	return f(p)
}

func winCell(p *phaseResult, f func(w *window) string) string {
	if p.Window == nil || p.Window.Seconds == 0 {
		return "-"
	}
	return f(p.Window)
}

func redisCell(w *window, v string) string {
	switch {
	case w.Redis != nil:
		return v
	case w.RedisError != "":
		return "n/a (" + w.RedisError + ")"
	}
	return "n/a"
}

func latCell(rr *readyRun, d time.Duration) string {
	if rr.Measured == 0 {
		return "-"
	}
	return report.Ms(d)
}

// topString lists commands as "evalsha 1,234, get 56".
func topString(cs []measure.CommandCalls, secs float64) string {
	if len(cs) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s %s", c.Name, report.Commas(int(float64(c.Calls)/secs+0.5))))
	}
	return strings.Join(parts, ", ")
}
