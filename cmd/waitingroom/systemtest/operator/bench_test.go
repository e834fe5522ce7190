package operator

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
	"golang.org/x/crypto/bcrypt"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/queuestatus"
	"waitingroom/server/token"
)

// benchHandler drives h in-process (no sockets) from b.RunParallel and
// reports the process CPU time per request next to ns/op.
func benchHandler(b *testing.B, h fasthttp.RequestHandler, uri, bearer string, wantStatus int) {
	b.Helper()
	benchRequests(b, h, "GET", uri, func() string { return bearer }, wantStatus)
}

// benchRequests is benchHandler with a method and a bearer token per
// request (bearer is called from several goroutines at once).
func benchRequests(b *testing.B, h fasthttp.RequestHandler, method, uri string, bearer func() string, wantStatus int) {
	b.Helper()
	b.ReportAllocs()
	start := systemtest.CPUTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var ctx fasthttp.RequestCtx
		for pb.Next() {
			ctx.Request.Reset()
			ctx.Response.Reset()
			ctx.Request.SetRequestURI(uri)
			ctx.Request.Header.SetMethod(method)
			if tok := bearer(); tok != "" {
				ctx.Request.Header.Set("Authorization", "Bearer "+tok)
			}
			h(&ctx)
			if got := ctx.Response.StatusCode(); got != wantStatus {
				b.Errorf("status %d: %s", got, ctx.Response.Body())
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((systemtest.CPUTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkPosition is the poll path: queue-token JWT verification, the
// status from Redis (a user near the front: one script on real Redis) or
// from the hub's memory (a user further back), JSON encoding — no BCrypt,
// no SQL.
func BenchmarkPosition(b *testing.B) {
	e := systemtest.NewEnv(b)
	in := e.Start(map[string]string{"WR_TARGET_ACTIVE": "0"})
	q := in.Parts.Queue
	var tickets []int64
	for i := range 150 {
		st, err := q.Enter(context.Background(), "default", strconv.Itoa(i+1))
		if err != nil {
			b.Fatal(err)
		}
		tickets = append(tickets, st.Ticket)
	}
	tk := token.New(token.Config{Secret: systemtest.TestSecret})
	for _, bc := range []struct {
		name string
		user int // 1-based position
	}{{"redis", 4}, {"memory", 150}} {
		tok, _ := tk.IssueQueue(strconv.Itoa(bc.user), "default", tickets[bc.user-1], time.Hour)
		b.Run(bc.name, func(b *testing.B) {
			benchHandler(b, in.Server.Public().Handler(), "/api/v1/rooms/default/position", tok, 200)
		})
	}
}

// BenchmarkEnter is the enter path: access-token verification, the enter
// script on real Redis, a queue token signed and set as a cookie, JSON
// encoding. "waiting": the same 1,000 users enter again (they keep their
// place); "fresh": every request is a user never seen (a new ticket).
func BenchmarkEnter(b *testing.B) {
	e := systemtest.NewEnv(b)
	in := e.Start(map[string]string{"WR_TARGET_ACTIVE": "0", "WR_RATE_LIMITS": "off"})
	tk := token.New(token.Config{Secret: systemtest.TestSecret})
	const uri = "/api/v1/rooms/default/enter"
	waiting := make([]string, 1000)
	for i := range waiting {
		waiting[i], _ = tk.IssueAccess(strconv.Itoa(i+1), time.Hour)
	}
	var next atomic.Int64
	b.Run("waiting", func(b *testing.B) {
		benchRequests(b, in.Server.Public().Handler(), "POST", uri, func() string {
			return waiting[next.Add(1)%int64(len(waiting))]
		}, 200)
	})
	fresh := make([]string, 200_000)
	for i := range fresh {
		fresh[i], _ = tk.IssueAccess(strconv.Itoa(10_000+i), time.Hour)
	}
	next.Store(0)
	b.Run("fresh", func(b *testing.B) {
		benchRequests(b, in.Server.Public().Handler(), "POST", uri, func() string {
			return fresh[next.Add(1)%int64(len(fresh))]
		}, 200)
	})
}

// BenchmarkPlainJSON is the baseline: a bare Fiber handler returning a JSON
// document of the same size as a WAITING status.
func BenchmarkPlainJSON(b *testing.B) {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	doc := queuestatus.Doc{Status: "WAITING", Room: "default", Position: 4, Waiting: 4, PollAfterMs: 1000}
	app.Get("/x", func(c *fiber.Ctx) error { return c.JSON(doc) })
	benchHandler(b, app.Handler(), "/x", "", 200)
}

// BenchmarkBcryptCost10 is what the seed system paid on every poll.
func BenchmarkBcryptCost10(b *testing.B) {
	hash, _ := bcrypt.GenerateFromPassword([]byte("demo-pass"), 10)
	start := systemtest.CPUTime()
	b.ResetTimer()
	for b.Loop() {
		_ = bcrypt.CompareHashAndPassword(hash, []byte("demo-pass"))
	}
	b.ReportMetric(float64((systemtest.CPUTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
