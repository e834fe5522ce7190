// Package scenario is what every scenario shares: the common flags
// (--base, --admin, --admin-token, --room, --timeout, --out, --html), the
// open-file check and the progress line on stderr.
package scenario

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"waitingroom/internal/loop"
	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/report"
)

// CheckNoFile fails when the open-file limit cannot hold need descriptors
// (main has already lifted the soft limit to the hard one).
func CheckNoFile(need int) error {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return nil // unknown: let the dials tell
	}
	if uint64(need) > l.Cur {
		return fmt.Errorf("%d streams need about %d file descriptors; the limit is %d (ulimit -n)", need-64, need, l.Cur)
	}
	return nil
}

// Options are the flags every scenario has.
type Options struct {
	Base, Admin, AdminToken, Room, Out, HTML string
	Timeout                                  time.Duration
}

// NewFlagSet returns a scenario's flag set holding the common flags.
func NewFlagSet(name string, o *Options) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&o.Base, "base", "http://127.0.0.1:8080", "public API base URL")
	fs.StringVar(&o.Admin, "admin", "http://127.0.0.1:8081", "management base URL (/metrics, /admin)")
	fs.StringVar(&o.AdminToken, "admin-token", "", "bearer token of /admin (default $WR_ADMIN_TOKEN)")
	fs.StringVar(&o.Room, "room", "default", "room to load")
	fs.StringVar(&o.Out, "out", "", "also write the report as JSON to this file, e.g. report.json")
	fs.StringVar(&o.HTML, "html", "", "also write the report as a self-contained HTML page (inline SVG charts), e.g. report.html")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Second, "per-request timeout")
	return fs
}

// Parse parses args and completes the common options.
func (o *Options) Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments %q", fs.Name(), fs.Args())
	}
	if o.AdminToken == "" {
		o.AdminToken = os.Getenv("WR_ADMIN_TOKEN")
	}
	o.Base = strings.TrimRight(o.Base, "/")
	o.Admin = strings.TrimRight(o.Admin, "/")
	return nil
}

// ProgressLines prints, every 5 s until ctx ends, the seconds since start,
// counts() and the room's active and waiting figures; the returned channel
// is closed when the printer has stopped.
func ProgressLines(ctx context.Context, adm *client.Admin, start time.Time, counts func() string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		loop.Every(ctx, 5*time.Second, func(ctx context.Context) {
			line := fmt.Sprintf("%5.0fs  %s", time.Since(start).Seconds(), counts())
			if st, err := adm.RoomState(ctx); err == nil {
				line += fmt.Sprintf("  | room active %d/%d waiting %s", st.Active, st.TargetActive, report.Commas(int(st.Waiting)))
			}
			fmt.Fprintln(os.Stderr, line)
		})
	}()
	return done
}
