package queue_test

import (
	"context"
	"flag"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue"
	"waitingroom/queue/queuetest"
)

var absentWaiting = flag.Int("absent-waiting", 100_000, "BenchmarkAdmitAbsent: users waiting")

// BenchmarkAdmitAbsent measures one presence-aware admission run of 20
// users in a room where -absent-waiting users wait and a tenth of them
// are absent: spread (every tenth user) or at the front (the first
// tenth: the shape of a stall). It runs on a redis-server of its own, so
// that INFO commandstats counts its commands alone, and reports per run
// the users admitted and looked at, the commands Redis ran (the script's
// calls included) and the Redis time they took, and the longest run. Run with
// -benchtime=200x: the queue is filled once per sub-benchmark.
func BenchmarkAdmitAbsent(b *testing.B) {
	for _, c := range []struct {
		name   string
		absent func(i, n int) bool
	}{
		{"spread", func(i, _ int) bool { return i%10 == 0 }},
		{"front", func(i, n int) bool { return i < n/10 }},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			opt, err := redis.ParseURL(queuetest.Server(b))
			if err != nil {
				b.Fatal(err)
			}
			rdb := redis.NewClient(opt)
			b.Cleanup(func() { rdb.Close() })
			q := queue.New(rdb, queue.Options{Prefix: "bench:", Grace: time.Minute})
			if err := q.EnsureRoom(ctx, "r1", queue.RoomConfig{Target: 1 << 40, EntryTTL: time.Hour}); err != nil {
				b.Fatal(err)
			}
			fillAbsent(b, q, rdb, "r1", *absentWaiting, c.absent)
			mustResetStats(b, rdb)
			admitted, looked := 0, 0
			var worst time.Duration
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				res, err := q.Admit(ctx, "r1", 20)
				if err != nil {
					b.Fatal(err)
				}
				worst = max(worst, time.Since(t0))
				admitted += len(res.Admitted)
				looked += res.Looked
			}
			b.StopTimer()
			calls, usec := commandStats(b, rdb)
			b.ReportMetric(float64(admitted)/float64(b.N), "admitted/run")
			b.ReportMetric(float64(looked)/float64(b.N), "looked/run")
			b.ReportMetric(float64(calls)/float64(b.N), "cmds/run")
			b.ReportMetric(float64(usec)/float64(b.N), "redis-µs/run")
			b.ReportMetric(float64(worst.Microseconds()), "max-µs/run")
		})
	}
}

// BenchmarkAdmitAbsentBurst measures the dearest run: 10,000 users who
// all went absent since the last run at the front of a fresh room, 20
// present behind them; the run passes over the 10,000 (looking at each
// once) and admits the 20. Same metrics as BenchmarkAdmitAbsent.
func BenchmarkAdmitAbsentBurst(b *testing.B) {
	const absent = 10_000
	ctx := context.Background()
	opt, err := redis.ParseURL(queuetest.Server(b))
	if err != nil {
		b.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	b.Cleanup(func() { rdb.Close() })
	q := queue.New(rdb, queue.Options{Prefix: "bench:", Grace: time.Minute})
	admitted, looked := 0, 0
	var calls, usec int64
	var worst time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		room := "b" + strconv.Itoa(i)
		if err := q.EnsureRoom(ctx, room, queue.RoomConfig{Target: 1 << 40, EntryTTL: time.Hour}); err != nil {
			b.Fatal(err)
		}
		fillAbsent(b, q, rdb, room, absent+20, func(i, _ int) bool { return i < absent })
		mustResetStats(b, rdb)
		b.StartTimer()
		t0 := time.Now()
		res, err := q.Admit(ctx, room, 20)
		if err != nil {
			b.Fatal(err)
		}
		worst = max(worst, time.Since(t0))
		b.StopTimer()
		admitted += len(res.Admitted)
		looked += res.Looked
		c, u := commandStats(b, rdb)
		calls, usec = calls+c, usec+u
		if err := rdb.FlushDB(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(admitted)/float64(b.N), "admitted/run")
	b.ReportMetric(float64(looked)/float64(b.N), "looked/run")
	b.ReportMetric(float64(calls)/float64(b.N), "cmds/run")
	b.ReportMetric(float64(usec)/float64(b.N), "redis-µs/run")
	b.ReportMetric(float64(worst.Microseconds()), "max-µs/run")
}

// fillAbsent puts n users in room's queue (tickets 1..n) and its seen
// set, written directly in pipelines: absent(i, n) ones expected back
// long ago, the others in an hour.
func fillAbsent(b *testing.B, q *queue.Queue, rdb *redis.Client, room string, n int, absent func(i, n int) bool) {
	b.Helper()
	ctx := context.Background()
	later := float64(time.Now().Add(time.Hour).UnixMilli())
	for from := 0; from < n; from += 10_000 {
		queued := make([]redis.Z, 0, 10_000)
		seen := make([]redis.Z, 0, 10_000)
		for i := from; i < min(from+10_000, n); i++ {
			u := "user" + strconv.Itoa(i)
			queued = append(queued, redis.Z{Score: float64(i + 1), Member: u})
			due := later
			if absent(i, n) {
				due = 1
			}
			seen = append(seen, redis.Z{Score: due, Member: u})
		}
		if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.ZAdd(ctx, q.RoomKey(room, "queue"), queued...)
			p.ZAdd(ctx, q.RoomKey(room, "seen"), seen...)
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	if err := rdb.Set(ctx, q.RoomKey(room, "seq"), n, 0).Err(); err != nil {
		b.Fatal(err)
	}
}

func mustResetStats(b *testing.B, rdb *redis.Client) {
	b.Helper()
	if err := rdb.ConfigResetStat(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
}

// commandStats sums INFO commandstats since the last reset: the commands
// Redis ran and their time (µs), without the INFO itself.
func commandStats(b *testing.B, rdb *redis.Client) (calls, usec int64) {
	b.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" || name == "cmdstat_config|resetstat" {
			continue
		}
		for _, f := range strings.Split(fields, ",") {
			k, v, _ := strings.Cut(f, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				calls += n
			case "usec":
				if name == "cmdstat_evalsha" || name == "cmdstat_eval" {
					usec += n
				}
			}
		}
	}
	return calls, usec
}
