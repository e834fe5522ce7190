package rooms

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/report"
	"waitingroom/loadtest/internal/scenario"
	"waitingroom/loadtest/internal/smoke"
)

// TestSmokeRoomsTwoInstances runs the scenario small against two
// instances on one Redis: every room is created, both idle windows have
// Redis's and each instance's figures, every user's READY is timed in
// both phases, and the run's rooms are deleted — or, on a server without
// DELETE /admin/rooms/{room}, all still there and the report says so.
// Counts and presence only, never timings.
func TestSmokeRoomsTwoInstances(t *testing.T) {
	ss := smoke.StartInstances(t, 2, 1, nil)
	const rooms, users = 20, 6
	var o scenario.Options
	rep, err := Run(t.Context(), &o, []string{
		"--instances", ss[0].Base + "=" + ss[0].Admin + "," + ss[1].Base + "=" + ss[1].Admin,
		"--admin-token", smoke.AdminToken, "--timeout", "60s", "--redis", ss[0].Redis,
		"--rooms", strconv.Itoa(rooms), "--users", strconv.Itoa(users), "--window", "500ms", "--settle", "100ms", "--gap", "20ms", "--conns", "8",
		"--mint-tokens", "--jwt-secret", smoke.Secret, "--prefix", "rbtest"})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.(*roomsReport)
	smoke.LogOnFailure(t, r)
	if r.Interrupted || r.Lone == nil || r.Among == nil || r.Create == nil || r.Cleanup == nil {
		t.Fatalf("report %+v: want both phases, the creation and the cleanup", r)
	}
	if c := r.Create; c.Created != rooms || c.Failed != 0 || r.Among.IdleRooms != rooms || r.Lone.IdleRooms != 0 {
		t.Errorf("created %d, failed %d %v, among %d idle rooms; want %d, 0, %d", c.Created, c.Failed, c.Failures, r.Among.IdleRooms, rooms, rooms)
	}
	for name, p := range map[string]*phaseResult{"lone": r.Lone, "among": r.Among} {
		w := p.Window
		if w == nil || w.Seconds <= 0 || w.Redis == nil || w.RedisError != "" {
			t.Fatalf("%s window %+v: want Redis's counters over it", name, w)
		}
		// Two admission loops tick every 100 ms: Redis runs commands.
		if w.CommandsPerSecond <= 0 || w.RedisCores < 0 || len(w.Redis.TopCommands) == 0 {
			t.Errorf("%s: %.1f commands/s, %.3f cores, top %v", name, w.CommandsPerSecond, w.RedisCores, w.Redis.TopCommands)
		}
		if len(w.Instances) != 2 {
			t.Fatalf("%s: %d instances' CPU, want 2", name, len(w.Instances))
		}
		for i, ic := range w.Instances {
			if ic.Error != "" || ic.Cores < 0 || ic.Admin != ss[i].Admin {
				t.Errorf("%s: instance %d %+v: want its CPU from %s", name, i+1, ic, ss[i].Admin)
			}
		}
		rr := p.Ready
		if rr == nil || rr.Users != users || rr.Measured != users || rr.Failed != 0 || rr.Latency.Count != users || rr.Left != users {
			t.Fatalf("%s READY %+v: want all %d users measured and gone again", name, rr, users)
		}
		if rr.Latency.P50 <= 0 || rr.Latency.P50 > rr.Latency.P90 || rr.Latency.P90 > rr.Latency.Max {
			t.Errorf("%s READY latency %+v: want 0 < p50 ≤ p90 ≤ max", name, rr.Latency)
		}
		if got := rr.ByWay["enter"] + rr.ByWay["stream"]; got != users {
			t.Errorf("%s: READY seen in %v, want %d in all", name, rr.ByWay, users)
		}
	}
	if r.PerIdleRoom == nil || len(r.PerIdleRoom.InstanceCPUMicros) != 2 || slices.Contains(r.PerIdleRoom.InstanceKnown, false) {
		t.Errorf("per idle room %+v: want Redis's and both instances' figures", r.PerIdleRoom)
	}
	if r.ReadyP50Ratio <= 0 || r.ReadyP90Ratio <= 0 {
		t.Errorf("READY ratios %v, %v: want both", r.ReadyP50Ratio, r.ReadyP90Ratio)
	}

	left := roomsNamed(t, ss[1], "rbtest-")
	var b strings.Builder
	r.Print(&b)
	out := b.String()
	switch c := r.Cleanup; {
	case c.Rooms != rooms+1:
		t.Errorf("cleanup of %d rooms, want %d (the idle ones and the busy one)", c.Rooms, rooms+1)
	case c.Offered:
		if c.Deleted != rooms+1 || c.Left != 0 || len(left) != 0 {
			t.Errorf("cleanup %+v, rooms still there %v: want all deleted", c, left)
		}
	default:
		if c.Left != rooms+1 || len(left) != rooms+1 || !strings.Contains(out, "no DELETE /admin/rooms/{room}") {
			t.Errorf("cleanup %+v, %d rooms still there: without DELETE all %d stay and the report says so", c, len(left), rooms+1)
		}
	}
	for _, want := range []string{"Redis commands/s", "instance 2 CPU (cores)", "READY p50", "per idle room", "READY among ÷ lone", "Redis's top commands"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}

	// The report is valid JSON (no NaN), as --out writes it.
	path := filepath.Join(t.TempDir(), "rooms.json")
	if err := report.WriteJSON(path, r); err != nil {
		t.Fatal(err)
	}
}

// roomsNamed lists the rooms of s whose names start with prefix.
func roomsNamed(t *testing.T, s smoke.Server, prefix string) []string {
	t.Helper()
	var out struct {
		Rooms []struct {
			Room string `json:"room"`
		} `json:"rooms"`
	}
	a := &client.Admin{Base: s.Admin, Token: smoke.AdminToken, HTTP: http.DefaultClient}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, a.Base+"/admin/rooms", nil)
	req.Header.Set("Authorization", "Bearer "+a.Token)
	resp, err := a.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range out.Rooms {
		if strings.HasPrefix(r.Room, prefix) {
			names = append(names, r.Room)
		}
	}
	return names
}

func TestParseInstances(t *testing.T) {
	for _, tc := range []struct {
		list string
		want []instance
		bad  bool
	}{
		{"", []instance{{"http://b", "http://a"}}, false},
		{"http://127.0.0.1:1=http://127.0.0.1:2/", []instance{{"http://127.0.0.1:1", "http://127.0.0.1:2"}}, false},
		{" http://x:1=http://x:2 , https://y=https://y:9", []instance{{"http://x:1", "http://x:2"}, {"https://y", "https://y:9"}}, false},
		{"http://x:1", nil, true},
		{"http://x:1=", nil, true},
		{"x:1=http://x:2", nil, true},
		{"http://x:1=http://x:2,", nil, true},
	} {
		got, err := parseInstances(tc.list, "http://b", "http://a")
		if tc.bad {
			if err == nil {
				t.Errorf("parseInstances(%q) = %v, want an error", tc.list, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parseInstances(%q) = %v, %v; want %v", tc.list, got, err, tc.want)
		}
	}
}
