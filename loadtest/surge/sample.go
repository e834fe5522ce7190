package surge

import (
	"context"
	"sync"
	"time"

	"waitingroom/internal/loop"
	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/measure"
)

// roomSample is one read of GET /admin/rooms/{room}.
type roomSample struct {
	At      time.Duration `json:"at_ns"` // after the run's start
	Active  int64         `json:"active"`
	Waiting int64         `json:"waiting"`
	Target  int64         `json:"targetActive"`
}

// procSample is one read of the server's process metrics.
type procSample struct {
	At         time.Duration `json:"at_ns"`
	RSSBytes   float64       `json:"rssBytes"`
	CPUSeconds float64       `json:"cpuSeconds"`
}

// maxSamples caps each sample series (a 5-minute run at 100 ms is 3,000).
const maxSamples = 100_000

// samples is what a roomSampler collected.
type samples struct {
	Room      []roomSample `json:"room"`
	RoomErrs  int          `json:"roomErrors"`
	Proc      []procSample `json:"process"`
	ProcErrs  int          `json:"processErrors"`
	FirstProc string       `json:"processError,omitempty"` // the first failure, if any
}

// roomSampler reads the admin API every so often, and /metrics every
// second, until its context ends.
type roomSampler struct {
	mu   sync.Mutex
	s    samples
	done chan struct{}
}

func startRoomSampler(ctx context.Context, adm *client.Admin, start time.Time, every time.Duration) *roomSampler {
	rs := &roomSampler{done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Go(func() {
		nowAndEveryCapped(ctx, every, func() {
			st, err := adm.RoomState(ctx)
			at := time.Since(start)
			rs.mu.Lock()
			if err != nil {
				if ctx.Err() == nil {
					rs.s.RoomErrs++
				}
			} else {
				rs.s.Room = append(rs.s.Room, roomSample{At: at, Active: st.Active, Waiting: st.Waiting, Target: st.TargetActive})
			}
			rs.mu.Unlock()
		})
	})
	wg.Go(func() {
		nowAndEveryCapped(ctx, time.Second, func() {
			m, errText := client.ScrapeMetrics(ctx, adm)
			at := time.Since(start)
			rss, ok1 := m[measure.MetricRSS]
			cpu, ok2 := m[measure.MetricCPU]
			rs.mu.Lock()
			switch {
			case ok1 && ok2:
				rs.s.Proc = append(rs.s.Proc, procSample{At: at, RSSBytes: rss, CPUSeconds: cpu})
			case ctx.Err() == nil:
				rs.s.ProcErrs++
				if rs.s.FirstProc == "" {
					rs.s.FirstProc = errText
					if errText == "" {
						rs.s.FirstProc = measure.MetricRSS + " or " + measure.MetricCPU + " not exported"
					}
				}
			}
			rs.mu.Unlock()
		})
	})
	go func() { wg.Wait(); close(rs.done) }()
	return rs
}

// nowAndEveryCapped calls fn at once, then every period, until ctx ends or
// after maxSamples calls.
func nowAndEveryCapped(ctx context.Context, period time.Duration, fn func()) {
	capped, stop := context.WithCancel(ctx)
	defer stop()
	calls := 0
	loop.NowAndEvery(capped, period, func(context.Context) {
		fn()
		if calls++; calls == maxSamples {
			stop()
		}
	})
}

// last is the latest room sample.
func (rs *roomSampler) last() (roomSample, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.s.Room) == 0 {
		return roomSample{}, false
	}
	return rs.s.Room[len(rs.s.Room)-1], true
}

// wait waits for the sampler to stop (its context ended) and returns what
// it collected.
func (rs *roomSampler) wait() samples {
	<-rs.done
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.s
}
