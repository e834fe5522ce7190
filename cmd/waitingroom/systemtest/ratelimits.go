package systemtest

func Limited(vars map[string]string) map[string]string {
	vars["WR_RATE_LIMITS"] = "on"
	return vars
}
