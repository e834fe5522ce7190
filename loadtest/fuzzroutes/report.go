package fuzzroutes

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Report is the fuzz-routes scenario's result.
type Report struct {
	Scenario  string   `json:"scenario"`
	Seed      uint64   `json:"seed"`
	Cases     int      `json:"casesPerPair"`
	Workers   int      `json:"workersPerPair"`
	Protect   string   `json:"protect"`
	Origins   []string `json:"origins"` // "name: router"
	SelfCheck string   `json:"selfCheck"`
	*Result
	RPS float64 `json:"requestsPerSecond"`
	// Show is how many reaches are printed per pair (all are in the JSON).
	Show int `json:"-"`
}

// Print writes the tables: answers per pair, then the reaches with the
// bytes sent.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "fuzz-routes: seed %d, %d cases per pair, %d workers per pair, WR_PROTECT=%q\n", r.Seed, r.Cases, r.Workers, r.Protect)
	for _, o := range r.Origins {
		fmt.Fprintln(w, "  origin", o)
	}
	fmt.Fprintln(w, "self-check:", r.SelfCheck)
	if r.Result == nil {
		return
	}
	fmt.Fprintf(w, "%d requests in %.1f s: %.0f requests/s%s\n\n", r.Requests, r.Seconds, r.RPS, map[bool]string{true: " (interrupted)"}[r.Interrupted])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "front\torigin\tcases\t400 refused\t303/403 queued\t2xx/404 forwarded\tother\tno answer\tREACHES\tother statuses\t")
	for _, p := range r.Pairs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n", p.Front, p.Origin, p.Cases, p.Refused, p.Queued, p.Forwarded, p.Other, p.Errors, p.Reaches, otherStatuses(p.Status))
	}
	tw.Flush()
	for _, p := range r.Pairs {
		for _, e := range p.ErrorSamples {
			fmt.Fprintf(w, "  no answer, %s → %s: %s\n", p.Front, p.Origin, e)
		}
	}
	fmt.Fprintf(w, "\nREACHES: %d (a protected handler ran without a pass)\n", len(r.Reaches))
	shown := map[string]int{}
	for _, rc := range r.Reaches {
		key := rc.Front + "/" + rc.Origin
		if shown[key]++; r.Show > 0 && shown[key] > r.Show {
			continue
		}
		if rc.Index < 0 {
			fmt.Fprintf(w, "- ? → %s, handler %q routed %s %q: a record naming no case of this campaign (%q): a request from elsewhere\n", rc.Origin, rc.Record.Handler, rc.Record.Method, rc.Record.Target, rc.Record.Case)
			continue
		}
		fmt.Fprintf(w, "- %s → %s, handler %q routed %s %q (case %d: %s)\n  %q\n", rc.Front, rc.Origin, rc.Record.Handler, rc.Record.Method, rc.Record.Target, rc.Index, rc.Case.Note, rc.Bytes)
	}
	for key, n := range shown {
		if r.Show > 0 && n > r.Show {
			fmt.Fprintf(w, "  (%s: %d more reaches in the JSON report, --out)\n", key, n-r.Show)
		}
	}
}

// otherStatuses lists the statuses outside 200, 303, 400, 403 and 404.
func otherStatuses(m map[int]int) string {
	var keys []int
	for k := range m {
		switch k {
		case 200, 303, 400, 403, 404:
		default:
			keys = append(keys, k)
		}
	}
	sort.Ints(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, strconv.Itoa(k)+":"+strconv.Itoa(m[k]))
	}
	return strings.Join(parts, " ")
}
