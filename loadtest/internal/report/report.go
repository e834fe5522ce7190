// Package report holds what every scenario's report shares: the Report
// interface, its JSON and HTML files (one self-contained page with inline
// SVG charts), pass/fail checks and the number formats of the printed
// tables.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Report is a scenario's result: printed as tables, optionally saved as JSON.
type Report interface{ Print(w io.Writer) }

// WriteJSON writes rep to path as indented JSON.
func WriteJSON(path string, rep Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// Check is one pass/fail line of a report.
type Check struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	Got  string `json:"measured"`
}

// PassFail is a check's verdict: "PASS" or "FAIL".
func PassFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// NewCheck is the check name, passed when ok, with what was measured.
func NewCheck(name string, ok bool, got string) Check { return Check{Name: name, OK: ok, Got: got} }
