package resetroom

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/report"
	"waitingroom/loadtest/internal/scenario"
)

// Report is the room as the server answered the PUT.
type Report struct {
	Scenario     string     `json:"scenario"`
	Room         string     `json:"room"`
	TargetActive int64      `json:"targetActive"`
	Mode         string     `json:"mode"`
	Paused       bool       `json:"paused"`
	Method       string     `json:"method"`
	OpensAt      *time.Time `json:"opensAt"`
}

// Run is the reset-room scenario: args are its flags; o gets the common
// ones.
func Run(ctx context.Context, o *scenario.Options, args []string) (report.Report, error) {
	fs := scenario.NewFlagSet("reset-room", o)
	target := fs.Int64("target", defaultTarget(), "targetActive to set (default $WR_TARGET_ACTIVE, else 20)")
	wait := fs.Duration("wait-ready", 0, "first wait up to this long for the management port's /readyz (0: at once)")
	if err := o.Parse(fs, args); err != nil {
		return nil, err
	}
	if *target < 0 || *wait < 0 {
		return nil, errors.New("reset-room: --target and --wait-ready must not be negative")
	}
	if *wait > 0 {
		if err := client.AwaitReady(ctx, o.Admin, *wait); err != nil {
			return nil, fmt.Errorf("reset-room: %w", err)
		}
	}
	adm := &client.Admin{Base: o.Admin, Token: o.AdminToken, Room: o.Room, HTTP: client.New(1, o.Timeout)}
	defer adm.HTTP.CloseIdleConnections()
	rep := &Report{Scenario: "reset-room"}
	body := map[string]any{"targetActive": *target, "mode": "fixed", "paused": false, "method": "fifo", "opensAt": nil}
	if err := adm.Do(ctx, http.MethodPut, body, rep); err != nil {
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

func (r *Report) Print(w io.Writer) {
	paused, opens := "not paused", "no opening time"
	if r.Paused {
		paused = "paused"
	}
	if r.OpensAt != nil {
		opens = "opens at " + r.OpensAt.Format(time.RFC3339)
	}
	fmt.Fprintf(w, "room %s reset: targetActive %d, mode %s, %s, method %s, %s\n", r.Room, r.TargetActive, r.Mode, paused, r.Method, opens)
}
