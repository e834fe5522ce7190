package attack

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/measure"
)

// stuffingResult is what the credential-stuffing burst achieved.
type stuffingResult struct {
	Attempts  int             `json:"attempts"`
	Addrs     int             `json:"sourceAddresses"`
	LoginIDs  int             `json:"loginIds"`
	Owner     string          `json:"attackedAccount"`
	OwnerHits int             `json:"attemptsOnAttackedAccount"`
	Codes     measure.Summary `json:"answers"`
	// OwnerCode is the owner's own login, the right password from a fresh
	// address, right after the burst: it must be 200.
	OwnerCode int `json:"ownerLoginStatus"`
}

// stuffing sends attempts wrong passwords over loginIds — every fourth to
// the owner's account, the others spread over the crowd's accounts — from
// addrs addresses, conns at a time, as fast as answered; then the owner
// logs in with the right password from ownerAddr.
func (a *attacker) stuffing(ctx, reqCtx context.Context, attempts, addrs, conns int, owner, password string, crowdFirst, crowdN int) *stuffingResult {
	res := &stuffingResult{Addrs: addrs, Owner: owner}
	clients := make([]*client.API, addrs)
	for k := range clients {
		clients[k] = a.client(stuffingAddr(k), max(conns/addrs, 1))
	}
	ids := map[string]bool{}
	var mu sync.Mutex
	var next atomic.Int64
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= attempts {
					return
				}
				id := owner
				if i%4 != 0 {
					id = "user" + strconv.Itoa(crowdFirst+(i*7919)%crowdN)
				}
				body := map[string]string{"loginId": id, "password": "wrong-" + strconv.Itoa(i)}
				_, _ = clients[i%addrs].Call(ctx, "stuffing", http.MethodPost, "/api/v1/auth/login", "", body, nil)
				mu.Lock()
				ids[id] = true
				res.Attempts++
				if id == owner {
					res.OwnerHits++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, c := range clients {
		c.HTTP.CloseIdleConnections()
	}
	res.LoginIDs = len(ids)
	oc := a.client(ownerAddr, 1)
	defer oc.HTTP.CloseIdleConnections()
	res.OwnerCode, _ = oc.Call(reqCtx, "owner-login", http.MethodPost, "/api/v1/auth/login", "", map[string]string{"loginId": owner, "password": password}, nil)
	res.Codes = a.rec.Summary("stuffing")
	return res
}
