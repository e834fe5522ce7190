package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"waitingroom/loadtest/internal/report"
)

// The reset-room scenario puts a room back to the demo's settings —
// targetActive --target, mode fixed, not paused, method fifo, no opening
// time — through PUT /admin/rooms/{room}, after waiting for the server
// (--wait-ready). make run runs it, so that a room left adaptive, paused
// or scheduled by an earlier run (the settings live in Redis) does not
// survive silently.

// resetRoomReport is the room as the server answered the PUT.
type resetRoomReport struct {
	Scenario     string     `json:"scenario"`
	Room         string     `json:"room"`
	TargetActive int64      `json:"targetActive"`
	Mode         string     `json:"mode"`
	Paused       bool       `json:"paused"`
	Method       string     `json:"method"`
	OpensAt      *time.Time `json:"opensAt"`
}

func runResetRoom(ctx context.Context, o *options, args []string) (report.Report, error) {
	fs := newFlagSet("reset-room", o)
	target := fs.Int64("target", defaultTarget(), "targetActive to set (default $WR_TARGET_ACTIVE, else 20)")
	wait := fs.Duration("wait-ready", 0, "first wait up to this long for the management port's /readyz (0: at once)")
	if err := o.parse(fs, args); err != nil {
		return nil, err
	}
	if *target < 0 || *wait < 0 {
		return nil, errors.New("reset-room: --target and --wait-ready must not be negative")
	}
	if *wait > 0 {
		if err := awaitReady(ctx, o.admin, *wait); err != nil {
			return nil, fmt.Errorf("reset-room: %w", err)
		}
	}
	adm := &admin{base: o.admin, token: o.adminToken, room: o.room, hc: newClient(1, o.timeout)}
	defer adm.hc.CloseIdleConnections()
	rep := &resetRoomReport{Scenario: "reset-room"}
	body := map[string]any{"targetActive": *target, "mode": "fixed", "paused": false, "method": "fifo", "opensAt": nil}
	if err := adm.do(ctx, http.MethodPut, body, rep); err != nil {
		return nil, fmt.Errorf("reset-room: %w", err)
	}
	return rep, nil
}

// defaultTarget is $WR_TARGET_ACTIVE when it is a number, else the
// server's default, 20.
func defaultTarget() int64 {
	if n, err := strconv.ParseInt(os.Getenv("WR_TARGET_ACTIVE"), 10, 64); err == nil && n >= 0 {
		return n
	}
	return 20
}

func (r *resetRoomReport) Print(w io.Writer) {
	paused, opens := "not paused", "no opening time"
	if r.Paused {
		paused = "paused"
	}
	if r.OpensAt != nil {
		opens = "opens at " + r.OpensAt.Format(time.RFC3339)
	}
	fmt.Fprintf(w, "room %s reset: targetActive %d, mode %s, %s, method %s, %s\n", r.Room, r.TargetActive, r.Mode, paused, r.Method, opens)
}

// awaitReady polls adminBase/readyz until it answers 200, at most within.
func awaitReady(ctx context.Context, adminBase string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	hc := &http.Client{Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	last := errors.New("no answer yet")
	for {
		if last = readyzOK(ctx, hc, adminBase); last == nil {
			return nil
		}
		if !sleep(ctx, 200*time.Millisecond) {
			return fmt.Errorf("%s/readyz not ready within %v: %w", adminBase, within, last)
		}
	}
}

// readyzOK is nil when GET base/readyz answers 200.
func readyzOK(ctx context.Context, hc *http.Client, base string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
	if err != nil {
		return err
	}
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /readyz: %s", res.Status)
	}
	return nil
}
