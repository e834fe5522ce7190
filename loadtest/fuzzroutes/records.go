package fuzzroutes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Record is one run of a protected handler, as the origin logged it: the
// handler, the method it routed, the method sent (when the origin knows
// an override), the target as it read it, whether a Waitingroom-Pass came
// with it and the case id (Fuzz-Case).
type Record struct {
	Handler string `json:"handler"`
	Method  string `json:"method"`
	Sent    string `json:"sent,omitempty"`
	Target  string `json:"target"`
	Pass    bool   `json:"pass"`
	Case    string `json:"case"`
}

// logTail reads an origin's records file from where it last stopped.
type logTail struct {
	path string
	off  int64
}

// next returns the whole lines appended since the last call. Each origin
// writes a line before it answers, so once an answer is read its record
// is in the file.
func (t *logTail) next() ([]Record, error) {
	f, err := os.Open(t.path)
	if err != nil {
		return nil, fmt.Errorf("fuzzroutes: records: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return nil, fmt.Errorf("fuzzroutes: records: %w", err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("fuzzroutes: records: %w", err)
	}
	end := bytes.LastIndexByte(b, '\n') + 1
	t.off += int64(end)
	var out []Record
	for _, line := range bytes.Split(b[:end], []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			return out, fmt.Errorf("fuzzroutes: %s: a record that is not JSON: %q: %w", t.path, line, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// Records returns each origin's records since the last call.
func (s *Stack) Records() (map[string][]Record, error) {
	out := map[string][]Record{}
	for name, o := range s.origins {
		rs, err := o.tail.next()
		if err != nil {
			return out, err
		}
		out[name] = rs
	}
	return out, nil
}
