package systemtest

import (
	"encoding/json"
	"testing"

	"waitingroom/server/admin/audit"
)

// HistoryOf reads GET /admin/rooms/{room}/history from in.
func HistoryOf(t testing.TB, in *Instance, room, query string) (fields []string, points [][]float64) {
	t.Helper()
	r := Do(t, "GET", in.Admin+"/admin/rooms/"+room+"/history"+query, TestAdminToken, nil)
	if r.Status != 200 {
		t.Fatalf("history %s%s: %d %s", room, query, r.Status, r.Raw)
	}
	var d struct {
		Room     string      `json:"room"`
		Interval int         `json:"intervalSeconds"`
		Fields   []string    `json:"fields"`
		Points   [][]float64 `json:"points"`
	}
	if err := json.Unmarshal([]byte(r.Raw), &d); err != nil || d.Room != room || d.Interval != 1 {
		t.Fatalf("history document %s: %v", r.Raw, err)
	}
	return d.Fields, d.Points
}

// AuditOf reads GET /admin/audit from in.
func AuditOf(t testing.TB, in *Instance, query string) []audit.Entry {
	t.Helper()
	r := Do(t, "GET", in.Admin+"/admin/audit"+query, TestAdminToken, nil)
	if r.Status != 200 {
		t.Fatalf("audit%s: %d %s", query, r.Status, r.Raw)
	}
	var d struct {
		Entries []audit.Entry `json:"entries"`
	}
	if err := json.Unmarshal([]byte(r.Raw), &d); err != nil {
		t.Fatal(err)
	}
	return d.Entries
}
