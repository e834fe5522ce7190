package measure

import (
	"strings"
	"testing"
)

// infoText is INFO stats, cpu and commandstats as Redis 7 answers them
// (abridged, CRLF line ends).
const infoText = "# Stats\r\ntotal_connections_received:12\r\ntotal_commands_processed:1500\r\ninstantaneous_ops_per_sec:3\r\n" +
	"total_reads_processed:640\r\ntotal_writes_processed:630\r\n\r\n" +
	"# CPU\r\nused_cpu_sys:1.250000\r\nused_cpu_user:2.500000\r\nused_cpu_sys_children:0.000000\r\n\r\n" +
	"# Commandstats\r\ncmdstat_evalsha:calls=400,usec=36000,usec_per_call=90.00,rejected_calls=0,failed_calls=0\r\n" +
	"cmdstat_hget:calls=900,usec=300,usec_per_call=0.33,rejected_calls=0,failed_calls=0\r\n" +
	"cmdstat_info:calls=7,usec=700,usec_per_call=100.00,rejected_calls=0,failed_calls=0\r\n"

func TestParseRedisInfo(t *testing.T) {
	c, err := parseRedisInfo(infoText)
	if err != nil {
		t.Fatal(err)
	}
	if c.Reads != 640 || c.Commands != 1500 || c.CPU != 3.75 || c.ByCommand["evalsha"] != 400 || c.ByCommand["hget"] != 900 || c.ByCommand["info"] != 7 || len(c.ByCommand) != 3 {
		t.Fatalf("got %+v, want 640 reads, 1500 commands, 3.75 s CPU (sys + user, not children), evalsha 400, hget 900, info 7", c)
	}
	if c.Usec["evalsha"] != 36000 || c.Usec["hget"] != 300 || c.Memory != 0 {
		t.Fatalf("usec %v, memory %d: want evalsha 36000, hget 300 µs, memory 0 (no memory section)", c.Usec, c.Memory)
	}
	m, err := parseRedisInfo(infoText + "# Memory\r\nused_memory:1048576\r\nused_memory_human:1.00M\r\n")
	if err != nil || m.Memory != 1048576 {
		t.Fatalf("used_memory %d (%v), want 1048576", m.Memory, err)
	}
	for _, bad := range []string{
		"# CPU\r\nused_cpu_sys:1\r\nused_cpu_user:2\r\n",                             // no stats section
		strings.Replace(infoText, "calls=900", "calls=x", 1),                         // unreadable calls
		strings.Replace(infoText, "cmdstat_hget:calls=900", "cmdstat_hget:n=900", 1), // no calls=
	} {
		if _, err := parseRedisInfo(bad); err == nil {
			t.Errorf("parseRedisInfo(%q) accepted", bad)
		}
	}
}

// TestCostBetween: 1,000 polls over which Redis read 120 requests from
// its clients and processed 250 commands (scripts' own calls included),
// 100 of them scripts (evalsha), in 0.05 s of its CPU: 0.12 round trips,
// 0.25 commands, 0.1 scripts and 50 µs of Redis CPU per poll; commands
// listed by calls, ties by name.
func TestCostBetween(t *testing.T) {
	before := RedisCounters{Reads: 80, Commands: 1000, CPU: 2, ByCommand: map[string]int64{"evalsha": 10, "hget": 5, "get": 1}}
	after := RedisCounters{Reads: 200, Commands: 1250, CPU: 2.05, ByCommand: map[string]int64{"evalsha": 110, "hget": 155, "get": 1, "zrank": 100, "set": 100}}
	c := RedisCostBetween(before, after, 1000, 3)
	if c.RoundTrips != 120 || c.RoundTripsPerReq != 0.12 || c.Commands != 250 || c.Scripts != 100 || c.CommandsPerReq != 0.25 || c.ScriptsPerReq != 0.1 {
		t.Fatalf("got %+v, want 120 round trips (0.12/req), 250 commands (0.25/req), 100 scripts (0.1/req)", c)
	}
	if d := c.CPUPerReqMicros - 50; d > 1e-6 || d < -1e-6 {
		t.Fatalf("Redis CPU per request %v µs, want 50", c.CPUPerReqMicros)
	}
	want := []CommandCalls{{"hget", 150, 0.15}, {"evalsha", 100, 0.1}, {"set", 100, 0.1}}
	if len(c.TopCommands) != len(want) {
		t.Fatalf("top commands %+v, want %+v", c.TopCommands, want)
	}
	for i := range want {
		if c.TopCommands[i] != want[i] {
			t.Fatalf("top commands %+v, want %+v", c.TopCommands, want)
		}
	}
	if s := c.String(); !strings.Contains(s, "0.120 round trips/req, 0.250 commands/req (0.100 scripts), Redis CPU 50.0 µs/req") || !strings.Contains(s, "hget 0.150, evalsha 0.100, set 0.100") {
		t.Fatalf("String() = %q", s)
	}
	if z := RedisCostBetween(before, after, 0, 3); z.CommandsPerReq != 0 || z.CPUPerReqMicros != 0 || z.Commands != 250 {
		t.Fatalf("no requests: %+v, want totals only", z)
	}
}
