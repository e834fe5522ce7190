package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var static embed.FS

//go:embed admin
var admin embed.FS

// FS returns the page's static files, rooted so that index.html, app.js and
// style.css sit at its top level.
func FS() fs.FS { return sub(static, "static") }

// AdminFS returns the operator dashboard's files (index.html, dashboard.js,
// dashboard.css at its top level). They are served on the management port
// only, never with the public page.
func AdminFS() fs.FS { return sub(admin, "admin") }

func sub(fsys embed.FS, dir string) fs.FS {
	s, err := fs.Sub(fsys, dir)
	if err != nil {
		// fs.Sub fails only on an invalid path; dir is a constant.
		panic(err)
	}
	return s
}
