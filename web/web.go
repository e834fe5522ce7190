package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var static embed.FS

// FS returns the page's static files, rooted so that index.html, app.js and
// style.css sit at its top level.
func FS() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		// fs.Sub fails only on an invalid path; "static" is a constant.
		panic(err)
	}
	return sub
}
