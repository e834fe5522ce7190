package rooms

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/pace"
	"waitingroom/loadtest/internal/report"
	"waitingroom/loadtest/internal/stream"
)

// creation is how the idle rooms' creation went.
type creation struct {
	Rooms      int            `json:"rooms"`
	Created    int            `json:"created"`
	Failed     int            `json:"failed"`
	Failures   map[string]int `json:"failures,omitempty"`
	FirstError string         `json:"firstError,omitempty"`
	Seconds    float64        `json:"seconds"`
	PerSecond  float64        `json:"perSecond"`
}

// cleanup is how the deletion of the run's rooms went.
type cleanup struct {
	Rooms int `json:"rooms"` // the run's rooms, the busy one included
	// Offered: the server answers DELETE /admin/rooms/{room}; without it
	// (404 or 405 for a room the run created) every room stays.
	Offered  bool           `json:"offered"`
	Deleted  int            `json:"deleted"`
	Absent   int            `json:"absent"` // 404: not there (a creation that failed)
	Failed   int            `json:"failed"`
	Failures map[string]int `json:"failures,omitempty"`
	Left     int            `json:"left"` // rooms the run leaves behind
	Note     string         `json:"note,omitempty"`
	Seconds  float64        `json:"seconds"`
}

// idleName is the k-th idle room's name (k from 1).
func (r *roomsRun) idleName(k int) string { return fmt.Sprintf("%s-%05d", r.cfg.prefix, k) }

// createRooms creates --rooms idle rooms with PUT /admin/rooms/{room}
// and the server's defaults, --conns at a time, spread over the
// instances. It returns every name it tried: a PUT that timed out may
// still have created its room.
func (r *roomsRun) createRooms() (*creation, []string) {
	n := r.cfg.rooms
	c := &creation{Rooms: n, Failures: map[string]int{}}
	names := make([]string, n)
	whys := make([]string, n)
	start := time.Now()
	err := pace.ForEach(r.ctx, "create rooms", n, r.cfg.conns, func(k int) error {
		names[k] = r.idleName(k + 1)
		err := r.admin(k, names[k]).Do(r.ctx, http.MethodPut, map[string]any{}, nil)
		if err != nil && r.ctx.Err() == nil {
			whys[k] = why(err)
		}
		return err
	})
	c.Seconds = time.Since(start).Seconds()
	var tried []string
	for k, name := range names {
		switch {
		case name == "":
			continue // not reached (Ctrl-C)
		case whys[k] != "":
			c.Failed++
			c.Failures[whys[k]]++
		case r.ctx.Err() == nil:
			c.Created++
		}
		tried = append(tried, name)
	}
	if err != nil {
		c.FirstError = err.Error()
	}
	if c.Seconds > 0 {
		c.PerSecond = float64(c.Created) / c.Seconds
	}
	fmt.Fprintf(os.Stderr, "rooms: %s rooms created in %.1f s (failed %d)\n", report.Commas(c.Created), c.Seconds, c.Failed)
	return c, tried
}

// deleteRooms deletes names with DELETE /admin/rooms/{room}?force=true:
// the first alone, which tells whether the server offers the route (it was
// created for certain), then the rest --conns at a time.
func (r *roomsRun) deleteRooms(ctx context.Context, names []string) *cleanup {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	c := &cleanup{Rooms: len(names), Failures: map[string]int{}}
	if len(names) == 0 {
		return c
	}
	start := time.Now()
	defer func() { c.Seconds = time.Since(start).Seconds() }()
	err := r.admin(0, names[0]).DeleteRoom(ctx, true)
	var ae *client.AdminError
	if errors.As(err, &ae) && (ae.Code == http.StatusNotFound || ae.Code == http.StatusMethodNotAllowed) {
		c.Left = len(names)
		c.Note = fmt.Sprintf("the server has no DELETE /admin/rooms/{room} (%s for %s): the run's %s rooms stay (%s-*)",
			ae.Status, names[0], report.Commas(len(names)), r.cfg.prefix)
		fmt.Fprintln(os.Stderr, "rooms:", c.Note)
		return c
	}
	c.Offered = true
	results := make([]error, len(names))
	reached := make([]bool, len(names))
	results[0], reached[0] = err, true
	fmt.Fprintf(os.Stderr, "rooms: deleting %s rooms\n", report.Commas(len(names)))
	_ = pace.ForEach(ctx, "delete rooms", len(names)-1, r.cfg.conns, func(k int) error {
		results[k+1], reached[k+1] = r.admin(k, names[k+1]).DeleteRoom(ctx, true), true
		return results[k+1]
	})
	for k, err := range results {
		switch {
		case !reached[k]:
			c.Left++ // the deadline came first
		case err == nil:
			c.Deleted++
		case k > 0 && errors.As(err, &ae) && ae.Code == http.StatusNotFound:
			c.Absent++
		default:
			c.Failed++
			c.Failures[why(err)]++
			c.Left++
		}
	}
	return c
}

// why names a failed admin call in a few words.
func why(err error) string {
	var ae *client.AdminError
	if errors.As(err, &ae) {
		return fmt.Sprintf("HTTP %d", ae.Code)
	}
	return stream.WhyEnded(err)
}
