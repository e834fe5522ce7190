package systemtest

// MustPutRoom changes room through the admin API (PutRoom) and fails the test unless it is 200.
func (in *Instance) MustPutRoom(room string, body any) Response {
	in.t.Helper()
	r := in.PutRoom(room, body)
	if r.Status != 200 {
		in.t.Fatalf("PUT /admin/rooms/%s %v = %d %s", room, body, r.Status, r.Raw)
	}
	return r
}
