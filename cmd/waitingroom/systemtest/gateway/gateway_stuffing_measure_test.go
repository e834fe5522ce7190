package gateway

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/pow"
)

// TestMeasureStuffing is a measurement, run only with
// WR_STUFFING_MEASURE=1: a bot farm of 40 addresses takes places in one
// room of a gateway with the default limits and proof of work, spread over
// one /24 (WR_STUFFING_NETS=1) or 40 (=40), until WR_STUFFING_PLACES
// (1000) or WR_STUFFING_SECONDS (60) run out. The room's difficulty is set
// low (8) so that the run measures the limits and the rise, not this
// machine's SHA-256; the log gives what the places would cost at
// pow.DefaultDifficulty: Σ 2^(DefaultDifficulty + rise) hashes.
//
//	WR_STUFFING_MEASURE=1 WR_STUFFING_NETS=1 go test -count=1 -run TestMeasureStuffing -v ./cmd/waitingroom/
func TestMeasureStuffing(t *testing.T) {
	if os.Getenv("WR_STUFFING_MEASURE") != "1" {
		t.Skip("a measurement: set WR_STUFFING_MEASURE=1")
	}
	num := func(name string, def int) int {
		if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
			return n
		}
		return def
	}
	nets, want, secs := num("WR_STUFFING_NETS", 1), num("WR_STUFFING_PLACES", 1000), num("WR_STUFFING_SECONDS", 60)
	const base, bots = 8, 40
	in := systemtest.GatewayInstance(t, systemtest.StartOrigin(t), systemtest.BehindProxy(map[string]string{"WR_RATE_LIMITS": "on",
		"WR_GATEWAY_CHALLENGE": "pow", "WR_POW_DIFFICULTY": strconv.Itoa(base), "WR_TARGET_ACTIVE": "0"}))
	var places, refused atomic.Int64
	var mu sync.Mutex
	rises := map[int]int{} // extra bits -> places taken at them
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	start := time.Now()
	var wg sync.WaitGroup
	for b := range bots {
		ip := fmt.Sprintf("203.0.113.%d", b+1)
		if nets > 1 {
			ip = fmt.Sprintf("198.%d.%d.7", 18+b/40, b%nets)
		}
		wg.Go(func() {
			for places.Load() < int64(want) && time.Now().Before(deadline) {
				c := systemtest.Visitor(t)
				body, d := solvedFrom(t, in, c, ip)
				for time.Now().Before(deadline) {
					code, m := enterFrom(t, in, c, ip, body)
					if code == 200 {
						places.Add(1)
						mu.Lock()
						rises[d-base]++
						mu.Unlock()
						break
					}
					refused.Add(1)
					if code != 429 {
						if m["error"] != "challenge_invalid" {
							t.Errorf("bot %s: %d %v", ip, code, m)
							return
						}
						body, d = solvedFrom(t, in, c, ip) // the network's count rose past it
						continue
					}
					time.Sleep(250 * time.Millisecond) // the network limit's interval
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	var hashes float64
	for r, n := range rises {
		hashes += float64(n) * math.Exp2(float64(pow.DefaultDifficulty+r))
	}
	t.Logf("%d addresses over %d network(s): %d places in %.1f s (%d refusals); places by extra bits %v",
		bots, nets, places.Load(), took.Seconds(), refused.Load(), rises)
	t.Logf("at %d bits: %.3g hashes expected (%.1f × the %d places at the room's difficulty)",
		pow.DefaultDifficulty, hashes, hashes/(float64(places.Load())*math.Exp2(pow.DefaultDifficulty)), places.Load())
}
