package ceiling

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/report"
)

func (r *ceilingReport) Print(w io.Writer) {
	if len(r.Parts) > 0 {
		r.printParts(w)
		return
	}
	fmt.Fprintf(w, "\nceiling scenario: one room on one Redis shard (%s), driven directly (no server)\n", r.Redis)
	fmt.Fprintln(w, "Redis figures are Redis's own counters (INFO cpu, commandstats, memory): they include anything else that Redis served meanwhile")
	if r.Interrupted {
		fmt.Fprintln(w, "INTERRUPTED: parts not reached are missing")
	}
	if len(r.Steps) > 0 {
		fmt.Fprintf(w, "\nfresh enters (one enter script each), pipelines of %d; Redis core = Redis CPU seconds ÷ wall seconds\n", r.Pipeline)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "conns\tenters\tseconds\tenters/s\tRedis core\tRedis CPU µs/enter\texec µs/enter\terrors\t")
		for _, s := range r.Steps {
			fmt.Fprintf(tw, "%d\t%s\t%.1f\t%s\t%.2f\t%.1f\t%.1f\t%d\t\n", s.Conns, report.Commas(int(s.Enters)), s.Seconds, report.Commas(int(s.Rate+0.5)),
				s.RedisCore, s.CPUPerEnter, s.ExecPerEnter, s.Errors)
		}
		tw.Flush()
		if p := r.Peak; p != nil {
			fmt.Fprintf(w, "ceiling: %s enters/s at %d connections (Redis core %.2f)\n", report.Commas(int(p.Rate+0.5)), p.Conns, p.RedisCore)
		}
	}
	if len(r.Costs) > 0 {
		r.printCosts(w)
	}
	if f := r.Fill; f != nil {
		fmt.Fprintf(w, "\nmemory: %s users waiting in one room (ids of %d bytes), entered in %.1f s: used_memory +%s B = %.0f B per waiting user\n",
			report.Commas(f.Users), f.IDBytes, f.Seconds, report.Commas(int(f.Bytes)), f.PerUser)
		fmt.Fprintf(w, "MEMORY USAGE: queue %s B (%.0f B/user), seen %s B (%.0f B/user)\n", report.Commas(int(f.Keys["queue"])), float64(f.Keys["queue"])/float64(f.Users),
			report.Commas(int(f.Keys["seen"])), float64(f.Keys["seen"])/float64(f.Users))
	}
}

func (r *ceilingReport) printCosts(w io.Writer) {
	fmt.Fprintf(w, "\nunit costs, %s users waiting in the room; CPU = Redis used_cpu per operation (socket I/O included), exec = commandstats usec of its own command\n", report.Commas(r.Base))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "kind\tper\tops\tdepth\tCPU µs\texec µs\tcommands\tby command (per op)")
	for _, c := range r.Costs {
		depth := fmt.Sprint(c.Depth)
		if c.Depth == 0 {
			depth = "batched"
		}
		cmds, by := fmt.Sprintf("%.2f", c.Commands), byCommandString(c.ByCommand)
		if c.Derived {
			cmds, by, depth = "—", "(derived)", "—"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%.2f\t%s\t%s\n", c.Kind, c.Per, report.Commas(c.Ops), depth, c.CPU, c.Exec, cmds, by)
	}
	tw.Flush()
}

func byCommandString(cs []measure.CommandCalls) string {
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s %.2f", c.Name, c.PerReq))
	}
	return strings.Join(parts, ", ")
}
