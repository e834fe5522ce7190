package queuestatus

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
)

// AppendFields appends the members of d's JSON object, without the
// braces, byte for byte what encoding/json writes for a Doc (a
// test holds them to it): streams write one per update, and this way
// needs no reflection, no allocation and little goroutine stack (a stream
// goroutine's stack grows to the deepest call it ever makes and keeps it).
func AppendFields(b []byte, d *Doc) []byte {
	b = appendJSONString(append(b, `"status":`...), d.Status)
	b = appendJSONString(append(b, `,"room":`...), d.Room)
	if d.Position != 0 {
		b = strconv.AppendInt(append(b, `,"position":`...), d.Position, 10)
	}
	if d.Waiting != 0 {
		b = strconv.AppendInt(append(b, `,"waiting":`...), d.Waiting, 10)
	}
	if d.ETASeconds != nil {
		b = strconv.AppendInt(append(b, `,"etaSeconds":`...), *d.ETASeconds, 10)
	}
	if d.ETAKnown != nil {
		b = strconv.AppendBool(append(b, `,"etaKnown":`...), *d.ETAKnown)
	}
	if d.ETAProvisional {
		b = append(b, `,"etaProvisional":true`...)
	}
	if d.EntryToken != "" {
		b = appendJSONString(append(b, `,"entryToken":`...), d.EntryToken)
	}
	if d.EntryExpiresAt != nil {
		b = appendJSONTime(append(b, `,"entryExpiresAt":`...), *d.EntryExpiresAt)
	}
	b = strconv.AppendInt(append(b, `,"pollAfterMs":`...), d.PollAfterMs, 10)
	if d.QueueToken != "" {
		b = appendJSONString(append(b, `,"queueToken":`...), d.QueueToken)
	}
	if d.OpensAt != nil {
		b = appendJSONTime(append(b, `,"opensAt":`...), *d.OpensAt)
	}
	if d.OpensInMs != nil {
		b = strconv.AppendInt(append(b, `,"opensInMs":`...), *d.OpensInMs, 10)
	}
	if d.Paused {
		b = append(b, `,"paused":true`...)
	}
	if d.Message != "" {
		b = appendJSONString(append(b, `,"message":`...), d.Message)
	}
	return b
}

// appendJSONString appends s as encoding/json quotes it. Printable ASCII
// that needs no escape (the usual case: states, room names, tokens) is
// copied; anything else goes through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			j, _ := json.Marshal(s) // a string always marshals
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendJSONTime appends t as time.Time's MarshalJSON writes it (RFC 3339
// with nanoseconds, quoted).
func appendJSONTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	if out, err := t.AppendText(b); err == nil {
		b = out
	} else {
		b = t.AppendFormat(b, time.RFC3339Nano) // a year outside 0–9999: never here
	}
	return append(b, '"')
}

// Send answers d as the response's JSON body, as c.JSON would but
// written by AppendFields: the enter and position answers need no
// reflection.
func Send(c *fiber.Ctx, d *Doc) error {
	var buf [768]byte
	b := append(AppendFields(append(buf[:0], '{'), d), '}')
	c.Response().SetBody(b)
	c.Response().Header.SetContentType(fiber.MIMEApplicationJSON)
	return nil
}
