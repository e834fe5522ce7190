package measure

import (
	"os"
	"strings"
)

// LoadAverage is the first three fields of /proc/loadavg ("" when it
// cannot be read): what a report prints beside figures taken on a machine
// that other work may share.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
