package pow_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"waitingroom/queue/queuetest"
	"waitingroom/server/pow"
)

var secret = []byte("test-secret-test-secret-test-secret")

// newPow returns challenges on the test Redis with lifetime ttl, and the
// key prefix they use.
func newPow(t testing.TB, ttl time.Duration) (*pow.Pow, string) {
	t.Helper()
	rdb, prefix := queuetest.Redis(t)
	return pow.New(rdb, prefix, secret, ttl), prefix
}

// refused checks that err is ErrInvalid with Reason want.
func refused(t *testing.T, err error, want string) {
	t.Helper()
	if !errors.Is(err, pow.ErrInvalid) || pow.Reason(err) != want {
		t.Errorf("err = %v (reason %q), want ErrInvalid with reason %q", err, pow.Reason(err), want)
	}
}

var urlSafe = regexp.MustCompile(`^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$`)

func TestIssue(t *testing.T) {
	p, _ := newPow(t, 0)
	before := time.Now()
	c := p.Issue("r1", "visitor-1", 12)
	if !urlSafe.MatchString(c.Token) {
		t.Errorf("token %q is not payload.mac in base64url", c.Token)
	}
	if c.Difficulty != 12 {
		t.Errorf("difficulty = %d, want 12", c.Difficulty)
	}
	if d := c.ExpiresAt.Sub(before); d < pow.DefaultTTL-time.Second || d > pow.DefaultTTL+time.Second {
		t.Errorf("expires in %v, want the default %v", d, pow.DefaultTTL)
	}
	if p.Issue("r1", "visitor-1", 12).Token == c.Token {
		t.Error("two challenges share a token")
	}
	for in, want := range map[int]int{-3: 1, 0: 1, 1: 1, 32: 32, 40: 32} {
		if got := p.Issue("r1", "v", in).Difficulty; got != want {
			t.Errorf("Issue(difficulty %d).Difficulty = %d, want %d", in, got, want)
		}
	}
}

// A solution is accepted once; its nonce is then kept for the challenge's
// remaining lifetime under the room's hash tag.
func TestVerifyAcceptsOnce(t *testing.T) {
	p, prefix := newPow(t, time.Minute)
	rdb, _ := queuetest.Redis(t)
	ctx := context.Background()
	c := p.Issue("r1", "visitor-1", 10)
	sol := pow.Solve(c.Token, c.Difficulty)
	if err := p.Verify(ctx, "r1", "visitor-1", c.Token, sol); err != nil {
		t.Fatalf("valid solution refused: %v", err)
	}
	refused(t, p.Verify(ctx, "r1", "visitor-1", c.Token, sol), "replay")
	keys, err := rdb.Keys(ctx, prefix+"pow:{r1}:*").Result()
	if err != nil || len(keys) != 1 || !regexp.MustCompile(`:[0-9a-f]{32}$`).MatchString(keys[0]) {
		t.Fatalf("replay keys = %v, %v; want one %spow:{r1}:<nonce>", keys, err, prefix)
	}
	if ttl := rdb.PTTL(ctx, keys[0]).Val(); ttl <= 50*time.Second || ttl > time.Minute {
		t.Errorf("replay key TTL = %v, want the challenge's remaining minute", ttl)
	}
}

func TestVerifyRefuses(t *testing.T) {
	p, _ := newPow(t, time.Minute)
	ctx := context.Background()
	c := p.Issue("r1", "visitor-1", 8)
	sol := pow.Solve(c.Token, c.Difficulty)
	payload, mac, _ := strings.Cut(c.Token, ".")
	other := pow.New(nil, "", []byte("another-secret"), time.Minute).Issue("r1", "visitor-1", 8)
	for _, tc := range []struct {
		name, room, subject, token, solution, reason string
	}{
		{"other room", "r2", "visitor-1", c.Token, sol, "room"},
		{"other subject", "r1", "visitor-2", c.Token, sol, "subject"},
		{"payload changed", "r1", "visitor-1", flip(payload) + "." + mac, sol, "signature"},
		{"mac changed", "r1", "visitor-1", payload + "." + flip(mac), sol, "signature"},
		{"other key", "r1", "visitor-1", other.Token, pow.Solve(other.Token, 8), "signature"},
		{"no mac", "r1", "visitor-1", payload, sol, "malformed"},
		{"short mac", "r1", "visitor-1", payload + "." + mac[:20], sol, "malformed"},
		{"not base64", "r1", "visitor-1", "a*b.c", sol, "malformed"},
		{"too long", "r1", "visitor-1", strings.Repeat("A", 5000) + "." + mac, sol, "malformed"},
		{"not enough work", "r1", "visitor-1", c.Token, unsolved(c.Token, 8), "work"},
		{"solution too long", "r1", "visitor-1", c.Token, "0" + strings.Repeat("0", 20-len(sol)) + sol, "malformed"},
		{"solution not decimal", "r1", "visitor-1", c.Token, "0x" + sol, "malformed"},
		{"solution empty", "r1", "visitor-1", c.Token, "", "malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refused(t, p.Verify(ctx, tc.room, tc.subject, tc.token, tc.solution), tc.reason)
		})
	}
	// A refusal spends nothing: the challenge is still good.
	if err := p.Verify(ctx, "r1", "visitor-1", c.Token, sol); err != nil {
		t.Fatalf("valid solution refused after the refusals: %v", err)
	}
}

// flip changes the first character of a base64url string.
func flip(s string) string {
	if s[0] == 'A' {
		return "B" + s[1:]
	}
	return "A" + s[1:]
}

// unsolved returns a counter that does not solve token at difficulty.
func unsolved(token string, difficulty int) string {
	for i := 0; ; i++ {
		s := strconv.Itoa(i)
		if s != pow.Solve(token, difficulty) && !solvesAt(token, s, difficulty) {
			return s
		}
	}
}

// solvesAt reports whether SHA-256(token + ":" + solution) starts with
// difficulty zero bits, counted bit by bit.
func solvesAt(token, solution string, difficulty int) bool {
	sum := sha256.Sum256([]byte(token + ":" + solution))
	for i := range difficulty {
		if sum[i/8]&(0x80>>(i%8)) != 0 {
			return false
		}
	}
	return true
}

func TestVerifyExpired(t *testing.T) {
	p, _ := newPow(t, time.Millisecond)
	c := p.Issue("r1", "visitor-1", 4)
	sol := pow.Solve(c.Token, c.Difficulty)
	time.Sleep(5 * time.Millisecond)
	refused(t, p.Verify(context.Background(), "r1", "visitor-1", c.Token, sol), "expired")
}

func TestVerifyRequired(t *testing.T) {
	p, _ := newPow(t, 0)
	err := p.Verify(context.Background(), "r1", "visitor-1", "", "")
	if !errors.Is(err, pow.ErrRequired) || errors.Is(err, pow.ErrInvalid) || pow.Reason(err) != "required" {
		t.Fatalf("empty token: %v (reason %q), want ErrRequired", err, pow.Reason(err))
	}
}

// Redis down: the replay check cannot be made, and the caller must know
// it from a refusal (it fails closed with 503).
func TestVerifyRedisDown(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	p := pow.New(rdb, prefix, secret, time.Minute)
	c := p.Issue("r1", "visitor-1", 4)
	sol := pow.Solve(c.Token, c.Difficulty)
	_ = rdb.Close()
	err := p.Verify(context.Background(), "r1", "visitor-1", c.Token, sol)
	if !errors.Is(err, pow.ErrUnavailable) || errors.Is(err, pow.ErrInvalid) || pow.Reason(err) != "unavailable" {
		t.Fatalf("Redis closed: %v (reason %q), want ErrUnavailable", err, pow.Reason(err))
	}
	// The checks before the replay check still refuse without Redis.
	refused(t, p.Verify(context.Background(), "r2", "visitor-1", c.Token, sol), "room")
}

func TestSolve(t *testing.T) {
	p, _ := newPow(t, 0)
	for d := 1; d <= 16; d++ {
		c := p.Issue("r1", strings.Repeat("s", d*5), d)
		sol := pow.Solve(c.Token, d)
		if !solvesAt(c.Token, sol, d) {
			t.Errorf("difficulty %d: Solve = %s does not solve %s", d, sol, c.Token)
		}
		n, _ := strconv.Atoi(sol)
		for i := 0; i < n; i++ {
			if solvesAt(c.Token, strconv.Itoa(i), d) {
				t.Fatalf("difficulty %d: Solve = %s, but %d solves it and comes first", d, sol, i)
			}
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	p, _ := newPow(b, time.Minute)
	ctx := context.Background()
	type solved struct{ token, solution string }
	all := make([]solved, b.N)
	for i := range all {
		c := p.Issue("r1", "visitor-1", 8)
		all[i] = solved{c.Token, pow.Solve(c.Token, 8)}
	}
	b.ResetTimer()
	for i := range all {
		if err := p.Verify(ctx, "r1", "visitor-1", all[i].token, all[i].solution); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSolve is what a client pays for one entry at DefaultDifficulty,
// on one core; s/1000solves is the CPU time of 1,000 entries. A solve's
// count of hashes is random (geometric, mean 2^difficulty): Mhash/s, the
// rate, is the steadier figure, and 1,000 solves cost 1000 × 2^difficulty
// hashes on average.
func BenchmarkSolve(b *testing.B) {
	p := pow.New(nil, "", secret, 0)
	tokens := make([]string, b.N)
	for i := range tokens {
		tokens[i] = p.Issue("default", "visitor-"+strconv.Itoa(i), pow.DefaultDifficulty).Token
	}
	b.ResetTimer()
	start := time.Now()
	var hashes float64
	for _, tok := range tokens {
		n, _ := strconv.ParseFloat(pow.Solve(tok, pow.DefaultDifficulty), 64)
		hashes += n + 1
	}
	elapsed := time.Since(start).Seconds()
	b.ReportMetric(elapsed/float64(b.N)*1000, "s/1000solves")
	b.ReportMetric(hashes/elapsed/1e6, "Mhash/s")
}
