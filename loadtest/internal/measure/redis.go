package measure

import (
	"bufio"
	"cmp"
	"context"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Reading what a run cost Redis: with --redis URL the tool reads Redis's
// own counters (INFO stats, cpu and commandstats, one call) before and
// after each measured phase and reports the difference per request. Redis
// counts for everyone: on a Redis shared with other work the figures
// include it (the report says so).
//
//	round trips  total_reads_processed: the read events on client sockets,
//	             about one per command sent alone or per pipeline (a burst
//	             of commands that arrives at once is one read)
//	commands     total_commands_processed: every command, the ones a
//	             script runs included
//	scripts      evalsha + eval calls (commandstats)
//	CPU          used_cpu_sys + used_cpu_user, Redis's own CPU time
//	by command   commandstats calls per command (scripts' own calls
//	             included), and the µs Redis spent executing each (usec)
//	memory       used_memory (INFO memory), bytes

// RedisCounters is one read of Redis's counters.
type RedisCounters struct {
	Reads     int64            // total_reads_processed
	Commands  int64            // total_commands_processed
	CPU       float64          // used_cpu_sys + used_cpu_user, seconds
	ByCommand map[string]int64 // commandstats calls by command name
	Usec      map[string]int64 // commandstats usec (execution time) by command name
	Memory    int64            // used_memory, bytes (0 when INFO memory was not read)
}

// parseRedisInfo reads the counters from the text of INFO stats, cpu and
// commandstats. A section missing is an error: the figures would be wrong.
func parseRedisInfo(text string) (RedisCounters, error) {
	c := RedisCounters{ByCommand: map[string]int64{}, Usec: map[string]int64{}}
	var haveReads, haveCommands, haveSys, haveUser bool
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		key, val, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		var err error
		switch {
		case key == "total_reads_processed":
			c.Reads, err = strconv.ParseInt(val, 10, 64)
			haveReads = true
		case key == "total_commands_processed":
			c.Commands, err = strconv.ParseInt(val, 10, 64)
			haveCommands = true
		case key == "used_cpu_sys" || key == "used_cpu_user":
			var f float64
			f, err = strconv.ParseFloat(val, 64)
			c.CPU += f
			haveSys, haveUser = haveSys || key == "used_cpu_sys", haveUser || key == "used_cpu_user"
		case key == "used_memory":
			c.Memory, err = strconv.ParseInt(val, 10, 64)
		case strings.HasPrefix(key, "cmdstat_"):
			err = c.parseCommandStat(strings.TrimPrefix(key, "cmdstat_"), val)
		}
		if err != nil {
			return c, fmt.Errorf("redis INFO: %q: %w", line, err)
		}
	}
	if !haveReads || !haveCommands || !haveSys || !haveUser {
		return c, fmt.Errorf("redis INFO: want total_reads_processed, total_commands_processed, used_cpu_sys and used_cpu_user")
	}
	return c, nil
}

// parseCommandStat reads one commandstats line's value, e.g.
// "calls=2,usec=15,usec_per_call=7.50,...": calls is required, usec kept
// when present.
func (c *RedisCounters) parseCommandStat(name, val string) error {
	calls, rest, _ := strings.Cut(val, ",")
	n, found := strings.CutPrefix(calls, "calls=")
	if !found {
		return fmt.Errorf("redis INFO: cmdstat_%s: no calls=", name)
	}
	var err error
	if c.ByCommand[name], err = strconv.ParseInt(n, 10, 64); err != nil {
		return fmt.Errorf("redis INFO: cmdstat_%s: %w", name, err)
	}
	usec, _, _ := strings.Cut(rest, ",")
	if u, ok := strings.CutPrefix(usec, "usec="); ok {
		if c.Usec[name], err = strconv.ParseInt(u, 10, 64); err != nil {
			return fmt.Errorf("redis INFO: cmdstat_%s: %w", name, err)
		}
	}
	return nil
}

// RedisCost is what one phase cost Redis, in all and per request.
type RedisCost struct {
	Requests         int            `json:"requests"` // the phase's requests answered
	RoundTrips       int64          `json:"roundTrips"`
	RoundTripsPerReq float64        `json:"roundTripsPerRequest"`
	Commands         int64          `json:"commands"`
	CommandsPerReq   float64        `json:"commandsPerRequest"`
	Scripts          int64          `json:"scripts"`
	ScriptsPerReq    float64        `json:"scriptsPerRequest"`
	CPUSeconds       float64        `json:"cpuSeconds"`
	CPUPerReqMicros  float64        `json:"cpuPerRequestUs"`
	TopCommands      []CommandCalls `json:"topCommands"` // most called, scripts' own calls included
}

// CommandCalls is one command's calls in a phase.
type CommandCalls struct {
	Name   string  `json:"name"`
	Calls  int64   `json:"calls"`
	PerReq float64 `json:"perRequest"`
}

// RedisCostBetween is what happened between two reads, over requests requests
// (per-request figures are 0 when there were none); top is how many
// commands to list.
func RedisCostBetween(before, after RedisCounters, requests, top int) RedisCost {
	r := RedisCost{Requests: requests, RoundTrips: after.Reads - before.Reads, Commands: after.Commands - before.Commands, CPUSeconds: after.CPU - before.CPU}
	r.Scripts = after.ByCommand["evalsha"] - before.ByCommand["evalsha"] + after.ByCommand["eval"] - before.ByCommand["eval"]
	per := func(n float64) float64 {
		if requests == 0 {
			return 0
		}
		return n / float64(requests)
	}
	r.RoundTripsPerReq = per(float64(r.RoundTrips))
	r.CommandsPerReq, r.ScriptsPerReq = per(float64(r.Commands)), per(float64(r.Scripts))
	r.CPUPerReqMicros = per(r.CPUSeconds * 1e6)
	for name, n := range after.ByCommand {
		if d := n - before.ByCommand[name]; d > 0 {
			r.TopCommands = append(r.TopCommands, CommandCalls{Name: name, Calls: d, PerReq: per(float64(d))})
		}
	}
	slices.SortFunc(r.TopCommands, func(a, b CommandCalls) int {
		return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.Name, b.Name))
	})
	if len(r.TopCommands) > top {
		r.TopCommands = r.TopCommands[:top]
	}
	return r
}

// String is the cost on one line, e.g. "0.110 round trips/req, 0.150
// commands/req (0.003 scripts), Redis CPU 3.1 µs/req; by command …".
func (r RedisCost) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%.3f round trips/req, %.3f commands/req (%.3f scripts), Redis CPU %.1f µs/req",
		r.RoundTripsPerReq, r.CommandsPerReq, r.ScriptsPerReq, r.CPUPerReqMicros)
	for i, c := range r.TopCommands {
		if i == 0 {
			b.WriteString("; by command (scripts' own calls included): ")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %.3f", c.Name, c.PerReq)
	}
	return b.String()
}

// RedisStats reads a Redis's counters; nil when --redis was not given.
// URL is the flag's value ("" when built otherwise).
type RedisStats struct {
	Client *redis.Client
	URL    string
}

// RedisFlag registers --redis on fs; the returned func, called after
// parsing, connects (nil without --redis).
func RedisFlag(fs *flag.FlagSet) func() (*RedisStats, error) {
	url := fs.String("redis", "", "Redis URL (e.g. redis://127.0.0.1:6379/0): read its INFO counters before and after each measured server phase and report round trips, commands, scripts and Redis CPU per request")
	return func() (*RedisStats, error) {
		if *url == "" {
			return nil, nil
		}
		opt, err := redis.ParseURL(*url)
		if err != nil {
			return nil, fmt.Errorf("--redis: %w", err)
		}
		return &RedisStats{Client: redis.NewClient(opt), URL: *url}, nil
	}
}

// Read returns the counters now.
func (s *RedisStats) Read(ctx context.Context) (RedisCounters, error) {
	text, err := s.Client.Info(ctx, "stats", "cpu", "memory", "commandstats").Result()
	if err != nil {
		return RedisCounters{}, fmt.Errorf("redis INFO: %w", err)
	}
	return parseRedisInfo(text)
}

// Close closes the connection (nil-safe).
func (s *RedisStats) Close() {
	if s != nil {
		_ = s.Client.Close()
	}
}
