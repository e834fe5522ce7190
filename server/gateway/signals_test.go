package gateway

import (
	"fmt"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// fakeRecorder counts what the sampler passes on.
type fakeRecorder struct{ orders, errors int }

func (r *fakeRecorder) Order(_ string, _ time.Duration, failed bool, _ time.Time) {
	r.orders++
	if failed {
		r.errors++
	}
}
func (*fakeRecorder) Window() time.Duration { return 10 * time.Second }

func TestSamplerCountsVisitorsNotRequests(t *testing.T) {
	rec := &fakeRecorder{}
	s := sampler{rec: rec}
	now := time.UnixMilli(1_000_000_000_000) // the start of a window
	for i := range 100 {
		s.add("sale", "mallory", time.Second, true, now.Add(time.Duration(i)*time.Millisecond))
	}
	s.add("sale", "alice", time.Millisecond, false, now)
	s.add("sale", "bob", time.Millisecond, true, now) // a second failing visitor: still unconfirmed
	if rec.orders != 1 || rec.errors != 0 {
		t.Fatalf("one visitor's 100 failures and another's one: %d orders, %d errors; want alice's sample only", rec.orders, rec.errors)
	}
	s.add("sale", "carol", time.Millisecond, true, now)
	if rec.orders != 4 || rec.errors != 3 {
		t.Fatalf("a third failing visitor: %d orders, %d errors; want the three failures counted", rec.orders, rec.errors)
	}
	s.add("other", "mallory", time.Millisecond, false, now) // rooms apart
	s.add("sale", "mallory", time.Millisecond, false, now.Add(10*time.Second))
	if rec.orders != 6 {
		t.Fatalf("another room, the next window: %d orders, want 6", rec.orders)
	}
}

func TestPrivateCache(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "private"},
		{"public, max-age=600, s-maxage=3600", "private, max-age=600"},
		{"max-age=60, proxy-revalidate", "private, max-age=60"},
		{"no-store", "no-store"},
		{"private, max-age=5", "private, max-age=5"},
		{`private="Set-Cookie", max-age=5`, `private="Set-Cookie", max-age=5`},
	} {
		var h fasthttp.ResponseHeader
		h.DisableNormalizing()
		if c.in != "" {
			h.Set("cache-control", c.in)
		}
		h.Set("Surrogate-Control", "max-age=60")
		h.Set("cdn-cache-control", "max-age=60")
		privateCache(&h)
		got := fmt.Sprintf("%s|%s|%s", h.Peek("Cache-Control"), h.Peek("Surrogate-Control"), h.Peek("cdn-cache-control"))
		if got != c.want+"||" {
			t.Errorf("%q: %q, want %q and the targeted headers gone", c.in, got, c.want)
		}
		if n := len(h.PeekAll("cache-control")); n != 0 {
			t.Errorf("%q: the lower-case header left beside the new one", c.in)
		}
	}
}
