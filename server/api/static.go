package api

import (
	"io/fs"
	"mime"
	"path"
)

// PageCSP allows only a page's own files: no inline script or style, fetches
// to its own origin only. The waiting-room page and the dashboard use it.
const PageCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// StaticFile is one embedded file, served from memory.
type StaticFile struct {
	Body        []byte
	ContentType string
}

// LoadStatic reads every file of fsys (embedded: it cannot fail) with its
// content type.
func LoadStatic(fsys fs.FS) map[string]StaticFile {
	files := map[string]StaticFile{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "application/octet-stream"
		}
		files[p] = StaticFile{Body: b, ContentType: ct}
		return nil
	})
	if err != nil {
		panic("api: reading the embedded files: " + err.Error())
	}
	return files
}
