package dashboard

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/momopay/momopay/internal/api"
)

//go:embed static
var staticFS embed.FS

// assets serves the embedded CSS, JavaScript and images under names that
// carry a hash of their content (app.3f2a91c0.css), so browsers may cache
// them for ever and a new build is fetched at once.
type assets struct {
	byName   map[string]string // "app.css" → "/static/app.3f2a91c0.css"
	byHashed map[string][]byte // "app.3f2a91c0.css" → content
}

func loadAssets() (*assets, error) {
	a := &assets{byName: map[string]string{}, byHashed: map[string][]byte{}}
	err := fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := staticFS.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		name := path.Base(p)
		ext := path.Ext(name)
		hashed := strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:4]) + ext
		a.byName[name] = "/static/" + hashed
		a.byHashed[hashed] = b
		return nil
	})
	return a, err
}

// url is the template function "asset": the hashed URL of a static file.
// An unknown name panics at the first render, which the test of every page
// catches.
func (a *assets) url(name string) string {
	u, ok := a.byName[name]
	if !ok {
		panic("dashboard: no static file " + name)
	}
	return u
}

// handler serves the static files by their hashed names; a name it does
// not have is answered as the service answers any unknown path: the 404
// page for a browser, else the error envelope.
func (a *assets) handler(page404 http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := a.byHashed[r.PathValue("file")]
		if !ok {
			if api.WantsPage(r) {
				page404.ServeHTTP(w, r)
				return
			}
			writeProblem(w, http.StatusNotFound, "NOT_FOUND", "no such file")
			return
		}
		ct := mime.TypeByExtension(path.Ext(r.PathValue("file")))
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Write(b)
	})
}
