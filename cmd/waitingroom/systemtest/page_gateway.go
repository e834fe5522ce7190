package systemtest

// RouteCount is how many requests the instance answered on a route
// pattern, whatever their status.
func (in *Instance) RouteCount(route string) float64 {
	in.t.Helper()
	return in.MetricWhere("waitingroom_http_request_duration_seconds", "route="+route)
}
