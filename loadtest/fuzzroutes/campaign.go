package fuzzroutes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Campaign is a set of cases sent through every pair of a stack.
type Campaign struct {
	// Tag names the campaign in the case ids (Fuzz-Case: tag.front.index);
	// it holds no ".".
	Tag string
	// N is the number of cases; At(i) is case i, for 0 <= i < N, the same
	// case for every pair and every call.
	N  int
	At func(i int) Case
	// Workers is the number of keep-alive connections per pair, each
	// sending its next case when the answer is read.
	Workers int
	Timeout time.Duration // per request
	// Progress, when set, is called every few seconds with the requests
	// answered so far, from a goroutine of the campaign's.
	Progress func(done int)
}

// Result is what a campaign saw.
type Result struct {
	Pairs       []*PairResult `json:"pairs"`
	Reaches     []Reach       `json:"reaches"`
	Requests    int           `json:"requests"`
	Seconds     float64       `json:"seconds"`
	Interrupted bool          `json:"interrupted"`
}

// PairResult counts the answers of one front door in front of one origin.
type PairResult struct {
	Front  string      `json:"front"`
	Origin string      `json:"origin"`
	Cases  int         `json:"cases"`
	Status map[int]int `json:"status"`
	// Refused (400), Queued (303, 403), Forwarded (2xx, 404), Other
	// statuses, Errors (no answer: closed, reset, timed out).
	Refused, Queued, Forwarded, Other, Errors int
	// ProtectedAnswers are answers whose body is the protected handlers'
	// "protected": the origins' records count as reaches, these confirm.
	ProtectedAnswers int      `json:"protectedAnswers"`
	ErrorSamples     []string `json:"errorSamples,omitempty"`
	Reaches          int      `json:"reaches"`
}

// Reach is a protected handler that ran for a case without a pass.
type Reach struct {
	Front  string `json:"front"`
	Origin string `json:"origin"`
	Index  int    `json:"index"` // the case's, -1 when the record names no case of the campaign
	Case   Case   `json:"case"`
	Bytes  string `json:"bytes"` // exactly what was sent
	Record Record `json:"record"`
}

// protectedBody is what the origins' protected handlers answer.
const protectedBody = "protected"

// Run sends every case of c through every pair, then reads the origins'
// records: each one of the campaign is a reach. It returns when every
// case is answered or ctx ends (Interrupted); its goroutines have ended.
func (s *Stack) Run(ctx context.Context, c Campaign) (*Result, error) {
	if c.Workers < 1 || c.N < 0 || strings.Contains(c.Tag, ".") || c.Tag == "" {
		return nil, errors.New("fuzzroutes: a campaign needs a tag without \".\" and at least one worker")
	}
	if _, err := s.Records(); err != nil { // what came before is not this campaign's
		return nil, err
	}
	res := &Result{}
	var done atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, p := range s.Pairs {
		pr := &PairResult{Front: p.Front, Origin: p.Origin, Status: map[int]int{}}
		res.Pairs = append(res.Pairs, pr)
		var next atomic.Int64
		var mu sync.Mutex
		for range c.Workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				local := s.work(ctx, c, p, &next, &done)
				mu.Lock()
				pr.merge(local)
				mu.Unlock()
			}()
		}
	}
	stop := make(chan struct{})
	var pwg sync.WaitGroup
	if c.Progress != nil {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			t := time.NewTicker(5 * time.Second)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					c.Progress(int(done.Load()))
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	pwg.Wait()
	res.Seconds = time.Since(start).Seconds()
	res.Interrupted = ctx.Err() != nil
	for _, pr := range res.Pairs {
		res.Requests += pr.Cases
	}
	return res, s.collect(c, res)
}

// work sends the pair's cases, the next free index each time, until none
// is left or ctx ends; it returns its counts.
func (s *Stack) work(ctx context.Context, c Campaign, p Pair, next, done *atomic.Int64) *PairResult {
	local := &PairResult{Status: map[int]int{}}
	k := &conn{addr: p.Addr, timeout: c.Timeout}
	defer k.close()
	for ctx.Err() == nil {
		i := int(next.Add(1) - 1)
		if i >= c.N {
			break
		}
		cs := c.At(i)
		a, err := k.roundTrip(cs.Wire(p.Addr, caseID(c.Tag, p.Front, i)), cs.Method)
		local.Cases++
		done.Add(1)
		if err != nil {
			local.Errors++
			if len(local.ErrorSamples) < 3 {
				local.ErrorSamples = append(local.ErrorSamples, fmt.Sprintf("case %d %s %q: %v", i, cs.Method, cs.Target, err))
			}
			continue
		}
		local.count(a)
	}
	return local
}

func (pr *PairResult) count(a answer) {
	pr.Status[a.status]++
	switch {
	case a.status == 400:
		pr.Refused++
	case a.status == 303 || a.status == 403:
		pr.Queued++
	case a.status/100 == 2 || a.status == 404:
		pr.Forwarded++
	default:
		pr.Other++
	}
	if a.body == protectedBody {
		pr.ProtectedAnswers++
	}
}

func (pr *PairResult) merge(o *PairResult) {
	pr.Cases += o.Cases
	for k, v := range o.Status {
		pr.Status[k] += v
	}
	pr.Refused += o.Refused
	pr.Queued += o.Queued
	pr.Forwarded += o.Forwarded
	pr.Other += o.Other
	pr.Errors += o.Errors
	pr.ProtectedAnswers += o.ProtectedAnswers
	for _, e := range o.ErrorSamples {
		if len(pr.ErrorSamples) < 3 {
			pr.ErrorSamples = append(pr.ErrorSamples, e)
		}
	}
}

func caseID(tag, front string, i int) string { return tag + "." + front + "." + strconv.Itoa(i) }

// collect reads the records the campaign left: every one is a reach, with
// the case's bytes when its id is the campaign's.
func (s *Stack) collect(c Campaign, res *Result) error {
	recs, err := s.Records()
	byPair := map[[2]string]*PairResult{}
	for _, pr := range res.Pairs {
		byPair[[2]string{pr.Front, pr.Origin}] = pr
	}
	hosts := map[[2]string]string{}
	for _, p := range s.Pairs {
		hosts[[2]string{p.Front, p.Origin}] = p.Addr
	}
	for _, o := range Origins { // report order
		for _, r := range recs[o.Name] {
			rc := Reach{Origin: o.Name, Index: -1, Record: r}
			parts := strings.Split(r.Case, ".")
			if len(parts) == 3 && parts[0] == c.Tag {
				if i, err := strconv.Atoi(parts[2]); err == nil && i >= 0 && i < c.N {
					rc.Front, rc.Index, rc.Case = parts[1], i, c.At(i)
					rc.Bytes = string(rc.Case.Wire(hosts[[2]string{rc.Front, o.Name}], r.Case))
				}
			}
			if pr := byPair[[2]string{rc.Front, o.Name}]; pr != nil {
				pr.Reaches++
			}
			res.Reaches = append(res.Reaches, rc)
		}
	}
	order := map[string]int{}
	for i, f := range Fronts {
		order[f] = i
	}
	slices.SortStableFunc(res.Reaches, func(a, b Reach) int {
		return cmp.Or(cmp.Compare(order[a.Front], order[b.Front]), cmp.Compare(a.Index, b.Index))
	})
	return err
}
