package fuzzroutes_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"waitingroom/loadtest/fuzzroutes"
	"waitingroom/loadtest/internal/smoke"
	"waitingroom/queue/queuetest"
)

func TestMain(m *testing.M) { os.Exit(smoke.Main(m)) }

// startStack runs every origin behind every front door, on a Redis of
// its own, and proves it can see a reach (SelfCheck). A runtime that is
// missing fails the test, never skips it: make test installs them all.
func startStack(tb testing.TB) *fuzzroutes.Stack {
	tb.Helper()
	if testing.Short() {
		tb.Skip("-short: no extra processes")
	}
	var progress strings.Builder
	st, err := fuzzroutes.Start(tb.Context(), fuzzroutes.Config{
		Origins: fuzzroutes.OriginNames(), Fronts: fuzzroutes.Fronts,
		RedisURL: queuetest.Server(tb), ServerBin: smoke.Command(tb), Log: &progress,
	})
	if err != nil {
		tb.Fatalf("%v\n%s", err, progress.String())
	}
	tb.Cleanup(func() {
		if err := st.Close(); err != nil {
			tb.Error(err)
		}
	})
	if err := st.SelfCheck(); err != nil {
		tb.Fatal(err)
	}
	return st
}

// boundedCases is how many generated cases the bounded corpus adds to the
// probes, per pair.
const boundedCases = 300

// boundedSeed is the bounded corpus's seed.
const boundedSeed = 7

// TestBoundedCorpus sends the probes (each bypass the judge was shown to
// miss, and every regression the campaign found) and boundedCases
// generated cases through every front door to every origin: no protected
// handler may run without a pass.
func TestBoundedCorpus(t *testing.T) {
	st := startStack(t)
	n := len(fuzzroutes.Probes) + boundedCases
	res, err := st.Run(t.Context(), fuzzroutes.Campaign{Tag: "t", N: n, At: fuzzroutes.At(boundedSeed), Workers: 2, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Pairs {
		if p.Cases != n {
			t.Errorf("%s → %s: %d cases sent, want %d", p.Front, p.Origin, p.Cases, n)
		}
		if p.Errors > n/10 {
			t.Errorf("%s → %s: %d of %d cases unanswered (%v)", p.Front, p.Origin, p.Errors, n, p.ErrorSamples)
		}
	}
	reportReaches(t, res.Reaches)
}

// reportReaches fails t with every reach, the bytes sent with each, and
// a count per front door and origin.
func reportReaches(t *testing.T, reaches []fuzzroutes.Reach) {
	t.Helper()
	if len(reaches) == 0 {
		return
	}
	per := map[string]int{}
	var b strings.Builder
	for _, r := range reaches {
		per[r.Front+" → "+r.Origin]++
		fmt.Fprintf(&b, "%s → %s: handler %q ran for %s %q (%s):\n\t%q\n", r.Front, r.Origin, r.Record.Handler, r.Record.Method, r.Record.Target, r.Case.Note, r.Bytes)
	}
	t.Errorf("%d protected handlers ran without a pass (%v):\n%s", len(reaches), per, b.String())
}

// FuzzRoutes sends fuzzer-made requests through every front door to
// every origin and fails on any reach. Its seed corpus is the probes.
// Run it with one worker (each worker process starts a stack):
//
//	go test ./loadtest/fuzzroutes -run '^$' -fuzz FuzzRoutes -parallel 1
func FuzzRoutes(f *testing.F) {
	for _, c := range fuzzroutes.Probes {
		ct, override := "", ""
		for _, h := range c.Header {
			name, value, _ := strings.Cut(h, ": ")
			switch strings.ToLower(name) {
			case "content-type":
				ct = value
			case "x-http-method-override":
				override = value
			}
		}
		f.Add(c.Method, c.Target, ct, c.Body, override)
	}
	st := startStack(f)
	f.Fuzz(func(t *testing.T, method, target, contentType, body, override string) {
		c, ok := fuzzCase(method, target, contentType, body, override)
		if !ok {
			t.Skip("not one well-framed HTTP/1.1 request")
		}
		res, err := st.Run(t.Context(), fuzzroutes.Campaign{Tag: "f", N: 1, At: func(int) fuzzroutes.Case { return c }, Workers: 1, Timeout: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		reportReaches(t, res.Reaches)
	})
}

// fuzzMethods are the methods a fuzz case may have: those a route may
// protect that answer like any request (CONNECT opens a tunnel, TRACE
// echoes).
var fuzzMethods = []string{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"}

// fuzzCase is the fuzzer's input as a case, when it frames one request:
// one of fuzzMethods, a target and header values without spaces or line
// breaks (those would make another request line or header), a body of at
// most 4 KiB.
func fuzzCase(method, target, contentType, body, override string) (fuzzroutes.Case, bool) {
	if !slices.Contains(fuzzMethods, method) || target == "" || strings.ContainsAny(target, " \r\n\t\x00") || len(target) > 2048 ||
		strings.ContainsAny(contentType+override, "\r\n\x00") || len(body) > 4<<10 {
		return fuzzroutes.Case{}, false
	}
	c := fuzzroutes.Case{Method: method, Target: target, Body: body, Note: "fuzz"}
	if contentType != "" {
		c.Header = append(c.Header, "Content-Type: "+contentType)
	}
	if override != "" {
		c.Header = append(c.Header, "X-HTTP-Method-Override: "+override)
	}
	return c, true
}
