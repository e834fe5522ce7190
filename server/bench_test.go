package server_test

import (
	"context"
	"io"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
	"golang.org/x/crypto/bcrypt"

	"waitingroom/server"
	"waitingroom/server/pgstore"
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

// BenchmarkPosition is the poll path: queue-token JWT verification, one
// Redis script (real Redis), JSON encoding — no BCrypt, no SQL.
func BenchmarkPosition(b *testing.B) {
	e := newEnv(b)
	cfg, err := server.LoadConfig(envOf(map[string]string{"WR_JWT_SECRET": testSecret, "WR_TARGET_ACTIVE": "0"}))
	if err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	store, err := pgstore.Open(context.Background(), e.dbURL, pgstore.Options{PoolSize: 2, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	srv, err := server.New(server.Options{Config: cfg, Redis: e.rdb, Store: store, KeyPrefix: e.prefix, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.EnsureRooms(context.Background()); err != nil {
		b.Fatal(err)
	}
	for _, u := range []string{"a", "b", "c", "1"} {
		if _, err := srv.Queue().Enter(context.Background(), "default", u); err != nil {
			b.Fatal(err)
		}
	}
	tok, _ := server.NewTokens(testSecret, "").IssueQueue("1", "default", 4, time.Hour)
	benchHandler(b, srv.Public().Handler(), "/api/v1/rooms/default/position", tok, 200)
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
