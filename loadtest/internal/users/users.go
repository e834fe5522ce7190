// Package users gets a run's users ready and puts the room back after:
// access tokens logged in or minted, a place in the queue for each with
// admission frozen, and leaving at the end.
package users

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/mint"
	"waitingroom/loadtest/internal/pace"
	"waitingroom/loadtest/internal/report"
)

// FreezeAdmission sets the room's targetActive to 0, so that every user a
// scenario enters stays waiting, and returns the room's own target and a
// restore that puts it back — with a context of its own, so that it also
// runs after Ctrl-C. why names the step in the error when the admin API
// cannot be read.
func FreezeAdmission(ctx context.Context, adm *client.Admin, scenario, why string) (int64, func(), error) {
	room, err := adm.RoomState(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %s needs the admin API: %w", scenario, why, err)
	}
	if err := adm.SetTarget(ctx, 0); err != nil {
		return 0, nil, fmt.Errorf("%s: %w", scenario, err)
	}
	cleanup := context.WithoutCancel(ctx)
	restore := func() {
		cctx, cancel := context.WithTimeout(cleanup, 10*time.Second)
		defer cancel()
		if err := adm.SetTarget(cctx, room.TargetActive); err != nil {
			fmt.Fprintf(os.Stderr, "%s: could not restore targetActive %d: %v\n", scenario, room.TargetActive, err)
		}
	}
	return room.TargetActive, restore, nil
}

// Prepare returns the users' queue tokens, "" for a user that could
// not be prepared. Access tokens are minted (mt non-nil) or come from
// logins; every user then enters, conns at a time. A user still READY from
// an earlier run leaves and enters again, which puts it back in the queue.
func Prepare(ctx context.Context, a *client.API, mt *mint.Minter, n, first, conns int, password string) ([]string, error) {
	access, lerr := AccessTokens(ctx, a, mt, n, first, conns, password)
	if mt != nil && lerr != nil {
		return nil, fmt.Errorf("streams: %w", lerr)
	}
	queue := make([]string, n)
	eerr := pace.ForEach(ctx, "enter", n, conns, func(i int) error {
		if access[i] == "" {
			return nil // its login failed and was counted
		}
		var st client.QueueStatus
		for attempt := range 2 {
			code, err := client.WithRetry(ctx, func() (int, error) {
				var code int
				var err error
				st, code, err = a.Enter(ctx, access[i])
				return code, err
			})
			if err == nil && code != http.StatusOK {
				err = client.StatusError(code)
			}
			if err != nil {
				return fmt.Errorf("enter user%d: %w", first+i, err)
			}
			if st.Status == "WAITING" || attempt == 1 {
				break
			}
			a.Leave(ctx, st.QueueToken)
		}
		if st.Status != "WAITING" {
			return fmt.Errorf("user%d is %s, not WAITING, with admission frozen", first+i, st.Status)
		}
		queue[i] = st.QueueToken
		return nil
	})
	return queue, errors.Join(lerr, eerr)
}

// LeaveAll freezes admission and gives up the places of the
// run's users still in the queue or holding an entry window ("" entries
// are skipped), conns at a time and for at most a minute, so the run leaves
// the room as it found it.
func LeaveAll(ctx context.Context, a *client.API, adm *client.Admin, tokens []string, conns int) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := adm.SetTarget(ctx, 0); err != nil {
		fmt.Fprintf(os.Stderr, "loadtest: could not freeze admission for leaving: %v\n", err)
	}
	k := 0
	for _, t := range tokens {
		if t != "" {
			k++
		}
	}
	if k == 0 {
		return
	}
	fmt.Fprintf(os.Stderr, "loadtest: %s users leave the queue\n", report.Commas(k))
	if err := pace.ForEach(ctx, "leave", len(tokens), conns, func(i int) error {
		if tokens[i] == "" {
			return nil
		}
		code, err := a.Leave(ctx, tokens[i])
		// 404: nothing left to give up (dropped as idle, or the entry
		// window ended meanwhile): the room is as it should be.
		if err == nil && code/100 != 2 && code != http.StatusNotFound {
			err = client.StatusError(code)
		}
		return err
	}); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
	}
}

// AccessTokens mints (mt non-nil) or logs in n users, conns at a time; ""
// for a user whose login failed.
func AccessTokens(ctx context.Context, a *client.API, mt *mint.Minter, n, first, conns int, password string) ([]string, error) {
	access := make([]string, n)
	if mt != nil {
		for i := range access {
			tok, err := mt.Access(int64(first + i))
			if err != nil {
				return access, fmt.Errorf("mint: %w", err)
			}
			access[i] = tok
		}
		return access, nil
	}
	return access, pace.ForEach(ctx, "login", n, conns, func(i int) error {
		user := "user" + strconv.Itoa(first+i)
		var tok string
		code, err := client.WithRetry(ctx, func() (int, error) {
			var code int
			var err error
			tok, code, err = a.Login(ctx, user, password)
			return code, err
		})
		if err == nil && code != http.StatusOK {
			err = client.StatusError(code)
		}
		if err != nil {
			return fmt.Errorf("login %s: %w (seeded? `waitingroom seed --users N --password P`)", user, err)
		}
		access[i] = tok
		return nil
	})
}
