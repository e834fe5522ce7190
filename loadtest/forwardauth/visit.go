package forwardauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/pace"
)

// admitDeadline bounds entering and waiting for READY.
const admitDeadline = 60 * time.Second

// admitAtOnce is how many visitors enter at once.
const admitAtOnce = 16

// visit is what a visitor admitted to the room holds: the Cookie header
// its browser sends to the protected path, and how long the visit lasts.
type visit struct {
	cookie  string
	expires time.Time
}

// admitAll admits n visitors, admitAtOnce at a time (see admit).
func admitAll(ctx context.Context, n int, base, room, protectedURI string, timeout time.Duration, gateway bool) ([]visit, error) {
	vs := make([]visit, n)
	errs := make([]error, n)
	sem := make(chan struct{}, admitAtOnce)
	var wg sync.WaitGroup
	for i := range vs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			vs[i], errs[i] = admit(ctx, base, room, protectedURI, timeout, gateway)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("visitor %d of %d: %w", i+1, n, err)
		}
	}
	return vs, nil
}

// admit enters room anonymously through the public API, polls its
// position until READY, and asks /_wr/auth once about protectedURI with
// the cookies a browser would send there, as a proxy of
// WR_TRUSTED_PROXIES does — or, with gateway, base being a gateway's,
// asks for protectedURI itself through it: the answer's Set-Cookie is the
// visit (the entry token is spent).
func admit(ctx context.Context, base, room, protectedURI string, timeout time.Duration, gateway bool) (visit, error) {
	ctx, cancel := context.WithTimeout(ctx, admitDeadline)
	defer cancel()
	jar, _ := cookiejar.New(nil)
	hc := client.NewFrom(proxyAddr, 1, timeout)
	hc.Jar = jar
	defer hc.CloseIdleConnections()
	roomPath := base + "/_wr/api/v1/rooms/" + url.PathEscape(room) + "/"

	var st client.QueueStatus
	for {
		code, err := getJSON(ctx, hc, http.MethodPost, roomPath+"enter", &st)
		if err != nil {
			return visit{}, fmt.Errorf("enter: %w", err)
		}
		if code == http.StatusOK {
			break
		}
		// The room is created on the first admission tick; until then
		// enter may be refused.
		if !pace.Sleep(ctx, 100*time.Millisecond) {
			return visit{}, fmt.Errorf("enter: still %d after %v", code, admitDeadline)
		}
	}
	for st.Status != "READY" {
		if st.Status != "WAITING" {
			return visit{}, fmt.Errorf("position: status %q", st.Status)
		}
		if !pace.Sleep(ctx, max(time.Duration(st.PollAfterMs)*time.Millisecond, 50*time.Millisecond)) {
			return visit{}, fmt.Errorf("not READY within %v", admitDeadline)
		}
		code, err := getJSON(ctx, hc, http.MethodGet, roomPath+"position", &st)
		if err != nil {
			return visit{}, fmt.Errorf("position: %w", err)
		}
		if code != http.StatusOK {
			return visit{}, fmt.Errorf("position: %w", client.StatusError(code))
		}
	}

	page, _ := url.Parse(base + protectedURI)
	first, passed := base+authPath, func(h http.Header) bool { return h.Get(passHeader) != "" }
	if gateway {
		first, passed = base+protectedURI, func(h http.Header) bool { return h.Get(gotPassHeader) == "1" }
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, first, nil)
	if err != nil {
		return visit{}, err
	}
	if gateway {
		req.Header.Set("Cookie", cookieHeader(jar.Cookies(page)))
	} else {
		askAbout(req.Header, http.MethodGet, protectedURI, cookieHeader(jar.Cookies(page)))
	}
	hc.Jar = nil // the cookies are the page's, set above
	resp, err := hc.Do(req)
	if err != nil {
		return visit{}, fmt.Errorf("the first protected request: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	var v *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == visitCookie(room) {
			v = c
		}
	}
	if resp.StatusCode != http.StatusOK || !passed(resp.Header) || v == nil || v.MaxAge <= 0 {
		return visit{}, fmt.Errorf("the first protected request (GET %s, READY, with the entry cookie, to %s): %s, %s %q, %s %q, Set-Cookie %q; want 200 with a pass and the %s cookie",
			protectedURI, first, resp.Status, passHeader, resp.Header.Get(passHeader), gotPassHeader, resp.Header.Get(gotPassHeader), resp.Header.Values("Set-Cookie"), visitCookie(room))
	}
	jar.SetCookies(page, []*http.Cookie{v})
	return visit{cookie: cookieHeader(jar.Cookies(page)), expires: time.Now().Add(time.Duration(v.MaxAge) * time.Second)}, nil
}

// getJSON sends a request without a body and decodes a 200 answer's JSON
// into out.
func getJSON(ctx context.Context, hc *http.Client, method, u string, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, out); err != nil {
			return 0, err
		}
	}
	return resp.StatusCode, nil
}

// cookieHeader is cs as one Cookie header.
func cookieHeader(cs []*http.Cookie) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.Name + "=" + c.Value
	}
	return strings.Join(parts, "; ")
}

// askAbout sets h to ask /_wr/auth about method and uri the way nginx's
// auth_request does (X-Original-*), with the visitor's cookie ("" for
// none).
func askAbout(h http.Header, method, uri, cookie string) {
	h.Set("X-Original-Method", method)
	h.Set("X-Original-URI", uri)
	if cookie != "" {
		h.Set("Cookie", cookie)
	}
}
