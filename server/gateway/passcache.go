package gateway

import (
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"waitingroom/server/pass"
)

// passReuse is how long a visit's or a session's signed pass is handed out
// again to its next protected requests instead of a new signature (the
// Ed25519 signature was half a forward-auth decision's CPU; a page's
// protected requests come in bursts). A pass handed out again differs
// from a fresh one only in iat and exp, each at most this much earlier:
// never later, so it never outlasts the slot or the visit it stands for.
const passReuse = time.Second

// passCache keeps the last pass signed for each visit or session, for
// passReuse. It holds only passes signed in the last passReuse or so: a
// put sweeps out the older ones once every passReuse.
type passCache struct {
	mu    sync.Mutex
	m     map[string]signedPass
	swept time.Time
}

// signedPass is a pass and the claims it was signed with.
type signedPass struct {
	pass   string
	claims pass.Claims
	at     time.Time // when it was signed
}

// get returns the pass signed for key within passReuse of now whose
// claims are c's but for an iat and an exp at most passReuse earlier.
func (pc *passCache) get(key string, c pass.Claims, now time.Time) (string, bool) {
	pc.mu.Lock()
	s, ok := pc.m[key]
	pc.mu.Unlock()
	if !ok || now.Before(s.at) || now.Sub(s.at) >= passReuse {
		return "", false
	}
	k := s.claims
	if k.Room != c.Room || k.Subject != c.Subject || k.PassID != c.PassID || k.Mode != c.Mode ||
		!within(k.IssuedAt, c.IssuedAt) || !within(k.Expiry, c.Expiry) {
		return "", false
	}
	return s.pass, true
}

// within reports whether the cached time t is at most passReuse earlier
// than the fresh one, and not later.
func within(t, fresh time.Time) bool {
	return !t.After(fresh) && fresh.Sub(t) < passReuse
}

// put keeps p, signed for key with c at now.
func (pc *passCache) put(key, p string, c pass.Claims, now time.Time) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.m == nil {
		pc.m = make(map[string]signedPass)
	}
	if now.Sub(pc.swept) >= passReuse {
		for k, s := range pc.m {
			if now.Sub(s.at) >= passReuse {
				delete(pc.m, k)
			}
		}
		pc.swept = now
	}
	pc.m[key] = signedPass{pass: p, claims: c, at: now}
}

// signFor is sign for a visit's or a session's pass (key): the pass
// signed for it within passReuse when that one will do (passCache.get),
// else a new one, kept for the next requests.
func (g *Gateway) signFor(ctx *fasthttp.RequestCtx, key string, c pass.Claims, now time.Time) string {
	if p, ok := g.passes.get(key, c, now); ok {
		return p
	}
	p := g.sign(ctx, c)
	if p != "" {
		g.passes.put(key, p, c, now)
	}
	return p
}
