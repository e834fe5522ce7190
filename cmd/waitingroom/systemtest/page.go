package systemtest

// StreamsOpen is the number of open push streams of one transport ("" = all).
func (in *Instance) StreamsOpen(transport string) float64 {
	in.t.Helper()
	if transport == "" {
		return in.MetricWhere("waitingroom_stream_connections")
	}
	return in.MetricWhere("waitingroom_stream_connections", "transport="+transport)
}

// OrderWhenReady waits until the holder of queueToken is READY and orders
// one of product 1 through the API.
func (in *Instance) OrderWhenReady(room, queueToken string) {
	in.t.Helper()
	var entry string
	WaitFor(in.t, "an API user to be READY", func() bool {
		r := in.Position(room, queueToken)
		entry = r.Str("entryToken")
		return r.Str("status") == "READY"
	})
	if r := in.Order(queueToken, entry, 1, 1); r.Status != 201 {
		in.t.Fatalf("API order: %d %s", r.Status, r.Raw)
	}
}
