package faults

// key is the hash holding the faults in force cluster-wide; its field
// orderDelayField holds the order delay in milliseconds, rowDelayField the
// row-lock delay.
func key(prefix string) string { return prefix + "faults" }

const (
	orderDelayField = "order_delay_ms"
	rowDelayField   = "row_delay_ms"
)
