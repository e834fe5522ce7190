package rooms

import (
	"context"
	"fmt"
	"os"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/pace"
)

// topCommands is how many of Redis's commands the report lists.
const topCommands = 8

// window is what one idle window cost: Redis (with --redis) and each
// instance, per second of wall time.
type window struct {
	Seconds float64 `json:"seconds"`
	// Redis is Redis's counters over the window (nil without --redis, or
	// when INFO could not be read: RedisError says why). Its per-request
	// figures are 0: an idle window has no requests.
	Redis             *measure.RedisCost `json:"redis,omitempty"`
	RedisError        string             `json:"redisError,omitempty"`
	CommandsPerSecond float64            `json:"redisCommandsPerSecond"`
	RedisCores        float64            `json:"redisCores"` // Redis CPU seconds ÷ wall seconds
	Instances         []instanceCPU      `json:"instances"`
}

// instanceCPU is one instance's CPU over a window, from its
// process_cpu_seconds_total; Error says why it is unknown.
type instanceCPU struct {
	Admin string  `json:"admin"`
	Cores float64 `json:"cores"`
	Error string  `json:"error,omitempty"`
}

// cpuRead is one read of an instance's CPU counter and when it was taken.
type cpuRead struct {
	cpu float64
	at  time.Time
	err string
}

// idleWindow reads Redis's counters and every instance's CPU, waits
// --window, and reads them again.
func (r *roomsRun) idleWindow() *window {
	w := &window{}
	ctx := r.ctx
	var before measure.RedisCounters
	var redisErr error
	if r.cfg.rs != nil {
		before, redisErr = r.cfg.rs.Read(ctx)
	}
	cpu0 := r.readCPU(ctx)
	start := time.Now()
	fmt.Fprintf(os.Stderr, "rooms: idle window of %v\n", r.cfg.window)
	if !pace.Sleep(ctx, r.cfg.window) {
		return w // interrupted: nothing measured
	}
	cpu1 := r.readCPU(ctx)
	w.Seconds = time.Since(start).Seconds()
	if r.cfg.rs != nil && redisErr == nil {
		var after measure.RedisCounters
		if after, redisErr = r.cfg.rs.Read(ctx); redisErr == nil {
			secs := time.Since(start).Seconds()
			c := measure.RedisCostBetween(before, after, 0, topCommands)
			w.Redis = &c
			w.CommandsPerSecond, w.RedisCores = float64(c.Commands)/secs, c.CPUSeconds/secs
		}
	}
	if redisErr != nil {
		w.RedisError = redisErr.Error()
	}
	for i, in := range r.cfg.instances {
		ic := instanceCPU{Admin: in.Admin}
		a, b := cpu0[i], cpu1[i]
		switch {
		case a.err != "":
			ic.Error = a.err
		case b.err != "":
			ic.Error = b.err
		default:
			ic.Cores = (b.cpu - a.cpu) / b.at.Sub(a.at).Seconds()
		}
		w.Instances = append(w.Instances, ic)
	}
	return w
}

// readCPU reads every instance's process_cpu_seconds_total.
func (r *roomsRun) readCPU(ctx context.Context) []cpuRead {
	out := make([]cpuRead, len(r.admins))
	for i, adm := range r.admins {
		m, why := client.ScrapeNames(ctx, adm, measure.MetricCPU)
		out[i].at = time.Now()
		v, ok := m[measure.MetricCPU]
		switch {
		case why != "":
			out[i].err = why
		case !ok:
			out[i].err = measure.MetricCPU + " not exported"
		}
		out[i].cpu = v
	}
	return out
}
