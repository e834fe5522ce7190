package gatewayattack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"waitingroom/server/pass/passcheck"
)

// gwOrigin is the real origin of the gateway-attack scenario: a Go
// net/http server on loopback that logs every request it receives. It
// judges a request protected as leniently as origins route (case, a
// trailing slash, repeated slashes, ;params, dot segments, a format
// suffix), verifies the Waitingroom-Pass of each protected one, and
// counts those that came without a valid pass, by who sent them (the
// gateway's X-Forwarded-For names the client's source address).
type gwOrigin struct {
	srv   *http.Server
	ln    net.Listener
	check *passcheck.Checker
	// downloadBytes is the size of GET /download/big (with a Content-Length).
	downloadBytes int64

	mu       sync.Mutex
	paths    map[string]int // requests per path as received (at most maxPaths, then "other")
	unpassed map[string]int // protected requests without a valid pass, by sender
	passed   map[string]int // protected requests with a valid pass, by sender
	uploaded int64          // request body bytes received on unprotected paths
}

const maxOriginPaths = 200

// noForwarded is the sender of requests without X-Forwarded-For.
const noForwarded = "no-forwarded-for"

// gwProtected are the origin's protected handlers, in its canonical form:
// an exact path, or a prefix ending in "/" (what follows it, not the
// prefix alone, as the gateway's "/checkout/*").
var gwProtected = []string{"/api/orders", "/checkout/", "/members/"}

// startGWOrigin listens on addr and serves; check verifies passes (its
// key set is the gateway's JWKS).
func startGWOrigin(addr string, check *passcheck.Checker, downloadBytes int64) (*gwOrigin, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("origin: %w", err)
	}
	o := &gwOrigin{ln: ln, check: check, downloadBytes: downloadBytes,
		paths: map[string]int{}, unpassed: map[string]int{}, passed: map[string]int{}}
	o.srv = &http.Server{Handler: http.HandlerFunc(o.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = o.srv.Serve(ln) }()
	return o, nil
}

func (o *gwOrigin) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := o.srv.Shutdown(ctx); err != nil {
		_ = o.srv.Close()
	}
}

// originCanon is path the way a lenient origin routes it: lower case,
// backslashes as slashes, ;params dropped, empty and dot segments
// resolved, the last segment's format suffix (.json) dropped.
func originCanon(path string) string {
	path = strings.ToLower(strings.ReplaceAll(path, `\`, "/"))
	var out []string
	for _, seg := range strings.Split(path, "/") {
		seg, _, _ = strings.Cut(seg, ";")
		if seg != "." && seg != ".." {
			seg = strings.TrimRight(seg, ". ")
		}
		switch seg {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, seg)
		}
	}
	if n := len(out); n > 0 {
		out[n-1], _, _ = strings.Cut(out[n-1], ".")
	}
	return "/" + strings.Join(out, "/")
}

// originProtected says whether the origin routes path to a protected handler.
func originProtected(path string) bool {
	c := originCanon(path)
	for _, p := range gwProtected {
		if c == p || strings.HasSuffix(p, "/") && len(c) > len(p) && strings.HasPrefix(c, p) {
			return true
		}
	}
	return false
}

// sender names who sent r by the client address the gateway forwarded:
// an attack's 127.6.k.x, the legitimate visitors' 127.1.x.y.
func sender(r *http.Request) string {
	xff := r.Header.Get("X-Forwarded-For")
	if i := strings.LastIndexByte(xff, ','); i >= 0 {
		xff = xff[i+1:]
	}
	ip := net.ParseIP(strings.TrimSpace(xff)).To4()
	switch {
	case xff == "":
		// Only a request the gateway did not handle as HTTP (a tunnel's
		// bytes) comes without the header it sets.
		return noForwarded
	case ip == nil:
		return "other"
	case ip[0] == 127 && ip[1] == 1:
		return "legit"
	case ip[0] == 127 && ip[1] == gwAttackNet && int(ip[2]) < len(gwAttackNames):
		return gwAttackNames[ip[2]]
	}
	return "other"
}

func (o *gwOrigin) serve(w http.ResponseWriter, r *http.Request) {
	from := sender(r)
	o.mu.Lock()
	key := r.URL.Path
	if _, ok := o.paths[key]; !ok && len(o.paths) >= maxOriginPaths {
		key = "other"
	}
	o.paths[key]++
	o.mu.Unlock()
	if originProtected(r.URL.Path) {
		_, err := o.check.Verify(r.Header.Get(passcheck.HeaderName))
		o.mu.Lock()
		if err != nil {
			o.unpassed[from]++
		} else {
			o.passed[from]++
		}
		o.mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
		}
		_, _ = io.WriteString(w, `{"ok":true}`)
		return
	}
	switch {
	case r.URL.Path == "/download/big":
		w.Header().Set("Content-Length", strconv.FormatInt(o.downloadBytes, 10))
		w.Header().Set("Content-Type", "application/octet-stream")
		buf := make([]byte, 32<<10)
		for left := o.downloadBytes; left > 0; {
			n := min(left, int64(len(buf)))
			if _, err := w.Write(buf[:n]); err != nil {
				return
			}
			left -= n
		}
	default:
		n, _ := io.Copy(io.Discard, r.Body)
		o.mu.Lock()
		o.uploaded += n
		o.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"path":%q,"len":%d}`, r.URL.Path, n)
	}
}

// originCounts is what the origin saw.
type originCounts struct {
	Requests      int            `json:"requests"`
	Paths         map[string]int `json:"requestsByPath"`
	Unpassed      map[string]int `json:"unpassedProtectedBySender"`
	Passed        map[string]int `json:"passedProtectedBySender"`
	UnpassedTotal int            `json:"unpassedProtected"`
	UploadedBytes int64          `json:"uploadedBytes"`
}

// counts returns what the origin saw so far and starts counting afresh.
func (o *gwOrigin) counts() originCounts {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := originCounts{Paths: o.paths, Unpassed: o.unpassed, Passed: o.passed, UploadedBytes: o.uploaded}
	for _, n := range o.paths {
		c.Requests += n
	}
	for _, n := range o.unpassed {
		c.UnpassedTotal += n
	}
	o.paths, o.unpassed, o.passed, o.uploaded = map[string]int{}, map[string]int{}, map[string]int{}, 0
	return c
}

// errOriginAddr is returned when the origin's address is not loopback.
var errOriginAddr = errors.New("--origin-listen must be a loopback address")
