package systemtest

// ReadyzCheck is one check's answer in a /readyz body ("" when absent).
func ReadyzCheck(r Response, name string) string {
	checks, _ := r.Body["checks"].(map[string]any)
	s, _ := checks[name].(string)
	return s
}
