package main

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
	"golang.org/x/crypto/bcrypt"

	"waitingroom/server"
	"waitingroom/server/token"
)

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchHandler drives h in-process (no sockets) from b.RunParallel and
// reports the process CPU time per request next to ns/op.
func benchHandler(b *testing.B, h fasthttp.RequestHandler, uri, bearer string, wantStatus int) {
	b.Helper()
	b.ReportAllocs()
	start := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var ctx fasthttp.RequestCtx
		for pb.Next() {
			ctx.Request.Reset()
			ctx.Response.Reset()
			ctx.Request.SetRequestURI(uri)
			if bearer != "" {
				ctx.Request.Header.Set("Authorization", "Bearer "+bearer)
			}
			h(&ctx)
			if got := ctx.Response.StatusCode(); got != wantStatus {
				b.Errorf("status %d: %s", got, ctx.Response.Body())
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkPosition is the poll path: queue-token JWT verification, the
// status from Redis (a user near the front: one script on real Redis) or
// from the hub's memory (a user further back), JSON encoding — no BCrypt,
// no SQL.
func BenchmarkPosition(b *testing.B) {
	e := newEnv(b)
	in := e.start(map[string]string{"WR_TARGET_ACTIVE": "0"})
	q := in.srv.Queue()
	var tickets []int64
	for i := range 150 {
		st, err := q.Enter(context.Background(), "default", strconv.Itoa(i+1))
		if err != nil {
			b.Fatal(err)
		}
		tickets = append(tickets, st.Ticket)
	}
	tk := token.New(token.Config{Secret: testSecret})
	for _, bc := range []struct {
		name string
		user int // 1-based position
	}{{"redis", 4}, {"memory", 150}} {
		tok, _ := tk.IssueQueue(strconv.Itoa(bc.user), "default", tickets[bc.user-1], time.Hour)
		b.Run(bc.name, func(b *testing.B) {
			benchHandler(b, in.srv.Public().Handler(), "/api/v1/rooms/default/position", tok, 200)
		})
	}
}

// BenchmarkPlainJSON is the baseline: a bare Fiber handler returning a JSON
// document of the same size as a WAITING status.
func BenchmarkPlainJSON(b *testing.B) {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	doc := server.QueueStatus{Status: "WAITING", Room: "default", Position: 4, Waiting: 4, PollAfterMs: 1000}
	app.Get("/x", func(c *fiber.Ctx) error { return c.JSON(doc) })
	benchHandler(b, app.Handler(), "/x", "", 200)
}

// BenchmarkBcryptCost10 is what the seed system paid on every poll.
func BenchmarkBcryptCost10(b *testing.B) {
	hash, _ := bcrypt.GenerateFromPassword([]byte("demo-pass"), 10)
	start := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		_ = bcrypt.CompareHashAndPassword(hash, []byte("demo-pass"))
	}
	b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
