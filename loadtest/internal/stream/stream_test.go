package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/fakeroom"
)

func TestStreamOpenFailures(t *testing.T) {
	f := fakeroom.Start(t, &fakeroom.Server{})
	for _, transport := range []string{"sse", "ws"} {
		d, err := NewDialer(transport, f.Pub.URL, "default", time.Second, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = d.Open(context.Background(), "not-a-queue-token")
		if got, want := WhyEnded(err), "HTTP 401"; got != want {
			t.Errorf("%s: open with a bad token: %q (%v), want %q", transport, got, err, want)
		}
	}
	d, err := NewDialer("sse", "http://127.0.0.1:1", "default", time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Open(context.Background(), "q-1"); WhyEnded(err) != "connection refused" {
		t.Errorf("open to a closed port: %q (%v), want connection refused", WhyEnded(err), err)
	}
	if _, err := NewDialer("sse", "ftp://x", "default", time.Second, time.Second); err == nil {
		t.Error("an ftp base URL was accepted")
	}
	if _, err := NewDialer("grpc", f.Pub.URL, "default", time.Second, time.Second); err == nil {
		t.Error("an unknown transport was accepted")
	}
}

func TestWhyEnded(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{client.StatusError(503), "HTTP 503"},
		{fmt.Errorf("first message: %w", io.EOF), "closed by server"},
		{io.ErrUnexpectedEOF, "closed by server"},
		{fmt.Errorf("first message: %w", context.DeadlineExceeded), "timeout"},
		{&websocket.CloseError{Code: websocket.CloseGoingAway}, "closed by server (WebSocket close 1001)"},
		{errors.New(strings.Repeat("x", 100)), strings.Repeat("x", 60) + "…"},
	} {
		if got := WhyEnded(tc.err); got != tc.want {
			t.Errorf("WhyEnded(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
