package sseclient_test

import (
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"waitingroom/stream/sseclient"
)

// readAll reads r to its end and returns the events and the error that
// ended it (nil for io.EOF).
func readAll(tb testing.TB, rd *sseclient.Reader) ([]sseclient.Event, error) {
	tb.Helper()
	var evs []sseclient.Event
	for range 1000 {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	tb.Fatal("more than 1000 events")
	return nil, nil
}

// readers delivers a stream whole, one byte per Read (every CR LF pair and
// BOM split across reads), and in halves.
var readers = map[string]func(string) io.Reader{
	"whole":   func(s string) io.Reader { return strings.NewReader(s) },
	"bytes":   func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
	"halves":  func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
	"chunked": func(s string) io.Reader { return &chunkReader{s: s, n: 7} },
}

// chunkReader returns s in reads of n bytes.
type chunkReader struct {
	s string
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.s)
	c.s = c.s[k:]
	return k, nil
}

func msg(data string) sseclient.Event { return sseclient.Event{Type: "message", Data: data} }

func TestReaderKnownAnswers(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     []sseclient.Event
		comments int
		lastID   string
	}{
		// The HTML Standard's examples (§9.2.5, "Event stream format").
		{
			name: "spec: stock ticker, multi-line data",
			in:   "data: YHOO\ndata: +2\ndata: 10\n\n",
			want: []sseclient.Event{msg("YHOO\n+2\n10")},
		},
		{
			name:     "spec: comment, id, id reset, leading space kept",
			in:       ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n",
			want:     []sseclient.Event{{Type: "message", Data: "first event", ID: "1"}, msg("second event"), msg(" third event")},
			comments: 1,
		},
		{
			name:     "spec: the last block needs its blank line",
			in:       ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n",
			want:     []sseclient.Event{{Type: "message", Data: "first event", ID: "1"}, msg("second event")},
			comments: 1,
		},
		{
			name: "spec: data without colon; a cut-off block is discarded",
			in:   "data\n\ndata\ndata\n\ndata:",
			want: []sseclient.Event{msg(""), msg("\n")},
		},
		{
			name: "spec: 'data:' and 'data: ' are the same",
			in:   "data:test\n\ndata: test\n\n",
			want: []sseclient.Event{msg("test"), msg("test")},
		},
		{
			name: "only one leading space is removed; colons in the value stay",
			in:   "data:  two\ndata: a:b: c\ndata:\tt\n\n",
			want: []sseclient.Event{msg(" two\na:b: c\n\tt")},
		},
		{
			name: "trailing space stays",
			in:   "data: x \n\n",
			want: []sseclient.Event{msg("x ")},
		},

		// Line ends.
		{name: "CR only", in: "data: a\rdata: b\r\rdata: c\r\r", want: []sseclient.Event{msg("a\nb"), msg("c")}},
		{name: "CRLF", in: "data: a\r\ndata: b\r\n\r\n", want: []sseclient.Event{msg("a\nb")}},
		{name: "mixed", in: "data: a\rdata: b\ndata: c\r\n\ndata: d\n\r", want: []sseclient.Event{msg("a\nb\nc"), msg("d")}},
		{name: "LF CR is two line ends", in: "data: a\n\rdata: b\n\n", want: []sseclient.Event{msg("a"), msg("b")}},
		{name: "CR CR LF is two line ends", in: "data: a\r\r\ndata: b\n\n", want: []sseclient.Event{msg("a"), msg("b")}},

		// BOM.
		{name: "leading BOM skipped", in: "\uFEFFdata: a\n\n", want: []sseclient.Event{msg("a")}},
		{name: "only one BOM is skipped", in: "\uFEFF\uFEFFdata: a\n\ndata: b\n\n", want: []sseclient.Event{msg("b")}},
		{name: "BOM later is data", in: "data: \uFEFFa\n\n", want: []sseclient.Event{msg("\uFEFFa")}},
		{name: "lone EF is not a BOM", in: "\xEFdata: a\n\ndata: b\n\n", want: []sseclient.Event{msg("b")}},

		// Comments.
		{name: "comments counted, not dispatched", in: ":\n: hb\n:hb\n\n\ndata: a\n:mid-block\n\n", want: []sseclient.Event{msg("a")}, comments: 4},
		{name: "comment only stream", in: ": one\n: two\n", comments: 2},

		// Fields.
		{name: "event type", in: "event: status\ndata: {}\n\n", want: []sseclient.Event{{Type: "status", Data: "{}"}}},
		{name: "last event field wins", in: "event: a\nevent: b\ndata: x\n\n", want: []sseclient.Event{{Type: "b", Data: "x"}}},
		{name: "type resets after an empty block", in: "event: gone\n\ndata: x\n\n", want: []sseclient.Event{msg("x")}},
		{name: "type resets after dispatch", in: "event: gone\ndata: x\n\ndata: y\n\n", want: []sseclient.Event{{Type: "gone", Data: "x"}, msg("y")}},
		{name: "empty event field is message", in: "event:\ndata: x\n\n", want: []sseclient.Event{msg("x")}},
		{name: "unknown fields ignored", in: "foo: bar\nDATA: up\ndata : spaced\ndata: a\n\n", want: []sseclient.Event{msg("a")}},
		{name: "field name is case-sensitive, nothing dispatched", in: "Data: a\n\n"},
		{name: "empty value field", in: "data:\n\n", want: []sseclient.Event{msg("")}},
		{name: "only unknown field: no dispatch", in: "foo\n\n"},

		// id.
		{name: "id persists across events", in: "id: 7\ndata: a\n\ndata: b\n\n", want: []sseclient.Event{{Type: "message", Data: "a", ID: "7"}, {Type: "message", Data: "b", ID: "7"}}, lastID: "7"},
		{name: "id in a block without data", in: "id: 7\n\ndata: b\n\n", want: []sseclient.Event{{Type: "message", Data: "b", ID: "7"}}, lastID: "7"},
		{name: "id with NULL ignored", in: "id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n", want: []sseclient.Event{{Type: "message", Data: "a", ID: "1"}, {Type: "message", Data: "b", ID: "1"}}, lastID: "1"},
		{name: "empty id resets", in: "id: 1\ndata: a\n\nid:\ndata: b\n\n", want: []sseclient.Event{{Type: "message", Data: "a", ID: "1"}, msg("b")}},
		{name: "id of a cut-off block does not count", in: "id: 1\ndata: a\n\nid: 2\ndata: b\n", want: []sseclient.Event{{Type: "message", Data: "a", ID: "1"}}, lastID: "1"},
		{name: "id keeps spaces after the first", in: "id:  x y\ndata: a\n\n", want: []sseclient.Event{{Type: "message", Data: "a", ID: " x y"}}, lastID: " x y"},

		// retry.
		{name: "retry", in: "retry: 1500\ndata: a\n\ndata: b\n\n", want: []sseclient.Event{{Type: "message", Data: "a", Retry: 1500 * time.Millisecond}, msg("b")}},
		{name: "retry 0", in: "retry:0\ndata: a\n\n", want: []sseclient.Event{msg("a")}},
		{name: "retry with unit ignored", in: "retry: 10s\ndata: a\n\n", want: []sseclient.Event{msg("a")}},
		{name: "retry negative ignored", in: "retry: -1\ndata: a\n\n", want: []sseclient.Event{msg("a")}},
		{name: "retry decimal ignored", in: "retry: 1.5\ndata: a\n\n", want: []sseclient.Event{msg("a")}},
		{name: "retry with trailing space ignored", in: "retry: 100 \ndata: a\n\n", want: []sseclient.Event{msg("a")}},
		{name: "retry empty ignored", in: "retry:\ndata: a\n\n", want: []sseclient.Event{msg("a")}},
		{name: "retry huge saturates", in: "retry: 99999999999999999999999\ndata: a\n\n", want: []sseclient.Event{{Type: "message", Data: "a", Retry: math.MaxInt64}}},

		// End of stream.
		{name: "empty stream", in: ""},
		{name: "cut-off line", in: "data: a\n\ndata: b", want: []sseclient.Event{msg("a")}},
		{name: "block without its blank line", in: "data: a\n", want: nil},
		{name: "stream ends right after a CR", in: "data: a\r\r", want: []sseclient.Event{msg("a")}},

		// Decoding: invalid UTF-8 becomes U+FFFD per maximal subpart.
		{name: "truncated sequence is one FFFD", in: "data: \xE2\x82A\n\n", want: []sseclient.Event{msg("\uFFFDA")}},
		{name: "overlong is per byte", in: "data: \xC0\xAF\n\n", want: []sseclient.Event{msg("\uFFFD\uFFFD")}},
		{name: "surrogate is per byte", in: "data: \xED\xA0\x80\n\n", want: []sseclient.Event{msg("\uFFFD\uFFFD\uFFFD")}},
		{name: "truncated 4-byte at line end", in: "data: \xF0\x9F\x98\n\n", want: []sseclient.Event{msg("\uFFFD")}},
		{name: "valid multibyte untouched", in: "data: 대기열 😀 \uFFFD\n\n", want: []sseclient.Event{msg("대기열 😀 \uFFFD")}},
	}
	for _, tt := range tests {
		for rname, newR := range readers {
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				rd := sseclient.NewReader(newR(tt.in))
				got, err := readAll(t, rd)
				if err != nil {
					t.Fatalf("Next: %v", err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("events\n got %q\nwant %q", got, tt.want)
				}
				if got, want := rd.Comments(), tt.comments; got != want {
					t.Errorf("Comments() = %d, want %d", got, want)
				}
				if got, want := rd.LastEventID(), tt.lastID; got != want {
					t.Errorf("LastEventID() = %q, want %q", got, want)
				}
			})
		}
	}
}

func TestReaderRetryWithoutData(t *testing.T) {
	// A shutdown notice: a retry hint in a block without data dispatches
	// nothing, but Retry still reports it.
	rd := sseclient.NewReader(strings.NewReader("data: a\n\nretry: 3000\n\n"))
	if d, ok := rd.Retry(); ok || d != 0 {
		t.Fatalf("Retry() before reading = %v, %v; want 0, false", d, ok)
	}
	got, err := readAll(t, rd)
	if err != nil {
		t.Fatal(err)
	}
	if want := []sseclient.Event{msg("a")}; !reflect.DeepEqual(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	if d, ok := rd.Retry(); !ok || d != 3*time.Second {
		t.Errorf("Retry() = %v, %v; want 3s, true", d, ok)
	}
}

func TestReaderEOFIsSticky(t *testing.T) {
	rd := sseclient.NewReader(strings.NewReader("data: a\n\n"))
	if _, err := rd.Next(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := rd.Next(); err != io.EOF {
			t.Fatalf("Next() error = %v, want io.EOF", err)
		}
	}
}

func TestReaderUnderlyingError(t *testing.T) {
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader("data: a\n\ndata: b\n"), iotest.ErrReader(boom))
	rd := sseclient.NewReader(r)
	got, err := readAll(t, rd)
	if !errors.Is(err, boom) {
		t.Fatalf("error = %v, want %v", err, boom)
	}
	if want := []sseclient.Event{msg("a")}; !reflect.DeepEqual(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if _, err := rd.Next(); !errors.Is(err, boom) {
		t.Errorf("second Next() error = %v, want %v", err, boom)
	}
}

func TestReaderBounds(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name    string
		in      string
		want    []sseclient.Event
		wantErr error
	}{
		{
			name: "line of MaxLine bytes is read",
			in:   "data:" + long(sseclient.MaxLine-5) + "\n\n",
			want: []sseclient.Event{msg(long(sseclient.MaxLine - 5))},
		},
		{
			name:    "line over MaxLine fails",
			in:      "data: a\n\ndata:" + long(sseclient.MaxLine-4) + "\n\n",
			want:    []sseclient.Event{msg("a")},
			wantErr: sseclient.ErrLineTooLong,
		},
		{
			name:    "endless line fails",
			in:      ":" + long(3*sseclient.MaxLine),
			wantErr: sseclient.ErrLineTooLong,
		},
		{
			name:    "endless comment with CR at the limit fails",
			in:      ":" + long(sseclient.MaxLine) + "\r\n",
			wantErr: sseclient.ErrLineTooLong,
		},
		{
			name:    "data over MaxLine in many lines fails",
			in:      strings.Repeat("data: "+long(1000)+"\n", sseclient.MaxLine/1000+1) + "\n",
			wantErr: sseclient.ErrEventTooLarge,
		},
		{
			name: "many big events in a row are fine",
			in:   strings.Repeat("data: "+long(sseclient.MaxLine/2)+"\n\n", 4),
			want: []sseclient.Event{msg(long(sseclient.MaxLine / 2)), msg(long(sseclient.MaxLine / 2)), msg(long(sseclient.MaxLine / 2)), msg(long(sseclient.MaxLine / 2))},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd := sseclient.NewReader(strings.NewReader(tt.in))
			got, err := readAll(t, rd)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d events, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("event %d: type %q, %d bytes; want type %q, %d bytes", i, got[i].Type, len(got[i].Data), tt.want[i].Type, len(tt.want[i].Data))
				}
			}
		})
	}
}

// BenchmarkReader reads a stream of status events like the server's.
func BenchmarkReader(b *testing.B) {
	ev := "event: status\nid: 1234\ndata: {\"status\":\"WAITING\",\"room\":\"default\",\"position\":57,\"waiting\":9321,\"etaSeconds\":3,\"pollAfterMs\":1000,\"ts\":1764417600000}\n\n: hb\n\n"
	in := strings.Repeat(ev, 1000)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		rd := sseclient.NewReader(strings.NewReader(in))
		for {
			if _, err := rd.Next(); err != nil {
				break
			}
		}
	}
}

func ExampleReader() {
	stream := "retry: 2000\n" +
		": heartbeat\n" +
		"event: status\nid: 41\ndata: {\"status\":\"WAITING\",\"position\":2}\n\n" +
		"event: status\nid: 42\ndata: {\"status\":\"READY\"}\n\n"
	rd := sseclient.NewReader(strings.NewReader(stream))
	for {
		ev, err := rd.Next()
		if err != nil {
			fmt.Println(err)
			break
		}
		fmt.Printf("%s id=%s retry=%v %s\n", ev.Type, ev.ID, ev.Retry, ev.Data)
	}
	fmt.Println("comments:", rd.Comments(), "last id:", rd.LastEventID())
	// Output:
	// status id=41 retry=2s {"status":"WAITING","position":2}
	// status id=42 retry=0s {"status":"READY"}
	// EOF
	// comments: 1 last id: 42
}
