package fuzzroutes

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// selfProbes are the plain protected requests every origin must route to
// a protected handler and record, sent to it directly: a harness whose
// origins record nothing would find no reach and prove nothing.
var selfProbes = []Case{
	{Method: "GET", Target: "/checkout"},
	{Method: "GET", Target: "/checkout/pay"},
	{Method: "HEAD", Target: "/checkout/pay"},
	{Method: "GET", Target: "/checkout/a/b.css"},
	{Method: "POST", Target: "/api/orders", Header: []string{"Content-Type: application/json"}, Body: `{"item":1}`},
}

// SelfCheck proves the stack can see a reach: each origin, asked
// directly, runs and records its protected handler for each of
// selfProbes; through each front door an unprotected request reaches the
// origin's catch-all and the plain protected request is queued, leaving
// no record. One error lists every failure.
func (s *Stack) SelfCheck() error {
	var errs []error
	if _, err := s.Records(); err != nil {
		return err
	}
	n := 0
	for _, o := range Origins {
		ro := s.origins[o.Name]
		if ro == nil {
			continue
		}
		k := &conn{addr: ro.addr, timeout: 10 * time.Second}
		for _, c := range selfProbes {
			n++
			if c.Target == "/checkout" && o.Root != "" {
				c.Target = o.Root
			}
			a, err := k.roundTrip(c.Wire(ro.addr, "self.direct."+strconv.Itoa(n)), c.Method)
			if err != nil || a.status != 200 || (c.Method != "HEAD" && a.body != protectedBody) {
				errs = append(errs, fmt.Errorf("origin %s: %s %s directly: %d %q %v, want 200 %q", o.Name, c.Method, c.Target, a.status, a.body, err, protectedBody))
			}
		}
		k.close()
	}
	recs, err := s.Records()
	if err != nil {
		return err
	}
	n = 0
	for _, o := range Origins {
		if s.origins[o.Name] == nil {
			continue
		}
		got := map[string]bool{}
		for _, r := range recs[o.Name] {
			got[r.Case] = true
			if r.Pass {
				errs = append(errs, fmt.Errorf("origin %s: recorded a pass that was never sent: %+v", o.Name, r))
			}
		}
		for _, c := range selfProbes {
			n++
			if c.Target == "/checkout" && o.Root != "" {
				c.Target = o.Root
			}
			if !got["self.direct."+strconv.Itoa(n)] {
				errs = append(errs, fmt.Errorf("origin %s: %s %s left no record: its protected handlers are not seen", o.Name, c.Method, c.Target))
			}
		}
	}
	for _, p := range s.Pairs {
		k := &conn{addr: p.Addr, timeout: 10 * time.Second}
		open := Case{Method: "GET", Target: "/public/self-check"}
		if a, err := k.roundTrip(open.Wire(p.Addr, "self.open.0"), "GET"); err != nil || a.status != 200 || a.body != "open" {
			errs = append(errs, fmt.Errorf("%s → %s: GET %s: %d %q %v, want 200 \"open\" from the origin's catch-all", p.Front, p.Origin, open.Target, a.status, a.body, err))
		}
		for _, c := range selfProbes {
			if a, err := k.roundTrip(c.Wire(p.Addr, "self.queued.0"), c.Method); err != nil || (a.status != 303 && a.status != 403) {
				errs = append(errs, fmt.Errorf("%s → %s: %s %s without a pass: %d %q %v, want 303 or 403 (queued)", p.Front, p.Origin, c.Method, c.Target, a.status, a.body, err))
			}
		}
		k.close()
	}
	if recs, err = s.Records(); err != nil {
		return err
	}
	for name, rs := range recs {
		for _, r := range rs {
			errs = append(errs, fmt.Errorf("origin %s: a plain protected request without a pass reached it: %+v", name, r))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("fuzzroutes: self-check:\n%w", errors.Join(errs...))
	}
	return nil
}
