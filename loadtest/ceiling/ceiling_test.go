package ceiling

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"waitingroom/loadtest/internal/scenario"
	"waitingroom/queue/queuetest"
)

// TestCeilingSmoke runs the ceiling scenario small against a Redis of its
// own: every step enters without errors, every kind of cost is measured
// with the commands it is known to run, the fill counts its users, and
// the run leaves no key behind. Counts only, never timings.
func TestCeilingSmoke(t *testing.T) {
	url := queuetest.Server(t)
	var o scenario.Options
	rep, err := Run(context.Background(), &o, []string{"--redis", url, "--conns", "1,2", "--pipeline", "20",
		"--duration", "200ms", "--costs", "--ops", "200", "--waiting", "600", "--instances", "2", "--fill", "300"})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.(*ceilingReport)
	if len(r.Steps) != 2 || r.Peak == nil {
		t.Fatalf("steps %+v, peak %v: want 2 steps and a peak", r.Steps, r.Peak)
	}
	for _, s := range r.Steps {
		if s.Enters == 0 || s.Errors != 0 {
			t.Fatalf("step %+v: want enters and no errors", s)
		}
	}
	perOp := map[string]map[string]float64{}
	for _, c := range r.Costs {
		perOp[c.Kind] = map[string]float64{}
		for _, cc := range c.ByCommand {
			perOp[c.Kind][cc.Name] = cc.PerReq
		}
	}
	// Exact counts the scripts make per operation.
	for _, w := range []struct {
		kind, cmd string
		want      float64
	}{
		{"enter, new user", "incr", 1},
		{"enter, user already waiting", "incr", 0},
		{"event number (HGET; exact polls at the front)", "hget", 1},
		{"presence stamp", "zadd", 1},
		{"admission tick, 100 admitted", "zpopmin", 1},
		{"admission tick, 100 admitted", "zadd", 100},
		{"PUBLISH, 2 subscribed instances", "publish", 1},
		{"order: consume + release", "evalsha", 2},
	} {
		m, ok := perOp[w.kind]
		if !ok {
			t.Fatalf("kind %q not measured; got %v", w.kind, slices.Collect(maps.Keys(perOp)))
		}
		if got := m[w.cmd]; got != w.want {
			t.Errorf("%s: %s %.2f per op, want %.0f", w.kind, w.cmd, got, w.want)
		}
	}
	if len(r.Costs) != 15 {
		t.Errorf("%d costs, want 13 measured and 2 derived", len(r.Costs))
	}
	if r.Fill == nil || r.Fill.Users != 300 || r.Fill.Bytes <= 0 {
		t.Fatalf("fill %+v: want 300 users taking memory", r.Fill)
	}
	opt, _ := redis.ParseURL(url)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	if n, err := rdb.DBSize(context.Background()).Result(); err != nil || n != 0 {
		t.Fatalf("%d keys left (%v), want none", n, err)
	}
}

// TestChunksCoversAllOnce: every item reaches fn once, in parts of at most
// size, whatever the number of workers.
func TestChunksCoversAllOnce(t *testing.T) {
	items := ids("u", 0, 1003)
	var mu sync.Mutex
	seen := map[string]int{}
	err := chunks(context.Background(), items, 3, 10, func(_ context.Context, part []string) error {
		if len(part) > 10 {
			t.Errorf("part of %d, want at most 10", len(part))
		}
		mu.Lock()
		for _, u := range part {
			seen[u]++
		}
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range items {
		if seen[u] != 1 {
			t.Fatalf("%s seen %d times, want 1", u, seen[u])
		}
	}
}

func TestEscapeGlob(t *testing.T) {
	for in, want := range map[string]string{
		"cap1:{ceil0}:*": "cap1:{ceil0}:*",
		"a[b]?c*d*":      `a\[b\]\?c\*d*`,
		"plain":          "plain",
	} {
		if got := escapeGlob(in); got != want {
			t.Errorf("escapeGlob(%q) = %q, want %q", in, got, want)
		}
	}
}
