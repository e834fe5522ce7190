package attack

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/url"
	"sync"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/pace"
)

// bombResult is what the decompression bombs achieved.
type bombResult struct {
	Bombs      int                        `json:"bombs"`
	BodyBytes  int                        `json:"bodyBytes"`
	InflateMiB int                        `json:"inflatesToMiB"`
	Codes      map[string]measure.Summary `json:"answers"` // by target: login, orders, admin
	RSSBefore  float64                    `json:"serverRssBeforeMiB"`
	RSSAfter   float64                    `json:"serverRssAfterMiB"` // after the last bomb was answered
}

// bombTargets are the endpoints the bombs go to, in turn.
var bombTargets = []string{"login", "orders", "admin"}

var (
	bombMu    sync.Mutex
	bombCache = map[int][]byte{}
)

// bombBody returns gzip(gzip(mib MiB of zeros)): about 600 bytes for
// 256 MiB. Made once per size and kept.
func bombBody(mib int) ([]byte, error) {
	bombMu.Lock()
	defer bombMu.Unlock()
	if b, ok := bombCache[mib]; ok {
		return b, nil
	}
	var inner bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&inner, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for range mib {
		if _, err := zw.Write(zeros); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	var outer bytes.Buffer
	zw, _ = gzip.NewWriterLevel(&outer, gzip.BestCompression)
	if _, err := zw.Write(inner.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	bombCache[mib] = outer.Bytes()
	return outer.Bytes(), nil
}

// bombs sends n bombs, spread evenly over d, to login, orders (with
// qtok) and the admin API (with the admin token: what a stolen token or
// an insider could send), in turn, each with Content-Encoding: gzip, gzip.
func (a *attacker) bombs(ctx context.Context, adm *client.Admin, n, mib int, d time.Duration, qtok string) *bombResult {
	res := &bombResult{Bombs: n, InflateMiB: mib, Codes: map[string]measure.Summary{}}
	body, err := bombBody(mib)
	if err != nil {
		return res
	}
	res.BodyBytes = len(body)
	res.RSSBefore = serverRSS(ctx, adm)
	cl := a.client(bombAddr, 1)
	defer cl.HTTP.CloseIdleConnections()
	for i := 0; i < n; i++ {
		if i > 0 && !pace.Sleep(ctx, d/time.Duration(n)) {
			break
		}
		target := bombTargets[i%len(bombTargets)]
		var req *http.Request
		switch target {
		case "login":
			req, err = http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/api/v1/auth/login", bytes.NewReader(body))
		case "orders":
			req, err = http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/api/v1/orders", bytes.NewReader(body))
			if err == nil {
				req.Header.Set("Authorization", "Bearer "+qtok)
				req.Header.Set("X-Entry-Token", "AAAAAAAAAAAAAAAAAAAAAA")
			}
		case "admin":
			req, err = http.NewRequestWithContext(ctx, http.MethodPut, a.admin+"/admin/rooms/"+url.PathEscape(a.room), bytes.NewReader(body))
			if err == nil {
				req.Header.Set("Authorization", "Bearer "+a.adminToken)
			}
		}
		if err != nil {
			break
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Content-Encoding", "gzip, gzip")
		a.send(cl, "bomb-"+target, req)
	}
	for _, t := range bombTargets {
		res.Codes[t] = a.rec.Summary("bomb-" + t)
	}
	res.RSSAfter = serverRSS(context.WithoutCancel(ctx), adm)
	return res
}

// serverRSS is the server's resident memory in MiB (0 if unknown).
func serverRSS(ctx context.Context, adm *client.Admin) float64 {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, _ := client.ScrapeMetrics(ctx, adm)
	return m[measure.MetricRSS] / (1 << 20)
}
