package systemtest

// RouteCount is how many requests the instance answered on a route
// pattern, whatever their status.
func (in *Instance) RouteCount(route string) float64 {
	in.t.Helper()
	mfs, err := in.Parts.Metrics.Registry.Gather()
	if err != nil {
		in.t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != "waitingroom_http_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "route" && l.GetValue() == route {
					n += float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return n
}
